"""strata-eval end to end on a tiny synthetic model (its answers are gibberish, so the scores are
0: these tests check the bookkeeping). Every report is validated by the library's validator."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata import report as R

from _report_tools import SUITES, run, tiny_model


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("eval-model"))


def _load_valid(path: Path) -> dict:
    text = path.read_text()
    assert R.validate(text) == [], R.validate(text)
    return json.loads(text)


def _suite_lines(name: str) -> int:
    return sum(1 for line in (SUITES / name).read_text().splitlines() if line.strip())


def test_math_suite_keeps_first_pass_and_retry_history(model, tmp_path):
    out = tmp_path / "math.json"
    r = run("strata-eval", model, SUITES / "math-small.jsonl", "-o", out, "--max-tokens", "24", "--retry-failed")
    doc = _load_valid(out)
    ev = doc["evaluations"][0]
    n = _suite_lines("math-small.jsonl")
    s = ev["score"]
    assert s["n_tasks"] == n == len(ev["tasks"])
    assert sum(s["first_pass_verdicts"].values()) == n  # every first attempt counted, none dropped
    assert all(t["attempts"][0]["round"] == 0 for t in ev["tasks"])
    assert len(ev["rounds"]) == 1 and s["rounds"][0]["retried"] == n - s["first_pass_passed"]
    assert r.stdout.strip() == s["summary"] and s["summary"].startswith(f"first pass {s['first_pass_passed']}/{n}")
    # Per-task controls from the suite are recorded as such (arith-change asks for temperature 0.7).
    by_id = {t["id"]: t for t in ev["tasks"]}
    assert by_id["arith-change"]["attempts"][0]["sampling"]["temperature"] == 0.7
    assert by_id["arith-apples"]["attempts"][0]["sampling"]["temperature"] == 0
    for t in ev["tasks"]:
        a = t["attempts"][0]
        assert a["output_tokens"] <= a["sampling"]["max_tokens"] == 24
        assert a["prompt_tokens"] > 0
        if a["verdict"] == "token_cap":
            assert a["output_tokens"] == 24
    md = out.with_suffix(".md").read_text()
    assert "first pass" in md and "after retry round 1" in md and s["summary"] in md
    assert doc["artifact"]["shards"][0]["path"].endswith("tiny.gguf")
    assert doc["memory"] and doc["memory"][0]["summary"]["n_samples"] >= 2


def test_timeouts_are_failures_in_the_denominator_and_retries_have_their_own_limit(model, tmp_path):
    out = tmp_path / "code.json"
    run("strata-eval", model, SUITES / "code-small.jsonl", "-o", out, "--max-tokens", "16", "--timeout", "0.000001",
        "--retry-timeouts", "--retry-timeout", "60")
    ev = _load_valid(out)["evaluations"][0]
    n = _suite_lines("code-small.jsonl")
    s = ev["score"]
    assert s["first_pass_verdicts"]["timeout"] == n and s["first_pass_passed"] == 0 and s["n_tasks"] == n
    assert ev["rounds"][0]["retry_verdicts"] == ["timeout"] and ev["rounds"][0]["timeout_s"] == 60
    for t in ev["tasks"]:
        first, retry = t["attempts"]
        assert first["timeout_s"] == 0.000001 and retry["timeout_s"] == 60 and retry["round"] == 1
        if retry["verdict"] in ("pass", "fail"):
            assert retry["sandbox"]["limits"]["cpu_seconds"] > 0  # the code ran in the sandbox
    assert f"{n} timeouts at 1 µs" in s["summary"] and "60 s" in s["summary"]
    md = out.with_suffix(".md").read_text()
    assert "timeout 1 µs" in md and "e-06" not in md  # the JSON keeps 1e-06; the Markdown reads it


def test_no_timeout_reads_none_in_the_markdown(model, tmp_path):
    out = tmp_path / "none.json"
    run("strata-eval", model, SUITES / "math-small.jsonl", "-o", out, "--max-tokens", "4", "--retry-failed")
    doc = _load_valid(out)
    assert all(a["timeout_s"] == 0 for t in doc["evaluations"][0]["tasks"] for a in t["attempts"])
    md = out.with_suffix(".md").read_text()
    assert "timeout none" in md and "timeout 0 s" not in md
    assert "| retry the failures with the first-pass limits | fail, token_cap, error | none |" in md


def test_compare_refuses_different_sampling_and_force_prints_differences_first(model, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    suite = SUITES / "math-small.jsonl"
    run("strata-eval", model, suite, "-o", a, "--max-tokens", "8")
    run("strata-eval", model, suite, "-o", b, "--max-tokens", "8", "--temp", "0.5", "--seed", "9")
    same = run("strata-eval", "compare", a, a)
    assert same.stdout.startswith("comparable")
    refused = run("strata-eval", "compare", a, b, check=False)
    assert refused.returncode == 1 and "NOT COMPARABLE" in refused.stdout
    assert "temperature" in refused.stdout and "seed" in refused.stdout and "first pass" not in refused.stdout
    forced = run("strata-eval", "compare", a, b, "--force")
    assert forced.stdout.index("temperature") < forced.stdout.index("first pass")


@pytest.mark.parametrize("line, words", [
    ('{"id": "x", "kind": "math", "prompt": "p"}', "answer"),
    ('{"id": "x", "kind": "poetry", "prompt": "p", "answer": "1"}', "kind"),
    ('{"id": "x", "prompt": "p", "answer": "1", "temperature": -1}', "temperature"),
    ('not json', "not JSON"),
])
def test_a_malformed_suite_is_refused_naming_the_line(model, tmp_path, line, words):
    suite = tmp_path / "bad.jsonl"
    suite.write_text('{"id": "ok", "prompt": "p", "answer": "1"}\n' + line + "\n")
    r = run("strata-eval", model, suite, "-o", tmp_path / "r.json", check=False)
    assert r.returncode == 2 and "bad.jsonl:2:" in r.stderr and words in r.stderr, r.stderr
    assert not (tmp_path / "r.json").exists()


def test_compare_refuses_a_file_that_is_not_a_report(model, tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text('{"schema": "strata.report/1"}')
    r = run("strata-eval", "compare", junk, junk, check=False)
    assert r.returncode == 2 and "not a valid report" in r.stderr
