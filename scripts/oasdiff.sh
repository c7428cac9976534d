#!/usr/bin/env bash
# Prints the path of the project's oasdiff (OpenAPI breaking-change checker), building it first when
# missing: the pinned version from the Go module proxy into .tools/bin (repo-local, git-ignored; about a
# minute the first time). Used by `make contracts-check` and `make release`. Settings: OASDIFF_VERSION
# (default v1.37.0); OASDIFF (use this binary instead).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=$ROOT/.tools
OASDIFF_VERSION=${OASDIFF_VERSION:-v1.37.0}
if [[ -n ${OASDIFF:-} ]]; then
  echo "$OASDIFF"
  exit 0
fi
BIN=$TOOLS/bin/oasdiff
if [[ -x $BIN && "$(cat "$TOOLS/bin/oasdiff.version" 2>/dev/null)" == "$OASDIFF_VERSION" ]]; then
  echo "$BIN"
  exit 0
fi
command -v go >/dev/null || { echo "go is needed to build oasdiff (or set OASDIFF=/path/to/oasdiff)" >&2; exit 1; }
echo "building oasdiff $OASDIFF_VERSION from the Go module proxy into $TOOLS/bin (first run: about a minute)..." >&2
t0=$(date +%s)
mkdir -p "$TOOLS/bin"
GOBIN=$TOOLS/bin CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w" "github.com/oasdiff/oasdiff@$OASDIFF_VERSION" >&2
echo "$OASDIFF_VERSION" >"$TOOLS/bin/oasdiff.version"
echo "built oasdiff $OASDIFF_VERSION in $(($(date +%s) - t0))s" >&2
echo "$BIN"
