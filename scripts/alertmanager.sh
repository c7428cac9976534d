#!/usr/bin/env bash
# alertmanager.sh [alertmanager|amtool]: prints the path of the project's Alertmanager (or its amtool),
# building both first when missing, from the Go module proxy's v0.35.0 into the per-machine cache
# (like go-tool.sh). `go install` cannot build it from the module alone: its web UI is embedded from
# ui/app/dist, which the module does not ship (it is built by npm in Alertmanager's release). So the
# module is copied and given a one-page placeholder there; the API (/api/v2), which everything here
# uses, is unaffected. Cold, on 2 cores: about a minute.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=${ALERTMANAGER_VERSION:-v0.35.0}
MODULE=github.com/prometheus/alertmanager
name=${1:-alertmanager}
[[ $name == alertmanager || $name == amtool ]] || { echo "usage: alertmanager.sh [alertmanager|amtool]" >&2; exit 2; }
source "$ROOT/deploy/local/store/cache-dir.sh"
dir=$CACHE_DIR/go-tools/alertmanager-$VERSION
if [[ -x $dir/alertmanager && -x $dir/amtool ]]; then
  echo "$dir/$name"
  exit 0
fi
command -v go >/dev/null || { echo "go is needed to build Alertmanager" >&2; exit 1; }
echo "building Alertmanager $VERSION from the Go module proxy into $dir (once per machine: a minute or so)..." >&2
t0=$(date +%s)
mkdir -p "$CACHE_DIR/go-tools"
tmp=$(mktemp -d "$CACHE_DIR/go-tools/.alertmanager-XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
src=$(cd "${TMPDIR:-/tmp}" && go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -d $src ]] || { echo "go mod download $MODULE@$VERSION gave no source directory" >&2; exit 1; }
cp -r "$src" "$tmp/src"
chmod -R u+w "$tmp/src"
for ui in elm mantine; do
  mkdir -p "$tmp/src/ui/app/dist/$ui"
  echo '<!doctype html><title>Alertmanager</title><p>The web UI is not built here; its API is at /api/v2.</p>' \
    >"$tmp/src/ui/app/dist/$ui/index.html"
done
ldflags="-s -w -X github.com/prometheus/common/version.Version=${VERSION#v}"
for cmd in alertmanager amtool; do
  (cd "$tmp/src" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=readonly" \
    go build -trimpath -ldflags "$ldflags" -o "$tmp/bin/$cmd" "./cmd/$cmd") >&2
done
mkdir -p "$dir"
# Moved into place one by one, amtool first: a build running at the same time never sees half a pair.
mv -f "$tmp/bin/amtool" "$dir/amtool"
mv -f "$tmp/bin/alertmanager" "$dir/alertmanager"
echo "built Alertmanager $VERSION in $(($(date +%s) - t0))s" >&2
echo "$dir/$name"
