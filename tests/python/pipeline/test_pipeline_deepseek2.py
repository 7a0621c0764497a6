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

import pytest

import strata
from _pipeline_cases import (PipelineSettings, assert_same_trace, case_ids, check_latent_cache, check_three_stages,
                             f16_wire_judged, f16_wire_rows, latent_bytes_per_position_layer, prompt_tokens,
                             stage_memories, three_stage_traces)
from _synth import compare
from _synth_deepseek2 import write_deepseek2_model

SETTINGS = PipelineSettings(n_ctx=128)  # heartbeat 200 ms, peer timeout 3000 ms
N_CTX = SETTINGS.n_ctx
N_PROMPT, N_STEPS = 40, 16  # prompt tokens, greedy decode steps after the prefill
KV_LORA, QK_ROPE = 256, 32

# name: write_deepseek2_model arguments
MODELS = {
    "deepseek2-f32": dict(wtype="f32", seed=21),
    "deepseek2-iq1_s": dict(wtype="iq1_s", seed=22),
}
N_LAYER, N_DENSE_LEAD = 5, 1


def _write(path, spec: dict) -> list[str]:
    return write_deepseek2_model(path, spec["seed"], wtype=spec["wtype"], n_layer=N_LAYER, n_dense_lead=N_DENSE_LEAD,
                                 kv_lora=KV_LORA, qk_rope=QK_ROPE)


models = SETTINGS.models_fixture("pipeline-deepseek2-models", _write, MODELS, "deepseek2-f32")
pool, workers = SETTINGS.fixtures("pipeline-deepseek2-workers")
_prompt, _pipeline = prompt_tokens, SETTINGS.pipeline


def _check_plan(p: strata.Pipeline, m: strata.Model, layers, kv_type: str) -> list[tuple[int, int]]:
    plan, ranges = check_three_stages(p, m, N_LAYER, layers, kv_type)
    row = latent_bytes_per_position_layer(KV_LORA, QK_ROPE, kv_type)
    for _st, mem, a, b, what in stage_memories(plan, ranges, kv_type):
        assert int(mem["kv_bytes"]) > 0, f"{what} reports no KV cache: {mem}"
        check_latent_cache(mem, what, b - a, "layers", row, N_CTX)
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


@pytest.mark.parametrize("name,layers,n_batch,kv_type", CASES, ids=case_ids(CASES))
def test_three_stage_deepseek2_pipeline_gives_the_local_logits_and_greedy_tokens(models, workers, name, layers,
                                                                                  n_batch, kv_type):
    with strata.Model(models[name][0]) as m:
        n_vocab = m.vocab.n_vocab
        prompt = _prompt(n_vocab, N_PROMPT, 5)
        want, got, ranges, _ = three_stage_traces(SETTINGS, m, workers[name], prompt, N_STEPS,
                                                  lambda p: _check_plan(p, m, layers, kv_type),
                                                  layers=layers, n_batch=n_batch, kv_type=kv_type)
    what = f"{name} layers={layers or ranges} n_batch={n_batch} kv={kv_type}"
    assert_same_trace(got, want, what, shape=(N_PROMPT, n_vocab), min_distinct=3)


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
        got, want, w_tok = f16_wire_rows(m, lambda: _pipeline(m, workers[name], layers="0:2,2:4,4:5", n_batch=12,
                                                                 wire_dtype="f16"), prompt, N_CTX, N_STEPS)
    ok, _ = f16_wire_judged(ReferenceDeepseek2(models[name][0], kv_round="f16"), prompt, w_tok, got, want,
                            NEAR_TIE[wtype], MIN_JUDGED, f"{name} f16 wire")
    st = compare(got[ok], want[ok])
    print(f"{name} f16 wire, {int(ok.sum())} judged rows: {st}; all rows: {compare(got, want)}")
    rel, mx, am = F16_WIRE_BOUNDS[wtype]
    assert 0.0 < st["rel_rms"] <= rel and st["max"] <= mx and st["argmax"] >= am, \
        f"{name} f16 wire: {st} exceeds rel_rms<={rel} max<={mx} argmax>={am}"
