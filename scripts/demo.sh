#!/usr/bin/env bash
# Sets up and runs the demo lab: builds wirelab, then `wirelab demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release -p wirelab --locked
exec ./target/release/wirelab demo "$@"
