"""A deepseek2 (Kimi K2 architecture: MLA attention over a latent KV cache, MoE with a shared
expert) model pipelined over three stages gives what one local session gives: the head runs in
this pytest process through the bindings, the other two stages are strata-worker processes on
loopback, started as test_pipeline.py starts them.

The models (_synth_deepseek2.py) have 5 layers, the first dense (n_dense_lead 1), so a split
puts the dense layer and MoE layers on the head and only MoE layers on the workers; weights f32
or iq1_s (attn_k_b, rows of qk_nope = 64, falls back to q8_0). kv_lora 256 and qk_rope 32 are
multiples of 32, so the q8_0 latent cache is allowed.

With wire_dtype f32 every stage runs the same per-row forward as the local session, so, as
test_pipeline.py asserts for the llama family, the logits are expected bit-identical (max
|difference| <= LOGITS_ATOL = 1e-6 over every prefill row and every decode step; measured: 0)
and the greedy tokens equal, with an f16 and with a q8_0 latent cache (the local session uses
the same type). The prompt (40 tokens) is longer than n_batch, so the prefill flows through
the stages as several micro-batches, the last one partial. The plan JSON gives every stage's
latent cache exactly: layers x n_ctx x (kv_lora + qk_rope) values, f16 or q8_0 blocks.

With the default f16 wire the hidden states are rounded at each hop: prefill rows and decode
rows (teacher-forced on the local greedy tokens) are bounded with _synth.compare (relative RMS,
max, near-tie-aware argmax agreement), rows with a near-tie MoE routing margin judged apart."""
from __future__ import annotations

import json

import numpy as np
import pytest

import strata
from _synth import compare
from _synth_deepseek2 import write_deepseek2_model
from pipeline_util import (LOGITS_ATOL, WorkerPool, greedy_trace, max_abs_diff, n_layers, plan_ranges, plan_stages,
                           skip_unless_pipelines)

N_CTX = 128
HEARTBEAT_MS = 200
PEER_TIMEOUT_MS = 3000
N_PROMPT = 40
N_STEPS = 16  # greedy decode steps after the prefill
KV_LORA, QK_ROPE = 256, 32

# name: write_deepseek2_model arguments
MODELS = {
    "deepseek2-f32": dict(wtype="f32", seed=21),
    "deepseek2-iq1_s": dict(wtype="iq1_s", seed=22),
}
N_LAYER, N_DENSE_LEAD = 5, 1


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("pipeline-deepseek2-models")
    out = {name: write_deepseek2_model(d / f"{name}.gguf", spec["seed"], wtype=spec["wtype"], n_layer=N_LAYER,
                                       n_dense_lead=N_DENSE_LEAD, kv_lora=KV_LORA, qk_rope=QK_ROPE)
           for name, spec in MODELS.items()}
    skip_unless_pipelines(out["deepseek2-f32"][0])
    return out


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    p = WorkerPool(tmp_path_factory.mktemp("pipeline-deepseek2-workers"), heartbeat_ms=HEARTBEAT_MS,
                   peer_timeout_ms=PEER_TIMEOUT_MS)
    yield p
    p.close()


@pytest.fixture(scope="module")
def workers(models, pool):
    """Two strata-worker processes per model (each takes any range), shared by the module."""
    return {name: pool.spawn_n(paths, 2) for name, paths in models.items()}


def _prompt(n_vocab: int, n: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [1] + [int(t) for t in rng.integers(3, n_vocab, n - 1)]


def _pipeline(m: strata.Model, ws, **kw) -> strata.Pipeline:
    opts = dict(wire_dtype="f32", n_ctx=N_CTX, n_threads=1, heartbeat_ms=HEARTBEAT_MS, peer_timeout_ms=PEER_TIMEOUT_MS,
                connect_timeout_ms=10000)
    opts.update(kw)
    return strata.Pipeline(m, workers=[w.address for w in ws], **opts)


def _latent_bytes_per_position_layer(kv_type: str) -> int:
    """lib/model/deepseek2.md, "KV cache": C + R values a layer and token, f16 or q8_0 blocks."""
    n = KV_LORA + QK_ROPE
    return 2 * n if kv_type == "f16" else n // 32 * 34


def _check_plan(p: strata.Pipeline, m: strata.Model, layers, kv_type: str) -> list[tuple[int, int]]:
    plan = json.loads(p.plan_json())
    ranges = plan_ranges(plan)
    n = n_layers(m)
    assert n == N_LAYER
    assert len(ranges) == 3, ranges
    assert ranges[0][0] == 0 and ranges[-1][1] == n, ranges
    assert all(a < b for a, b in ranges), f"empty stage in {ranges}"
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(2)), f"not contiguous: {ranges}"
    if layers is not None:
        assert ",".join(f"{a}:{b}" for a, b in ranges) == layers
    assert plan["kv_type"] == kv_type, plan["kv_type"]
    row = _latent_bytes_per_position_layer(kv_type)
    for st, (a, b) in zip(plan_stages(plan), ranges):
        mem = st["memory"]
        what = f"stage {st['stage']} ({st['role']}, layers {a}:{b}, kv {kv_type})"
        assert int(mem["kv_bytes"]) > 0, f"{what} reports no KV cache: {mem}"
        assert int(mem["kv_bytes"]) == (b - a) * row * N_CTX, \
            f"{what}: kv_bytes {mem['kv_bytes']}, expected {b - a} layers x {N_CTX} positions x {row} B"
        assert int(mem["kv_bytes_per_token"]) == (b - a) * row, f"{what}: {mem}"
        assert int(mem["kv_bytes_at_1m"]) == (b - a) * row * (1 << 20), f"{what}: {mem}"
    return ranges


# (model, layers, n_batch, kv_type). The head holds the dense layer 0 alone or with MoE layers;
# the workers hold MoE layers only. None: planned from the workers' reports. n_batch 12 or 16
# over a 40-token prompt: 4 or 3 micro-batches, the last one partial.
CASES = [
    ("deepseek2-f32", "0:1,1:3,3:5", 12, "f16"),
    ("deepseek2-f32", "0:3,3:4,4:5", 16, "q8_0"),
    ("deepseek2-f32", None, 12, "f16"),
    ("deepseek2-iq1_s", "0:2,2:4,4:5", 12, "f16"),
    ("deepseek2-iq1_s", "0:1,1:4,4:5", 16, "q8_0"),
]


@pytest.mark.parametrize("name,layers,n_batch,kv_type", CASES,
                         ids=[f"{c[0]}-{c[1] or 'planned'}-b{c[2]}-kv{c[3]}" for c in CASES])
def test_three_stage_deepseek2_pipeline_gives_the_local_logits_and_greedy_tokens(models, workers, name, layers,
                                                                                  n_batch, kv_type):
    with strata.Model(models[name][0]) as m:
        n_vocab = m.vocab.n_vocab
        prompt = _prompt(n_vocab, N_PROMPT, 5)
        with m.session(n_ctx=N_CTX, n_threads=1, kv_type=kv_type) as local:
            want = greedy_trace(local, prompt, N_STEPS)
        with _pipeline(m, workers[name], layers=layers, n_batch=n_batch, kv_type=kv_type) as p:
            ranges = _check_plan(p, m, layers, kv_type)
            s = p.session()
            assert s.n_ctx == N_CTX and s.n_vocab == m.vocab.n_vocab
            got = greedy_trace(s, prompt, N_STEPS)
            assert s.n_past == N_PROMPT + N_STEPS
    g_pre, g_tok, g_rows = got
    w_pre, w_tok, w_rows = want
    what = f"{name} layers={layers or ranges} n_batch={n_batch} kv={kv_type}"
    assert g_pre.shape == w_pre.shape == (N_PROMPT, n_vocab), (g_pre.shape, w_pre.shape)
    d_pre = max_abs_diff(g_pre, w_pre)
    d_dec = max(max_abs_diff(a, b) for a, b in zip(g_rows, w_rows))
    print(f"{what}: {N_PROMPT} prefill rows + {N_STEPS} decode steps, max |pipeline - local| prefill {d_pre:g}, "
          f"decode {d_dec:g}; tokens {g_tok}")
    assert d_pre <= LOGITS_ATOL, f"{what}: prefill logits differ from local by {d_pre}"
    assert g_tok == w_tok, f"{what}: greedy tokens {g_tok} != local {w_tok}"
    assert d_dec <= LOGITS_ATOL, f"{what}: decode logits differ from local by {d_dec}"
    assert len(set(w_tok)) > 3, f"{what}: a degenerate greedy sequence {w_tok}"


# The default f16 wire. wtype: (rel_rms, max_abs, min argmax agreement) over the judged rows,
# ~3x (max ~4x) the measured values:
#   f32:   rel_rms 3.9e-4, max 1.9e-3, argmax 1.0 (56 rows, no near tie; bf16 wire: 3.1e-3, 1.6e-2)
#   iq1_s: rel_rms 2.5e-2, max 0.13, argmax 1.0 (39 judged rows; all 56: 4.6e-2 to 5.7e-2 with
#          max 0.9 to 1.2 on one near-tie row, which one depending on the kernels' summation
#          order). strata quantizes activations to 8 bits for the iq1_s products, so any
#          perturbation of the hidden states (f16 or bf16 alike: bf16 gives 2.6e-2) flips
#          roundings in every later product; one process against the numpy reference differs by
#          rel_rms 5.2e-2, max 0.48 on the same judged rows, twice the f16 wire's effect.
F16_WIRE_BOUNDS = {"f32": (2e-3, 1e-2, 1.0), "iq1_s": (0.075, 0.5, 0.9)}
# Routing margins below these are near ties, judged apart (as test_forward_deepseek2.NEAR_TIE).
NEAR_TIE = {"f32": 1e-4, "iq1_s": 1e-2}
MIN_JUDGED = 0.6


@pytest.mark.parametrize("name", list(MODELS))
def test_f16_wire_stays_within_a_stated_tolerance_of_one_process(models, workers, name):
    """The default wire (f16 hidden states between stages): the prefill rows and the decode rows,
    teacher-forced on the local greedy tokens, within F16_WIRE_BOUNDS of one process. Rows
    whose routing margin (from the numpy reference) is a near tie may route differently under
    the rounding and are printed, not judged (DESIGN.md, "Comparing logits")."""
    from reference_deepseek2 import ReferenceDeepseek2

    wtype = MODELS[name]["wtype"]
    with strata.Model(models[name][0]) as m:
        prompt = _prompt(m.vocab.n_vocab, N_PROMPT, 6)
        with m.session(n_ctx=N_CTX, n_threads=1) as local:
            w_pre, w_tok, w_rows = greedy_trace(local, prompt, N_STEPS)
        with _pipeline(m, workers[name], layers="0:2,2:4,4:5", n_batch=12, wire_dtype="f16") as p:
            assert p.plan()["wire_dtype"] == "f16"
            s = p.session()
            s.decode(prompt, all_logits=True)
            g_pre = s.logits
            g_rows = []
            for t in w_tok:
                s.decode([t])
                g_rows.append(s.logits[0])
    want = np.vstack([w_pre] + [r[None] for r in w_rows])
    got = np.vstack([g_pre] + [r[None] for r in g_rows])
    ref = ReferenceDeepseek2(models[name][0], kv_round="f16")
    ref.full(np.array(prompt + w_tok))
    margins = np.asarray(ref.margins, dtype=np.float64)
    assert margins.shape == (want.shape[0],), margins.shape
    ok = margins >= NEAR_TIE[wtype]
    diff = np.max(np.abs(got.astype(np.float64) - want), axis=1)
    for i in np.flatnonzero(~ok):
        print(f"{name} f16 wire: near-tie row {i}: margin {margins[i]:.3g}, max |diff| {diff[i]:.3g} (not judged)")
    assert ok.mean() >= MIN_JUDGED, f"{name}: only {ok.sum()} of {ok.size} rows are not near ties"
    st = compare(got[ok], want[ok])
    print(f"{name} f16 wire, {int(ok.sum())} judged rows: {st}; all rows: {compare(got, want)}")
    rel, mx, am = F16_WIRE_BOUNDS[wtype]
    assert 0.0 < st["rel_rms"] <= rel and st["max"] <= mx and st["argmax"] >= am, \
        f"{name} f16 wire: {st} exceeds rel_rms<={rel} max<={mx} argmax>={am}"
