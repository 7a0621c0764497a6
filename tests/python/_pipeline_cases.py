"""What the three-stage pipeline tests share (test_pipeline.py, test_pipeline_deepseek2.py,
test_pipeline_kimi.py): the module's worker pool and workers as fixtures, prompts, opening a
pipeline with the module's settings, the plan's stage ranges and latent-cache figures, the
bit-identical comparison of greedy traces (f32 wire) and the f16 wire's rows against one process.
pipeline_util.py holds the lower layer (worker processes, traces, frames)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pytest

import strata
from _routing_judge import judged_rows
from pipeline_util import (LOGITS_ATOL, WorkerPool, greedy_trace, max_abs_diff, n_layers, plan_ranges, plan_stages,
                           skip_unless_pipelines)


def prompt_tokens(n_vocab: int, n: int, seed: int) -> list[int]:
    """BOS (1) then n - 1 random tokens from 3 up."""
    rng = np.random.default_rng(seed)
    return [1] + [int(t) for t in rng.integers(3, n_vocab, n - 1)]


class PipelineSettings:
    """A test module's pipeline settings: context, heartbeat and peer timeout (the workers get the
    same heartbeat and timeout)."""

    def __init__(self, n_ctx: int, heartbeat_ms: int = 200, peer_timeout_ms: int = 3000):
        self.n_ctx, self.heartbeat_ms, self.peer_timeout_ms = n_ctx, heartbeat_ms, peer_timeout_ms

    def models_fixture(self, tmp_name: str, write: Callable[[Path, dict], list[str]], specs: dict, probe: str) -> Any:
        """A module-scoped fixture ``models``: {name: paths} for write(path, spec) over specs, in a
        fresh tmp_name folder; skips the module unless model ``probe`` pipelines."""

        @pytest.fixture(scope="module", name="models")
        def models(tmp_path_factory):
            d = tmp_path_factory.mktemp(tmp_name)
            out = {name: write(d / f"{name}.gguf", spec) for name, spec in specs.items()}
            skip_unless_pipelines(out[probe][0])
            return out

        return models

    def fixtures(self, tmp_name: str) -> tuple[Any, Any]:
        """Module-scoped fixtures ``pool`` (a WorkerPool in a fresh tmp_name folder, closed at the
        end) and ``workers`` (two strata-worker processes per model of the module's ``models``
        fixture, each taking any range); assign them to module names pool, workers."""

        @pytest.fixture(scope="module", name="pool")
        def pool(tmp_path_factory):
            p = WorkerPool(tmp_path_factory.mktemp(tmp_name), heartbeat_ms=self.heartbeat_ms,
                           peer_timeout_ms=self.peer_timeout_ms)
            yield p
            p.close()

        @pytest.fixture(scope="module", name="workers")
        def workers(models, pool):
            """Two strata-worker processes per model (each takes any range), shared by the module."""
            return {name: pool.spawn_n(paths, 2) for name, paths in models.items()}

        return pool, workers

    def pipeline(self, m: strata.Model, ws, **kw: Any) -> strata.Pipeline:
        """A pipeline over workers ws, f32 wire and one thread unless kw says otherwise."""
        opts = dict(wire_dtype="f32", n_ctx=self.n_ctx, n_threads=1, heartbeat_ms=self.heartbeat_ms,
                    peer_timeout_ms=self.peer_timeout_ms, connect_timeout_ms=10000)
        opts.update(kw)
        return strata.Pipeline(m, workers=[w.address for w in ws], **opts)


def case_ids(cases: Sequence[tuple]) -> list[str]:
    """Test ids for (model, layers or None, n_batch, kv_type) cases."""
    return [f"{c[0]}-{c[1] or 'planned'}-b{c[2]}-kv{c[3]}" for c in cases]


# --- the plan --------------------------------------------------------------------------------------

def latent_bytes_per_position_layer(kv_lora: int, qk_rope: int, kv_type: str) -> int:
    """lib/model/deepseek2.md, "KV cache": C + R values a layer and token, f16 or q8_0 blocks."""
    n = kv_lora + qk_rope
    return 2 * n if kv_type == "f16" else n // 32 * 34


def check_three_stages(p: strata.Pipeline, m: strata.Model, n_layer: int, layers: Optional[str],
                       kv_type: str) -> tuple[dict, list[tuple[int, int]]]:
    """The plan of p: three non-empty contiguous stages over the model's n_layer layers (the
    given ``layers`` split where not None), the kv_type asked for. Returns (plan, ranges)."""
    plan = json.loads(p.plan_json())
    ranges = plan_ranges(plan)
    assert n_layers(m) == n_layer
    check_three_ranges(ranges, n_layer, layers)
    assert plan["kv_type"] == kv_type, plan["kv_type"]
    return plan, ranges


def check_three_ranges(ranges: list[tuple[int, int]], n_layer: int, layers: Optional[str]) -> None:
    """Three non-empty contiguous stage ranges over n_layer layers; the given split where not None."""
    assert len(ranges) == 3, ranges
    assert ranges[0][0] == 0 and ranges[-1][1] == n_layer, ranges
    assert all(a < b for a, b in ranges), f"empty stage in {ranges}"
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(2)), f"not contiguous: {ranges}"
    if layers is not None:
        assert ",".join(f"{a}:{b}" for a, b in ranges) == layers


def stage_memories(plan: dict, ranges: list[tuple[int, int]], kv_type: str):
    """Per stage of the plan: (stage, its memory report, first layer, end layer, a description)."""
    for st, (a, b) in zip(plan_stages(plan), ranges):
        yield st, st["memory"], a, b, f"stage {st['stage']} ({st['role']}, layers {a}:{b}, kv {kv_type})"


def check_latent_cache(mem: dict, what: str, n_cached: int, label: str, row: int, n_ctx: int) -> None:
    """A stage's memory report gives the latent cache of its n_cached (label) layers exactly:
    row bytes a layer and position, n_ctx positions (per token and at 1M positions too)."""
    assert int(mem["kv_bytes"]) == n_cached * row * n_ctx, \
        f"{what}: kv_bytes {mem['kv_bytes']}, expected {n_cached} {label} x {n_ctx} positions x {row} B"
    assert int(mem["kv_bytes_per_token"]) == n_cached * row, f"{what}: {mem}"
    assert int(mem["kv_bytes_at_1m"]) == n_cached * row * (1 << 20), f"{what}: {mem}"


def three_stage_traces(settings: PipelineSettings, m: strata.Model, ws, prompt: Sequence[int], n_steps: int,
                       check_plan: Callable[[strata.Pipeline], Any], after: Optional[Callable] = None,
                       **kw: Any) -> tuple:
    """One process's greedy trace of prompt (n_steps; kv_type from kw where given) and the
    pipeline's (settings.pipeline(m, ws, **kw)), with check_plan(pipeline) (its result returned
    as ``ranges``) and after(pipeline, session) run at the end, the pipeline still open.
    Returns (want, got, ranges, after's result)."""
    local_kw = {"kv_type": kw["kv_type"]} if "kv_type" in kw else {}
    with m.session(n_ctx=settings.n_ctx, n_threads=1, **local_kw) as local:
        want = greedy_trace(local, prompt, n_steps)
    with settings.pipeline(m, ws, **kw) as p:
        ranges = check_plan(p)
        s = p.session()
        assert s.n_ctx == settings.n_ctx and s.n_vocab == m.vocab.n_vocab
        got = greedy_trace(s, prompt, n_steps)
        assert s.n_past == len(prompt) + n_steps
        extra = after(p, s) if after is not None else None
    return want, got, ranges, extra


# --- comparing with one process --------------------------------------------------------------------

def assert_same_trace(got, want, what: str, shape: Optional[tuple[int, int]] = None, again=None,
                      min_distinct: Optional[int] = None) -> None:
    """Two greedy_trace() results agree bit for bit (LOGITS_ATOL): prefill rows, tokens, decode
    rows; and, where given, the prefill's shape, a second prefill ``again`` (after resets), more
    than min_distinct distinct greedy tokens (no degenerate sequence)."""
    g_pre, g_tok, g_rows = got
    w_pre, w_tok, w_rows = want
    assert g_pre.shape == w_pre.shape, f"{what}: prefill logits {g_pre.shape} vs local {w_pre.shape}"
    if shape is not None:
        assert w_pre.shape == shape, (g_pre.shape, w_pre.shape, shape)
    d_pre = max_abs_diff(g_pre, w_pre)
    d_dec = max(max_abs_diff(a, b) for a, b in zip(g_rows, w_rows))
    d_again = None if again is None else max_abs_diff(again, w_pre)
    print(f"{what}: {g_pre.shape[0]} prefill rows + {len(g_rows)} decode steps, max |pipeline - local| "
          f"prefill {d_pre:g}, decode {d_dec:g}" + ("" if again is None else f", after two resets {d_again:g}")
          + f"; tokens {g_tok}")
    assert d_pre <= LOGITS_ATOL, f"{what}: prefill logits differ from local by {d_pre}"
    assert g_tok == w_tok, f"{what}: greedy tokens {g_tok} != local {w_tok}"
    assert d_dec <= LOGITS_ATOL, f"{what}: decode logits differ from local by {d_dec}"
    if again is not None:
        assert d_again <= LOGITS_ATOL, \
            f"{what}: after reset, another prompt and reset, the prefill differs by {d_again}"
    if min_distinct is not None:
        assert len(set(w_tok)) > min_distinct, f"{what}: a degenerate greedy sequence {w_tok}"


def f16_wire_rows(m: strata.Model, open_pipeline: Callable[[], strata.Pipeline], prompt: Sequence[int], n_ctx: int,
                  n_steps: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """One process's greedy trace of prompt (n_steps), and the pipeline open_pipeline() gives (an
    f16 wire) teacher-forced on its tokens: (pipeline rows, local rows, the greedy tokens), the
    prefill rows then one row a step."""
    with m.session(n_ctx=n_ctx, n_threads=1) as local:
        w_pre, w_tok, w_rows = greedy_trace(local, prompt, n_steps)
    with open_pipeline() as p:
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
    return got, want, w_tok


def f16_wire_judged(ref: Any, prompt: Sequence[int], tokens: Sequence[int], got: np.ndarray, want: np.ndarray,
                    near_tie: float, min_judged: float, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The numpy reference ``ref`` (kv_round f16) over prompt + tokens gives each row's routing
    margin; rows below near_tie are printed, not judged. Returns (judged mask, max |diff| a row)."""
    ref.full(np.array(list(prompt) + list(tokens)))
    return judged_rows(got, want, ref.margins, near_tie, min_judged, what)
