#!/usr/bin/env python3
"""The demo's client: asks a running strata-server one question through the real `openai` package
(streamed, greedy), then prints the answer, the run's report (tokens, time to first token, decode
rate, what the server says it serves) and the server's Prometheus metrics.
Usage: demo_client.py BASE_URL QUESTION [--system TEXT] [--completion] [--max-tokens N] [--report-json OUT]"""
import argparse
import json
import sys
import time
import urllib.request

try:
    import openai
except ImportError:  # no registry: the same requests by hand (urllib), said so below
    openai = None


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode("utf-8")


def messages(a) -> list:
    system = [{"role": "system", "content": a.system}] if a.system else []
    return system + [{"role": "user", "content": a.question}]


def openai_chunks(a, base: str, model: str):
    """The streamed answer through the openai package, each chunk as a plain dict."""
    client = openai.OpenAI(base_url=base + "/v1", api_key="none", timeout=600)
    common = {"model": model, "max_tokens": a.max_tokens, "temperature": 0, "stream": True,
              "stream_options": {"include_usage": True}}
    if a.completion:
        stream = client.completions.create(prompt=a.question, **common)
    else:
        stream = client.chat.completions.create(messages=messages(a), **common)
    for chunk in stream:
        yield chunk.model_dump()


def raw_chunks(a, base: str, model: str):
    """The same request by hand (urllib), the server-sent events' chunks."""
    body = {"model": model, "max_tokens": a.max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    if a.completion:
        body["prompt"], path = a.question, "/v1/completions"
    else:
        body["messages"], path = messages(a), "/v1/chat/completions"
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode("utf-8").strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                yield json.loads(line[6:])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("base_url")
    ap.add_argument("question")
    ap.add_argument("--completion", action="store_true", help="/v1/completions instead of chat")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--system", help="a system message before the question (chat)")
    ap.add_argument("--report-json")
    a = ap.parse_args()

    base = a.base_url.rstrip("/")
    models = json.loads(get(base + "/v1/models"))
    model = models["data"][0]["id"]
    if openai is None:
        print("(the openai package is not installed: asking with urllib instead)")
    chunks = (raw_chunks if openai is None else openai_chunks)(a, base, model)
    t0 = time.perf_counter()
    first, stamps, text, usage, finish = None, [], [], None, None
    print((f"system: {a.system}\n" if a.system else "") + f"Q: {a.question}\nA: ", end="", flush=True)
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for c in chunk.get("choices") or []:
            piece = c.get("text") if a.completion else (c.get("delta") or {}).get("content")
            if piece:
                now = time.perf_counter()
                first = first if first is not None else now
                stamps.append(now)
                text.append(piece)
                print(piece, end="", flush=True)
            finish = c.get("finish_reason") or finish
    t1 = time.perf_counter()
    print()
    return finish_report(a, base, models, model, t0, t1, first, stamps, text, finish, usage)


def finish_report(a, base, models, model, t0, t1, first, stamps, text, finish, usage) -> int:
    gaps = sorted(b - a_ for a_, b in zip(stamps, stamps[1:]))
    report = {
        "question": a.question,
        "answer": "".join(text),
        "model": model,
        "finish_reason": finish,
        "usage": usage,
        "time_to_first_token_s": (first - t0) if first is not None else None,
        "wall_s": t1 - t0,
        "decode_tokens_per_second": (len(gaps) / (stamps[-1] - stamps[0])) if len(stamps) > 1 else None,
        "inter_token_p50_s": gaps[len(gaps) // 2] if gaps else None,
        "server_models": models,
    }
    print("\nthe run's report:")
    u = report["usage"] or {}
    print(f"  model {model}; finish_reason {finish}; usage {u.get('prompt_tokens')} prompt + "
          f"{u.get('completion_tokens')} completion tokens")
    if report["time_to_first_token_s"] is not None:
        print(f"  time to first token {report['time_to_first_token_s'] * 1e3:.0f} ms; wall {report['wall_s']:.2f} s")
    if report["decode_tokens_per_second"] is not None:
        print(f"  decode {report['decode_tokens_per_second']:.1f} tok/s (streamed pieces as the client saw them); "
              f"inter-token p50 {report['inter_token_p50_s'] * 1e3:.1f} ms")
    meta = (report["server_models"].get("data") or [{}])[0].get("meta", {})
    plan = meta.get("pipeline_plan")
    if plan:
        print(f"  pipeline ({plan.get('planned_by', '?')}; {plan.get('n_layers', '?')} layers, wire {plan.get('wire_dtype')}, "
              f"n_ctx {plan.get('n_ctx')} per slot, {meta.get('parallel')} slot(s)):")
        for st in plan.get("stages", []):
            mem = (st.get("memory") or {}).get("total_bytes")
            where = st.get("address", "the server (head)")
            print(f"    stage {st.get('stage')}: layers {st.get('layers')} on {where}"
                  + (f", {mem / 2**20:.1f} MiB planned" if isinstance(mem, (int, float)) else ""))
    elif meta:
        print(f"  served {meta.get('backend')} with {meta.get('parallel')} slot(s) of {meta.get('n_ctx')} tokens")
    if a.report_json:
        with open(a.report_json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
        print(f"  written to {a.report_json}")
    print("\nthe server's metrics (GET /metrics):")
    for line in get(base + "/metrics").splitlines():
        if line and not line.startswith("#"):
            print("  " + line)
    return 0 if text else 1


if __name__ == "__main__":
    sys.exit(main())
