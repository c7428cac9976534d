#!/usr/bin/env bash
# The stores `make bench` compares with the embedded one (test/bench/stores.ts), built into the
# same per-machine cache as the store (deploy/local/install.sh); benchmarks only, never tests:
#   ferretdb-1.24/ferretdb           FerretDB 1.24 on SQLite, the former local store (./ferretdb)
#   secantusdb-py-0.7.0b3/bin/secantusd-py   SecantusDB's Python server, from PyPI, in a venv
# Prints the cache directory. Needs go and python3.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../../deploy/local/store/cache-dir.sh"
PY_VERSION=0.7.0b3
log() { echo "[bench stores] $*" >&2; }
mkdir -p "$CACHE_DIR"

FERRET="$CACHE_DIR/ferretdb-1.24/ferretdb"
if [[ ! -x "$FERRET" ]]; then
  command -v go >/dev/null || { log "error: go is not on PATH (FerretDB is built from the Go module proxy)"; exit 1; }
  log "building FerretDB 1.24 into $FERRET (a minute or two)…"
  (cd "$HERE/ferretdb" && go build -trimpath -tags ferretdb_no_postgresql -ldflags '-s -w' -o "$FERRET.tmp" . >&2)
  mv -f "$FERRET.tmp" "$FERRET"
fi

PY_DIR="$CACHE_DIR/secantusdb-py-$PY_VERSION"
if [[ ! -f "$PY_DIR/.installed" ]]; then
  command -v python3 >/dev/null || { log "error: python3 is not on PATH (SecantusDB's Python server comes from PyPI)"; exit 1; }
  log "installing secantusdb $PY_VERSION from PyPI into $PY_DIR…"
  # A venv stays where it was made (its scripts name their interpreter by path): built in place,
  # marked complete only at the end.
  rm -rf "$PY_DIR"
  python3 -m venv "$PY_DIR"
  "$PY_DIR/bin/pip" install -q "secantusdb==$PY_VERSION" >&2
  touch "$PY_DIR/.installed"
fi
echo "$CACHE_DIR"
