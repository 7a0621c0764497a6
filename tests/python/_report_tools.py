"""Shared by the tests of the example programs (CLI): the built programs and a tiny synthetic model."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SUITES = Path(__file__).resolve().parents[2] / "tools" / "strata-eval" / "suites"


def tool(name: str) -> Path:
    build = os.environ.get("STRATA_BUILD_DIR")
    if not build:
        raise pytest.UsageError("STRATA_BUILD_DIR is not set (ctest sets it to the CMake build folder)")
    path = Path(build) / "bin" / name
    if not path.is_file():
        raise pytest.UsageError(f"{path} was not built")
    return path


def run(name: str, *args, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [str(tool(name)), *[str(a) for a in args]]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def tiny_model(directory: Path) -> Path:
    out = directory / "tiny.gguf"
    run("strata-mkmodel", "--arch", "llama", "--preset", "tiny", "--seed", "3", "-o", out)
    return out
