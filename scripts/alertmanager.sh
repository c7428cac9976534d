#!/usr/bin/env bash
# alertmanager.sh [alertmanager|amtool]: prints the path of the project's Alertmanager (or its amtool), built by
# go-tool.sh from the Go module proxy's v0.35.0 into the per-machine cache when missing (about a minute, once).
# Alertmanager embeds its web UI from ui/app/dist, which its release builds with npm and the module lacks: built
# with a placeholder page there (GO_TOOL_PLACEHOLDERS). Its API (/api/v2), all anything here uses, is whole.
set -euo pipefail
VERSION=${ALERTMANAGER_VERSION:-v0.35.0}
name=${1:-alertmanager}
[[ $name == alertmanager || $name == amtool ]] || { echo "usage: alertmanager.sh [alertmanager|amtool]" >&2; exit 2; }
placeholders=
[[ $name == alertmanager ]] && placeholders="ui/app/dist/elm ui/app/dist/mantine"
GO_TOOL_PLACEHOLDERS=$placeholders exec bash "$(dirname "${BASH_SOURCE[0]}")/go-tool.sh" "$name" \
  "github.com/prometheus/alertmanager/cmd/$name" "$VERSION" "-X github.com/prometheus/common/version.Version=${VERSION#v}"
