#!/bin/sh
# Step of scripts/test.sh: a short libFuzzer run of the parser (see scripts/fuzz.sh).
set -eu
FUZZ_SECONDS=${FUZZ_SECONDS:-60} exec "$(dirname "$0")/../fuzz.sh"
