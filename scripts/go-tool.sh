#!/usr/bin/env bash
# go-tool.sh NAME PACKAGE VERSION [LDFLAGS]: prints the path of the project's NAME, building it first
# when missing: PACKAGE@VERSION from the Go module proxy into the per-machine cache every checkout
# shares (deploy/local/store/cache-dir.sh, like the store and the cluster's binaries), so a fresh
# clone on a machine that built it once builds nothing. Used by helm.sh, oasdiff.sh, the SLO rules
# (sloth, promtool) and Prometheus. Cold, on 2 cores: promtool 4-9 min, Prometheus 1-2 min more,
# sloth, helm and oasdiff 1-2 min each.
#   GO_TOOL_PLACEHOLDERS="dir ..."   folders of the module that its release fills with built assets (a web UI) and
#                                    the module lacks, though `go:embed` needs them: the module is copied and each
#                                    given a one-page index.html, then built there (Alertmanager's ui/app/dist).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=$1 package=$2 version=$3 ldflags=${4:-}
source "$ROOT/deploy/local/store/cache-dir.sh"
dir=$CACHE_DIR/go-tools/$name-$version
bin=$dir/$name
if [[ -x $bin ]]; then
  echo "$bin"
  exit 0
fi
command -v go >/dev/null || { echo "go is needed to build $name (or set ${name^^}=/path/to/$name)" >&2; exit 1; }
echo "building $name $version from the Go module proxy into $dir (once per machine: a minute or a few)..." >&2
t0=$(date +%s)
mkdir -p "$CACHE_DIR/go-tools"
# Built beside, then moved into place: a build running at the same time never sees half a binary.
tmp=$(mktemp -d "$CACHE_DIR/go-tools/.$name-XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
if [[ -z ${GO_TOOL_PLACEHOLDERS:-} ]]; then
  GOBIN=$tmp CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w $ldflags" "$package@$version" >&2
else
  module=$(cd "$tmp" && go mod download -json "${package%%/cmd/*}@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $module ]] || { echo "go mod download ${package%%/cmd/*}@$version gave no source directory" >&2; exit 1; }
  cp -r "$module" "$tmp/src" && chmod -R u+w "$tmp/src"
  for d in $GO_TOOL_PLACEHOLDERS; do
    mkdir -p "$tmp/src/$d"
    echo "<!doctype html><title>$name</title><p>Not built here: its web pages come with its release; its API works.</p>" >"$tmp/src/$d/index.html"
  done
  # The package as a path inside its module: .../cmd/NAME -> ./cmd/NAME.
  (cd "$tmp/src" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" \
    go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp/$name" "./cmd/${package#*/cmd/}" >&2)
fi
mkdir -p "$dir"
mv -f "$tmp/$name" "$bin"
echo "built $name $version in $(($(date +%s) - t0))s" >&2
echo "$bin"
