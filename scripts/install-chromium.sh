#!/usr/bin/env bash
# install-chromium.sh: puts Debian's Chromium at /usr/bin/chromium for the browser tests
# (test/e2e/slo-page.e2e.test.ts drives it with playwright-core, which never downloads a browser).
# Idempotent: does nothing when /usr/bin/chromium is there. As root, or through sudo when not root.
set -euo pipefail
if [[ -x /usr/bin/chromium ]]; then
  exit 0
fi
if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "install-chromium.sh: Debian's chromium is needed at /usr/bin/chromium; run as root or install sudo" >&2
  exit 1
fi
echo "installing Debian's chromium (apt-get)..." >&2
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
/usr/bin/chromium --version >&2
