#!/usr/bin/env bash
# Installs the local (Docker-free) infrastructure binaries into deploy/local/.bin:
#   .bin/ferretdb      FerretDB 1.24 (MongoDB wire protocol, SQLite backend), built from ./ferretdb
#   .bin/kafka-libs/   Kafka 3.9 broker jars + reload4j binding, resolved from ./kafka/pom.xml
#
# Idempotent: each part is (re)built only when missing or when its inputs changed
# (a sha256 of the inputs is kept next to the output). Needs go, mvn and java on PATH;
# writes nothing outside this folder except the usual Go and Maven caches.
#
# Usage: deploy/local/install.sh [--force]     (works from any working directory)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN_DIR="$HERE/.bin"
FERRET_SRC="$HERE/ferretdb"
FERRET_BIN="$BIN_DIR/ferretdb"
FERRET_STAMP="$BIN_DIR/ferretdb.sha256"
KAFKA_POM="$HERE/kafka/pom.xml"
KAFKA_LIBS="$BIN_DIR/kafka-libs"
KAFKA_STAMP="$KAFKA_LIBS/.pom.sha256"

FORCE=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
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

# ---------------------------------------------------------------- FerretDB
ferret_hash="$(digest "$FERRET_SRC/go.mod" "$FERRET_SRC/go.sum" "$FERRET_SRC/main.go")"
if (( FORCE )) || [[ ! -x "$FERRET_BIN" ]] || [[ "$(cat "$FERRET_STAMP" 2>/dev/null || true)" != "$ferret_hash" ]]; then
  need go "install Go >= 1.24"
  log "building FerretDB (first time, a few minutes)…"
  tmp_bin="$FERRET_BIN.tmp.$$"
  # ferretdb_no_postgresql: only the SQLite handler is used; skips compiling pgx & co.
  (
    cd "$FERRET_SRC"
    run_with_progress "downloading Go modules" go mod download
    run_with_progress "compiling FerretDB" \
      go build -trimpath -tags ferretdb_no_postgresql -ldflags '-s -w' -o "$tmp_bin" .
  )
  mv -f "$tmp_bin" "$FERRET_BIN"
  echo "$ferret_hash" >"$FERRET_STAMP"
  log "FerretDB ready: $FERRET_BIN"
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
  log "Kafka ready: $KAFKA_LIBS ($(ls "$KAFKA_LIBS" | wc -l) jars)"
fi
