#!/usr/bin/env bash
# The main job on an embedded default: write a small synthetic model with IQ1_S weights
# (quantized by strata), split into three GGUF shards, inspect it through the C ABI, then
# generate from it on the CPU (random weights: the text is noise, the figures are real).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STRATA_ROOT"

ensure_build_packages
BUILD="${STRATA_BUILD_DIR:-build}"
log "building strata in $BUILD/"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(jobs)" --target strata-mkmodel strata-inspect strata-run

OUT="${STRATA_DEMO_DIR:-out/demo}"
mkdir -p "$OUT"
log "writing a tiny llama-shaped model with IQ1_S weights in 3 shards to $OUT/"
"$BUILD/examples/strata-mkmodel" --preset tiny --type iq1_s --shards 3 --seed 42 -o "$OUT/tiny.gguf"
log "inspecting it"
"$BUILD/examples/strata-inspect" "$OUT/tiny-00001-of-00003.gguf"
log "generating 32 tokens on the CPU (random weights: expect noise)"
"$BUILD/examples/strata-run" "$OUT/tiny-00001-of-00003.gguf" -p "Hello, strata" -n 32 --seed 42
