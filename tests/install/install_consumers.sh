#!/usr/bin/env bash
# install_consumers (registered in CMakeLists.txt here): installs the build into a fresh prefix,
# checks what landed there, builds examples/simple/simple.c against the prefix alone
#   (a) as a CMake project: find_package(strata CONFIG REQUIRED), strata::strata
#   (b) with `cc $(pkg-config --cflags --libs strata)`
# and runs both on the same model: same output, the prompt then the expected text.
set -euo pipefail

while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2 ;; --work) work=$2 ;; --source) source=$2 ;; --cmake) cmake=$2 ;;
    --generator) generator=$2 ;; --cc) cc=$2 ;; --pkg-config) pkg_config=$2 ;;
    --model) model=$2 ;; --prompt) prompt=$2 ;; --expect) expect=$2 ;;
    *) echo "install_consumers: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
fail() { echo "install_consumers: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
# Nothing may reach the build tree's libstrata by the environment.
unset LD_LIBRARY_PATH

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install"; }

step "the installed files"
lib=$(find "$prefix" -name libstrata.so -print -quit)
[ -n "$lib" ] || fail "no libstrata.so under $prefix"
libdir=$(dirname "$lib")
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -n "$soname" ] || fail "libstrata.so has no SONAME"
for link in libstrata.so "$soname"; do
  [ -L "$libdir/$link" ] || fail "$libdir/$link is not a symbolic link"
done
[ -f "$(readlink -f "$libdir/libstrata.so")" ] || fail "libstrata.so points at nothing"
for f in "$prefix/include/strata/strata.h" "$prefix/include/strata/strata.hpp" \
         "$libdir/cmake/strata/strataConfig.cmake" "$libdir/cmake/strata/strataConfigVersion.cmake" \
         "$libdir/cmake/strata/strataTargets.cmake" "$libdir/pkgconfig/strata.pc"; do
  [ -f "$f" ] || fail "missing $f"
done

# Every installed program loads the installed libstrata through its RPATH.
uses_installed_lib() {
  local resolved
  resolved=$(ldd "$1" | sed -n 's/.*libstrata\.so[^ ]* => \([^ ]*\).*/\1/p')
  [ -n "$resolved" ] || fail "$1: libstrata not found by the loader: $(ldd "$1" | grep libstrata || true)"
  [ "$(readlink -f "$resolved")" = "$(readlink -f "$lib")" ] || fail "$1 loads $resolved, not $lib"
}
step "the installed programs"
[ -x "$prefix/bin/strata-run" ] || fail "no $prefix/bin/strata-run"
for program in "$prefix"/bin/strata-*; do
  uses_installed_lib "$program"
done
"$prefix/bin/strata-run" --help > "$work/strata-run-help.txt" 2>&1 || { cat "$work/strata-run-help.txt"; fail "strata-run --help"; }
grep -qi usage "$work/strata-run-help.txt" || fail "strata-run --help printed no usage"

step "(a) a CMake consumer: find_package(strata CONFIG REQUIRED)"
"$cmake" -S "$source/tests/install/consumer" -B "$work/cmake-consumer" -G "$generator" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DSIMPLE_SOURCE="$source/examples/simple/simple.c" \
  > "$work/cmake-consumer.log" 2>&1 || { cat "$work/cmake-consumer.log"; fail "configuring the CMake consumer"; }
grep -q "from $libdir/cmake/strata" "$work/cmake-consumer.log" \
  || { cat "$work/cmake-consumer.log"; fail "the CMake consumer did not find the package in $prefix"; }
"$cmake" --build "$work/cmake-consumer" >> "$work/cmake-consumer.log" 2>&1 \
  || { cat "$work/cmake-consumer.log"; fail "building the CMake consumer"; }
simple_cmake=$work/cmake-consumer/simple

step "(b) cc \$(pkg-config --cflags --libs strata)"
export PKG_CONFIG_PATH=$libdir/pkgconfig
pc_libdir=$("$pkg_config" --variable=libdir strata) || fail "pkg-config does not know strata"
[ "$(readlink -f "$pc_libdir")" = "$(readlink -f "$libdir")" ] || fail "strata.pc says libdir=$pc_libdir, not $libdir"
[ "$("$pkg_config" --modversion strata)" = "$(sed -n 's/^Version: //p' "$libdir/pkgconfig/strata.pc")" ] || fail "pkg-config --modversion"
flags=$("$pkg_config" --cflags --libs strata)
echo "flags: $flags"
simple_pc=$work/simple-pkgconfig
# shellcheck disable=SC2086  # the flags are words
"$cc" -std=c99 -Wall -Wextra -Werror -o "$simple_pc" "$source/examples/simple/simple.c" $flags \
  -Wl,-rpath,"$pc_libdir" || fail "building simple.c with pkg-config's flags"

step "both consumers on $model"
for program in "$simple_cmake" "$simple_pc"; do
  uses_installed_lib "$program"
  "$program" "$model" "$prompt" 8 > "$program.out" 2> "$program.err" || { cat "$program.err"; fail "$program exited non-zero"; }
  out=$(cat "$program.out")
  echo "$(basename "$program"): $out"
  [ "${out:0:${#prompt}}" = "$prompt" ] || fail "$program: the output does not begin with the prompt"
  generated=${out:${#prompt}}
  [ -n "$generated" ] || fail "$program: nothing generated"
  [[ $generated =~ $expect ]] || fail "$program: the generated text does not match '$expect'"
done
cmp -s "$simple_cmake.out" "$simple_pc.out" || fail "the two builds printed different text"
echo "install_consumers: OK"
