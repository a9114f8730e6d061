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
# The Prometheus project's own exposition parser checks `wirelab run`'s
# /metrics in the tests.
python3 -c 'import prometheus_client' 2>/dev/null || python3 -m pip install -q --root-user-action=ignore 'prometheus_client>=0.20'
# Independent Parquet readers check `wirelab export`'s files in the tests
# and bench/report.sh: pyarrow and DuckDB's Python package.
python3 -c 'import pyarrow' 2>/dev/null || python3 -m pip install -q --root-user-action=ignore 'pyarrow>=14'
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install -q --root-user-action=ignore 'duckdb>=1.0'
