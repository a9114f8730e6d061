#!/usr/bin/env bash
# The trace readers' throughput from memory: each packet trace format (nist-bin,
# nist-txt, delays, pkt-csv) written once, then read three times through wirelab-trace's
# PacketReader, and the nist-bin reader alone; MB/s of the fastest run per format.
# Printed, never judged (the streaming tests in crates/wirelab-trace check counts and
# bounded storage, not speed). No root, no lab.
#
# Usage: bash bench/trace_readers.sh [RECORDS]     (default 4194304)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --locked -q -p wirelab-trace --example readers_throughput -- "$@"
