"""examples/simple-cpp: built and run; its greedy text is the bindings' greedy loop's, byte for byte."""
from __future__ import annotations

import pytest

import strata
from _examples_util import described, example_program, run, synthetic_llama
from server_util import smollm2_path

N_TOKENS = 12


def greedy_pieces(model_path: str, prompt: str, n: int) -> bytes:
    """What simple.cpp does, through the Python bindings: tokenize, decode_sample until n tokens or
    end of generation, each token's piece."""
    with strata.Model(model_path) as m:
        ids = m.tokenize(prompt)
        with m.session(n_ctx=len(ids) + n, temperature=0.0) as s:
            out = []
            t = s.decode_sample(ids)
            while not m.is_eog(t):
                out.append(t)
                if len(out) == n:
                    break
                t = s.decode_sample([t])
            return b"".join(m.token_to_piece(t) for t in out)


def check_run(model_path: str, prompt: str) -> bytes:
    r = run([example_program("simple-cpp", "simple-cpp"), model_path, prompt, N_TOKENS])
    assert r.returncode == 0, described(r)
    assert r.stdout.endswith(b"\n") and r.stdout.strip(), described(r)
    assert r.stdout == greedy_pieces(model_path, prompt, N_TOKENS) + b"\n", described(r)
    assert b"generated " in r.stderr, described(r)
    return r.stdout


def test_simple_cpp_generates_the_greedy_text_of_a_synthetic_model(tmp_path):
    check_run(synthetic_llama(tmp_path), "Hello, world")


def test_simple_cpp_generates_the_greedy_text_of_smollm2():
    text = check_run(str(smollm2_path()), "The capital of France is").decode("utf-8", "replace")
    assert any(c.isalpha() for c in text), text


@pytest.mark.parametrize("args,rc,says", [
    (["/nonexistent/model.gguf"], 1, "/nonexistent/model.gguf"),
    ([], 2, "usage:"),
    (["MODEL", "prompt", "zero"], 2, "N_TOKENS"),
])
def test_simple_cpp_says_what_is_wrong(tmp_path, args, rc, says):
    args = [synthetic_llama(tmp_path) if a == "MODEL" else a for a in args]
    r = run([example_program("simple-cpp", "simple-cpp"), *args])
    assert r.returncode == rc, described(r)
    assert says in r.stderr.decode("utf-8", "replace"), described(r)
