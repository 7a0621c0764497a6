"""strata-bench's default mode end to end on a tiny synthetic model: stated lengths kept as exact
counts, warm-up recorded and excluded, per-token timestamps, spread across repeats, memory with
its method, and a context probe that never turns a configured window into a verified input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata import report as R

from _report_tools import run, tiny_model


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> tuple[dict, Path, str]:
    d = tmp_path_factory.mktemp("bench")
    out = d / "bench.json"
    r = run("strata-bench", tiny_model(d), "-o", out, "--repeat", "3", "--warmup", "1", "--prompt-tokens", "16,48",
            "--gen-tokens", "6", "--context-probe", "480", "--threads", "1")
    text = out.read_text()
    assert R.validate(text) == [], R.validate(text)
    return json.loads(text), out, r.stdout


def test_every_run_keeps_exact_counts_and_per_token_timestamps(bench):
    doc, _, _ = bench
    lengths = [b for b in doc["benchmarks"] if "prompt_tokens_stated" in b]
    assert [b["prompt_tokens_stated"] for b in lengths] == [16, 48]
    for b in lengths:
        runs = b["runs"]
        assert len(runs) == 4 and [r["warmup"] for r in runs] == [True, False, False, False]
        assert b["measured_runs"] == 3 and b["warmup_runs_excluded"] == 1
        for r in runs:
            assert r["prompt_tokens"] == b["prompt_tokens_stated"] and r["output_tokens"] == 6
            t = r["token_times_s"]
            assert len(t) == 6 and t == sorted(t) and t[0] >= r["prefill_s"]
            assert len(r["output_token_ids"]) == 6
        spread = b["spread"]["prefill_tokens_per_s"]
        measured = sorted(r["prefill_tokens_per_s"] for r in runs if not r["warmup"])
        assert spread["n"] == 3 and spread["min"] == measured[0] and spread["max"] == measured[-1]
        assert spread["median"] == measured[1] and spread["stddev"] >= 0
        assert set(b["spread"]) >= {"prefill_s", "decode_s", "decode_tokens_per_s", "time_to_first_token_s"}


def test_the_probe_states_completed_input_and_does_not_claim_verification(bench):
    doc, out, stdout = bench
    probe = next(b for b in doc["benchmarks"] if b["name"].startswith("context probe"))
    assert probe["input_tokens_stated"] == 480 and len(probe["runs"]) == 3
    assert all(r["input_tokens"] == 480 == r["prompt_tokens"] for r in probe["runs"])
    assert probe["completed_input_tokens"] == 480
    # A random model recalls nothing: the honest result is "completed, not verified".
    if not all(r["recalled"] for r in probe["runs"]):
        assert probe["largest_verified_input_tokens"] is None
        assert doc["deployment"]["largest_verified_input_tokens"] is None
        assert "NOT verified" in probe["result"] and "NOT verified" in stdout
        # A probe ran: the Markdown says "none verified" beside what completed, never "not measured".
        md = out.with_suffix(".md").read_text()
        window = doc["deployment"]["configured_context_tokens"]
        assert (f"| largest input actually completed and verified | none verified (a 480-token input completed, "
                f"not verified; configured window {window} tokens) |") in md
        assert "not measured" not in md
    assert doc["deployment"]["configured_context_tokens"] >= 480


def test_memory_is_sampled_with_its_method_and_the_markdown_exists(bench):
    doc, out, _ = bench
    mem = doc["memory"][0]
    assert mem["summary"]["n_samples"] >= 2 and mem["cadence_ms"] > 0 and "cadence" in mem["method"]
    assert max(s["context_tokens"] for s in mem["samples"]) >= 48
    md = out.with_suffix(".md").read_text()
    assert "median" in md and "largest input actually completed and verified" in md


def test_markdown_gives_each_prompt_length_a_run_table_not_a_json_dump(bench):
    doc, out, _ = bench
    md = out.with_suffix(".md").read_text()
    assert "```json" not in md.split("## Benchmarks")[1]
    assert md.count("| run | warm-up | prompt tokens | output tokens | prefill | decode | decode tok/s |") == 2
    assert "| 1 | yes | 16 | 6 |" in md and "| 4 | no | 48 | 6 |" in md
    assert "Per-token timestamps (`token_times_s`) are kept in the JSON report" in md
    first = doc["benchmarks"][0]["runs"][0]["token_times_s"][0]
    assert repr(first) not in md  # the timestamps themselves are not dumped
    assert "| prefill_s |" in md and "| depth | fact at token |" in md


def test_without_a_probe_the_markdown_says_not_measured(tmp_path):
    out = tmp_path / "noprobe.json"
    run("strata-bench", tiny_model(tmp_path), "-o", out, "--repeat", "1", "--warmup", "0", "--prompt-tokens", "8",
        "--gen-tokens", "2", "--threads", "1")
    md = out.with_suffix(".md").read_text()
    assert "| largest input actually completed and verified | not measured (no context probe ran) |" in md


def test_bad_arguments_are_refused_with_status_2(tmp_path):
    r = run("strata-bench", tmp_path / "m.gguf", "-o", tmp_path / "x.json", "--prompt-tokens", "12,abc", check=False)
    assert r.returncode == 2 and "--prompt-tokens" in r.stderr
    r = run("strata-bench", tmp_path / "m.gguf", check=False)
    assert r.returncode == 2 and "-o" in r.stderr
