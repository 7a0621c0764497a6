"""strata-bench --decode-depths: decode timed with D tokens already in the context, one prefill of
D tokens and then runs that truncate the cache and re-decode its last token. The runs must
generate what a fresh prefill of the same D tokens generates (the prompt-length runs of the same
length are that reference); a model whose recurrent layers cannot truncate prefills every run."""
from __future__ import annotations

import json

from strata import report as R

from _report_tools import run, tiny_model


def bench(model, out, *args):
    run("strata-bench", "decode", model, "-o", out, "--gen-tokens", "5", "--repeat", "2", "--warmup", "0",
        "--threads", "1", *args)
    text = out.read_text()
    assert R.validate(text) == []
    return json.loads(text)["benchmarks"]


def test_depth_runs_keep_the_prefix_and_generate_what_a_fresh_prefill_does(tmp_path):
    marks = bench(tiny_model(tmp_path), tmp_path / "d.json", "--prompt-tokens", "37", "--decode-depths", "1,37")
    fresh = next(b for b in marks if b.get("kind") == "prompt_length")
    depths = [b for b in marks if b.get("kind") == "decode_depth"]
    assert [b["depth_tokens"] for b in depths] == [1, 37]
    for b in depths:
        fill, *runs = b["runs"]
        assert fill["warmup"] and fill["prefill_s"] > 0 and fill["prompt_tokens"] == b["depth_tokens"]
        assert len(runs) == 2 and not any(r["warmup"] for r in runs)
        assert all(r["prefill_s"] == 0 and r["prompt_tokens"] == b["depth_tokens"] and r["output_tokens"] == 5
                   for r in runs)
        assert b["prefix"].startswith("kept") and b["outputs_equal_fill"] is True
        assert b["spread"]["decode_tokens_per_s"]["n"] == 2 and b["spread"]["decode_tokens_per_s"]["median"] > 0
    assert all(r["output_token_ids"] == fresh["runs"][0]["output_token_ids"] for r in depths[1]["runs"])
    assert depths[0]["runs"][0]["output_token_ids"] != depths[1]["runs"][0]["output_token_ids"]


def test_a_recurrent_model_prefills_every_depth_run(tmp_path):
    model = tmp_path / "kl.gguf"
    run("strata-mkmodel", "--arch", "kimi-linear", "--preset", "tiny", "--seed", "3", "-o", model)
    (b,) = [b for b in bench(model, tmp_path / "k.json", "--prompt-tokens", "8", "--decode-depths", "19")
            if b.get("kind") == "decode_depth"]
    assert b["prefix"].startswith("prefilled again")
    assert all(r["prefill_s"] > 0 and r["prompt_tokens"] == 19 for r in b["runs"])
    assert b["outputs_equal_fill"] is True


def test_a_depth_the_context_cannot_hold_is_refused(tmp_path):
    r = run("strata-bench", "decode", tmp_path / "m.gguf", "-o", tmp_path / "x.json", "--prompt-tokens", "8",
            "--decode-depths", "100", "--ctx", "64", check=False)
    assert r.returncode == 2 and "--ctx 64" in r.stderr
    r = run("strata-bench", "decode", tmp_path / "m.gguf", "-o", tmp_path / "x.json", "--decode-depths", "0",
            check=False)
    assert r.returncode == 2 and "--decode-depths" in r.stderr
