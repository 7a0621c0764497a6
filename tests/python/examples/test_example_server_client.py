"""examples/server-client/client.py against a real strata-server (SmolLM2): the models list, a
chat completion and the same question streamed, with the key from $STRATA_API_KEY."""
from __future__ import annotations

import pytest

from _examples_util import described, example_script, run_python
from server_util import API_KEY, Server, smollm2_path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("openai", reason="client.py needs the openai package (tests/python/requirements.txt)")
    s = Server([smollm2_path()], ["--ctx", "512", "--threads", "2", "--api-key", API_KEY, "--alias", "smollm2"],
               tmp_path_factory.mktemp("client") / "server.log")
    s.wait_healthy()
    yield s
    assert s.terminate() == 0, s.log_path.read_text()


def test_client_py_gets_the_same_answer_whole_and_streamed(server):
    r = run_python(example_script("server-client", "client.py"), f"http://127.0.0.1:{server.port}/v1",
                   "-q", "What is the capital of France?", env={"STRATA_API_KEY": API_KEY})
    assert r.returncode == 0, described(r)
    lines = r.stdout.decode("utf-8").splitlines()
    assert lines[0] == "model: smollm2", lines
    answer = next(line for line in lines if line.startswith("answer: "))[len("answer: "):]
    streamed = next(line for line in lines if line.startswith("streamed: "))[len("streamed: "):]
    assert "Paris" in answer, lines
    assert streamed == answer, lines  # greedy: the stream is the same answer in pieces


def test_client_py_reports_a_refused_key(server):
    r = run_python(example_script("server-client", "client.py"), f"http://127.0.0.1:{server.port}/v1",
                   env={"STRATA_API_KEY": "wrong-key"})
    assert r.returncode == 1, described(r)
    assert "HTTP 401" in r.stderr.decode(), described(r)


def test_client_py_base_url_comes_from_the_environment(server):
    r = run_python(example_script("server-client", "client.py"), "-n", "4",
                   env={"STRATA_API_KEY": API_KEY, "STRATA_SERVER_URL": f"http://127.0.0.1:{server.port}/v1"})
    assert r.returncode == 0, described(r)
    assert r.stdout.decode("utf-8").startswith("model: smollm2\n"), described(r)
