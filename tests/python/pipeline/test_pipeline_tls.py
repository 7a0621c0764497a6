"""Pipelines inside TLS: two strata-worker processes with --tls-cert/--tls-key/--tls-ca and a
pre-shared key, the head through strata.Pipeline with TLS (mutual: both sides present
certificates of one throwaway CA, made here with the `openssl` command in a temporary
directory), and the refusals: a head without TLS, a head that trusts another CA, a head
without a certificate when workers require one."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import strata
from pipeline_util import (LOGITS_ATOL, WorkerPool, greedy_trace, max_abs_diff, pipeline_models)

N_CTX = 256
HEARTBEAT_MS = 200
PEER_TIMEOUT_MS = 3000
LAYERS = "0:2,2:4,4:6"


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, f"openssl {' '.join(args)}:\n{r.stderr}"


def _ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "1", "-subj", f"/CN=strata test {name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=d)


def _leaf(d: Path, name: str, ca: str, san: str | None) -> None:
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key",
             "-out", f"{name}.csr", "-subj", f"/CN=strata {name}", cwd=d)
    ext = d / f"{name}.ext"
    ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n" +
                   (f"subjectAltName={san}\n" if san else ""))
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "1", "-sha256", "-extfile", ext.name, cwd=d)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    if not shutil.which("openssl"):
        pytest.skip("the openssl command is not installed (it makes this test's certificates)")
    d = tmp_path_factory.mktemp("tls")
    _ca(d, "ca")
    _ca(d, "other-ca")
    _leaf(d, "worker", "ca", "IP:127.0.0.1,DNS:localhost")
    _leaf(d, "head", "ca", None)
    (d / "psk").write_bytes(b"strata tls test key \x00\x01\x02\x03")
    return d


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory):
    return pipeline_models(tmp_path_factory.mktemp("tls-models"), ["llama-f32"])["llama-f32"]


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    p = WorkerPool(tmp_path_factory.mktemp("tls-workers"), heartbeat_ms=HEARTBEAT_MS, peer_timeout_ms=PEER_TIMEOUT_MS)
    yield p
    p.close()


@pytest.fixture(scope="module")
def tls_workers(model_paths, certs, pool):
    """Two TLS workers requiring client certificates of `ca` and the pre-shared key."""
    extra = ["--tls-cert", str(certs / "worker.pem"), "--tls-key", str(certs / "worker.key"),
             "--tls-ca", str(certs / "ca.pem")]
    return pool.spawn_n(model_paths, 2, key_file=str(certs / "psk"), extra=extra)


def _prompt(n_vocab: int) -> list[int]:
    return [1] + [(13 * i + 7) % (n_vocab - 3) + 3 for i in range(30)]


def _head_tls(certs: Path, ca: str = "ca.pem", with_cert: bool = True) -> dict:
    kw = dict(tls_ca_file=str(certs / ca))
    if with_cert:
        kw.update(tls_cert_file=str(certs / "head.pem"), tls_key_file=str(certs / "head.key"))
    return kw


def _pipeline(m, workers, certs, **kw):
    opts = dict(layers=LAYERS, key_file=str(certs / "psk"), n_ctx=N_CTX, n_threads=1, n_batch=8,
                heartbeat_ms=HEARTBEAT_MS, peer_timeout_ms=PEER_TIMEOUT_MS, connect_timeout_ms=5000)
    opts.update(kw)
    return strata.Pipeline(m, workers=[w.address for w in workers], **opts)


def test_a_mutual_tls_pipeline_gives_the_local_tokens_and_logits(model_paths, certs, tls_workers):
    with strata.Model(model_paths[0]) as m:
        prompt = _prompt(m.vocab.n_vocab)
        with m.session(n_ctx=N_CTX, n_threads=1) as local:
            want = greedy_trace(local, prompt, 10)
        with _pipeline(m, tls_workers, certs, wire_dtype="f32", **_head_tls(certs)) as p:
            got = greedy_trace(p.session(), prompt, 10)
            plan = json.loads(p.plan_json())
            stats = json.loads(p.stats_json())
    assert got[1] == want[1], f"tokens {got[1]} != local {want[1]}"
    assert max_abs_diff(got[0], want[0]) <= LOGITS_ATOL
    assert max(max_abs_diff(a, b) for a, b in zip(got[2], want[2])) <= LOGITS_ATOL
    workers = [s for s in plan["stages"] if s["role"] == "worker"]
    assert len(workers) == 2
    for s in workers:
        assert s["tls"] is not None, s
        assert s["tls"]["version"] == "TLSv1.3", s["tls"]
        assert s["tls"]["cipher"], s["tls"]
    assert all(link["bytes_sent"] > 0 for link in stats["links"])
    for w in tls_workers:
        w.wait_log(r"TLS with 127\.0\.0\.1:\d+: TLSv1\.3", 10)
        w.wait_log(r"handshake with .* ok", 10)


def test_a_head_without_tls_is_refused_with_a_message_not_a_hang(model_paths, certs, tls_workers):
    with strata.Model(model_paths[0]) as m:
        start = time.monotonic()
        with pytest.raises(strata.StrataError) as e:
            _pipeline(m, tls_workers, certs)
        took = time.monotonic() - start
    assert e.value.status in (strata.Status.REFUSED, strata.Status.STAGE_FAILED), e.value
    assert "TLS" in e.value.message, e.value.message
    assert "stage 1" in e.value.message, e.value.message
    assert took < 10, f"took {took:.1f} s"
    tls_workers[0].wait_log(r"refused 127\.0\.0\.1:\d+: tls_failed", 10)


def test_a_head_that_trusts_another_ca_is_refused_naming_the_certificate_check(model_paths, certs, tls_workers):
    with strata.Model(model_paths[0]) as m:
        with pytest.raises(strata.StrataError) as e:
            _pipeline(m, tls_workers, certs, **_head_tls(certs, ca="other-ca.pem"))
    assert e.value.status == strata.Status.REFUSED, e.value
    assert "certificate verify failed" in e.value.message, e.value.message
    assert "stage 1" in e.value.message, e.value.message


def test_a_head_without_a_certificate_is_refused_when_workers_require_one(model_paths, certs, tls_workers):
    with strata.Model(model_paths[0]) as m:
        with pytest.raises(strata.StrataError) as e:
            _pipeline(m, tls_workers, certs, **_head_tls(certs, with_cert=False))
    assert e.value.status == strata.Status.REFUSED, e.value
    assert "certificate" in e.value.message, e.value.message


def test_tls_worker_options_are_checked(model_paths, certs, pool, tmp_path):
    # --tls-ca without a certificate of its own, and a key that does not match, are refused.
    bad = pool.spawn(model_paths, wait=False, extra=["--tls-ca", str(certs / "ca.pem")])
    assert bad.proc.wait(60) != 0
    wrong = pool.spawn(model_paths, wait=False,
                       extra=["--tls-cert", str(certs / "worker.pem"), "--tls-key", str(certs / "head.key")])
    assert wrong.proc.wait(60) != 0
    wrong.wait_log(r"mismatch", 5)
