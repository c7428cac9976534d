#!/usr/bin/env bash
# Installs schemathesis (PyPI) into a repo-local virtualenv for the API fuzz test. Idempotent.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/schemathesis"
version="4.32.5"
if [ -x "$venv/bin/schemathesis" ] && "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$version"; then
  exit 0
fi
echo "==> installing schemathesis $version into .tools/schemathesis (first time only)…"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
