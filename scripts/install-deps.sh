#!/usr/bin/env bash
# Installs the system packages wirelab's build, tests and demo need (Debian).
# Idempotent; does nothing when everything is already there.
set -euo pipefail
need=()
command -v ip >/dev/null || need+=(iproute2)
command -v sysctl >/dev/null || need+=(procps)
command -v kill >/dev/null || need+=(procps)
command -v ethtool >/dev/null || need+=(ethtool)
command -v nft >/dev/null || need+=(nftables)
command -v tshark >/dev/null || need+=(tshark)
command -v capinfos >/dev/null || need+=(tshark)
command -v tcpdump >/dev/null || need+=(tcpdump)
command -v tcpreplay >/dev/null || need+=(tcpreplay)
command -v stress-ng >/dev/null || need+=(stress-ng)
command -v gzip >/dev/null || need+=(gzip)
command -v python3 >/dev/null || need+=(python3)
# `python3 -m venv` needs ensurepip, which Debian and Ubuntu ship in python3-venv.
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv)
command -v ssh >/dev/null || need+=(openssh-client)
command -v ssh-keygen >/dev/null || need+=(openssh-client)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
[ -x /usr/bin/time ] || need+=(time)
[ -e /usr/include/pcap/pcap.h ] || need+=(libpcap-dev)
command -v cc >/dev/null || need+=(gcc)
# Headless Chromium opens `wirelab report`'s pages in the e2e tests.
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Python modules the tests use: the Prometheus project's exposition parser checks
# `wirelab run`'s /metrics; pyarrow and DuckDB's Python package read `wirelab export`'s
# Parquet files (also in bench/report.sh). Debian 12 and Ubuntu 24.04 mark the system
# Python externally managed (pip refuses to install into it), so the missing ones go into
# a venv, $WIRELAB_VENV (default target/pyenv), made with --system-site-packages so that
# modules the system already has are used as they are. scripts/test.sh puts its bin/
# first on PATH. Prints nothing when nothing is missing.
venv="${WIRELAB_VENV:-$(cd "$(dirname "$0")/.." && pwd)/target/pyenv}"
py=python3
[ -x "$venv/bin/python3" ] && py="$venv/bin/python3"
missing=()
for spec in 'prometheus_client>=0.20' 'pyarrow>=14' 'duckdb>=1.0'; do
  "$py" -c "import ${spec%%>=*}" 2>/dev/null || missing+=("$spec")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing into $venv: ${missing[*]}" >&2
  [ -x "$venv/bin/python3" ] || python3 -m venv --system-site-packages "$venv"
  "$venv/bin/python3" -m pip install -q "${missing[@]}"
fi
