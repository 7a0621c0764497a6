#!/usr/bin/env bash
# Builds the GGUF reader fuzzer with clang (ASan + UBSan + libFuzzer) in build-fuzz/, seeds a
# corpus from every GGUF fixture (valid, broken, variants) and fuzzes for a bounded time.
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
cmake --build "$build" --target fuzz_gguf_reader

corpus="$build/corpus/gguf"
mkdir -p "$corpus" "$build/crashes"
find "$fixtures" -name '*.gguf' -exec cp -f {} "$corpus/" \;

jobs="${STRATA_FUZZ_JOBS:-1}"
before=$(ls "$build/crashes" | wc -l)
# Run inside the build folder: with -jobs libFuzzer writes fuzz-N.log to the current directory.
status=0
(cd "$build" && "$build/tests/fuzz/fuzz_gguf_reader" "$corpus" -max_total_time="$seconds" -max_len=65536 \
  -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$build/crashes/" -print_final_stats=1 \
  -jobs="$jobs" -workers="$jobs" "$@") || status=$?
after=$(ls "$build/crashes" | wc -l)
if [ "$status" -ne 0 ] || [ "$after" -ne "$before" ]; then
  echo "fuzz: FAILED (exit $status); new artifacts in $build/crashes:" >&2
  ls -t "$build/crashes" | head -n $((after - before > 0 ? after - before : 5)) >&2
  exit 1
fi
echo "fuzz: no crash in ${seconds}s x $jobs job(s)"
