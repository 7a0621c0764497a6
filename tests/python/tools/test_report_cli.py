"""strata-report: validate, and plot writing PNGs that the rewritten Markdown links."""
from __future__ import annotations

import json

from strata import report as R

from _report_tools import run


def _bench_report() -> str:
    runtime = R.runtime()
    runs = [{"label": "warm-up", "warmup": True, "token_times_s": [0.1, 0.2, 0.3]},
            {"label": "repeat 1", "warmup": False, "token_times_s": [0.1, 0.15, 0.22, 0.3]}]
    with R.MemorySampler(cadence_ms=2) as s:
        s.set_context(7)
        sum(range(200000))
    sections = {"title": "plot test", "runtime": runtime, "transport": {"links": []},
                "artifact": {"shards": [], "total_size_bytes": 0, "model_identity": "1" * 64, "architecture": "llama",
                             "tensor_types": [], "labels": {"verified": False, "note": "n", "values": {}}},
                "deployment": {"nodes": [], "kv_type": "f16", "slots": 1, "configured_context_tokens": 64,
                               "model_context_tokens": None, "largest_verified_input_tokens": None},
                "memory": [s.record("this process")], "benchmarks": [{"name": "b", "runs": runs}],
                "evaluations": []}
    return R.assemble(sections)


def test_plot_writes_pngs_linked_from_the_markdown(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(_bench_report())
    out = run("strata-report", "plot", path).stdout
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(pngs) == 2 and any("latency" in p for p in pngs) and any("memory" in p for p in pngs), out
    assert all((tmp_path / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    md = (tmp_path / "r.md").read_text()
    for p in pngs:
        assert f"]({p})" in md


def test_validate_lists_problems_and_fails(tmp_path):
    path = tmp_path / "r.json"
    doc = json.loads(_bench_report())
    doc["deployment"]["slots"] = 0
    path.write_text(json.dumps(doc))
    r = run("strata-report", "validate", path, check=False)
    assert r.returncode == 1 and "/deployment/slots" in r.stdout
    missing = run("strata-report", "validate", tmp_path / "nope.json", check=False)
    assert missing.returncode == 1 and "cannot read" in missing.stderr
