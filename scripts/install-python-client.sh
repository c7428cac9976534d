#!/usr/bin/env bash
# Installs openapi-python-client (PyPI) into a repo-local virtualenv, for the test that generates a
# Python client from the served OpenAPI document and drives the CRM flow with it. Idempotent.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/python-client"
version="0.29.1"
if [ -x "$venv/bin/openapi-python-client" ] && "$venv/bin/openapi-python-client" --version 2>/dev/null | grep -q "$version"; then
  exit 0
fi
echo "==> installing openapi-python-client $version into .tools/python-client (first time only)…"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "openapi-python-client==$version"
