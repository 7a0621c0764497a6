"""Session device selection (strata_session_params.device): "cpu" or "cuda". Where the library
has no CUDA backend or the machine no usable GPU, "cuda" raises StrataError UNSUPPORTED saying why
(never a crash); where both exist, a llama model's GPU logits follow the CPU's."""
from __future__ import annotations

import numpy as np
import pytest

import strata
from _synth import write_model
from conftest import fresh_seed


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    seed = fresh_seed("test_session_device model")
    # head dim 64 (256 / 4), IQ1_S matrices: a model the GPU runs where there is one
    return write_model(tmp_path_factory.mktemp("dev") / "m.gguf", seed, arch="llama", wtype="iq1_s",
                       n_ctx_train=512)[0]


@pytest.fixture
def model(model_path):
    with strata.Model(model_path) as m:
        yield m


def test_cpu_is_the_default_and_can_be_named(model):
    tokens = [1, 5, 9, 200]
    with model.session(n_ctx=64, n_threads=2) as a, model.session(n_ctx=64, n_threads=2, device="cpu") as b, \
            model.session(n_ctx=64, n_threads=2, device=strata.DEVICES["cpu"]) as c:
        for s in (a, b, c):
            s.decode(tokens)
        assert np.array_equal(a.logits, b.logits) and np.array_equal(a.logits, c.logits)
        assert "device memory" not in a.plan


def test_cuda_runs_on_the_gpu_or_says_why_not(model):
    tokens = [1, 5, 9, 200, 17, 3]
    try:
        gpu = model.session(n_ctx=64, device="cuda")
    except strata.StrataError as e:
        assert strata.Status(e.status) == strata.Status.UNSUPPORTED, e
        # built without the backend, or the CUDA runtime's reason for no usable device
        assert "CUDA" in e.message, e.message
        return
    with gpu, model.session(n_ctx=64, n_threads=2) as cpu:
        assert "device memory plan" in gpu.plan
        gpu.decode(tokens)
        cpu.decode(tokens)
        g, c = gpu.logits[0], cpu.logits[0]
        assert np.all(np.isfinite(g))
        # f16 prefill products against the CPU's Q8_K activations: ~2% rel RMS (test_forward.cpp)
        assert np.linalg.norm(g - c) / np.linalg.norm(c) < 0.05


def test_an_unknown_device_is_refused(model):
    with pytest.raises(ValueError):
        model.session(n_ctx=64, device="tpu")
    with pytest.raises(strata.StrataError) as e:
        model.session(n_ctx=64, device=7)
    assert strata.Status(e.value.status) == strata.Status.INVALID_ARGUMENT and "device" in e.value.message
