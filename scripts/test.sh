#!/usr/bin/env bash
# Sets up and runs every test: system packages, then the whole workspace.
# End-to-end tests build network namespaces and need root (CI is root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release -p wirelab --locked
cargo test --workspace --locked --release -- --test-threads=1
