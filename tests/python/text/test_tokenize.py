"""The tokenizer through the bindings: a tiny SentencePiece (GGUF "llama") vocabulary with known
scores, hand-computed tokenizations, round trips, and the vocabulary as gguf reads it."""
from __future__ import annotations

import numpy as np
import pytest
from gguf import GGUFReader

import strata
from _synth import SPACE, byte_vocab, set_vocab, write_model

# Pieces with scores: SPM merges the adjacent pair whose merged piece has the highest score first.
EXTRA = [(SPACE, -1.0), ("a", -2.0), ("b", -3.0), ("c", -4.0), ("ab", -5.0), (SPACE + "a", -6.0),
         ("bc", -0.5), (SPACE + "ab", -7.0)]


@pytest.fixture(scope="module")
def spm(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok") / "spm.gguf"
    w = strata.Writer()
    w.set("general.architecture", "llama")
    tokens, scores, types = byte_vocab(len(EXTRA) + 259, EXTRA)
    set_vocab(w, tokens, scores, types)
    w.write(path)
    w.close()
    with strata.Model(path) as m:
        ids = {t: i for i, t in enumerate(tokens)}
        yield m, ids


def _byte(b: int) -> int:
    return 3 + b


def test_hand_computed_tokenizations(spm):
    m, ids = spm
    A, AB, SA, SAB, BC, S = ids["a"], ids["ab"], ids[SPACE + "a"], ids[SPACE + "ab"], ids["bc"], ids[SPACE]
    # "ab": ▁ a b -> ab (-5) beats ▁a (-6) -> ▁ ab -> ▁ab
    assert m.tokenize("ab", add_special=False) == [SAB]
    # "abc": ▁ a b c -> bc (-0.5) first -> ▁ a bc -> ▁a bc (no "abc" piece): not the greedy ▁ab c
    assert m.tokenize("abc", add_special=False) == [SA, BC]
    assert m.tokenize("ab abc", add_special=False) == [SAB, SA, BC]
    # "é" is not a piece: its UTF-8 bytes become byte tokens
    assert m.tokenize("é", add_special=False) == [S, _byte(0xC3), _byte(0xA9)]
    # add_special: BOS (the vocabulary asks for it: add_bos_token true), no EOS
    assert m.tokenize("ab") == [1, SAB]
    assert m.tokenize("", add_special=True) == [1] and m.tokenize("", add_special=False) == []
    # "<s>" is plain text unless parse_special
    assert m.tokenize("<s>ab", add_special=False) == [S, _byte(0x3C), _byte(0x73), _byte(0x3E), AB]
    assert m.tokenize("<s>ab", add_special=False, parse_special=True) == [1, SAB]
    assert A not in m.tokenize("a", add_special=False)  # "a" at the start takes the space prefix: ▁a
    assert m.tokenize(b"ab", add_special=False) == [SAB]


def test_pieces_and_detokenize(spm):
    m, ids = spm
    assert m.token_to_piece(ids[SPACE + "ab"]) == b" ab"
    assert m.token_to_piece(ids["bc"]) == b"bc"
    assert m.token_to_piece(_byte(0xC3)) == b"\xc3"
    assert m.detokenize([ids[SPACE + "ab"], ids[SPACE + "a"], ids["bc"]]) == "ab abc"
    assert m.detokenize([1, ids[SPACE + "ab"], 2], remove_special=True).strip() == "ab"
    assert m.detokenize([]) == ""
    with pytest.raises(strata.StrataError) as e:
        m.token_to_piece(100000)
    assert e.value.status == strata.Status.INVALID_ARGUMENT
    # End of generation: the vocabulary's eos is in the set; an id outside it is an error naming it.
    assert m.is_eog(m.vocab.eos) and not m.is_eog(ids["a"])
    for bad in (100000, -1):
        with pytest.raises(strata.StrataError) as e:
            m.is_eog(bad)
        assert e.value.status == strata.Status.INVALID_ARGUMENT and str(bad) in str(e.value)


def test_round_trips(spm, seed):
    m, _ = spm
    rng = np.random.default_rng(seed)
    alphabet = list("abcabcxyz ") + ["é", "😀", "ß", "\n", "\t", "中"]
    for _ in range(40):
        n = int(rng.integers(1, 30))
        text = "a" + "".join(alphabet[i] for i in rng.integers(0, len(alphabet), n))
        toks = m.tokenize(text, add_special=False)
        assert m.detokenize(toks) == text, f"seed {seed}: {text!r} -> {toks}"
        assert b"".join(m.token_to_piece(t) for t in toks) == (" " + text).encode(), f"seed {seed}: {text!r}"
        with_bos = m.tokenize(text)
        assert with_bos[0] == 1 and with_bos[1:] == toks
    long_text = "abc " * 2000  # longer than the bindings' first buffer guess
    assert len(m.tokenize(long_text, add_special=False)) >= 2000


def test_the_vocabulary_strata_reads_is_what_gguf_reads(tmp_path, seed):
    path = write_model(tmp_path / "m.gguf", seed, n_embd=64, n_ff=128, n_vocab=320)[0]
    r = GGUFReader(path)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    scores = r.fields["tokenizer.ggml.scores"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    with strata.Model(path) as m:
        v = m.vocab
        assert (v.n_vocab, v.bos, v.eos, v.add_bos, v.kind) == (len(tokens), 1, 2, True, "spm")
        assert m.get("tokenizer.ggml.tokens") == tokens
        assert np.array_equal(np.float32(m.get("tokenizer.ggml.scores")), np.float32(scores))
        assert m.get("tokenizer.ggml.token_type") == types
        for i, (t, ty) in enumerate(zip(tokens, types)):
            if ty == 1:
                assert m.token_to_piece(i) == t.replace(SPACE, " ").encode(), (i, t)
            elif ty == 6:
                assert m.token_to_piece(i) == bytes([int(t[3:5], 16)]), (i, t)
