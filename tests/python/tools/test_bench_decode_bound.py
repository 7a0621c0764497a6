"""strata-bench decode: the default mode with the decode bound. The weight bytes per decoded
token are checked against the tensor table read independently here (every matrix once, one
token_embd row, the head; tied models read token_embd whole), on an untied and a tied model;
on the CPU the streaming-read ceiling is absent with its reason, never a made-up number."""
from __future__ import annotations

import json

import pytest

import strata
from strata import report as R

from _report_tools import run


def expected_bytes(path) -> int:
    m = strata.Model(str(path))
    tensors = {t.name: t for t in m.tensors}
    embd = tensors["token_embd.weight"]
    row = embd.n_bytes // embd.ne[1]
    head = tensors["output.weight"].n_bytes if "output.weight" in tensors else embd.n_bytes
    matrices = sum(t.n_bytes for n, t in tensors.items()
                   if n not in ("token_embd.weight", "output.weight") and len(t.ne) > 1 and t.ne[1] > 1)
    return matrices + head + row


@pytest.mark.parametrize("tied", [False, True])
def test_decode_reports_bytes_per_token_and_no_cpu_ceiling(tmp_path, tied):
    model = tmp_path / "m.gguf"
    run("strata-mkmodel", "--arch", "llama", "--preset", "tiny", "--seed", "5", "-o", model,
        *(["--tied-output"] if tied else []))
    out = tmp_path / "decode.json"
    r = run("strata-bench", "decode", model, "-o", out, "--prompt-tokens", "16,24", "--gen-tokens", "3",
            "--repeat", "1", "--warmup", "0", "--threads", "1")
    text = out.read_text()
    assert R.validate(text) == []
    doc = json.loads(text)
    b = next(x for x in doc["benchmarks"] if x.get("kind") == "decode_bound")
    assert b["weight_bytes_per_token"] == expected_bytes(model)
    assert b["tied_output"] is tied
    assert b["stream_read_gb_per_s"] is None and b["bound_tokens_per_s"] is None
    assert "CPU" in b["stream_read_absent_reason"]
    assert [p["prompt_tokens"] for p in b["per_prompt"]] == [16, 24]
    assert all(p["percent_of_bound"] is None and p["decode_tokens_per_s_median"] > 0 for p in b["per_prompt"])
    assert "decode bound: " in r.stdout


def test_decode_defaults_to_prompts_of_512_and_4096(tmp_path):
    r = run("strata-bench", "decode", "--help", check=False)
    assert r.returncode == 0 and "512,4096" in r.stdout
    r = run("strata-bench", "decode", tmp_path / "none.gguf", "-o", tmp_path / "x.json", "--device", "tpu", check=False)
    assert r.returncode == 2 and "--device takes cpu or cuda" in r.stderr


def test_decode_on_cuda_says_why_without_a_gpu(tmp_path):
    model = tmp_path / "m.gguf"
    run("strata-mkmodel", "--arch", "llama", "--preset", "tiny", "--seed", "5", "-o", model)
    out = tmp_path / "decode.json"
    r = run("strata-bench", "decode", model, "-o", out, "--prompt-tokens", "16", "--gen-tokens", "3", "--repeat", "1",
            "--warmup", "0", "--device", "cuda", check=False)
    if r.returncode != 0:
        assert r.returncode == 1 and "unsupported" in r.stderr, r.stderr
        assert "CUDA" in r.stderr and not out.exists()
        return
    # A GPU: the bound is measured on it in the same run.
    b = next(x for x in json.loads(out.read_text())["benchmarks"] if x.get("kind") == "decode_bound")
    assert b["stream_read_gb_per_s"] > 0 and b["bound_tokens_per_s"] > 0
    assert all(p["percent_of_bound"] > 0 for p in b["per_prompt"])
    assert doc_backend(out) == "cuda"


def doc_backend(path) -> str:
    return json.loads(path.read_text())["deployment"]["nodes"][0]["backend"]
