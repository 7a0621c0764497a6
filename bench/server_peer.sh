#!/usr/bin/env bash
# Serving throughput, strata-server beside llama-server, on the same GGUF file and the same
# benchmark client (strata-bench server: N concurrent streamed /v1/completions, temperature 0):
# aggregate decode tok/s, time to first token and inter-token p50/p99 per concurrency, then the
# three-stage loopback pipeline (strata-server as the head over two strata-worker processes).
# Needs a strata build (BUILD, default build/) and llama-server built beside the project (LLAMA_BIN;
# DESIGN.md, "Peers, side by side"); without it the peer rows are left out and said so.
#   bench/server_peer.sh MODEL.gguf [OUT_DIR]
# Environment: THREADS (2), TOKENS per stream (64), STREAMS ("1,2,4,8"), PEER_PARALLEL (4),
# PIPE_STREAMS ("1,3").
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
LLAMA_BIN="${LLAMA_BIN:-/work/peers/llama-build/bin}"
MODEL="$1"
OUT="${2:-$ROOT/out/bench-server}"
THREADS="${THREADS:-2}"
TOKENS="${TOKENS:-64}"
STREAMS="${STREAMS:-1,2,4,8}"
PEER_PARALLEL="${PEER_PARALLEL:-4}"
PIPE_STREAMS="${PIPE_STREAMS:-1,3}"
BENCH="$BUILD/bin/strata-bench"
mkdir -p "$OUT"
source "$ROOT/scripts/lib.sh"  # start_listening, stop_started
START_TIMEOUT_S=300  # a worker hashes its shards before it listens
trap stop_started EXIT
# Waits until URL/health answers 200; fails after 300 s.
wait_health() {
  for _ in $(seq 1 3000); do
    if curl -sf "$1/health" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "no healthy server at $1" >&2
  return 1
}
# Stops the program started last.
stop_last() {
  kill "${STARTED_PIDS[-1]}" 2>/dev/null || true
  wait "${STARTED_PIDS[-1]}" 2>/dev/null || true
  unset 'STARTED_PIDS[-1]'
}
LISTENING='.*listening on \([^ ]*\).*'

echo "== strata-server, one node, --parallel 8, $THREADS threads"
start_listening strata-server "$OUT/strata-server.out" "$OUT/strata-server.log" "$LISTENING" \
  "$BUILD/bin/strata-server" --model "$MODEL" --host 127.0.0.1 --port 0 --parallel 8 --ctx 512 --threads "$THREADS"
URL="$ADDRESS"; wait_health "$URL"
"$BENCH" server "$URL" --streams "$STREAMS" --tokens "$TOKENS" --json "$OUT/strata.json" --md "$OUT/strata.md"
stop_last

if [ -x "$LLAMA_BIN/llama-server" ]; then
  echo "== llama-server, one node, --parallel $PEER_PARALLEL, $THREADS threads"
  PORT=$(( 20000 + RANDOM % 20000 ))
  "$LLAMA_BIN/llama-server" -m "$MODEL" --host 127.0.0.1 --port "$PORT" --parallel "$PEER_PARALLEL" \
    -c $(( 512 * PEER_PARALLEL )) -t "$THREADS" -tb "$THREADS" --no-webui >"$OUT/llama-server.log" 2>&1 &
  STARTED_PIDS+=("$!")
  wait_health "http://127.0.0.1:$PORT"
  "$BENCH" server "http://127.0.0.1:$PORT" --streams "$STREAMS" --tokens "$TOKENS" \
    --json "$OUT/llama-server.json" --md "$OUT/llama-server.md" || echo "(some llama-server streams failed)"
  stop_last
else
  echo "== no llama-server at $LLAMA_BIN: the peer rows are left out"
fi

echo "== three-stage loopback pipeline: strata-server (head) over two strata-worker processes, 1 thread each"
start_listening "worker 1" "$OUT/worker-1.out" "$OUT/worker-1.log" "$LISTENING" \
  "$BUILD/bin/strata-worker" --listen 127.0.0.1:0 --threads 1 --model "$MODEL"
W1="$ADDRESS"
start_listening "worker 2" "$OUT/worker-2.out" "$OUT/worker-2.log" "$LISTENING" \
  "$BUILD/bin/strata-worker" --listen 127.0.0.1:0 --threads 1 --model "$MODEL"
W2="$ADDRESS"
start_listening "strata-server (pipeline)" "$OUT/pipe-server.out" "$OUT/pipe-server.log" "$LISTENING" \
  "$BUILD/bin/strata-server" --model "$MODEL" --worker "$W1" --worker "$W2" --host 127.0.0.1 --port 0 \
  --parallel 3 --ctx 512 --threads 1
URL="$ADDRESS"; wait_health "$URL"
"$BENCH" server "$URL" --streams "$PIPE_STREAMS" --tokens "$TOKENS" --json "$OUT/pipeline.json" --md "$OUT/pipeline.md"
echo "== written to $OUT"
