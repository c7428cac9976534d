# shellcheck shell=bash
# The per-machine cache the store (and the bench's other candidates) are built into, shared by
# every checkout. Sourced by deploy/local/install.sh and test/bench/stores/install-candidates.sh;
# deploy/local/src/paths.ts computes the same path.
# shellcheck disable=SC2034  # read by the scripts that source this file
CACHE_DIR="${VOICEAPI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/voiceapi}"
