#!/usr/bin/env bash
# Sets up and runs every test: system packages, then the whole workspace.
# End-to-end tests build network namespaces and need root (CI is root).
# A test whose prerequisite is missing (root, a tool) skips itself through
# wirelab-testkit: with CI set that is a failure; otherwise it is appended
# to $WIRELAB_SKIP_LOG, and the skips are listed after cargo's own output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The Python modules install-deps.sh put in its venv (if it made one).
venv="${WIRELAB_VENV:-$PWD/target/pyenv}"
if [ -x "$venv/bin/python3" ]; then export PATH="$venv/bin:$PATH"; fi
cargo build --release -p wirelab --locked
WIRELAB_SKIP_LOG="$(mktemp -t wirelab-skips.XXXXXX)"
export WIRELAB_SKIP_LOG
trap 'rm -f "$WIRELAB_SKIP_LOG"' EXIT
status=0
cargo test --workspace --locked --release -- --test-threads=1 || status=$?
# One line per skipped test (a test may skip more than one check).
skipped="$(awk -F': ' '/^wirelab-skip: / { print $2 }' "$WIRELAB_SKIP_LOG" | sort -u)"
if [ -z "$skipped" ]; then
  echo "0 tests skipped"
else
  sort -u "$WIRELAB_SKIP_LOG"
  echo "$(wc -l <<<"$skipped") tests skipped: $(paste -sd, - <<<"$skipped" | sed 's/,/, /g')"
fi
exit "$status"
