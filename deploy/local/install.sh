#!/usr/bin/env bash
# Installs the local (Docker-free) infrastructure:
#   the store          SecantusDB's Rust server (MongoDB wire protocol, WiredTiger), version in
#                      ./store/VERSION, built by cargo into ~/.cache/voiceapi/secantus-mdb-<version>/
#                      (VOICEAPI_CACHE_DIR or XDG_CACHE_HOME move it), shared by every checkout
#   .bin/kafka-libs/   Kafka 3.9 broker jars + reload4j binding, resolved from ./kafka/pom.xml
#
# Idempotent: each part is (re)built only when missing or when its inputs changed (the store's
# version is in its path; a sha256 of the pom is kept next to the jars). Needs cargo, cmake and a
# C/C++ compiler for the store, mvn and java for Kafka; writes outside this folder only the store's
# cache and the usual Cargo and Maven caches.
#
# Usage: deploy/local/install.sh [--force]     (works from any working directory)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN_DIR="$HERE/.bin"
KAFKA_POM="$HERE/kafka/pom.xml"
KAFKA_LIBS="$BIN_DIR/kafka-libs"
KAFKA_STAMP="$KAFKA_LIBS/.pom.sha256"

FORCE=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "install.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log() { echo "[local-infra] $*" >&2; }

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    log "error: '$1' is not on PATH ($2)"
    exit 1
  fi
}

# Same digest as inputsHash() in src/install.ts: sha256 of the files concatenated in order.
digest() { cat "$@" | sha256sum | cut -d' ' -f1; }

# Runs a command with its output in a log file, printing a line every 15 s so a
# long first build is not silent; shows the log tail if it fails.
run_with_progress() {
  local what="$1"; shift
  local logf; logf="$(mktemp "${TMPDIR:-/tmp}/local-infra.XXXXXX")"
  local start=$SECONDS next=15
  "$@" >"$logf" 2>&1 &
  local pid=$!
  # Make sure Ctrl-C here also stops the build.
  trap 'kill "$pid" 2>/dev/null || true; rm -f "$logf"; exit 130' INT TERM
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( SECONDS - start >= next )) && kill -0 "$pid" 2>/dev/null; then
      log "  … $what ($((SECONDS - start)) s)"
      next=$((next + 15))
    fi
  done
  local rc=0
  wait "$pid" || rc=$?
  trap - INT TERM
  if (( rc != 0 )); then
    log "error: $what failed (exit $rc); last output:"
    tail -n 40 "$logf" >&2
    rm -f "$logf"
    exit "$rc"
  fi
  rm -f "$logf"
  log "  done: $what ($((SECONDS - start)) s)"
}

mkdir -p "$BIN_DIR"

# Serialise concurrent runs (e.g. parallel test workers calling ensureInstalled()).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$BIN_DIR/.install.lock"
  flock 9
fi

# ------------------------------------------------------------- the store
# SecantusDB's Rust server (crate secantus-mdb, GPL-2.0-only, run as a separate process and never
# linked), built once per machine into a cache outside the checkout, so every clone, CI and
# `make run` reuse it. The version is pinned in store/VERSION and built --locked (its Cargo.lock).
STORE_VERSION="$(tr -d '[:space:]' <"$HERE/store/VERSION")"
source "$HERE/store/cache-dir.sh"
STORE_DIR="$CACHE_DIR/secantus-mdb-$STORE_VERSION"
STORE_BIN="$STORE_DIR/bin/secantusd-rs"
if (( FORCE )) || [[ ! -x "$STORE_BIN" ]]; then
  need cargo "install Rust with rustup (https://rustup.rs): cargo builds the embedded MongoDB-compatible store"
  need cmake "install cmake (apt-get install cmake): the store compiles WiredTiger with it"
  need cc "install a C compiler (apt-get install build-essential): the store compiles WiredTiger from C"
  need c++ "install a C++ compiler (apt-get install build-essential): the store's build needs one"
  mkdir -p "$CACHE_DIR"
  # Another checkout on this machine may be building the same version: wait for it.
  if command -v flock >/dev/null 2>&1; then
    exec 8>"$STORE_DIR.lock"
    flock 8
  fi
  if (( FORCE )) || [[ ! -x "$STORE_BIN" ]]; then
    log "building the store, secantus-mdb $STORE_VERSION, into $STORE_DIR (once per machine, about 6 minutes on 2 cores)…"
    tmp_root="$STORE_DIR.tmp.$$"
    rm -rf "$STORE_DIR".tmp.*  # what an interrupted build left
    # --ignore-rust-version: the crate declares a newer Rust than it needs (1.95 builds it).
    run_with_progress "compiling secantus-mdb $STORE_VERSION (cargo install --locked)" \
      cargo install secantus-mdb --version "$STORE_VERSION" --locked --ignore-rust-version --root "$tmp_root"
    mkdir -p "$STORE_DIR/bin"
    mv -f "$tmp_root/bin/secantusd-rs" "$STORE_BIN"
    rm -rf "$tmp_root"
    log "store ready: $STORE_BIN"
  fi
fi

# ------------------------------------------------------------------- Kafka
kafka_hash="$(digest "$KAFKA_POM")"
if (( FORCE )) || ! compgen -G "$KAFKA_LIBS/kafka_2.13-*.jar" >/dev/null || [[ "$(cat "$KAFKA_STAMP" 2>/dev/null || true)" != "$kafka_hash" ]]; then
  need mvn "install Maven"
  need java "install a Java 17 runtime"
  log "resolving Kafka broker jars from Maven Central…"
  tmp_libs="$BIN_DIR/kafka-libs.tmp.$$"
  rm -rf "$tmp_libs"
  run_with_progress "resolving Kafka jars" \
    mvn -q -B -f "$KAFKA_POM" dependency:copy-dependencies -DoutputDirectory="$tmp_libs"
  rm -rf "$KAFKA_LIBS"
  mv "$tmp_libs" "$KAFKA_LIBS"
  echo "$kafka_hash" >"$KAFKA_STAMP"
  # shellcheck disable=SC2012  # only counts the entries (Maven jar names), never parses them
  log "Kafka ready: $KAFKA_LIBS ($(ls "$KAFKA_LIBS" | wc -l) jars)"
fi
