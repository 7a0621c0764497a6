"""bindings/python as a package: a wheel built by this interpreter's setuptools (`pip wheel
--no-build-isolation`, offline), installed with `--no-index` into a fresh virtual environment, then imported from there,
outside the source tree: with $STRATA_LIBRARY, and without it from the environment's own lib/
(where `cmake --install --prefix "$VIRTUAL_ENV"` puts libstrata.so)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

import strata

BINDINGS = Path(__file__).resolve().parents[3] / "bindings" / "python"


def _run(cmd, env=None, cwd=None, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A virtual environment with the package installed from a copy of bindings/python (so that
    nothing the build leaves, such as __pycache__, lands in the source tree)."""
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "src"
    shutil.copytree(BINDINGS, src, ignore=shutil.ignore_patterns("__pycache__"))
    env_dir = tmp / "venv"
    # No pip inside (ensurepip takes seconds): this interpreter's pip installs into it (--python).
    r = _run([sys.executable, "-m", "venv", "--without-pip", env_dir])
    if r.returncode != 0:
        pytest.skip(f"python -m venv is unavailable here: {r.stdout.strip()[-500:]}")
    py = env_dir / "bin" / "python"
    r = _run([sys.executable, "-m", "pip", "--version"])
    if r.returncode != 0:
        pytest.skip(f"this interpreter has no pip: {r.stdout.strip()[-500:]}")
    wheels = tmp / "wheels"
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-q",
              "-w", wheels, src], env=_clean_env())
    assert r.returncode == 0, f"pip wheel failed:\n{r.stdout}"
    built = sorted(wheels.glob("strata-0.1.0-*.whl"))
    assert len(built) == 1, f"expected one strata wheel, found {built}"
    r = _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index", "-q", built[0]],
             env=_clean_env())
    if r.returncode != 0 and "no such option: --python" in r.stdout:
        pytest.skip("this pip predates --python (pip 22.3)")
    assert r.returncode == 0, f"pip install failed:\n{r.stdout}"
    # numpy, the one dependency, from this interpreter's environment (--no-deps: nothing fetched).
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "_test_numpy.pth").write_text(str(Path(numpy.__file__).parent.parent) + "\n")
    return env_dir


def _clean_env(**extra: str) -> dict:
    """The environment without this tree's PYTHONPATH (ctest points it at bindings/python) or library."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STRATA_LIBRARY", "PYTHONHOME")}
    env.update(extra)
    return env


PROBE = ("import importlib.metadata as md, strata\n"
         "print(strata.__file__)\nprint(strata.library_path())\nprint(strata.version())\n"
         "print(md.version('strata'))\nprint(md.requires('strata'))\n")


def test_the_installed_package_imports_and_calls_the_library(venv, tmp_path):
    r = _run([venv / "bin" / "python", "-c", PROBE], cwd=tmp_path,
             env=_clean_env(STRATA_LIBRARY=os.environ["STRATA_LIBRARY"]))
    assert r.returncode == 0, r.stdout
    where, lib, version, dist_version, requires = r.stdout.splitlines()[-5:]
    assert where.startswith(str(venv)), f"strata imported from {where}, not the environment"
    assert os.path.samefile(lib, os.environ["STRATA_LIBRARY"])
    assert version == strata.version()
    assert dist_version == "0.1.0" and "numpy" in requires


def test_the_installed_package_finds_a_library_installed_into_its_prefix(venv, tmp_path):
    lib_dir = venv / "lib"
    shutil.copy2(os.environ["STRATA_LIBRARY"], lib_dir / "libstrata.so")
    try:
        r = _run([venv / "bin" / "python", "-c", PROBE], cwd=tmp_path, env=_clean_env())
    finally:
        (lib_dir / "libstrata.so").unlink()
    assert r.returncode == 0, r.stdout
    lib = r.stdout.splitlines()[-4]
    assert lib == str(lib_dir / "libstrata.so"), r.stdout
