"""The rdma transport (UCX) end to end: strata-worker --transport rdma processes on loopback and
the head in this process. With no RDMA device here, UCX carries the stream over TCP or shared
memory; everything above UCX's transport layer is the code an RDMA deployment runs.

The same equality as over tcp (test_pipeline.py): f32 on the wire gives the local logits bit for
bit (max |difference| <= 1e-6) and the same greedy tokens. The fault tests run over rdma in
test_pipeline_faults.py (parametrized by transport)."""
from __future__ import annotations

import json
import subprocess

import pytest

import strata
from _pipeline_cases import PipelineSettings, assert_same_trace, check_three_ranges, prompt_tokens, three_stage_traces
from pipeline_util import WorkerPool, n_layers, pipeline_models, plan_ranges, tool

pytestmark = pytest.mark.skipif(not strata.transport_available("rdma"),
                                reason=f"no rdma transport: {strata.transport_unavailable_reason('rdma')}")

N_CTX = 256
N_STEPS = 10
SETTINGS = PipelineSettings(N_CTX, 200, 3000)
# The seed deployment's RoCE settings: accepted here (no RDMA device takes them) and reported as given.
RDMA = {"mtu": 4096, "max_inline": 316, "rx_queue_len": 24}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return pipeline_models(tmp_path_factory.mktemp("rdma-models"), ["llama-f32", "llama-iq1_s-3shards", "qwen3-q8_0"])


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    p = WorkerPool(tmp_path_factory.mktemp("rdma-workers"), heartbeat_ms=200, peer_timeout_ms=3000, transport="rdma")
    yield p
    p.close()


@pytest.fixture(scope="module")
def workers(models, pool):
    return {name: pool.spawn_n(paths, 2) for name, paths in models.items()}


CASES = [("llama-f32", "0:2,2:4,4:6", 8, 37), ("llama-f32", None, 8, 37),
         ("llama-iq1_s-3shards", "0:1,1:2,2:5", 8, 37), ("qwen3-q8_0", "0:1,1:3,3:4", 8, 29)]


@pytest.mark.parametrize("name,layers,n_batch,n_prompt", CASES,
                         ids=[f"{c[0]}-{c[1] or 'planned'}-b{c[2]}-p{c[3]}" for c in CASES])
def test_rdma_pipeline_gives_the_local_logits_and_greedy_tokens(models, workers, name, layers, n_batch, n_prompt):
    with strata.Model(models[name][0]) as m:
        prompt = prompt_tokens(m.vocab.n_vocab, n_prompt, 7)

        def check_plan(p: strata.Pipeline):
            ranges = plan_ranges(p.plan())
            check_three_ranges(ranges, n_layers(m), layers)
            return ranges

        want, got, ranges, stats = three_stage_traces(SETTINGS, m, workers[name], prompt, N_STEPS, check_plan,
                                                      lambda p, _s: p.stats(), layers=layers, n_batch=n_batch,
                                                      transport="rdma", rdma=RDMA)
    assert_same_trace(got, want, f"rdma {name} layers={layers or ranges}")
    for link in stats["links"]:
        assert link["bytes_sent"] > 0 and link["bytes_received"] > 0, link


def test_the_plan_reports_the_rdma_settings_as_given_and_what_ucx_chose(models, workers):
    with strata.Model(models["llama-f32"][0]) as m, \
            SETTINGS.pipeline(m, workers["llama-f32"], layers="0:2,2:4,4:6", transport="rdma", rdma=RDMA) as p:
        plan = p.plan()
    assert plan["transport"] == "rdma"
    for stage in plan["stages"][1:]:
        assert stage["transport"] == "rdma"
        assert stage["socket"] is None  # no TCP socket of ours under an rdma link
        conf, seen = stage["rdma"]["configured"], stage["rdma"]["observed"]
        assert conf["library"] == "ucx"
        assert (conf["mtu"], conf["max_inline_bytes"], conf["rx_queue_len"]) == (4096, 316, 24)
        assert seen["ucx_version"].count(".") == 2
        assert seen["remote"] == stage["address"]
        assert seen["lanes"], "UCX reported no lane"
        for lane in seen["lanes"]:
            assert lane["transport"] and lane["device"], lane
        assert seen["settings"]["IB_PATH_MTU"] == "4096"  # what UCX was given, kept apart from the lanes


def test_a_tcp_head_cannot_talk_to_rdma_workers_and_says_which_stage(models, workers):
    ws = workers["llama-f32"]
    with strata.Model(models["llama-f32"][0]) as m:
        with pytest.raises(strata.StrataError) as e:
            SETTINGS.pipeline(m, ws, layers="0:2,2:4,4:6", connect_timeout_ms=2000).close()
    assert e.value.status in (strata.Status.IO, strata.Status.STAGE_FAILED, strata.Status.REFUSED), e.value
    assert "stage 1" in e.value.message or ws[0].address in e.value.message, e.value.message


def test_transport_names_and_combinations_are_checked_before_dialing(models, workers):
    ws = workers["llama-f32"]
    with strata.Model(models["llama-f32"][0]) as m:
        with pytest.raises(strata.StrataError) as e:
            SETTINGS.pipeline(m, ws, transport="carrier-pigeon")
        assert e.value.status == strata.Status.INVALID_ARGUMENT and "carrier-pigeon" in e.value.message
        with pytest.raises(strata.StrataError) as e:
            SETTINGS.pipeline(m, ws, transport="rdma", rdma={"mtu": 1500})
        assert e.value.status == strata.Status.INVALID_ARGUMENT and "mtu 1500" in e.value.message
        with pytest.raises(strata.StrataError) as e:
            SETTINGS.pipeline(m, ws, transport="rdma", tls_ca_file="/nonexistent/ca.pem")
        assert e.value.status == strata.Status.INVALID_ARGUMENT and "TLS" in e.value.message
        with pytest.raises(strata.StrataError) as e:
            SETTINGS.pipeline(m, ws, transport="nccl")
        assert e.value.status == strata.Status.UNSUPPORTED and "nccl" in e.value.message
    assert not strata.transport_available("nccl")
    assert "nccl" in strata.transport_unavailable_reason("nccl")
    with pytest.raises(ValueError):
        strata.transport_available("udp")


def test_the_programs_run_a_pipeline_over_rdma_and_report_its_links(models, workers, tmp_path):
    """strata-run and strata-bench with --transport rdma: the same text as one process (f32
    wire), and a valid report whose links are rdma with UCX's lanes on the observed side only."""
    from strata import report as R
    from _report_tools import run

    model = models["llama-f32"][0]
    flags = [f for w in workers["llama-f32"] for f in ("--worker", w.address)] + ["--wire", "f32"]
    args = ["-p", "Once upon a time", "-n", "12", "--temp", "0", "--threads", "1"]
    def text_of(*extra) -> bytes:  # a random model's text need not be UTF-8: compared as bytes
        r = subprocess.run([str(tool("strata-run")), str(model), *args, *extra], capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
        return r.stdout

    assert text_of(*flags, "--transport", "rdma", "--layers", "0:2,2:4,4:6") == text_of()

    out = tmp_path / "bench.json"
    run("strata-bench", model, *flags, "--transport", "rdma", "-o", out, "--prompt-tokens", "16", "--gen-tokens", "4",
        "--repeat", "1", "--threads", "1", timeout=300)
    text = out.read_text()
    assert R.validate(text) == [], R.validate(text)
    links = json.loads(text)["transport"]["links"]
    assert len(links) == 2
    for link in links:
        assert link["kind"] == "rdma", link
        assert "lanes" in link["observed"]["other"] and "lanes" not in link["configured"]["other"]
        assert link["configured"]["other"]["library"] == "ucx"


@pytest.mark.parametrize("flags,says", [
    (["--transport", "pigeon"], 'unknown transport "pigeon"'),
    (["--transport", "rdma", "--rdma-mtu", "1500"], "mtu 1500"),
    (["--transport", "rdma", "--rdma-rx-queue", "many"], "--rdma-rx-queue needs an integer"),
    (["--transport", "rdma", "--tls-cert", "c.pem", "--tls-key", "k.pem"], "does not run inside TLS"),
])
def test_strata_worker_refuses_a_transport_it_cannot_serve_naming_why(models, flags, says):
    r = subprocess.run([str(tool("strata-worker")), "--listen", "127.0.0.1:0", "--model", models["llama-f32"][0],
                        *flags], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert says in r.stderr, r.stderr
