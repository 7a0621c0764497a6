"""Shared fixtures. Nothing is skipped: a missing library, fixture set or Python package is a
usage error that stops the run with a message saying what to set."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def _fail(msg: str) -> None:
    raise pytest.UsageError("strata Python tests: " + msg)


def pytest_configure(config: pytest.Config) -> None:
    lib = os.environ.get("STRATA_LIBRARY")
    if not lib:
        _fail("STRATA_LIBRARY is not set; point it at the libstrata.so to test "
              "(ctest sets it; by hand: STRATA_LIBRARY=build/lib/libstrata.so)")
    if not os.path.isfile(lib):
        _fail(f"STRATA_LIBRARY={lib} is not a file")
    fx = os.environ.get("STRATA_FIXTURES")
    if not fx:
        _fail("STRATA_FIXTURES is not set; point it at the golden data (e.g. ../shared/fixtures)")
    if not (Path(fx) / "gguf" / "manifest.json").is_file():
        _fail(f"STRATA_FIXTURES={fx} has no gguf/manifest.json")
    for mod in ("numpy", "gguf"):
        try:
            __import__(mod)
        except ImportError as e:
            _fail(f"the Python package {mod!r} is needed ({e}); pip install numpy gguf")
    try:
        import strata
        strata.version()
    except ImportError as e:
        _fail(f"cannot load the strata bindings / library: {e}")


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """$STRATA_FIXTURES (the folder holding gguf/ and iq1s/)."""
    return Path(os.environ["STRATA_FIXTURES"])


@pytest.fixture(scope="session")
def gguf_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "gguf"


@pytest.fixture(scope="session")
def manifest(gguf_dir: Path) -> dict:
    with open(gguf_dir / "manifest.json", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def valid_files(manifest: dict) -> dict:
    """manifest valid_files by file name."""
    return {v["file"]: v for v in manifest["valid_files"]}


def fresh_seed(label: str) -> int:
    """A fresh random seed, printed under ``label``; STRATA_TEST_SEED=N replays a printed one."""
    replay = os.environ.get("STRATA_TEST_SEED")
    value = int(replay) if replay else int.from_bytes(os.urandom(8), "little")
    print(f"{label}: seed {value}")
    return value


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """A fresh random seed for np.random.default_rng, printed (and put in assertion messages);
    STRATA_TEST_SEED=N replays a printed one."""
    return fresh_seed(f"{request.node.name}: np.random.default_rng")
