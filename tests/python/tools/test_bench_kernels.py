"""strata-bench kernels and strata_cuda_kernel_bench_json. Without a usable GPU (or without the
CUDA backend): a clear "no CUDA device: REASON" and exit status 1 (STRATA_ERR_UNSUPPORTED through
the C ABI), never a crash. On a GPU machine the same tests run the ceilings only (a filter that
matches no kernel row) and check that the raw times sit beside every derived figure."""
from __future__ import annotations

import ctypes
import json

from strata import report as R
from strata._lib import lib

from _report_tools import run

UNSUPPORTED = 4
INVALID_ARGUMENT = 1


class Params(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("samples", ctypes.c_int32), ("sample_seconds", ctypes.c_double),
                ("quick", ctypes.c_int32), ("ceilings_only", ctypes.c_int32), ("filter", ctypes.c_char_p),
                ("log", ctypes.c_void_p), ("log_user_data", ctypes.c_void_p)]


def _bench(params: Params | None, capacity: int = 0):
    f = lib().strata_cuda_kernel_bench_json
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.POINTER(Params), ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    needed = ctypes.c_size_t(0)
    buf = ctypes.create_string_buffer(capacity) if capacity else None
    status = f(ctypes.byref(params) if params is not None else None, buf, capacity, ctypes.byref(needed))
    return status, needed.value, buf


def _defaults() -> Params:
    p = Params()
    f = lib().strata_cuda_kernel_bench_default_params
    f.restype = None
    f.argtypes = [ctypes.POINTER(Params)]
    f(ctypes.byref(p))
    return p


def test_defaults_and_bad_params_are_refused_before_any_device_is_touched():
    p = _defaults()
    assert p.struct_size == ctypes.sizeof(Params) and p.samples == 7 and abs(p.sample_seconds - 0.02) < 1e-12
    assert p.quick == 0 and p.ceilings_only == 0 and p.filter is None
    bad = _defaults()
    bad.samples = 0
    assert _bench(bad)[0] == INVALID_ARGUMENT
    assert "samples" in lib().strata_last_error().decode()
    bad = _defaults()
    bad.sample_seconds = float("nan")
    assert _bench(bad)[0] == INVALID_ARGUMENT
    bad = _defaults()
    bad.struct_size = 4
    assert _bench(bad)[0] == INVALID_ARGUMENT


def test_the_c_abi_says_why_there_is_no_device_or_runs_the_ceilings():
    p = _defaults()
    p.ceilings_only = 1
    p.samples = 1
    p.sample_seconds = 0.001
    status, needed, _ = _bench(p)
    if status == UNSUPPORTED:
        msg = lib().strata_last_error().decode()
        assert msg.startswith("no CUDA device: ") or msg == "built without the CUDA backend", msg
        return
    # A GPU: the first call ran the suite and kept the result; the second hands it out.
    assert status == 6 and needed > 1  # STRATA_ERR_BUFFER_TOO_SMALL with the size
    status, _, buf = _bench(p, needed)
    assert status == 0
    doc = json.loads(buf.value.decode())
    assert doc["rows"] == [] and doc["options"]["ceilings_only"] is True
    c = doc["ceilings"]["stream_read"]
    assert c["gb_per_s"] > 0 and c["time_s"] > 0 and len(c["samples_s"]) == 1


def test_strata_bench_kernels_without_a_gpu_prints_the_reason(tmp_path):
    out = tmp_path / "kernels.json"
    r = run("strata-bench", "kernels", "--filter", "no-such-row", "--samples", "1", "--sample-ms", "1", "-o", out,
            check=False)
    if r.returncode == 1:
        assert "strata-bench kernels: no CUDA device: " in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and not out.exists()
        return
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert R.validate(text) == []
    doc = json.loads(text)
    names = [b["name"] for b in doc["benchmarks"]]
    assert "ceiling stream_read" in names and "ceiling device_copy" in names
    assert out.with_suffix(".md").is_file()


def test_bad_arguments_exit_2():
    r = run("strata-bench", "kernels", "--samples", "0", check=False)
    assert r.returncode == 2 and "--samples" in r.stderr


def test_a_benchmark_summary_table_renders_as_a_markdown_table():
    """strata-bench kernels puts its table in a benchmark's "table" member ({"columns", "rows"}):
    the Markdown shows it as a table; a malformed one falls back to JSON, never an error."""
    table = {"columns": ["kernel", "time us", "% of ceiling"],
             "rows": [["gemv iq1_s 4096x4096 tokens=1", "7.50", "88.1"], ["a | b", 1.5, None]]}
    bad = {"columns": ["one", "two"], "rows": [["only one cell"]]}
    doc = {"title": "unit", "artifact": {"shards": [], "total_size_bytes": 0, "model_identity": "0" * 64,
                                         "architecture": "none", "tensor_types": [],
                                         "labels": {"verified": False, "note": "n", "values": {}}},
           "runtime": R.runtime(), "transport": {"links": []},
           "deployment": {"nodes": [], "kv_type": "f16", "slots": 1, "configured_context_tokens": 0,
                          "model_context_tokens": None, "largest_verified_input_tokens": None},
           "memory": [], "evaluations": [],
           "benchmarks": [{"name": "kernel table", "kind": "kernel_table", "table": table},
                          {"name": "broken", "table": bad}]}
    md = R.markdown(R.assemble(doc))
    assert "| kernel | time us | % of ceiling |" in md
    assert "| gemv iq1_s 4096x4096 tokens=1 | 7.50 | 88.1 |" in md
    assert "a \\| b" in md
    assert '"only one cell"' in md  # the malformed table stays visible as JSON


def raw_doc(errors=()) -> dict:
    """A saved strata_cuda_kernel_bench_json result, shaped as cuda/bench/kernel_bench.cpp writes it."""
    timing = {"time_s": 7.5e-6, "samples_s": [7.4e-6, 7.5e-6, 7.7e-6], "launches_per_sample": 2667,
              "warmup_launches": 3}
    gemv = {"name": "gemv iq1_s 4096x4096 tokens=1", "group": "gemv", **timing, "bytes_per_launch": 3276800.0,
            "bytes_counted": "the weight matrix's bytes", "figure_unit": "GB/s", "figure": 436.9,
            "ceiling_name": "stream_read", "ceiling": 4200.0, "percent_of_ceiling": 10.4,
            "percent_of_device_copy": 11.0, "kernel": "gemv", "type": "iq1_s", "rows": 4096, "cols": 4096,
            "tokens": 1, "weight_copies_rotated": 62, "rotated_bytes": 203161600.0, "goal_percent": 85.0,
            "quantize_activations_s": 2e-6, "quantize_activations_samples_s": [2e-6], "output_finite": True}
    mma = {"name": "prefill iq1_s 4096x14336 tokens=512 mma", "group": "prefill", **timing,
           "flops_per_launch": 6.0e10, "figure_unit": "TFLOP/s", "figure": 350.0,
           "ceiling_name": "cublas_f16 4096x14336 tokens=512", "ceiling": 600.0, "percent_of_ceiling": 58.3,
           "goal_percent": 60.0, "kernel": "mma", "output_finite": False}
    # A deepseek2/Kimi row: the ratio uses the unique cache bytes, the bytes requested beside them.
    mla = {"name": "mla_attention decode n_past=4096 (64 heads, C 512, R 64, f16 latent cache)", "group": "mla",
           **timing, "bytes_per_launch": 4719744.0, "bytes_counted": "unique bytes", "figure_unit": "GB/s",
           "figure": 629.3, "ceiling_name": "stream_read", "ceiling": 4200.0, "percent_of_ceiling": 15.0,
           "percent_of_device_copy": 16.6, "kernel": "mla_attention", "n_head": 64, "kv_lora": 512, "n_rot": 64,
           "tokens": 1, "n_past": 4096, "positions_read": 4097, "bytes_unique": 4719744.0,
           "bytes_requested": 302063616.0, "ratio_uses": "bytes_unique", "cache_fits_l2": True,
           "cache_copies_rotated": 43, "output_finite": True}
    return {"device": {"name": "NVIDIA H200", "compute_capability": "9.0", "cuda_runtime_version": "13.0",
                       "cuda_driver_version": "13.0", "cublas_version": 130000},
            "method": {"timing": "CUDA events"}, "options": {"samples": 3},
            "ceilings": {"stream_read": {"name": "stream_read", **timing, "bytes_per_launch": 1 << 30,
                                         "gb_per_s": 4200.0},
                         "device_copy": {"name": "device_copy", **timing, "bytes_copied_per_launch": 1 << 29,
                                         "copied_gb_per_s": 1900.0, "traffic_gb_per_s": 3800.0}},
            "rows": [gemv, mma, mla], "errors": list(errors)}


def test_a_saved_run_is_printed_and_reported_with_raw_times_beside_every_figure(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps(raw_doc()))
    out = tmp_path / "kernels.json"
    r = run("strata-bench", "kernels", "--from-raw", raw, "-o", out)
    assert "NVIDIA H200" in r.stdout and "gemv iq1_s 4096x4096 tokens=1" in r.stdout
    line = next(l for l in r.stdout.splitlines() if l.startswith("prefill iq1_s 4096x14336"))
    assert "350.00" in line and "600.00" in line and "58.3" in line and line.rstrip().endswith("NO")
    text = out.read_text()
    assert R.validate(text) == []
    doc = json.loads(text)
    rows = [b for b in doc["benchmarks"] if b.get("kind") == "kernel"]
    assert [b["name"] for b in rows] == [x["name"] for x in raw_doc()["rows"]]
    assert rows[0]["time_s"] == 7.5e-6 and rows[0]["samples_s"] == [7.4e-6, 7.5e-6, 7.7e-6]
    assert rows[0]["bytes_per_launch"] == 3276800.0 and rows[0]["figure"] == 436.9
    names = [b["name"] for b in doc["benchmarks"]]
    assert {"kernel table", "device", "method", "ceiling stream_read", "ceiling device_copy"} <= set(names)
    md = out.with_suffix(".md").read_text()
    assert "| kernel | time us | figure | unit | ceiling |" in md
    assert "| gemv iq1_s 4096x4096 tokens=1 | 7.50 | 436.90 | GB/s | 4200.00 | stream_read | 10.4 | 85 | yes |" in md
    mla = next(b for b in rows if b["kernel"] == "mla_attention")
    assert mla["bytes_per_launch"] == mla["bytes_unique"] and mla["bytes_requested"] == 64 * mla["bytes_unique"]
    assert mla["ratio_uses"] == "bytes_unique"
    assert ("| mla_attention decode n_past=4096 (64 heads, C 512, R 64, f16 latent cache) | 7.50 | 629.30 | GB/s "
            "| 4200.00 | stream_read | 15.0 | - | yes |") in md


def test_failed_rows_give_exit_status_3_and_a_broken_file_exit_1(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps(raw_doc(errors=[{"name": "gemv q8_0 4096x14336 tokens=8", "error": "gemv: boom"}])))
    r = run("strata-bench", "kernels", "--from-raw", raw, check=False)
    assert r.returncode == 3 and "ERROR gemv q8_0 4096x14336 tokens=8: gemv: boom" in r.stdout
    raw.write_text('{"rows": []}')
    r = run("strata-bench", "kernels", "--from-raw", raw, check=False)
    assert r.returncode == 1 and "has no" in r.stderr
    r = run("strata-bench", "kernels", "--from-raw", tmp_path / "missing.json", check=False)
    assert r.returncode == 1 and "cannot read" in r.stderr


def test_the_runtime_section_says_what_cuda_reported():
    """With the CUDA backend built in, the runtime section carries the runtime's version and the
    GPUs, or the runtime's reason there is none; without it, that the backend is absent."""
    c = R.runtime()["cuda"]
    if c["present"]:
        assert c["runtime_version"] and c["gpus"] and all(g["name"] for g in c["gpus"])
        assert c["absent_reason"] is None
    else:
        assert c["absent_reason"] and c["gpus"] == []
        if c["runtime_version"] is not None:  # the CUDA backend is built in: the runtime's own words
            assert c["absent_reason"].startswith("built with the CUDA backend, but no usable device: ")
