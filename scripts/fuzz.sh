#!/usr/bin/env bash
# Builds the fuzzers with clang (ASan + UBSan + libFuzzer) in build-fuzz/ and runs each for a
# bounded time: the GGUF reader (corpus seeded from every GGUF fixture: valid, broken, variants,
# and one small file per tensor type, tests/fuzz/make_type_seeds.py)
# for `seconds`, then the transport frame decoder (seeded with one valid frame per message type)
# for $STRATA_FUZZ_FRAME_SECONDS (default 25), then the chat-template interpreter, the
# pre-tokenizers and strata-server's request parsers for $STRATA_FUZZ_TEXT_SECONDS each (default 20).
# Usage: scripts/fuzz.sh [seconds=60] [extra libFuzzer flags...]. Exits non-zero on any crash.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
shift || true
build="${STRATA_FUZZ_BUILD:-$root/build-fuzz}"
fixtures="${STRATA_FIXTURES:-$root/../shared/fixtures}/gguf"

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTRATA_FUZZ=ON -DSTRATA_SANITIZE=ON -DSTRATA_CUDA=OFF -DSTRATA_BUILD_TESTS=OFF \
  -DSTRATA_BUILD_EXAMPLES=OFF -DSTRATA_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target fuzz_gguf_reader fuzz_frame_decoder frame_fuzz_seeds fuzz_chat_template fuzz_pretokenize fuzz_openai_request
frame_seconds="${STRATA_FUZZ_FRAME_SECONDS:-25}"

corpus="$build/corpus/gguf"
frame_corpus="$build/corpus/frame"
mkdir -p "$corpus" "$frame_corpus" "$build/crashes"
find "$fixtures" -name '*.gguf' -exec cp -f {} "$corpus/" \;
# One file per tensor type, so that every decoder and dot kernel is reached from the start.
python="${STRATA_PYTHON:-$root/.venv/bin/python}"
if [ -x "$python" ]; then "$python" "$root/tests/fuzz/make_type_seeds.py" "$corpus"; fi
"$build/tests/fuzz/frame_fuzz_seeds" "$frame_corpus"

jobs="${STRATA_FUZZ_JOBS:-1}"
# run_fuzzer TARGET CORPUS SECONDS [extra flags...]
run_fuzzer() {
  local target="$1" dir="$2" secs="$3"
  shift 3
  local before after status=0
  before=$(ls "$build/crashes" | wc -l)
  # Run inside the build folder: with -jobs libFuzzer writes fuzz-N.log to the current directory.
  (cd "$build" && "$build/tests/fuzz/$target" "$dir" -max_total_time="$secs" -max_len=65536 \
    -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$build/crashes/" -print_final_stats=1 \
    -jobs="$jobs" -workers="$jobs" "$@") || status=$?
  after=$(ls "$build/crashes" | wc -l)
  if [ "$status" -ne 0 ] || [ "$after" -ne "$before" ]; then
    echo "fuzz: $target FAILED (exit $status); new artifacts in $build/crashes:" >&2
    ls -t "$build/crashes" | head -n $((after - before > 0 ? after - before : 5)) >&2
    exit 1
  fi
  echo "fuzz: $target: no crash in ${secs}s x $jobs job(s)"
}
run_fuzzer fuzz_gguf_reader "$corpus" "$seconds" "$@"
if [ "$frame_seconds" -gt 0 ]; then
  run_fuzzer fuzz_frame_decoder "$frame_corpus" "$frame_seconds" "$@"
fi
# Chat templates (seeded with the real ones) and the pre-tokenizers (seeded with the tokenizer
# suite's texts), $STRATA_FUZZ_TEXT_SECONDS each (default 20).
text_seconds="${STRATA_FUZZ_TEXT_SECONDS:-20}"
if [ "$text_seconds" -gt 0 ]; then
  chat_corpus="$build/corpus/chat" text_corpus="$build/corpus/text"
  mkdir -p "$chat_corpus" "$text_corpus"
  cp -f "${STRATA_FIXTURES:-$root/../shared/fixtures}"/chat-templates/*.jinja "$chat_corpus/"
  i=0
  for f in "${STRATA_FIXTURES:-$root/../shared/fixtures}"/vocab/*.inp; do
    cp -f "$f" "$text_corpus/seed-$i.txt"
    i=$((i + 1))
  done
  run_fuzzer fuzz_chat_template "$chat_corpus" "$text_seconds" "$@"
  run_fuzzer fuzz_pretokenize "$text_corpus" "$text_seconds" "$@"
  # strata-server's request bodies, seeded with a few valid and invalid ones.
  request_corpus="$build/corpus/request"
  mkdir -p "$request_corpus"
  printf '%s' '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":8,"stop":["x"],"logprobs":true,"top_logprobs":2}' >"$request_corpus/chat.json"
  printf '%s' '{"prompt":["a"],"temperature":0.5,"top_p":0.9,"top_k":4,"min_p":0.1,"seed":3,"logprobs":2,"stream_options":{"include_usage":true}}' >"$request_corpus/completion.json"
  printf '%s' '{"content":"hello","add_special":true,"tokens":[1,2,-3]}' >"$request_corpus/tokenize.json"
  printf '%s' '{"max_tokens":1e99,"n":2,"stop":[1]}' >"$request_corpus/bad.json"
  run_fuzzer fuzz_openai_request "$request_corpus" "$text_seconds" "$@"
fi
