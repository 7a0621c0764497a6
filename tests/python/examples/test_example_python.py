"""examples/python/generate.py: the bindings' streamed greedy text, checked against the library's
own generation (strata_session_generate) on the same model."""
from __future__ import annotations

import strata
from _examples_util import described, example_script, run_python, synthetic_llama
from server_util import smollm2_path

N_TOKENS = 12


def library_text(model_path: str, prompt: str) -> str:
    with strata.Model(model_path) as m, m.session(n_ctx=128, temperature=0.0) as s:
        text, _ = s.generate_text(prompt, max_tokens=N_TOKENS)
    return text


def check_run(model_path: str, prompt: str) -> str:
    r = run_python(example_script("python", "generate.py"), model_path, prompt, "-n", N_TOKENS)
    assert r.returncode == 0, described(r)
    out = r.stdout.decode("utf-8")
    assert out.strip() and out == library_text(model_path, prompt) + "\n", described(r)
    assert "stopped by" in r.stderr.decode(), described(r)
    return out


def test_generate_py_streams_the_greedy_text_of_a_synthetic_model(tmp_path):
    check_run(synthetic_llama(tmp_path), "Hello, world")


def test_generate_py_streams_the_greedy_text_of_smollm2():
    out = check_run(str(smollm2_path()), "The capital of France is")
    assert any(c.isalpha() for c in out), out


def test_generate_py_names_a_missing_model(tmp_path):
    missing = tmp_path / "no-such-model.gguf"
    r = run_python(example_script("python", "generate.py"), missing)
    assert r.returncode == 1, described(r)
    assert str(missing) in r.stderr.decode(), described(r)
