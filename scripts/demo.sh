#!/usr/bin/env bash
# Sets up and runs the demo lab: installs the system packages (scripts/install-deps.sh),
# builds wirelab, then `wirelab demo ARGS...`. WIRELAB_DEMO_NO_INSTALL=1 leaves the
# packages out (what .ci/run does: its smoke test of the lab path, after scripts/test.sh
# has installed them).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${WIRELAB_DEMO_NO_INSTALL:-0}" != 1 ]; then
  bash scripts/install-deps.sh
fi
cargo build --release -p wirelab --locked
exec ./target/release/wirelab demo "$@"
