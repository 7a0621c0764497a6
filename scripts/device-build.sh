#!/usr/bin/env bash
# Builds, on a machine without a GPU, what a GPU machine needs to check the CUDA backend, and
# gathers it in one folder for scripts/device-check.sh:
#   build-device/   Release, -DSTRATA_CUDA=ON, device code for sm_90 (H100/H200) and sm_121 (DGX Spark
#                   GB10) plus compute_90 PTX (cuda/CMakeLists.txt), or STRATA_CUDA_ARCH's list
#   out/device/     every strata_cuda_*_tests program, strata-bench, strata-mkmodel, strata-run, strata-worker,
#                   libstrata.so, device-check.sh and the non-system shared libraries they load
#                   (ldd), stripped; its size is printed (it must stay under 60 MB)
# Only those targets are built. The GPU machine needs its driver and nothing from here beyond
# the folder (cuBLAS is loaded from its CUDA toolkit at run time when present).
#   scripts/device-build.sh            then copy out/device/ over and run ./device-check.sh there
# Environment: STRATA_DEVICE_BUILD (build dir), STRATA_DEVICE_OUT (folder), STRATA_CUDA_ARCH (a
# CMAKE_CUDA_ARCHITECTURES list, e.g. 90 or 121, instead of the default), STRATA_JOBS (parallel
# jobs; default: the CPU count).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$STRATA_ROOT"

BUILD="${STRATA_DEVICE_BUILD:-$STRATA_ROOT/build-device}"
OUT="${STRATA_DEVICE_OUT:-$STRATA_ROOT/out/device}"
ARCH="${STRATA_CUDA_ARCH:-}"
JOBS="${STRATA_JOBS:-$(nproc)}"
LIMIT_MB=60
start=$(date +%s)

command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "device-build: nvcc not found" >&2; exit 1; }
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"

if [ -n "$ARCH" ]; then
  arch_args=(-DCMAKE_CUDA_ARCHITECTURES="$ARCH")
  arch_text="CUDA architectures $ARCH"
else
  arch_args=(-UCMAKE_CUDA_ARCHITECTURES)  # the project's default (a cached list from an older run would win)
  arch_text="sm_90 + sm_121 SASS, compute_90 PTX"
fi
log "configuring $BUILD (Release, $arch_text)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON "${arch_args[@]}" \
  -DSTRATA_WERROR=ON -DSTRATA_BUILD_TESTS=ON -DSTRATA_BUILD_EXAMPLES=ON -DSTRATA_BUILD_BENCH=OFF \
  -DSTRATA_PYTHON= >/dev/null

# Every CUDA test program CMake knows (one per cuda/tests/test_*.cu|cpp).
mapfile -t cuda_tests < <(ninja -C "$BUILD" -t targets all | sed -n 's/^\(strata_cuda_[A-Za-z0-9_]*_tests\): .*/\1/p' | sort -u)
[ ${#cuda_tests[@]} -gt 0 ] || { echo "device-build: no strata_cuda_*_tests targets" >&2; exit 1; }
targets=("${cuda_tests[@]}" strata strata-bench strata-mkmodel strata-run strata-worker)
log "building ${#targets[@]} targets with $JOBS jobs: ${targets[*]}"
ninja -C "$BUILD" -j "$JOBS" "${targets[@]}"

log "gathering $OUT"
rm -rf "$OUT"
mkdir -p "$OUT"
for t in "${cuda_tests[@]}"; do cp "$BUILD/cuda/$t" "$OUT/"; done
for p in strata-bench strata-mkmodel strata-run strata-worker; do cp "$BUILD/bin/$p" "$OUT/"; done
lib=$(readlink -f "$BUILD/lib/libstrata.so")
cp "$lib" "$OUT/"
soname=$(objdump -p "$lib" | sed -n 's/^ *SONAME *//p')
[ -n "$soname" ] && [ "$soname" != "$(basename "$lib")" ] && ln -sf "$(basename "$lib")" "$OUT/$soname"
ln -sf "$(basename "$lib")" "$OUT/libstrata.so"
cp "$STRATA_ROOT/scripts/device-check.sh" "$OUT/"

# Shared libraries the programs load that are not part of glibc or the driver: copied beside them
# (device-check.sh puts the folder on LD_LIBRARY_PATH). libcuda comes from the GPU machine's driver.
system_lib='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libcuda\.|libstrata\.)'
for f in "$OUT"/*; do
  [ -f "$f" ] && [ ! -L "$f" ] && file -b "$f" | grep -q ELF || continue
  LD_LIBRARY_PATH="$OUT" ldd "$f" 2>/dev/null | awk '/=> \// {print $1, $3}'
done | sort -u | while read -r name path; do
  if ! echo "$name" | grep -Eq "$system_lib" && [ ! -e "$OUT/$name" ]; then
    cp -L "$path" "$OUT/$name"
    echo "  bundled $name (from $path)"
  fi
done

for f in "$OUT"/*; do
  [ -f "$f" ] && [ ! -L "$f" ] && file -b "$f" | grep -q ELF && strip --strip-unneeded "$f"
done
chmod +x "$OUT/device-check.sh"
git -C "$STRATA_ROOT" rev-parse HEAD > "$OUT/COMMIT" 2>/dev/null || echo unknown > "$OUT/COMMIT"

size_kb=$(du -sk "$OUT" | cut -f1)
size_mb=$(( (size_kb + 1023) / 1024 ))
elapsed=$(( $(date +%s) - start ))
ls -la "$OUT"
log "out/device: $size_mb MB (limit $LIMIT_MB MB), built in ${elapsed}s"
if [ "$size_mb" -ge "$LIMIT_MB" ]; then
  echo "device-build: $OUT is $size_mb MB, over the $LIMIT_MB MB limit" >&2
  exit 1
fi
