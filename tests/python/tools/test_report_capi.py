"""The Reports section of strata.h through the Python binding: assembling and validating
reports, the needed-size protocol, evaluation scoring (first pass kept, timeouts in the
denominator, retry history), the comparability check, the sandbox's containment of hostile
code, and the memory sampler."""
from __future__ import annotations

import copy
import ctypes
import json
import os

import pytest

import strata
from strata import report as R

SAMPLING = {"temperature": 0.0, "top_p": 1.0, "top_k": 0, "seed": 0, "max_tokens": 64}


def attempt(verdict: str, round_: int = 0, timeout_s: float = 600, **kw) -> dict:
    a = {"round": round_, "sampling": dict(SAMPLING), "timeout_s": timeout_s, "verdict": verdict,
         "raw_output": "", "extracted_answer": "", "error": "", "prompt_tokens": 10, "output_tokens": 5,
         "wall_s": 1.5, "sandbox": None}
    a.update(kw)
    return a


def field_report_record() -> dict:
    """The field report's HumanEval history: 14/20 first pass, 4 timeouts at 600 s, 2 failures,
    the 4 timeouts retried at 1800 s and passed."""
    tasks = []
    for i in range(20):
        if i in (1, 6, 10, 17):
            attempts = [attempt("timeout"), attempt("pass", 1, 1800)]
        elif i in (2, 7):
            attempts = [attempt("fail")]
        else:
            attempts = [attempt("pass")]
        tasks.append({"id": f"HumanEval/{i}", "kind": "code", "prompt": f"def f{i}():", "attempts": attempts})
    rounds = [{"round": 1, "label": "timeouts at 1800 s", "retry_verdicts": ["timeout"], "timeout_s": 1800,
               "max_tokens": 0}]
    return {"name": "humaneval-20", "rounds": rounds, "tasks": tasks}


def sections(evaluations=()) -> dict:
    return {"title": "unit", "artifact": {"shards": [], "total_size_bytes": 0, "model_identity": "0" * 64,
                                          "architecture": "llama", "tensor_types": [],
                                          "labels": {"verified": False, "note": "n", "values": {}}},
            "runtime": R.runtime(), "transport": {"links": []},
            "deployment": {"nodes": [], "kv_type": "f16", "slots": 1, "configured_context_tokens": 1048576,
                           "model_context_tokens": None, "largest_verified_input_tokens": None},
            "memory": [], "benchmarks": [], "evaluations": list(evaluations)}


def test_schema_version_and_runtime_pin_the_build():
    assert R.schema_version() == "strata.report/1"
    rt = R.runtime()
    assert rt["strata_version"] == strata.version() and rt["git_commit"]
    assert rt["cuda"]["present"] in (True, False)


def test_first_pass_is_kept_beside_the_composite_and_timeouts_stay_in_the_denominator():
    scored = R.eval_score(field_report_record())
    s = scored["score"]
    assert (s["n_tasks"], s["first_pass_passed"], s["composite_passed"]) == (20, 14, 18)
    assert s["first_pass_verdicts"]["timeout"] == 4 and s["first_pass_verdicts"]["fail"] == 2
    assert s["summary"].startswith("first pass 14/20")
    assert "600 s" in s["summary"] and "1800 s" in s["summary"] and s["summary"].endswith("18/20")


def test_a_retry_after_a_pass_or_outside_a_declared_round_is_refused():
    bad = field_report_record()
    bad["tasks"][0]["attempts"].append(attempt("pass", 1, 1800))  # task 0 already passed
    with pytest.raises(strata.StrataError) as e:
        R.eval_score(bad)
    assert e.value.status == strata.Status.INVALID_ARGUMENT and "HumanEval/0" in str(e.value)
    bad = field_report_record()
    bad["tasks"][2]["attempts"].append(attempt("pass", 2))  # no round 2
    with pytest.raises(strata.StrataError):
        R.eval_score(bad)


def test_assemble_validates_and_the_stored_score_must_match_the_attempts():
    scored = R.eval_score(field_report_record())
    text = R.assemble(sections([scored]))
    assert R.validate(text) == []
    doc = json.loads(text)
    doc["evaluations"][0]["score"]["first_pass_passed"] = 18  # a composite passed off as a first pass
    problems = R.validate(json.dumps(doc))
    assert any("first_pass_passed" in p for p in problems), problems
    with pytest.raises(strata.StrataError) as e:
        R.assemble(dict(sections(), deployment={"nodes": []}))
    assert e.value.status == strata.Status.FORMAT and "deployment" in str(e.value)


@pytest.mark.parametrize("text", [b"", b"{", b"[1,2]", b"\xff\xfe", b"[" * 10000, b'{"schema": 5}'])
def test_untrusted_report_text_gives_problems_never_a_crash(text):
    assert R.validate(text) != []
    with pytest.raises(strata.StrataError):
        R.markdown(text)


def test_text_calls_report_the_size_they_need():
    lib = strata._lib.lib()
    needed = ctypes.c_size_t()
    assert lib.strata_report_runtime_json(None, 0, ctypes.byref(needed)) == strata.Status.BUFFER_TOO_SMALL
    buf = ctypes.create_string_buffer(needed.value)
    assert lib.strata_report_runtime_json(buf, needed.value, ctypes.byref(needed)) == 0
    assert len(buf.value) + 1 == needed.value
    assert lib.strata_report_validate(None, 5, None, 0, None) == strata.Status.INVALID_ARGUMENT
    assert "report_json" in strata._lib.last_error()


def test_compare_refuses_different_sampling_controls_and_lists_every_difference():
    a = R.assemble(sections([R.eval_score(field_report_record())]))
    rec = field_report_record()
    for t in rec["tasks"][:3]:
        t["attempts"][0]["sampling"]["temperature"] = 1.0
    rec["tasks"][4]["attempts"][0]["sampling"]["max_tokens"] = 2048
    b = R.assemble(sections([R.eval_score(rec)]))
    assert R.eval_compare(a, a) == {"comparable": True, "differences": []}
    c = R.eval_compare(a, b)
    assert not c["comparable"]
    whats = [d["what"] for d in c["differences"]]
    assert sum("temperature" in w for w in whats) == 3 and sum("max_tokens" in w for w in whats) == 1, whats
    assert not R.eval_compare(a, "not json")["comparable"]


def test_memory_sampler_states_cadence_and_keeps_sampled_peak_apart_from_the_hwm():
    with R.MemorySampler(cadence_ms=2) as s:
        s.set_context(100)
        block = bytearray(32 << 20)  # something to see
        for i in range(0, len(block), 4096):
            block[i] = 1
        s.set_context(200)
    rec = s.record("test")
    assert rec["cadence_ms"] == 2 and rec["node"] == "test" and "cadence" in rec["method"]
    summary = rec["summary"]
    assert summary["n_samples"] == len(rec["samples"]) >= 2
    assert summary["sampled_peak_rss_bytes"] == max(x["rss_bytes"] for x in rec["samples"])
    assert summary["kernel_hwm_bytes"] >= summary["sampled_peak_rss_bytes"]
    assert rec["samples"][-1]["context_tokens"] == 200
    with pytest.raises(strata.StrataError):
        s.start()  # a second start
    with pytest.raises(strata.StrataError):
        R.MemorySampler(cadence_ms=0)
    s.close()


LIMITS = {"cpu_seconds": 1, "wall_seconds": 5, "address_space_bytes": 256 << 20, "file_size_bytes": 1 << 20,
          "max_processes": 8}


def _py(code: str) -> dict:
    return R.sandbox_run(["python3", "-I", "prog.py"], files={"prog.py": code}, limits=LIMITS)


def test_sandbox_contains_a_task_that_loops_forever():
    r = _py("while True:\n    pass\n")
    assert r["started"] and r["exit_code"] is None and (r["cpu_limit_hit"] or r["timed_out"]), r["outcome"]
    assert r["limits"]["cpu_seconds"] == 1


def test_sandbox_contains_unbounded_allocation():
    r = _py("x = []\nwhile True:\n    x.append(bytearray(1 << 20))\n")
    assert r["started"] and r["exit_code"] != 0 and not r["timed_out"], r
    assert "MemoryError" in r["stderr"] or r["signal"] is not None
    assert r["limits"]["address_space_bytes"] == 256 << 20


def test_sandbox_contains_a_huge_file():
    r = _py("with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 65536)\n")
    assert r["started"] and r["exit_code"] != 0, r
    assert r["file_size_limit_hit"] or "File too large" in r["stderr"] or "OSError" in r["stderr"], r


def test_sandbox_refuses_the_network_or_says_it_could_not():
    r = _py("import socket\ns = socket.create_connection(('127.0.0.1', 9), timeout=2)\nprint('connected')\n")
    if os.geteuid() == 0:
        assert r["network_isolated"] and r["exit_code"] != 0 and "connected" not in r["stdout"], r
    else:
        assert not r["network_isolated"] and "not isolated" in r["network"]


def test_sandbox_requests_are_checked():
    for bad in ('{"argv": []}', '{"argv": "ls"}', '{"argv": ["true"], "files": [{"name": "../x", "content": ""}]}',
                '{"argv": ["true"], "limits": {"cpu_seconds": -1}}', "[]", "{"):
        with pytest.raises(strata.StrataError):  # the raw request text, as a C caller sends it
            R._text_call("strata_report_sandbox_run", bad.encode(), len(bad))
