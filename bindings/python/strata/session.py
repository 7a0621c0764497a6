"""strata.Session: sequences running on a Model (KV cache and sampler each), CPU backend."""
from __future__ import annotations

import codecs
import ctypes
import json
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Union

import numpy as np

from . import _lib
from ._convert import DEVICES, KV_TYPES  # noqa: F401 - strata.session.DEVICES / KV_TYPES, as before
from ._convert import _buffer_text, _device_id, _kv_type_id, _token_array
from ._handle import OwnedHandle
from ._lib import check
from .model import Model

#: strata_stop_reason values (index = value).
STOP_REASONS = ("max_tokens", "end_of_generation", "stop_string", "callback", "context_full")
#: The sampling settings, in strata_sampling_params order.
SAMPLING_SETTINGS = ("temperature", "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n", "seed")
_INT_SETTINGS = {"top_k", "repeat_last_n", "seed"}

TokenCallback = Callable[[int, bytes], Any]


def stop_reason_name(value: int) -> str:
    """"max_tokens", "end_of_generation", ... or "unknown(<n>)"."""
    return STOP_REASONS[value] if 0 <= value < len(STOP_REASONS) else f"unknown({value})"


def _sampling_struct(settings: dict[str, Any], current: dict[str, Any]) -> "_lib.SamplingParams":
    """strata_sampling_params from ``settings``; settings not given take ``current``'s values,
    else the library's defaults. Unknown names raise TypeError, bad integers TypeError or
    OverflowError."""
    unknown = set(settings) - set(SAMPLING_SETTINGS)
    if unknown:
        raise TypeError(f"unknown sampling setting(s): {', '.join(sorted(unknown))}")
    p = _lib.SamplingParams()
    _lib.fn("strata_sampling_default_params")(ctypes.byref(p))
    p.struct_size = ctypes.sizeof(_lib.SamplingParams)
    for k in SAMPLING_SETTINGS:
        v = settings.get(k, current.get(k))
        if v is None:
            continue
        if k in _INT_SETTINGS:
            if isinstance(v, (float, np.floating)) and not float(v).is_integer():
                raise TypeError(f"{k} must be an integer, not {v!r}")
            iv = int(v)
            lo, hi = (0, (1 << 64) - 1) if k == "seed" else (-(1 << 31), (1 << 31) - 1)
            if not lo <= iv <= hi:
                raise OverflowError(f"{k}={iv} is out of range")
            setattr(p, k, iv)
        else:
            setattr(p, k, float(v))
    return p


def _sample_top(call: Callable[..., int], n: int) -> tuple[int, list[tuple[int, float]]]:
    """A strata_*_sample_top call given its trailing arguments (out_token, n_top, top_tokens,
    top_logprobs) by ``call``: the token drawn and the ``n`` (token, logprob) pairs."""
    tok = ctypes.c_int32()
    toks = (ctypes.c_int32 * max(1, n))()
    lps = (ctypes.c_float * max(1, n))()
    check(call(ctypes.byref(tok), n, toks, lps))
    return tok.value, [(int(toks[i]), float(lps[i])) for i in range(n)]


class Session(OwnedHandle):
    """One sequence on a model: KV cache for ``n_ctx`` tokens, a sampler, and generation.

    Create it with ``Model.session(...)`` (or ``Session(model, ...)``). ``n_ctx`` 0 takes the
    model's context_length (at most 4096); ``n_threads`` 0 uses every hardware thread;
    ``kv_type`` "f16" or "q8_0"; ``memory_budget`` in bytes, 0 for the memory available now
    (a plan that does not fit raises StrataError OUT_OF_MEMORY giving the largest context that
    fits). ``device`` "cpu" or "cuda": "cuda" runs a llama-family model entirely on the GPU
    (the budget then defaults to the device's free memory) and raises StrataError UNSUPPORTED
    saying why when the library has no CUDA backend or no usable GPU. Sampling keywords: see
    set_sampling().

    ``n_seq`` > 1 (CPU only) holds that many independent sequences, numbered 0..n_seq-1, each
    with its own KV cache of ``n_ctx`` tokens and its own sampler; the plain calls address
    sequence 0, the ``seq_*`` calls any of them, and decode_batch() runs the next tokens of several
    in one forward step (each sequence's logits exactly those it would get decoded alone).

    The session holds a reference to its model, so the model stays alive while the session
    does; closing the model closes its sessions first.
    """

    _FREE = "strata_session_free"

    def __init__(self, model: Model, n_ctx: int = 0, n_threads: int = 0, kv_type: Union[str, int] = "f16",
                 memory_budget: int = 0, device: Union[str, int] = "cpu", n_seq: int = 1, **sampling: Any):
        self._h: Optional[int] = None
        unknown = set(sampling) - set(SAMPLING_SETTINGS)
        if unknown:
            raise TypeError(f"unknown sampling setting(s): {', '.join(sorted(unknown))}")
        self._model = model  # keeps the model alive while the session lives
        params = _lib.SessionParams()
        _lib.fn("strata_session_default_params")(ctypes.byref(params))
        params.struct_size = ctypes.sizeof(_lib.SessionParams)
        params.n_ctx = int(n_ctx)
        params.n_threads = int(n_threads)
        params.kv_type = _kv_type_id(kv_type)
        params.memory_budget = int(memory_budget)
        params.device = _device_id(device)
        params.n_seq = int(n_seq)
        h = ctypes.c_void_p()
        check(_lib.fn("strata_session_create")(model._handle(), ctypes.byref(params), ctypes.byref(h)))
        self._h = h.value
        model._sessions.add(self)
        self._n_vocab: Optional[int] = None
        if sampling:
            try:
                self.set_sampling(**sampling)
            except BaseException:
                self.close()
                raise

    @classmethod
    def _adopt(cls, handle: int, model: Model, owner: Any = None) -> "Session":
        """A Session over an existing strata_session handle (e.g. strata_pipeline_session's),
        freed when the Session closes; ``owner`` (the pipeline) is kept alive with it."""
        s = cls.__new__(cls)
        s._h = handle
        s._model = model
        s._owner = owner
        s._n_vocab = None
        model._sessions.add(s)
        return s

    def close(self) -> None:
        """Free the session (idempotent). If its model was already freed (only possible when both
        were collected together in a reference cycle), the handle is dropped without a call:
        the library requires sessions to be freed before their model."""
        model = getattr(self, "_model", None)
        if self._h is not None and model is not None and model._h is None:
            self._h = None
            return
        super().close()

    # --- state --------------------------------------------------------------------------------
    @property
    def model(self) -> Model:
        return self._model

    @property
    def closed(self) -> bool:
        return self._h is None

    def _handle(self) -> int:
        if self._h is None:
            raise ValueError("the session is closed")
        return self._h

    @property
    def plan(self) -> str:
        """The memory plan as text (weights, KV cache, scratch, budget, largest context that fits)."""
        h = self._handle()
        return _buffer_text(lambda b, c, n: _lib.fn("strata_session_plan")(h, b, c, n))

    @property
    def n_ctx(self) -> int:
        v = ctypes.c_int64()
        check(_lib.fn("strata_session_n_ctx")(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def n_past(self) -> int:
        """Tokens in the KV cache (the position the next token gets)."""
        v = ctypes.c_int64()
        check(_lib.fn("strata_session_n_past")(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def n_vocab(self) -> int:
        if self._n_vocab is None:
            v = ctypes.c_int32()
            check(_lib.fn("strata_session_n_vocab")(self._handle(), ctypes.byref(v)))
            self._n_vocab = v.value
        return self._n_vocab

    # --- running ------------------------------------------------------------------------------
    def decode(self, tokens: Iterable[int], all_logits: bool = False) -> None:
        """Run ``tokens`` at positions n_past.. and keep the logits of the last one (or of every
        one with all_logits). Out-of-range ids raise INVALID_ARGUMENT, tokens past the context
        CONTEXT_OVERFLOW; in both cases nothing is run (n_past unchanged)."""
        ids = _token_array(tokens)
        check(_lib.fn("strata_session_decode")(self._handle(), ids.ctypes.data if ids.size else None, ids.size,
                                               int(bool(all_logits))))

    @property
    def logits(self) -> np.ndarray:
        """A float32 copy of the last decode's logits, shape (rows, n_vocab): one row, or one per
        decoded token after decode(..., all_logits=True)."""
        p, rows = ctypes.c_void_p(), ctypes.c_size_t()
        check(_lib.fn("strata_session_logits")(self._handle(), ctypes.byref(p), ctypes.byref(rows)))
        n_vocab = self.n_vocab
        if rows.value == 0 or not p.value:
            return np.empty((0, n_vocab), dtype=np.float32)
        count = rows.value * n_vocab
        view = np.ctypeslib.as_array(ctypes.cast(p.value, ctypes.POINTER(ctypes.c_float)), shape=(count,))
        return view.copy().reshape(rows.value, n_vocab)

    def reset(self) -> None:
        """Drop the KV cache and the sampler history; re-seed the sampler."""
        check(_lib.fn("strata_session_reset")(self._handle()))

    # --- sampling -----------------------------------------------------------------------------
    @staticmethod
    def default_sampling() -> dict[str, Any]:
        """The library's default sampling settings (strata_sampling_default_params)."""
        p = _lib.SamplingParams()
        _lib.fn("strata_sampling_default_params")(ctypes.byref(p))
        return {k: (int(getattr(p, k)) if k in _INT_SETTINGS else float(getattr(p, k))) for k in SAMPLING_SETTINGS}

    def set_sampling(self, **settings: Any) -> None:
        """Replace the sampler (history cleared, RNG seeded). Settings not given keep the values
        now in force (see ``sampling``): temperature (<= 0 greedy), top_k (0 off), top_p (1 off),
        min_p (0 off), repeat_penalty (1 off), repeat_last_n, seed. Invalid settings raise
        StrataError INVALID_ARGUMENT naming the setting."""
        p = _sampling_struct(settings, self.sampling_params())
        check(_lib.fn("strata_session_set_sampling")(self._handle(), ctypes.byref(p)))

    def sampling_params(self) -> dict[str, Any]:
        """The settings in force as a dict; numbers the JSON spells as strings ("NaN") become floats."""
        out = dict(self.sampling)
        for k, v in out.items():
            if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
                out[k] = float(v.replace("Infinity", "inf"))
        return out

    @property
    def sampling_json(self) -> str:
        """strata_session_sampling_json: every sampling setting in force, as JSON text."""
        h = self._handle()
        return _buffer_text(lambda b, c, n: _lib.fn("strata_session_sampling_json")(h, b, c, n))

    @property
    def sampling(self) -> dict[str, Any]:
        """Every sampling setting in force (parsed from the library's JSON)."""
        return json.loads(self.sampling_json)

    def sample(self) -> int:
        """Sample the next token from the last row of the last decode's logits."""
        t = ctypes.c_int32()
        check(_lib.fn("strata_session_sample")(self._handle(), ctypes.byref(t)))
        return t.value

    def decode_sample(self, tokens: Iterable[int]) -> int:
        """decode(tokens) then sample() in one call: on a pipeline one round trip that moves no
        logits (logits() has none to give afterwards)."""
        ids = _token_array(tokens)
        t = ctypes.c_int32()
        check(_lib.fn("strata_session_decode_sample")(self._handle(), ids.ctypes.data if ids.size else None,
                                                      ids.size, ctypes.byref(t)))
        return t.value

    def sample_top(self, n: int) -> tuple[int, list[tuple[int, float]]]:
        """sample(), and the ``n`` (at most 64) most likely tokens under the raw logits
        (log-softmax, temperature 1, no penalty), descending, as (token, logprob) pairs. On a
        pipeline only these pairs travel, never the logits."""
        n = int(n)
        if n < 0:
            raise ValueError(f"n must be non-negative, got {n}")
        h = self._handle()
        return _sample_top(lambda *out: _lib.fn("strata_session_sample_top")(h, *out), n)

    # --- several sequences (n_seq) ------------------------------------------------------------
    @property
    def n_seq(self) -> int:
        """How many sequences the session holds (1 unless created with n_seq)."""
        v = ctypes.c_int32()
        check(_lib.fn("strata_session_n_seq")(self._handle(), ctypes.byref(v)))
        return v.value

    def decode_batch(self, entries: Iterable[tuple[int, Iterable[int]]]) -> None:
        """Run the next tokens of several sequences in one forward step: ``entries`` is
        ``[(seq, tokens), ...]``, each sequence at most once, each at its own n_past (one-token
        steps and prefill chunks may be mixed). Every entry is checked before anything runs:
        StrataError INVALID_ARGUMENT or CONTEXT_OVERFLOW naming the entry, nothing run in any
        sequence. Each sequence keeps its last token's logits (seq_logits)."""
        arrays = [(int(seq), _token_array(tokens)) for seq, tokens in entries]
        c = (_lib.SeqTokensC * max(1, len(arrays)))()
        for i, (seq, ids) in enumerate(arrays):
            c[i].seq = seq
            c[i].tokens = ids.ctypes.data if ids.size else None
            c[i].n_tokens = ids.size
        check(_lib.fn("strata_session_decode_batch")(self._handle(), c, len(arrays)))

    def seq_logits(self, seq: int) -> np.ndarray:
        """A float32 copy (n_vocab,) of the last-token logits of sequence ``seq``'s last decode_batch."""
        p = ctypes.c_void_p()
        check(_lib.fn("strata_session_seq_logits")(self._handle(), int(seq), ctypes.byref(p)))
        n_vocab = self.n_vocab
        view = np.ctypeslib.as_array(ctypes.cast(p.value, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,))
        return view.copy()

    def seq_n_past(self, seq: int) -> int:
        """Tokens in sequence ``seq``'s KV cache."""
        v = ctypes.c_int64()
        check(_lib.fn("strata_session_seq_n_past")(self._handle(), int(seq), ctypes.byref(v)))
        return v.value

    def seq_reset(self, seq: int) -> None:
        """Empty sequence ``seq``'s cache; clear its sampler history and re-seed it."""
        check(_lib.fn("strata_session_seq_reset")(self._handle(), int(seq)))

    def seq_truncate(self, seq: int, n_past: int) -> None:
        """Keep sequence ``seq``'s first ``n_past`` positions (a shared prompt prefix decodes only
        the rest); its sampler history is cleared. A model with recurrent (KDA) layers only
        restarts (0) or keeps everything: StrataError UNSUPPORTED otherwise."""
        check(_lib.fn("strata_session_seq_truncate")(self._handle(), int(seq), int(n_past)))

    def seq_set_sampling(self, seq: int, **settings: Any) -> None:
        """Replace sequence ``seq``'s sampler (history cleared, RNG seeded). Settings not given take
        the library's defaults (default_sampling()); names and checks as set_sampling()."""
        p = _sampling_struct(settings, {})
        check(_lib.fn("strata_session_seq_set_sampling")(self._handle(), int(seq), ctypes.byref(p)))

    def seq_sample(self, seq: int, n_top: int = 0) -> Union[int, tuple[int, list[tuple[int, float]]]]:
        """Sample sequence ``seq``'s next token from its last decode's logits. With ``n_top`` > 0
        (at most 64): (token, [(token, logprob), ...]) as sample_top() gives them."""
        n = int(n_top)
        if n < 0:
            raise ValueError(f"n_top must be non-negative, got {n}")
        h, i = self._handle(), int(seq)
        token, top = _sample_top(lambda *out: _lib.fn("strata_session_seq_sample_top")(h, i, *out), n)
        return token if n == 0 else (token, top)

    # --- generation ---------------------------------------------------------------------------
    def generate(self, prompt: Union[str, bytes], max_tokens: int = 128, stop: Optional[Sequence[str]] = None,
                 add_special: bool = True, parse_special: bool = False,
                 stop_at_end_of_generation: bool = True) -> "Generation":
        """Stream the continuation of ``prompt`` as text pieces (a Generation iterator).

        Runs in Python over tokenize / decode / sample / token_to_piece: the prompt is prefilled
        after what the session already holds (BOS, when add_special and the vocabulary asks for
        it, only at position 0), then tokens are sampled and decoded one at a time. Every yielded
        piece is valid UTF-8 text: bytes of an incomplete character are held back until the
        character is complete (at the end, a dangling incomplete sequence is yielded as U+FFFD).

        Stops after ``max_tokens`` tokens; at end of generation (Model.is_eog: eos, eot, eom and the
        end-of-turn tokens, as llama.cpp decides; the token is not yielded); when the
        context is full; or when the text ends with one of ``stop`` (the stop string and what
        follows it are not yielded; text that might begin a stop string is held back until
        it cannot). The Generation's ``stop_reason``, ``tokens`` and ``n_prompt_tokens`` say what
        happened. A prompt that does not fit raises StrataError CONTEXT_OVERFLOW when iteration
        starts, with nothing run.
        """
        return Generation(self, prompt, max_tokens, stop, add_special, parse_special, stop_at_end_of_generation)

    def generate_text(self, prompt: Union[str, bytes], max_tokens: int = 128, stop: Optional[Sequence[str]] = None,
                      add_special: bool = True, parse_special: bool = False, stop_at_end_of_generation: bool = True,
                      on_token: Optional[TokenCallback] = None) -> tuple[str, dict[str, Any]]:
        """Generate with the library's strata_session_generate.

        ``on_token(token, piece_bytes)`` (optional) is called for every generated token; a truthy
        return value stops generation (stop_reason "callback"). An exception raised by on_token
        stops generation and is re-raised once the library call has returned.

        Returns (text, result): the generated pieces joined and decoded as UTF-8 (invalid bytes
        replaced), and a dict with n_prompt_tokens, n_generated, prefill_seconds,
        decode_seconds, stop_reason (a name from STOP_REASONS) and stop_reason_code.
        """
        raw_prompt = prompt.encode("utf-8", "surrogateescape") if isinstance(prompt, str) else bytes(prompt)
        stops = [s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s) for s in (stop or [])]
        if any(b"\0" in s for s in stops):
            raise ValueError("a stop string contains a NUL character")
        if any(not s for s in stops):
            raise ValueError("a stop string is empty")
        pieces: list[bytes] = []
        error: list[BaseException] = []

        def cb(token: int, piece: Optional[int], length: int, _user: Any) -> int:
            try:
                data = ctypes.string_at(piece, length) if length and piece else b""
                pieces.append(data)
                if on_token is not None and on_token(int(token), data):
                    return 1
                return 0
            except BaseException as e:  # noqa: BLE001 - kept and re-raised after the C call
                if not error:
                    error.append(e)
                return 1

        c_cb = _lib.TOKEN_FN(cb)
        params = _lib.GenerateParams()
        _lib.fn("strata_generate_default_params")(ctypes.byref(params))
        params.struct_size = ctypes.sizeof(_lib.GenerateParams)
        params.max_tokens = int(max_tokens)
        params.add_special = int(bool(add_special))
        params.parse_special = int(bool(parse_special))
        params.stop_at_end_of_generation = int(bool(stop_at_end_of_generation))
        stop_arr = (ctypes.c_char_p * max(1, len(stops)))(*stops)
        params.stop_strings = ctypes.cast(stop_arr, ctypes.POINTER(ctypes.c_char_p)) if stops else None
        params.n_stop_strings = len(stops)
        params.on_token = c_cb
        params.user_data = None
        result = _lib.GenerateResult()
        result.struct_size = ctypes.sizeof(_lib.GenerateResult)
        src = ctypes.create_string_buffer(raw_prompt, max(1, len(raw_prompt)))
        st = _lib.fn("strata_session_generate")(self._handle(), src, len(raw_prompt), ctypes.byref(params),
                                                ctypes.byref(result))
        if error:
            raise error[0]
        check(st)
        info = {"n_prompt_tokens": int(result.n_prompt_tokens), "n_generated": int(result.n_generated),
                "prefill_seconds": float(result.prefill_seconds), "decode_seconds": float(result.decode_seconds),
                "stop_reason": stop_reason_name(int(result.stop_reason)),
                "stop_reason_code": int(result.stop_reason)}
        return b"".join(pieces).decode("utf-8", "replace"), info

    def __repr__(self) -> str:
        if self._h is None:
            return "<strata.Session closed>"
        return f"<strata.Session n_ctx={self.n_ctx} n_past={self.n_past}>"


# Model.session() builds this class: this module builds on model.py, which cannot import it back.
Model._session_class = Session


class Generation(Iterator[str]):
    """The streaming iterator Session.generate returns (see there). After iteration:
    ``stop_reason`` (a name from STOP_REASONS), ``tokens`` (the generated ids, the end-of-generation
    token excluded), ``n_prompt_tokens``; ``text`` is everything yielded so far."""

    def __init__(self, session: Session, prompt: Union[str, bytes], max_tokens: int,
                 stop: Optional[Sequence[str]], add_special: bool, parse_special: bool, stop_at_eog: bool):
        self.session = session
        self._prompt = prompt
        self.max_tokens = int(max_tokens)
        self.stops = [str(s) for s in (stop or [])]
        if any(not s for s in self.stops):
            raise ValueError("a stop string is empty")
        self._add_special = add_special
        self._parse_special = parse_special
        self._stop_at_eog = stop_at_eog
        self.tokens: list[int] = []
        self.n_prompt_tokens = 0
        self.stop_reason: Optional[str] = None
        self.text = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""  # decoded text not yet yielded (it may begin a stop string)
        self._started = False
        self._done = False

    def __iter__(self) -> "Generation":
        return self

    def _start(self) -> None:
        s = self.session
        first = s.n_past == 0
        ids = s.model.tokenize(self._prompt, add_special=bool(self._add_special) and first,
                               parse_special=self._parse_special)
        if not ids and first:
            raise ValueError("the prompt gives no tokens and the session is empty: nothing to continue")
        # decode_sample: the prompt and the first draw in one call (one round trip on a pipeline).
        self._next: Optional[int] = None
        if ids:
            if self.max_tokens > 0:
                self._next = s.decode_sample(ids)
            else:
                s.decode(ids)
        elif self.max_tokens > 0:
            self._next = s.sample()
        self.n_prompt_tokens = len(ids)

    def _hold_back(self) -> int:
        """How many trailing characters of _pending could begin a stop string."""
        best = 0
        for st in self.stops:
            for k in range(min(len(st) - 1, len(self._pending)), 0, -1):
                if self._pending.endswith(st[:k]):
                    best = max(best, k)
                    break
        return best

    def _emit(self, text: str, final: bool) -> Optional[str]:
        """Adds decoded text; returns what may be yielded now and sets _done on a stop string."""
        self._pending += text
        if self.stops:
            cut = -1
            for st in self.stops:
                i = self._pending.find(st)
                if i >= 0 and (cut < 0 or i < cut):
                    cut = i
            if cut >= 0:
                out, self._pending = self._pending[:cut], ""
                self.stop_reason = "stop_string"
                self._done = True
                return out
        keep = 0 if final else self._hold_back()
        if keep:
            out, self._pending = self._pending[:-keep], self._pending[-keep:]
        else:
            out, self._pending = self._pending, ""
        return out

    def _finish(self, reason: str) -> Optional[str]:
        self.stop_reason = reason
        self._done = True
        return self._emit(self._decoder.decode(b"", final=True), final=True)

    def _step(self) -> Optional[str]:
        s = self.session
        if len(self.tokens) >= self.max_tokens:
            return self._finish("max_tokens")
        t = self._next
        if self._stop_at_eog and s.model.is_eog(t):
            return self._finish("end_of_generation")
        self.tokens.append(t)
        out = self._emit(self._decoder.decode(s.model.token_to_piece(t)), final=False)
        if s.n_past >= s.n_ctx:
            tail = None if self._done else self._finish("context_full")
            return (out or "") + (tail or "")
        # Every emitted token enters the KV cache, as strata_session_generate does, so the
        # session can continue from where generation stopped; the next token is drawn only when
        # it is wanted, so the sampler's generator and history match a decode-then-sample loop.
        if self._done or len(self.tokens) >= self.max_tokens:
            s.decode([t])
            if self._done:
                return out
            tail = self._finish("max_tokens")
            return (out or "") + (tail or "")
        self._next = s.decode_sample([t])
        return out

    def __next__(self) -> str:
        if not self._started:
            self._started = True
            self._start()
        while not self._done:
            out = self._step()
            if out:
                self.text += out
                return out
        raise StopIteration
