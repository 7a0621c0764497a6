"""Loading the library, versions, status and type names."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import strata

HEADER = Path(__file__).resolve().parents[3] / "include" / "strata" / "strata.h"


def _header_define(name: str) -> int:
    m = re.search(rf"#define {name} (\d+)", HEADER.read_text())
    assert m, name
    return int(m.group(1))


def test_the_library_reports_the_headers_versions():
    assert strata.abi_version() == strata.ABI_VERSION == _header_define("STRATA_ABI_VERSION")
    major, minor, patch = (_header_define(f"STRATA_VERSION_{p}") for p in ("MAJOR", "MINOR", "PATCH"))
    assert strata.version() == f"{major}.{minor}.{patch}"
    assert strata.version_number() == major * 1000000 + minor * 1000 + patch
    assert os.path.samefile(strata.library_path(), os.environ["STRATA_LIBRARY"])


def test_status_codes_have_names_and_descriptions():
    for s in strata.Status:
        text = strata.status_string(s)
        assert text and isinstance(text, str), s
    assert strata.status_string(strata.Status.INVALID_ARGUMENT) == "invalid argument"
    assert strata.status_string(12345)
    assert strata.status_name(3) == "FORMAT" and strata.status_name(99) == "UNKNOWN(99)"
    e = strata.StrataError(5, "no key 'x'")
    assert (e.status, e.status_name, e.message) == (5, "NOT_FOUND", "no key 'x'")
    assert "NOT_FOUND" in str(e) and "no key 'x'" in str(e)


def test_tensor_type_names_and_support_follow_ggml():
    names = {0: "f32", 1: "f16", 2: "q4_0", 8: "q8_0", 15: "q8_K", 19: "iq1_s", 30: "bf16", 26: "i32"}
    for tid, name in names.items():
        assert strata.tensor_type_name(tid) == name, tid
        assert strata.tensor_type_id(name) == tid
    assert strata.tensor_type_name(1000) == "unknown" and strata.tensor_type_name(-1) == "unknown"
    # Supported = read and write (quantize from float32); TensorType lists every type strata reads.
    writable = {0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15, 19, 23, 29, 30}  # 9, 15: the activation formats
    assert {t for t in range(64) if strata.tensor_type_supported(t)} == writable
    assert writable < {int(t) for t in strata.TensorType}
    assert strata.tensor_type_id("IQ1_S") == strata.TensorType.IQ1_S == 19
    with pytest.raises(ValueError):
        strata.tensor_type_id("q9_9")


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=60)


def test_a_missing_library_raises_library_not_found_listing_where_it_looked(tmp_path):
    missing = tmp_path / "nowhere" / "libstrata.so"
    r = _python("import strata\n"
                "try:\n    strata.version()\n"
                "except strata.LibraryNotFound as e:\n"
                "    assert isinstance(e, ImportError)\n    print('MESSAGE', e)\n",
                {"STRATA_LIBRARY": str(missing)})
    assert r.returncode == 0, r.stderr
    assert "MESSAGE" in r.stdout and str(missing) in r.stdout and "STRATA_LIBRARY" in r.stdout


def test_without_strata_library_the_loader_searches_the_build_tree_and_the_system(tmp_path):
    r = _python("import strata._lib as L\nprint('\\n'.join(L.candidate_paths()))", {"STRATA_LIBRARY": ""})
    assert r.returncode == 0, r.stderr
    paths = r.stdout.split()
    root = HEADER.parents[2]
    assert paths[0] == str(root / "build" / "lib" / "libstrata.so")
    # Then this Python's prefix (an install into the venv), the system loader, /usr/local last.
    order = [os.path.join(sys.prefix, "lib", "libstrata.so"), "libstrata.so.0", "/usr/local/lib/libstrata.so"]
    assert [p for p in paths if p in order] == order, paths
    assert paths[-1] == "/usr/local/lib64/libstrata.so"
    assert all(p.startswith(str(root)) for p in paths if "/" in p and "build" in p)


def test_a_library_that_is_not_libstrata_is_refused_naming_the_missing_functions(tmp_path):
    # A library that is not libstrata at all: the loader names it and what is missing.
    import ctypes.util
    libm = ctypes.util.find_library("m")
    assert libm
    r = _python("import strata\n"
                "try:\n    strata.version()\n"
                "except strata.LibraryError as e:\n    print('MESSAGE', type(e).__name__, e)\n",
                {"STRATA_LIBRARY": libm})
    assert r.returncode == 0, r.stderr
    assert "MESSAGE LibraryError" in r.stdout and "strata_model_open" in r.stdout


def test_use_library_selects_a_library_before_first_use(tmp_path):
    lib = os.environ["STRATA_LIBRARY"]
    r = _python("import strata\n"
                f"strata.use_library({lib!r})\n"
                "print('VERSION', strata.version())\n"
                "try:\n    strata.use_library('/elsewhere/libstrata.so')\n"
                "except strata.LibraryError as e:\n    print('REFUSED', e)\n",
                {"STRATA_LIBRARY": ""})
    assert r.returncode == 0, r.stderr
    assert "VERSION 0." in r.stdout and "REFUSED" in r.stdout


def test_a_zero_copy_tensor_view_keeps_its_model_alive(gguf_dir):
    import gc
    view = strata.Model(gguf_dir / "tiny-model.gguf").tensor_bytes("vec.q8_0", copy=False)
    gc.collect()
    assert view.readonly and len(view) == 68
    assert bytes(view) == (gguf_dir / "tiny-model.gguf").read_bytes()[5824 + 3520:5824 + 3520 + 68]
