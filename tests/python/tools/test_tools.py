"""The example programs as a user runs them: strata-mkmodel writes split IQ1_S models that the
gguf package reads, and strata-inspect reports, dumps and refuses files as documented."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import gguf
import numpy as np
import pytest

from _report_tools import tool


def _run(*args, check=True) -> subprocess.CompletedProcess:
    # Random weights emit byte tokens: the output need not be valid UTF-8.
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, errors="surrogateescape",
                          check=check, timeout=120)


@pytest.fixture(scope="module")
def split_model(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("mkmodel") / "tiny.gguf"
    _run(tool("strata-mkmodel"), "--arch", "llama", "--preset", "tiny", "--shards", "3", "--seed", "7", "-o", out)
    shards = sorted(out.parent.glob("tiny-0000?-of-00003.gguf"))
    assert [p.name for p in shards] == [f"tiny-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    return shards


def _inspect_json(*args) -> dict:
    return json.loads(_run(tool("strata-inspect"), *args, "--json").stdout)


def test_mkmodel_writes_three_shards_the_gguf_package_reads_as_llama_iq1s(split_model):
    first = gguf.GGUFReader(split_model[0])
    assert bytes(first.fields["general.architecture"].parts[-1]).decode() == "llama"
    types = {t.tensor_type for p in split_model for t in gguf.GGUFReader(p).tensors}
    assert gguf.GGMLQuantizationType.IQ1_S in types
    total = sum(len(gguf.GGUFReader(p).tensors) for p in split_model)
    assert total == int(first.fields["split.tensors.count"].parts[-1][0])


def test_inspect_json_lists_every_tensor_shard_digest_and_the_identity(split_model):
    report = _inspect_json(split_model[0])
    assert len(report["shards"]) == 3
    for shard, path in zip(report["shards"], split_model):
        assert shard["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    names = [t.name for p in split_model for t in gguf.GGUFReader(p).tensors]
    assert [t["name"] for t in report["tensors"]] == names
    assert len(report["identity"]) == 64
    assert report["metadata"]["llama.block_count"] == {"type": "u32", "value": 2}
    # Opening the explicit shard list gives the same identity as opening the first shard.
    assert _inspect_json(*reversed(split_model))["identity"] == report["identity"]


def test_mkmodel_is_reproducible_from_its_seed(split_model, tmp_path):
    again = tmp_path / "tiny.gguf"
    _run(tool("strata-mkmodel"), "--preset", "tiny", "--shards", "3", "--seed", "7", "-o", again)
    other = tmp_path / "other.gguf"
    _run(tool("strata-mkmodel"), "--preset", "tiny", "--shards", "3", "--seed", "8", "-o", other)
    ident = _inspect_json(split_model[0])["identity"]
    assert _inspect_json(tmp_path / "tiny-00001-of-00003.gguf")["identity"] == ident
    assert _inspect_json(tmp_path / "other-00001-of-00003.gguf")["identity"] != ident


def test_inspect_dumps_a_tensor_as_float32_npy_equal_to_the_gguf_package_dequantization(split_model, tmp_path):
    out = tmp_path / "down.npy"
    _run(tool("strata-inspect"), split_model[0], "--tensor", "blk.1.ffn_down.weight", "--dump-f32", out)
    got = np.load(out)
    for path in split_model:
        for t in gguf.GGUFReader(path).tensors:
            if t.name == "blk.1.ffn_down.weight":
                expected = gguf.quants.dequantize(t.data, t.tensor_type)
    assert got.dtype == np.float32 and got.shape == expected.shape == (256, 512)
    assert np.array_equal(got.view(np.uint32), expected.astype(np.float32).view(np.uint32))


def test_inspect_text_output_names_types_shapes_and_shards(split_model):
    text = _run(tool("strata-inspect"), split_model[0]).stdout
    assert "GGUF v3, 3 shard(s)" in text
    assert "blk.0.ffn_down.weight" in text and "iq1_s" in text and "[512, 256]" in text
    assert "model identity:" in text


@pytest.mark.parametrize("name", sorted(p.name for p in
                                        (Path(os.environ.get("STRATA_FIXTURES", ".")) / "gguf" / "broken").glob("*.gguf")
                                        if p.name != "tensor_offset_gap.gguf"))
def test_inspect_refuses_a_broken_file_with_status_2_and_one_line_naming_it(gguf_dir, name):
    result = _run(tool("strata-inspect"), gguf_dir / "broken" / name, check=False)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert name in lines[0] and lines[0].startswith("strata-inspect: ")
    assert result.stdout == ""


def test_inspect_reports_a_missing_tensor_and_bad_arguments_with_status_2(split_model, tmp_path):
    missing = _run(tool("strata-inspect"), split_model[0], "--tensor", "nope", "--dump-f32", tmp_path / "x.npy",
                   check=False)
    assert missing.returncode == 2 and "tensor 'nope' not found" in missing.stderr
    assert not (tmp_path / "x.npy").exists()
    assert _run(tool("strata-inspect"), check=False).returncode == 2
    assert _run(tool("strata-inspect"), split_model[0], "--bogus", check=False).returncode == 2
    bad = _run(tool("strata-mkmodel"), "--preset", "huge", "-o", tmp_path / "m.gguf", check=False)
    assert bad.returncode == 2 and "unknown preset" in bad.stderr


def test_run_streams_text_and_reports_the_actual_counts_and_rates(split_model):
    import re
    import strata
    args = [tool("strata-run"), split_model[0], "-p", "Hello, strata", "-n", "8", "--seed", "5", "--temp", "0.7"]
    first = _run(*args)
    second = _run(*args)
    assert first.stdout == second.stdout and first.stdout.startswith("Hello, strata")
    with strata.Model(split_model[0]) as m:
        n_prompt = len(m.tokenize("Hello, strata"))
    assert re.search(rf"^prompt tokens: +{n_prompt} \(prefill [0-9.]+ s, [0-9.]+ tok/s\)$", first.stderr, re.M), first.stderr
    generated = int(re.search(r"^generated tokens: +(\d+)", first.stderr, re.M).group(1))
    stop = re.search(r"^stopped by: +(.+)$", first.stderr, re.M).group(1)
    assert generated == 8 or (generated < 8 and stop == "end of generation"), first.stderr
    assert re.search(rf"^context: +{n_prompt + generated} of 512 configured tokens used$", first.stderr, re.M)
    assert '"seed":5' in first.stderr and '"temperature":0.7' in first.stderr
    assert "configured context 512" in first.stderr  # the memory plan


def test_run_refuses_bad_arguments_and_context_overflow_with_status_2(split_model):
    assert _run(tool("strata-run"), split_model[0], check=False).returncode == 2  # no prompt
    bad = _run(tool("strata-run"), split_model[0], "-p", "x", "--kv", "q4", check=False)
    assert bad.returncode == 2 and "--kv" in bad.stderr
    over = _run(tool("strata-run"), split_model[0], "-p", "word " * 200, "--ctx", "16", check=False)
    assert over.returncode == 2 and "do not fit the configured context of 16 tokens" in over.stderr
    temp = _run(tool("strata-run"), split_model[0], "-p", "x", "--temp", "-1", check=False)
    assert temp.returncode == 2 and "temperature" in temp.stderr


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_mkmodel_bpe_and_spm_models_tokenize_round_trip_and_generate(tmp_path, arch):
    import strata
    for vocab in ("spm", "bpe"):
        out = tmp_path / f"{arch}-{vocab}.gguf"
        _run(tool("strata-mkmodel"), "--arch", arch, "--preset", "tiny", "--vocab", vocab, "--type", "q8_0",
             "--seed", "3", "-o", out)
        with strata.Model(out) as m:
            assert m.vocab.kind == vocab
            text = "Hello world, the theory of strata: 42 ünïcödé!"
            assert m.detokenize(m.tokenize(text, add_special=False)) == text
            # As llama_detokenize: after a dropped BOS, SPM's prefix space stays.
            with_bos = m.detokenize(m.tokenize(text), remove_special=True)
            assert with_bos == (" " + text if vocab == "spm" and m.vocab.add_bos else text)
            with m.session(n_ctx=128, temperature=0.0) as s:
                pieces = list(s.generate(text, max_tokens=4, stop_at_end_of_generation=False))
                assert s.n_past == len(m.tokenize(text)) + 4, pieces


def test_worker_refuses_bad_arguments_with_status_2_and_a_device_it_cannot_use_naming_why(split_model):
    bad = [
        (["--device", "tpu"], "--device must be cpu or cuda"),
        (["--layers", "3:1"], "--layers A:B needs A < B"),
        (["--threads", "-1"], "--threads"),
    ]
    for extra, named in bad:
        r = _run(tool("strata-worker"), "--listen", "127.0.0.1:0", "--model", split_model[0], *extra, check=False)
        assert r.returncode == 2 and named in r.stderr, (extra, r.returncode, r.stderr)
    r = _run(tool("strata-worker"), "--model", split_model[0], check=False)
    assert r.returncode == 2 and "--listen" in r.stderr, r.stderr
    # --device cuda: refused at start, naming why, where no GPU can be used; with one it serves.
    proc = subprocess.Popen([str(tool("strata-worker")), "--device", "cuda", "--listen", "127.0.0.1:0", "--model",
                             str(split_model[0])], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # still serving: a usable GPU
        proc.kill()
        out, err = proc.communicate()
        assert out.startswith("listening on "), (out, err)
        return
    assert proc.returncode == 1 and "CUDA" in err and "listening" not in out, (proc.returncode, out, err)
