"""Where the tests of examples/ find what they run: the example programs under the build folder
(examples/<folder>/<program>), the example scripts in the source tree, and small models."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

import pytest

from pipeline_util import build_dir  # tests/python is on sys.path under pytest

SOURCE_ROOT = Path(__file__).resolve().parents[3]
RUN_TIMEOUT_S = 120


def example_program(folder: str, name: str) -> Path:
    """build/examples/FOLDER/NAME; a missing one fails the test saying how to build it."""
    p = build_dir() / "examples" / folder / name
    if not p.is_file():
        pytest.fail(f"{p} is missing: cmake --build BUILD --target {name} (STRATA_BUILD_EXAMPLES=ON)")
    return p


def example_script(folder: str, name: str) -> Path:
    p = SOURCE_ROOT / "examples" / folder / name
    assert p.is_file(), f"{p} is missing"
    return p


def run(cmd: Sequence[object], env: Optional[dict] = None,
        timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    """The command's result (stdout as bytes: generated pieces need not be valid UTF-8)."""
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full,
                          timeout=timeout)


def run_python(script: Path, *args: object, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """SCRIPT under this interpreter, with the bindings of this tree and this library."""
    bindings = str(SOURCE_ROOT / "bindings" / "python")
    path = os.pathsep.join(p for p in (bindings, os.environ.get("PYTHONPATH", "")) if p)
    return run([sys.executable, script, *args], env={"PYTHONPATH": path, **(env or {})})


def described(r: subprocess.CompletedProcess) -> str:
    """The result in an assertion message."""
    return (f"exit {r.returncode}\nstdout: {r.stdout!r}\n"
            f"stderr:\n{r.stderr.decode('utf-8', 'replace')}")


def synthetic_llama(directory: Path, n_layer: int = 6, seed: int = 11) -> str:
    """A small random llama model (f32 weights, byte vocabulary) written with the bindings."""
    from _synth import write_model

    path = Path(directory) / f"llama-{n_layer}-{seed}.gguf"
    if not path.is_file():
        write_model(path, seed, arch="llama", wtype="f32", n_layer=n_layer, n_ctx_train=2048)
    return str(path)
