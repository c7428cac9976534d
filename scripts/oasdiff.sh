#!/usr/bin/env bash
# Prints the path of the project's oasdiff (OpenAPI breaking-change checker), built by go-tool.sh
# when missing (about a minute the first time). Used by `make contracts-check` and `make release`.
# Settings: OASDIFF_VERSION (default v1.37.0); OASDIFF (use this binary instead).
set -euo pipefail
if [[ -n ${OASDIFF:-} ]]; then
  echo "$OASDIFF"
  exit 0
fi
exec bash "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh" oasdiff github.com/oasdiff/oasdiff "${OASDIFF_VERSION:-v1.37.0}"
