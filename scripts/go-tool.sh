#!/usr/bin/env bash
# go-tool.sh NAME PACKAGE VERSION [LDFLAGS]: prints the path of the project's NAME, building it first
# when missing or of another version: PACKAGE@VERSION from the Go module proxy into .tools/bin
# (repo-local, git-ignored). Used by helm.sh and oasdiff.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=$1 package=$2 version=$3 ldflags=${4:-}
bin=$ROOT/.tools/bin/$name
if [[ -x $bin && "$(cat "$bin.version" 2>/dev/null)" == "$version" ]]; then
  echo "$bin"
  exit 0
fi
command -v go >/dev/null || { echo "go is needed to build $name (or set ${name^^}=/path/to/$name)" >&2; exit 1; }
echo "building $name $version from the Go module proxy into .tools/bin (first run: a minute or a few)..." >&2
t0=$(date +%s)
mkdir -p "$ROOT/.tools/bin"
GOBIN=$ROOT/.tools/bin CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w $ldflags" "$package@$version" >&2
echo "$version" >"$bin.version"
echo "built $name $version in $(($(date +%s) - t0))s" >&2
echo "$bin"
