"""Judging strata's logits against a numpy reference across near-tie MoE routings, shared by
test_forward_deepseek2.py, test_forward_kimi.py and the pipelines' f16-wire tests.

A row whose routing margin (the reference's, ``margins``) is below a near-tie threshold may
legitimately route differently in strata: it is printed, not judged (DESIGN.md, "Comparing
logits"); the other rows are held to stated bounds with _synth.compare."""
from __future__ import annotations

from typing import Optional

import numpy as np

import strata
from _synth import compare


def strata_logits(path: str, toks, n_ctx: int, kv_type: str = "f16", n_vocab: int = 300) -> np.ndarray:
    """strata's logits for every token of toks from position 0 (one session, 2 threads)."""
    with strata.Model(path) as m, m.session(n_ctx=n_ctx, n_threads=2, kv_type=kv_type) as s:
        s.decode(toks, all_logits=True)
        got = s.logits
        assert got.shape == (len(toks), n_vocab) and got.dtype == np.float32
        assert s.n_past == len(toks)
    return got


def judged_rows(got: np.ndarray, want: np.ndarray, margins, near_tie: float, min_judged: float,
                what: str) -> tuple[np.ndarray, np.ndarray]:
    """(mask of the rows whose margin is at least near_tie, each row's max |got - want|); prints
    the near-tie rows and asserts that at least min_judged of the rows are judged."""
    margins = np.asarray(margins, dtype=np.float64)
    assert margins.shape == (want.shape[0],), (margins.shape, want.shape)
    ok = margins >= near_tie
    diff = np.max(np.abs(np.asarray(got, np.float64) - want), axis=1)
    for i in np.flatnonzero(~ok):
        print(f"{what}: near-tie row {i}: margin {margins[i]:.3g}, max |diff| {diff[i]:.3g} (not judged)")
    assert ok.mean() >= min_judged, f"{what}: only {ok.sum()} of {ok.size} rows are not near ties"
    return ok, diff


def judge(got: np.ndarray, want: np.ndarray, margins, taken: int, what: str, near_tie: float, min_judged: float,
          bounds: tuple[float, float, float], tail: int = 0) -> dict:
    """got against want (the reference followed through near ties, ``taken`` alternatives): the
    bounds (rel_rms, max, min argmax agreement) on the rows that are not near ties, and again on
    the last ``tail`` rows. Returns the last compare() statistics."""
    ok, _ = judged_rows(got, want, margins, near_tie, min_judged, what)
    rel, mx, am = bounds
    parts = [("", slice(None))] + ([(f" last {tail} rows", slice(-tail, None))] if tail else [])
    st: Optional[dict] = {}
    for label, sl in parts:
        st = compare(got[sl][ok[sl]], want[sl][ok[sl]])
        st.update(near_ties=int((~ok[sl]).sum()), followed=taken)
        print(f"{what}{label}: {st}")
        assert st["rel_rms"] <= rel and st["max"] <= mx and st["argmax"] >= am, \
            f"{what}{label}: {st} exceeds bounds rel_rms<={rel} max<={mx} argmax>={am}"
    return st
