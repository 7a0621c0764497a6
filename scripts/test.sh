#!/usr/bin/env bash
# Builds everything and runs every test:
#   1. the full build (CUDA too when nvcc is found), -Werror, then ctest: unit tests (doctest),
#      the C99 ABI test, the exported-symbol check, the CUDA tests (skipped without a GPU),
#      and pytest (bindings, interop with the gguf package);
#   2. the unit and C99 tests again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the GGUF reader fuzzer for a bounded time (STRATA_FUZZ_SECONDS, default 60).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STRATA_ROOT"

ensure_build_packages
ensure_packages clang libclang-rt-14-dev
# The pipeline tests use them: `ip netns` (network namespaces, when root) and `openssl` (TLS
# test certificates). Without them those tests skip with the reason.
ensure_packages iproute2 openssl
ensure_venv

# A failing ctest run prints thousands of lines, and a CI log shows only its head and tail: the
# failed assertions are printed again, last, so that the tail holds them.
failed_assertions() {
  local log="$1/Testing/Temporary/LastTest.log"
  [[ -f "$log" ]] || return 0
  log "failed assertions in $log (seed and context below each):"
  grep -n -A14 -E 'ERROR:|FATAL ERROR|runtime error:|AddressSanitizer|LeakSanitizer|FAILED:' "$log" | head -n 300 || true
}
run_ctest() {
  local dir="$1"; shift
  if ! ctest --test-dir "$dir" --output-on-failure "$@"; then
    failed_assertions "$dir"
    return 1
  fi
}

log "stage 1/3: full build and tests (build/)"
cmake -S . -B build -G Ninja -DSTRATA_WERROR=ON -DSTRATA_PYTHON="$STRATA_VENV/bin/python" >/dev/null
cmake --build build -j "$(jobs)"
run_ctest build -j "$(jobs)"

log "stage 2/3: unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSTRATA_SANITIZE=ON -DSTRATA_WERROR=ON \
  -DSTRATA_CUDA=OFF -DSTRATA_BUILD_EXAMPLES=OFF -DSTRATA_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "$(jobs)" --target strata_unit_tests strata_c99_test strata_hpp_test
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  run_ctest build-asan -R '^(unit|c99_abi|hpp_api)$'

log "stage 3/3: fuzzing the GGUF reader for ${STRATA_FUZZ_SECONDS:-60} s (build-fuzz/)"
scripts/fuzz.sh "${STRATA_FUZZ_SECONDS:-60}"

log "all tests passed"
