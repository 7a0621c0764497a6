"""examples/pipeline (C++) and examples/python/pipeline.py: a head over two in-process workers
generates, greedily, exactly the text one process generates from the same model."""
from __future__ import annotations

import pytest

import strata
from _examples_util import described, example_program, example_script, run, run_python, synthetic_llama
from pipeline_util import skip_unless_pipelines

PROMPT = "Once upon a time"
N_TOKENS = 10


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = synthetic_llama(tmp_path_factory.mktemp("pipeline-example"), n_layer=6, seed=21)
    skip_unless_pipelines(path)
    return path


def one_process(model_path: str) -> tuple[bytes, str]:
    """strata_session_generate's greedy pieces on one session: (the bytes, the text as decoded)."""
    with strata.Model(model_path) as m, m.session(n_ctx=64, temperature=0.0) as s:
        pieces = []
        _, info = s.generate_text(PROMPT, max_tokens=N_TOKENS, on_token=lambda _t, p: pieces.append(p))
    assert info["n_generated"] > 0
    with strata.Model(model_path) as m, m.session(n_ctx=64, temperature=0.0) as s:
        text = "".join(s.generate(PROMPT, max_tokens=N_TOKENS))
    return b"".join(pieces), text


def test_the_cpp_pipeline_example_gives_the_one_process_text(model_path):
    r = run([example_program("pipeline", "pipeline"), model_path, PROMPT, N_TOKENS])
    assert r.returncode == 0, described(r)
    want, _ = one_process(model_path)
    assert r.stdout == want + b"\n", described(r)
    err = r.stderr.decode("utf-8", "replace")
    # Three stages over the 6 layers, both workers served and stopped cleanly.
    assert "stages 0:2,2:4,4:6" in err, err
    assert err.count("stopped") == 2 and "[worker 1]" in err and "[worker 2]" in err, err


def test_the_python_pipeline_example_gives_the_one_process_text(model_path):
    r = run_python(example_script("python", "pipeline.py"), model_path, PROMPT, "-n", N_TOKENS)
    assert r.returncode == 0, described(r)
    _, want = one_process(model_path)
    assert r.stdout.decode("utf-8") == want + "\n", described(r)
    assert f"{N_TOKENS} tokens generated" in r.stderr.decode("utf-8", "replace"), described(r)


def test_the_pipeline_example_refuses_a_model_too_small_to_split(tmp_path):
    small = synthetic_llama(tmp_path, n_layer=2)
    r = run([example_program("pipeline", "pipeline"), small])
    assert r.returncode == 1, described(r)
    assert "three stages need at least 3" in r.stderr.decode(), described(r)
