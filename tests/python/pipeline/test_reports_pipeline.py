"""strata-bench and strata-eval through a three-stage pipeline (the tool's own process as the head,
two strata-worker processes on loopback): both reports validate, the deployment names every stage
with its layer range, each link keeps its configured and observed socket settings apart, and the
token counts (and, greedy or seeded, the tokens themselves) equal a local run of the same settings.
The pipeline runs use --wire f32: hidden states as f32 keep the logits bit-identical to one process
(the default f16 wire is close but may flip a near-tie of a random model's logits)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import strata
from strata import report as R

from _report_tools import SUITES, run
from pipeline_util import WorkerPool, skip_unless_pipelines

N_LAYER = 6  # three stages of two layers each, or however the planner splits them
BENCH_ARGS = ["--prompt-tokens", "32", "--gen-tokens", "8", "--repeat", "2", "--threads", "1"]
EVAL_ARGS = ["--max-tokens", "8", "--threads", "1"]


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reports-pipeline-model") / "tiny6.gguf"
    run("strata-mkmodel", "--arch", "llama", "--preset", "tiny", "--n-layer", str(N_LAYER), "--seed", "3", "-o", out)
    skip_unless_pipelines(str(out))
    return out


@pytest.fixture(scope="module")
def workers(model, tmp_path_factory) -> list[str]:
    pool = WorkerPool(tmp_path_factory.mktemp("reports-pipeline-workers"), heartbeat_ms=200, peer_timeout_ms=5000)
    try:
        yield [w.address for w in pool.spawn_n([str(model)], 2)]
    finally:
        pool.close()


def _worker_flags(workers: list[str]) -> list[str]:
    return [flag for address in workers for flag in ("--worker", address)] + ["--wire", "f32"]


def _load_valid(path: Path) -> dict:
    text = path.read_text()
    assert R.validate(text) == [], R.validate(text)
    return json.loads(text)


def _check_pipeline_sections(doc: dict, workers: list[str]) -> None:
    nodes = doc["deployment"]["nodes"]
    assert len(nodes) == 3, nodes
    assert [n["address"] for n in nodes[1:]] == workers
    ranges = [(n["layers"]["begin"], n["layers"]["end"]) for n in nodes]
    assert ranges[0][0] == 0 and ranges[-1][1] == N_LAYER, ranges
    assert all(a < b for a, b in ranges) and all(ranges[i][1] == ranges[i + 1][0] for i in range(2)), ranges

    links = doc["transport"]["links"]
    assert [(l["from"], l["to"]) for l in links] == [("head", nodes[1]["name"]), ("head", nodes[2]["name"])]
    for link in links:
        configured, observed = link["configured"], link["observed"]
        assert link["kind"] == "tcp" and configured["source"] != observed["source"]
        # Observed on the connected socket: the interface used, its MTU, the kernel's buffer sizes.
        assert isinstance(observed["interface"], str) and observed["interface"], observed
        assert observed["mtu_bytes"] > 0 and observed["send_buffer_bytes"] > 0 and observed["recv_buffer_bytes"] > 0
        # Nothing observed is copied into the configured side (no interface or MTU was configured).
        assert configured["interface"] is None and configured["mtu_bytes"] is None, configured
        assert configured["other"]["wire_dtype"] == "f32" and "wire_dtype" not in observed["other"]


@pytest.fixture(scope="module")
def bench_reports(model, workers, tmp_path_factory) -> tuple[dict, dict, str]:
    d = tmp_path_factory.mktemp("reports-pipeline-bench")
    run("strata-bench", model, *_worker_flags(workers), "-o", d / "R.json", *BENCH_ARGS, timeout=300)
    run("strata-bench", model, "-o", d / "local.json", *BENCH_ARGS, timeout=300)
    return _load_valid(d / "R.json"), _load_valid(d / "local.json"), (d / "R.md").read_text()


@pytest.fixture(scope="module")
def eval_reports(model, workers, tmp_path_factory) -> tuple[dict, dict, Path, Path]:
    d = tmp_path_factory.mktemp("reports-pipeline-eval")
    suite = SUITES / "math-small.jsonl"
    run("strata-eval", model, suite, *_worker_flags(workers), "-o", d / "E.json", *EVAL_ARGS, timeout=300)
    run("strata-eval", model, suite, "-o", d / "local.json", *EVAL_ARGS, timeout=300)
    return _load_valid(d / "E.json"), _load_valid(d / "local.json"), d / "E.json", d / "local.json"


def test_bench_report_names_three_stages_and_keeps_link_sides_apart(bench_reports, workers):
    doc, _, md = bench_reports
    _check_pipeline_sections(doc, workers)
    assert "| setting | configured | observed |" in md and md.count("### head → stage") == 2
    assert any(b["name"] == "pipeline link counters" for b in doc["benchmarks"])


def test_bench_through_the_pipeline_counts_and_generates_the_local_tokens(bench_reports):
    doc, local, _ = bench_reports

    def runs(d: dict) -> list[dict]:
        return [r for b in d["benchmarks"] if b.get("kind") == "prompt_length" for r in b["runs"]]

    got, want = runs(doc), runs(local)
    assert len(got) == len(want) == 3  # one warm-up and two measured runs
    for g, w in zip(got, want):
        assert g["warmup"] == w["warmup"]
        assert (g["prompt_tokens"], g["output_tokens"]) == (w["prompt_tokens"], w["output_tokens"]) == (32, 8)
        assert g["output_token_ids"] == w["output_token_ids"]  # greedy: the same tokens
        assert len(g["token_times_s"]) == 8


def test_wire_needs_a_worker(model, tmp_path):
    r = run("strata-bench", model, "-o", tmp_path / "x.json", "--wire", "f32", check=False)
    assert r.returncode == 2 and "--wire" in r.stderr
    r = run("strata-eval", model, SUITES / "math-small.jsonl", "-o", tmp_path / "x.json", "--worker", "127.0.0.1:1",
            "--wire", "f8", check=False)
    assert r.returncode == 2 and "--wire must be f16, bf16 or f32" in r.stderr


def test_eval_report_through_the_pipeline_matches_the_local_run(eval_reports, workers):
    doc, local, path, local_path = eval_reports
    _check_pipeline_sections(doc, workers)
    assert local["deployment"]["nodes"][0]["layers"] == {"begin": 0, "end": N_LAYER}
    got, want = doc["evaluations"][0], local["evaluations"][0]
    assert got["score"]["n_tasks"] == want["score"]["n_tasks"] == len(got["tasks"])
    for g, w in zip(got["tasks"], want["tasks"]):
        a, b = g["attempts"][0], w["attempts"][0]
        assert g["id"] == w["id"] and a["sampling"] == b["sampling"]
        assert (a["prompt_tokens"], a["output_tokens"]) == (b["prompt_tokens"], b["output_tokens"]), g["id"]
        # Greedy tasks and the seeded one alike: the stages compute the local logits exactly.
        assert a["raw_output"] == b["raw_output"] and a["verdict"] == b["verdict"], g["id"]
    assert got["score"]["summary"] == want["score"]["summary"]
    compared = run("strata-eval", "compare", path, local_path, check=False)
    assert compared.stdout.startswith("comparable"), compared.stdout + compared.stderr
