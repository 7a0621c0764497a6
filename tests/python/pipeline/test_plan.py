"""The memory plan without a session (strata_model_plan_json, Model.plan, strata-inspect --plan):
every figure checked against what the test works out from the model's metadata and tensor table
(KV bytes per token: K and V rows for llama, the latent and rope key for deepseek2; weights: the
stage's tensors), against a session's own plan and a pipeline's, and the errors by name."""
from __future__ import annotations

import ctypes
import json
import re
import subprocess
from pathlib import Path

import pytest

import strata
from _report_tools import tool
from _synth import write_model
from _synth_deepseek2 import write_deepseek2_model

LONG = 1 << 20  # the long context every plan states the KV cache for


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("plan")
    return {
        "llama": write_model(d / "llama.gguf", 1, wtype="q8_0", n_layer=6, n_vocab=300)[0],
        "llama-tied": write_model(d / "tied.gguf", 2, n_layer=3, n_head=8, n_head_kv=2, tied=True)[0],
        "deepseek2": write_deepseek2_model(d / "ds2.gguf", 3, n_layer=3)[0],
        "deepseek2-legacy": write_deepseek2_model(d / "ds2-legacy.gguf", 3, n_layer=3, legacy_kv_b=True)[0],
        # a rope key of 16 values: q8_0 blocks of 32 would mix it with the latent
        "deepseek2-rope16": write_deepseek2_model(d / "ds2-rope16.gguf", 4, n_layer=2, qk_rope=16)[0],
    }


# --- what the test expects, from the metadata and the tensor table ----------------------------

def kv_bytes_per_layer(m: strata.Model, kv_type: str) -> int:
    arch = m.get_string("general.architecture")
    if arch == "deepseek2":  # the latent (kv_lora_rank) and the rope key, one row per token
        width = m.get_int("deepseek2.attention.kv_lora_rank") + m.get_int("deepseek2.rope.dimension_count")
        return width * 2 if kv_type == "f16" else width // 32 * 34
    n_head = m.get_int(f"{arch}.attention.head_count")
    n_head_kv = m.get_int(f"{arch}.attention.head_count_kv")
    head_dim = m.get_int(f"{arch}.embedding_length") // n_head
    row = n_head_kv * head_dim
    return 2 * (row * 2 if kv_type == "f16" else row // 32 * 34)  # a K and a V row


def expected_weight_bytes(m: strata.Model, first: int, last: int) -> int:
    n_layer = m.get_int(f"{m.get_string('general.architecture')}.block_count")
    sizes = {t.name: t.n_bytes for t in m.tensors}
    total = 0
    for name, n in sizes.items():
        layer = re.match(r"blk\.(\d+)\.", name)
        if layer:
            total += n if first <= int(layer.group(1)) < last else 0
        elif name == "token_embd.weight":
            total += n if first == 0 else 0
        elif last == n_layer:  # output_norm, output
            total += n
    if last == n_layer and "output.weight" not in sizes and first != 0:
        total += sizes["token_embd.weight"]  # tied: the output reads the embeddings on the last stage
    if m.get_string("general.architecture") == "deepseek2" and "blk.0.attn_kv_b.weight" in sizes:
        # the legacy form: k_b built at load as float32, n_head x kv_lora x qk_nope per layer
        nope = m.get_int("deepseek2.attention.key_length") - m.get_int("deepseek2.rope.dimension_count")
        k_b = m.get_int("deepseek2.attention.head_count") * m.get_int("deepseek2.attention.kv_lora_rank") * nope * 4
        total += k_b * (last - first)
    return total


def check_plan(m: strata.Model, plan: dict, n_ctx: int, kv_type: str, ranges: list[tuple[int, int]]) -> None:
    arch = m.get_string("general.architecture")
    n_layer = m.get_int(f"{arch}.block_count")
    per_layer = kv_bytes_per_layer(m, kv_type)
    assert plan["architecture"] == arch and plan["n_layer"] == n_layer
    assert plan["n_ctx"] == n_ctx and plan["kv_type"] == kv_type and plan["long_context_tokens"] == LONG
    assert plan["n_ctx_train"] == m.get_int(f"{arch}.context_length")
    assert plan["kv_bytes_per_token"] == per_layer * n_layer
    assert plan["kv_bytes"] == per_layer * n_layer * n_ctx
    assert plan["kv_bytes_at_1m"] == per_layer * n_layer * LONG
    assert plan["layers"] == ",".join(f"{a}:{b}" for a, b in ranges)
    assert [(s["first_layer"], s["last_layer"]) for s in plan["stages"]] == ranges
    for i, s in enumerate(plan["stages"]):
        first, last = ranges[i]
        assert s["stage"] == i
        assert s["kv_bytes_per_token"] == per_layer * (last - first), s
        assert s["kv_bytes"] == s["kv_bytes_per_token"] * n_ctx
        assert s["kv_bytes_at_1m"] == s["kv_bytes_per_token"] * LONG
        assert s["weight_bytes"] == expected_weight_bytes(m, first, last), s
        # per position the scratch grows by the threads' attention scores (and on deepseek2 by
        # the layer's latent cache read as float32)
        width = (m.get_int("deepseek2.attention.kv_lora_rank") + m.get_int("deepseek2.rope.dimension_count")
                 if arch == "deepseek2" else 0)
        per_position = (width + plan["n_threads"]) * 4
        assert s["scratch_bytes_at_1m"] - s["scratch_bytes"] == per_position * (LONG - n_ctx), s
        assert s["scratch_bytes"] > per_position * n_ctx
        assert s["total_bytes"] == s["weight_bytes"] + s["kv_bytes"] + s["scratch_bytes"]
        assert s["total_bytes_at_1m"] == s["weight_bytes"] + s["kv_bytes_at_1m"] + s["scratch_bytes_at_1m"]


# --- the figures -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["llama", "llama-tied", "deepseek2", "deepseek2-legacy"])
@pytest.mark.parametrize("kv_type", ["f16", "q8_0"])
def test_one_stage_holds_every_layer(models, name, kv_type):
    with strata.Model(models[name]) as m:
        n_layer = m.get_int(f"{m.get_string('general.architecture')}.block_count")
        plan = m.plan(n_ctx=300, kv_type=kv_type, n_threads=2)
        print(json.dumps(plan))
        check_plan(m, plan, 300, kv_type, [(0, n_layer)])


@pytest.mark.parametrize("name", ["llama", "llama-tied", "deepseek2-legacy"])
def test_given_layer_ranges_and_an_even_split(models, name):
    with strata.Model(models[name]) as m:
        n_layer = m.get_int(f"{m.get_string('general.architecture')}.block_count")
        ranges = [(0, 1), (1, n_layer)]
        check_plan(m, m.plan(n_ctx=64, layers="0:1,1:%d" % n_layer, n_threads=1), 64, "f16", ranges)
        check_plan(m, m.plan(n_ctx=64, layers="0:1,1:%d" % n_layer, n_stages=2, n_threads=1), 64, "f16", ranges)
        # n_stages without ranges: the pipeline's planner splits by layer count, the first
        # stages taking the remainder
        for n_stages in range(1, n_layer + 1):
            counts = [n_layer // n_stages + (1 if i < n_layer % n_stages else 0) for i in range(n_stages)]
            even = [(sum(counts[:i]), sum(counts[:i + 1])) for i in range(n_stages)]
            check_plan(m, m.plan(n_ctx=64, n_stages=n_stages, n_threads=1), 64, "f16", even)


def test_the_kimi_k2_latent_per_token(models):
    """deepseek2 keeps kv_lora_rank + rope values per token and layer: 288 here; Kimi K2's 512 +
    64 over 61 layers are 70272 bytes a token in f16 (tests/unit/exec/test_stage_memory.cpp)."""
    with strata.Model(models["deepseek2"]) as m:
        f16, q8 = m.plan(n_ctx=128, n_threads=1), m.plan(n_ctx=128, kv_type="q8_0", n_threads=1)
        assert f16["kv_bytes_per_token"] == 3 * (256 + 32) * 2
        assert q8["kv_bytes_per_token"] == 3 * (256 + 32) // 32 * 34
        assert f16["kv_bytes_at_1m"] == 3 * 288 * 2 * LONG


@pytest.mark.parametrize("name", ["llama", "deepseek2", "deepseek2-legacy"])
def test_a_session_plans_the_same_figures(models, name):
    """The session's plan text rounds to MiB: the query's figures must print the same, and the
    KV bytes per token exactly."""
    mib = lambda b: f"{b / (1 << 20):.2f} MiB"  # noqa: E731
    with strata.Model(models[name]) as m:
        for kv_type in ("f16", "q8_0"):
            plan = m.plan(n_ctx=200, kv_type=kv_type, n_threads=2)["stages"][0]
            with m.session(n_ctx=200, n_threads=2, kv_type=kv_type) as s:
                text = s.plan
            print(text)
            assert f"weights {mib(plan['weight_bytes'])} (mapped)" in text
            assert f"KV cache {mib(plan['kv_bytes'])} (configured context 200; {plan['kv_bytes_per_token']} B/token; " \
                   f"at {LONG} tokens: {plan['kv_bytes_at_1m'] / (1 << 30):.2f} GiB)" in text
            assert f"scratch {mib(plan['scratch_bytes'])} = {mib(plan['total_bytes'])}" in text


def test_nothing_is_allocated(models):
    """A context of 2^30 tokens needs terabytes of KV cache: the plan states it and allocates none."""
    with strata.Model(models["llama"]) as m:
        plan = m.plan(n_ctx=1 << 30, n_threads=1)
        assert plan["kv_bytes"] == plan["kv_bytes_per_token"] << 30 and plan["kv_bytes"] > 1 << 40


def test_the_buffer_protocol(models):
    f = strata._lib.fn("strata_model_plan_json")
    with strata.Model(models["llama"]) as m:
        p = strata._lib.PlanParams()
        strata._lib.fn("strata_plan_default_params")(ctypes.byref(p))
        assert (p.n_ctx, p.kv_type, p.layers, p.n_stages, p.n_batch, p.n_threads) == (4096, 0, None, 1, 512, 0)
        p.n_threads = 1
        needed = ctypes.c_size_t()
        assert f(m._handle(), ctypes.byref(p), None, 0, ctypes.byref(needed)) == strata.Status.BUFFER_TOO_SMALL
        buf = ctypes.create_string_buffer(needed.value)
        assert f(m._handle(), ctypes.byref(p), buf, needed.value - 1, None) == strata.Status.BUFFER_TOO_SMALL
        assert f(m._handle(), ctypes.byref(p), buf, needed.value, ctypes.byref(needed)) == 0
        assert len(buf.value) + 1 == needed.value
        assert json.loads(buf.value)["n_ctx"] == 4096
        # NULL params: the defaults
        assert f(m._handle(), None, buf, needed.value, ctypes.byref(needed)) in (0, strata.Status.BUFFER_TOO_SMALL)


# --- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, needle", [
    (dict(n_ctx=0), "n_ctx"),
    (dict(n_ctx=-5), "n_ctx"),
    (dict(n_batch=0), "n_batch"),
    (dict(n_threads=-1), "n_threads"),
    (dict(n_stages=-1), "n_stages"),
    (dict(n_stages=7), "6 layers cannot be split over 7 stages"),
    (dict(kv_type=5), "kv_type"),
    (dict(layers="0:2,2:9"), "ends at layer 9"),
    (dict(layers="0:2,3:6"), "should start at layer 2"),
    (dict(layers="0:2,2:2,2:6"), "holds no layer"),
    (dict(layers="zero:2,2:6"), "\"zero:2\""),
    (dict(layers=""), "\"\""),
    (dict(layers="0:3,3:6", n_stages=3), "n_stages is 3"),
])
def test_bad_settings_are_refused_by_name(models, kw, needle):
    with strata.Model(models["llama"]) as m:
        with pytest.raises(strata.StrataError) as e:
            m.plan(**{"n_ctx": 64, **kw})
        assert e.value.status == strata.Status.INVALID_ARGUMENT, e.value
        assert needle in e.value.message, e.value.message


def test_a_kv_type_the_cache_cannot_store_is_unsupported(models):
    with strata.Model(models["deepseek2-rope16"]) as m:
        m.plan(n_ctx=64, kv_type="f16")
        with pytest.raises(strata.StrataError) as e:
            m.plan(n_ctx=64, kv_type="q8_0")
        assert e.value.status == strata.Status.UNSUPPORTED
        assert "q8_0" in e.value.message and "latent" in e.value.message, e.value.message


# --- strata-inspect --plan ------------------------------------------------------------------------

def inspect(*args, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([str(tool("strata-inspect")), *map(str, args)], capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_inspect_plan_json_is_the_library_plan(models):
    with strata.Model(models["deepseek2"]) as m:
        n_ctx_train = m.get_int("deepseek2.context_length")
        got = json.loads(inspect(models["deepseek2"], "--plan", "--json", "--threads", "2").stdout)
        assert got == m.plan(n_ctx=n_ctx_train, n_threads=2)  # the context defaults to context_length
        got = json.loads(inspect(models["deepseek2"], "--plan", "--json", "--threads", "1", "--n-ctx", "1000",
                                 "--kv-type", "q8_0", "--layers", "0:1,1:3").stdout)
        check_plan(m, got, 1000, "q8_0", [(0, 1), (1, 3)])
        got = json.loads(inspect(models["deepseek2"], "--plan", "--json", "--stages", "3", "--n-batch", "16").stdout)
        assert [(s["first_layer"], s["last_layer"]) for s in got["stages"]] == [(0, 1), (1, 2), (2, 3)]
        assert got["n_batch"] == 16


def test_inspect_plan_table(models):
    with strata.Model(models["llama"]) as m:
        plan = m.plan(n_ctx=2048, n_stages=2, n_threads=1)
    out = inspect(models["llama"], "--plan", "--stages", "2", "--threads", "1").stdout
    print(out)
    assert "llama, 6 layers, f16 KV cache, context 2048 tokens" in out
    assert f"KV cache per token, all layers: {plan['kv_bytes_per_token']} B" in out
    header = next(line for line in out.splitlines() if line.startswith("stage"))
    for column in ("layers", "weights", "KV B/token", "KV at 2048", f"KV at {LONG}", "scratch", "total"):
        assert column in header
    rows = {line.split()[0]: line.split() for line in out.splitlines() if re.match(r"^(\d+|all)\s", line)}
    for s in plan["stages"]:
        row = rows[str(s["stage"])]
        assert row[1] == f"{s['first_layer']}:{s['last_layer']}"
        assert int(row[4]) == s["kv_bytes_per_token"]
    assert int(rows["all"][4]) == plan["kv_bytes_per_token"]


@pytest.mark.parametrize("args, needle", [
    (["--plan", "--layers", "0:2,2:9"], "ends at layer 9"),
    (["--plan", "--kv-type", "q4_0"], "--kv-type must be f16 or q8_0"),
    (["--plan", "--layers", "0:3,3:6", "--stages", "2"], "--layers or --stages"),
    (["--kv-type", "f16"], "--kv-type needs --plan"),
    (["--plan", "--n-ctx", "0"], "--n-ctx needs a number"),
])
def test_inspect_plan_errors(models, args, needle):
    r = inspect(models["llama"], *args, check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert needle in r.stderr, r.stderr


def test_inspect_plan_unsupported_kv_type(models):
    r = inspect(models["deepseek2-rope16"], "--plan", "--kv-type", "q8_0", check=False)
    assert r.returncode == 2 and "latent" in r.stderr, r.stderr


# --- a pipeline states the same figures ----------------------------------------------------------

def test_a_pipeline_plan_carries_the_kv_bytes_per_token(models):
    from pipeline_util import pipeline_unsupported_reason
    lines: list[str] = []
    with strata.Model(models["deepseek2"]) as m:
        reason = pipeline_unsupported_reason(m)
        if reason:
            pytest.skip(reason)
        want = m.plan(n_ctx=96, layers="0:1,1:3", n_batch=8, n_threads=1)
        w = strata.Worker(m, listen="127.0.0.1:0", n_threads=1, log=lines.append)
        try:
            w.start()
            with strata.Pipeline(m, workers=[f"127.0.0.1:{w.port}"], layers="0:1,1:3", n_ctx=96, n_threads=1,
                                 n_batch=8) as p:
                got = p.plan()
                text = p.plan_json()
        finally:
            w.close()
    print(text)
    for stage, plan in zip(got["stages"], want["stages"]):
        mem = stage["memory"]
        for key in ("weight_bytes", "kv_bytes_per_token", "kv_bytes", "kv_bytes_at_1m", "scratch_bytes", "total_bytes"):
            assert mem[key] == plan[key], (stage["stage"], key, mem, plan)
    configured = [line for line in lines if "configured" in line]
    assert configured and f"({want['stages'][1]['kv_bytes_per_token']} B/token)" in configured[0], lines


# --- the GPU's plan (device "cuda"): host arithmetic, no GPU needed ---------------------------------

ALIGN, PAD = 256, 16  # every uploaded tensor: its bytes + 16 of pad, on a 256-byte boundary


@pytest.fixture(scope="module")
def cuda_models(models, tmp_path_factory) -> dict[str, str]:
    """The plan's models plus a tiny kimi-k3 (three KDA layers, one MLA layer at 2, latent MoE);
    skips with the library's reason when it has no CUDA backend."""
    with strata.Model(models["llama"]) as m:
        try:
            m.plan(n_ctx=64, device="cuda")
        except strata.StrataError as e:
            if "built without the CUDA backend" in e.message:
                pytest.skip(f"device cuda plans need the CUDA backend: {e.message}")
            raise
    from _synth_kimi import write_kimi_model
    d = tmp_path_factory.mktemp("plan-cuda")
    return {**models, "llama-tied64": write_model(d / "tied64.gguf", 2, n_layer=3, n_head=4, n_head_kv=2, tied=True)[0],
            "kimi-k3": write_kimi_model(d / "k3.gguf", 5, arch="kimi-k3")[0],
            "kimi-k3-q8": write_kimi_model(d / "k3-q8.gguf", 5, arch="kimi-k3", wtype="q8_0")[0]}


def upload_bytes(n: int) -> int:
    return (n + PAD + ALIGN - 1) // ALIGN * ALIGN


@pytest.mark.parametrize("name", ["llama", "llama-tied64", "deepseek2", "kimi-k3", "kimi-k3-q8"])
def test_cuda_plan_per_stage(cuda_models, name):
    with strata.Model(cuda_models[name]) as m:
        arch = m.get_string("general.architecture")
        n_layer = m.get_int(f"{arch}.block_count")
        ranges = [(0, 1), (1, n_layer)]
        layers = ",".join(f"{a}:{b}" for a, b in ranges)
        cpu = m.plan(n_ctx=300, layers=layers, n_threads=1)
        gpu = m.plan(n_ctx=300, layers=layers, n_threads=1, device="cuda")
        print(json.dumps(gpu))
        assert cpu["device"] == "cpu" and gpu["device"] == "cuda"
        for key in ("kv_bytes_per_token", "kv_bytes", "kv_bytes_at_1m", "state_bytes", "recurrent_layers", "layers"):
            assert gpu[key] == cpu[key], key
        sizes = {t.name: t.n_bytes for t in m.tensors}
        for c, g in zip(cpu["stages"], gpu["stages"]):
            first, last = g["first_layer"], g["last_layer"]
            # the same cache layouts: K and V rows, the f16 latent + rope key, the KDA state
            assert g["kv_bytes_per_token"] == c["kv_bytes_per_token"]
            assert g["state_bytes"] == c["state_bytes"]
            assert g["kv_bytes"] == g["kv_bytes_per_token"] * 300
            assert g["kv_bytes_at_1m"] == g["kv_bytes_per_token"] * LONG
            # the upload pads and aligns each tensor: never less than what is mapped
            mapped = expected_weight_bytes(m, first, last)
            assert g["weight_bytes"] >= mapped and g["weight_bytes"] % ALIGN == 0, (g, mapped)
            if arch == "llama":  # every tensor uploaded as stored, a tied output once
                tied_here = last == n_layer and "output.weight" not in sizes
                names = [n for n in sizes if (re.match(r"blk\.(\d+)\.", n) and first <= int(n.split(".")[1]) < last)
                         or (n == "token_embd.weight" and (first == 0 or tied_here))
                         or (n.startswith("output") and last == n_layer)]
                assert g["weight_bytes"] == sum(upload_bytes(sizes[n]) for n in names), (g, names)
            # the scratch grows with the context by the RoPE tables only: cos and sin of n_rot/2
            n_rot = m.get_int(f"{arch}.rope.dimension_count")
            assert g["scratch_bytes_at_1m"] - g["scratch_bytes"] == 2 * (n_rot // 2) * 4 * (LONG - 300) or \
                g["scratch_bytes_at_1m"] == g["scratch_bytes"], g  # a stage with no rotating layer
            assert g["total_bytes"] == g["weight_bytes"] + g["kv_bytes"] + g["state_bytes"] + g["scratch_bytes"]
            assert g["total_bytes_at_1m"] == g["weight_bytes"] + g["kv_bytes_at_1m"] + g["state_bytes"] + \
                g["scratch_bytes_at_1m"]


def test_cuda_plan_kimi_k3_by_hand(cuda_models):
    """kimi-k3 as written: layers 0, 1, 3 KDA (4 heads of 64, a 4-tap convolution), layer 2 MLA
    (latent 256 + rope 32)."""
    with strata.Model(cuda_models["kimi-k3"]) as m:
        plan = m.plan(n_ctx=128, layers="0:2,2:4", device="cuda")
    kda_layer = (3 * 3 * 256 + 4 * 64 * 64) * 4  # conv states of q, k, v + the 64x64 state per head
    assert plan["recurrent_layers"] == [0, 1, 3]
    assert plan["state_bytes"] == 3 * kda_layer
    assert plan["kv_bytes_per_token"] == (256 + 32) * 2
    s0, s1 = plan["stages"]
    assert (s0["state_bytes"], s0["kv_bytes_per_token"]) == (2 * kda_layer, 0)
    assert (s1["state_bytes"], s1["kv_bytes_per_token"]) == (kda_layer, (256 + 32) * 2)
    assert s0["scratch_bytes_at_1m"] == s0["scratch_bytes"]  # no layer that rotates, no RoPE tables


def test_cuda_plan_refuses_q8_0_with_latent_attention(cuda_models):
    """The GPU's latent cache is f16: a q8_0 cache is refused on any model with an MLA layer
    (kimi-k3: one of four), though the CPU's cache takes it."""
    for name in ("deepseek2", "kimi-k3"):
        with strata.Model(cuda_models[name]) as m:
            m.plan(n_ctx=64, kv_type="q8_0")
            with pytest.raises(strata.StrataError) as e:
                m.plan(n_ctx=64, kv_type="q8_0", layers="0:2,2:%d" % m.get_int(
                    f"{m.get_string('general.architecture')}.block_count"), device="cuda")
        assert e.value.status == strata.Status.UNSUPPORTED
        assert "f16" in e.value.message and "latent" in e.value.message, e.value.message


def test_cuda_plan_refuses_what_the_gpu_does_not_run(cuda_models):
    with strata.Model(cuda_models["llama-tied"]) as m:  # heads of 32 values
        m.plan(n_ctx=64)
        with pytest.raises(strata.StrataError) as e:
            m.plan(n_ctx=64, device="cuda")
    assert e.value.status == strata.Status.UNSUPPORTED and "head dimensions 64 and 128" in e.value.message, e.value


def test_unknown_device_is_refused(models):
    with strata.Model(models["llama"]) as m:
        with pytest.raises(strata.StrataError) as e:
            m.plan(n_ctx=64, device=7)
    assert e.value.status == strata.Status.INVALID_ARGUMENT and "device" in e.value.message, e.value.message


def test_cuda_plan_without_the_backend_says_so(models):
    with strata.Model(models["llama"]) as m:
        try:
            m.plan(n_ctx=64, device="cuda")
        except strata.StrataError as e:
            assert e.status == strata.Status.UNSUPPORTED and "built without the CUDA backend" in e.message, e
            return
    pytest.skip("the library has the CUDA backend")


def test_inspect_plan_device_cuda(cuda_models):
    with strata.Model(cuda_models["kimi-k3"]) as m:
        plan = m.plan(n_ctx=512, n_stages=2, device="cuda")
    got = json.loads(inspect(cuda_models["kimi-k3"], "--plan", "--json", "--n-ctx", "512", "--stages", "2",
                             "--device", "cuda").stdout)
    assert got == plan
    out = inspect(cuda_models["kimi-k3"], "--plan", "--n-ctx", "512", "--stages", "2", "--device", "cuda").stdout
    print(out)
    assert "kimi-k3, 4 layers, f16 KV cache, context 512 tokens" in out and "on the CUDA device" in out
    r = inspect(cuda_models["deepseek2"], "--plan", "--kv-type", "q8_0", "--device", "cuda", check=False)
    assert r.returncode == 2 and "f16" in r.stderr, r.stderr
    r = inspect(cuda_models["llama"], "--plan", "--device", "tpu", check=False)
    assert r.returncode == 2 and "--device must be cpu or cuda" in r.stderr, r.stderr
