"""Reports: the "Reports" section of strata.h — report files (schema strata.report/1) that pin
the artifact and runtime, keep every attempt of an evaluation and state their methods.

    import strata, strata.report as R
    with strata.Model(path) as m:
        artifact = R.artifact(m)                 # shards with sha256, identity, labels (unverified)
    problems = R.validate(open("REPORT.json").read())   # [] for a valid report
    scored = R.eval_score({"name": ..., "rounds": [...], "tasks": [...]})
    print(scored["score"]["summary"])            # "first pass 14/20 (4 timeouts at 600 s, ...)"
    cmp = R.eval_compare(text_a, text_b)         # {"comparable": False, "differences": [...]}
    result = R.sandbox_run(["python3", "-c", "..."], limits={"wall_seconds": 2})
    with R.MemorySampler(cadence_ms=10) as s:    # started on enter, stopped on exit
        ...
    record = s.record("this process")

Inputs are JSON texts or Python values (dicts/lists, serialized here); outputs are parsed JSON.
Every failure raises StrataError with the library's message.
"""
from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Optional, Sequence, Union

from . import _lib
from ._convert import _buffer_text
from ._handle import OwnedHandle
from ._lib import check
from .model import Model

JsonInput = Union[str, bytes, dict, list]

__all__ = ["MemorySampler", "artifact", "assemble", "eval_compare", "eval_score", "markdown", "plot",
           "runtime", "sandbox_run", "schema_version", "validate"]


def _bytes(value: JsonInput) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value).encode("utf-8")


def _text_call(name: str, *args: Any) -> str:
    fn = _lib.fn(name)
    return _buffer_text(lambda buf, cap, needed: fn(*args, buf, cap, needed))


def schema_version() -> str:
    """"strata.report/1"."""
    return _lib.fn("strata_report_schema_version")().decode("ascii")


def artifact(model: Model) -> dict:
    """The artifact section of an open model (shards hashed once, cached)."""
    return json.loads(_text_call("strata_report_artifact_json", model._handle()))


def runtime() -> dict:
    """The runtime section of this process."""
    return json.loads(_text_call("strata_report_runtime_json"))


def assemble(sections: JsonInput) -> str:
    """The validated report text from its sections (title, artifact, runtime, transport, deployment,
    memory, benchmarks, evaluations; created_utc optional). StrataError FORMAT lists the problems."""
    data = _bytes(sections)
    return _text_call("strata_report_assemble", data, len(data))


def validate(report_text: Union[str, bytes]) -> list[str]:
    """Every problem of a report text ("/path: what is wrong"); [] when it is valid."""
    data = _bytes(report_text)
    return json.loads(_text_call("strata_report_validate", data, len(data)))


def markdown(report_text: Union[str, bytes], images: Optional[Sequence[dict]] = None) -> str:
    """The Markdown rendering of a valid report; images: [{"caption", "path"}] as plot() returns."""
    data = _bytes(report_text)
    img = json.dumps(list(images)).encode("utf-8") if images is not None else None
    return _text_call("strata_report_markdown", data, len(data), img)


def eval_score(evaluation: JsonInput) -> dict:
    """The evaluation element with its score; StrataError INVALID_ARGUMENT when the attempt
    history breaks the rules (a first attempt outside round 0, a retry after a pass, ...)."""
    data = _bytes(evaluation)
    return json.loads(_text_call("strata_report_eval_score", data, len(data)))


def eval_compare(report_a: Union[str, bytes], report_b: Union[str, bytes], evaluation_a: int = 0,
                 evaluation_b: int = 0) -> dict:
    """{"comparable": bool, "differences": [{"what", "a", "b"}, ...]}."""
    a, b = _bytes(report_a), _bytes(report_b)
    return json.loads(_text_call("strata_report_eval_compare", a, len(a), b, len(b), int(evaluation_a),
                                 int(evaluation_b)))


def sandbox_run(argv: Sequence[str], files: Optional[dict[str, str]] = None,
                limits: Optional[dict[str, Any]] = None) -> dict:
    """Runs argv in the library's sandbox (a fresh temporary directory holding `files`, CPU, memory,
    file-size and process limits, a wall timeout, no network where it can be arranged). Returns the
    result: limits, outcome, exit_code / signal, timed_out, the limits hit, output."""
    request: dict[str, Any] = {"argv": list(argv)}
    if files:
        request["files"] = [{"name": k, "content": v} for k, v in files.items()]
    if limits:
        request["limits"] = dict(limits)
    data = _bytes(request)
    return json.loads(_text_call("strata_report_sandbox_run", data, len(data)))


def plot(report_text: Union[str, bytes], out_dir: Union[str, "os.PathLike[str]"], prefix: str = "") -> list[dict]:
    """Writes the report's PNG plots into out_dir; returns [{"caption", "path"}]."""
    data = _bytes(report_text)
    return json.loads(_text_call("strata_report_plot", data, len(data), os.fsencode(out_dir),
                                 prefix.encode("utf-8")))


class MemorySampler(OwnedHandle):
    """The library's memory sampler thread (RSS, VmHWM, MemAvailable, swap counters, the context
    length set by the caller) at a stated cadence. As a context manager it starts and stops."""

    _FREE = "strata_memory_sampler_free"

    def __init__(self, cadence_ms: int = 100) -> None:
        h = ctypes.c_void_p()
        check(_lib.fn("strata_memory_sampler_create")(int(cadence_ms), ctypes.byref(h)))
        self._h = h.value

    def _handle(self) -> int:
        if self._h is None:
            raise ValueError("the memory sampler is closed")
        return self._h

    def start(self) -> None:
        check(_lib.fn("strata_memory_sampler_start")(self._handle()))

    def stop(self) -> None:
        check(_lib.fn("strata_memory_sampler_stop")(self._handle()))

    def set_context(self, tokens: int) -> None:
        check(_lib.fn("strata_memory_sampler_set_context")(self._handle(), int(tokens)))

    def record(self, node: str = "this process") -> dict:
        """The memory section element: samples, cadence, method and summary."""
        return json.loads(_text_call("strata_memory_sampler_json", self._handle(), node.encode("utf-8")))

    def __enter__(self) -> "MemorySampler":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
