#!/usr/bin/env python3
"""Analysis helper of the wirelab benchmarks (standard library only).

  analyze.py iat PCAP --interval-ns N --port P --payload B [--count N] [--wirelab] [--tag k=v ...]
      Reads a pcap (nanosecond magic 0xa1b23c4d, or microsecond 0xa1b2c3d4),
      keeps IPv4/UDP datagrams to port P with B payload bytes (wirelab's
      LAST-flagged end markers are dropped with --wirelab), and prints one JSON
      line: |IAT - ideal| p50/p99/p99.9/max, mean rate, drift in ppm and
      missed packets (vs --count when given).
  analyze.py pacing-table RESULTS.jsonl
      Medians over repetitions per (rate, tool), a table per rate and the
      ratios wirelab / best peer for p99 and p99.9.
  analyze.py maxrate-table RESULTS.jsonl
      Medians of sent / received kpps per tool and the ratios.
"""
import json
import math
import statistics
import struct
import sys
from collections import defaultdict

ETH_LEN = 14


def read_pcap(path):
    """Yields (timestamp_ns, frame bytes)."""
    with open(path, "rb") as f:
        hdr = f.read(24)
        if len(hdr) < 24:
            return
        magic_le = struct.unpack("<I", hdr[:4])[0]
        if magic_le in (0xA1B23C4D, 0xA1B2C3D4):
            endian = "<"
            magic = magic_le
        else:
            endian = ">"
            magic = struct.unpack(">I", hdr[:4])[0]
        if magic == 0xA1B23C4D:
            frac = 1
        elif magic == 0xA1B2C3D4:
            frac = 1000
        else:
            raise SystemExit(f"{path}: not a pcap file (magic {magic_le:#x})")
        linktype = struct.unpack(endian + "I", hdr[20:24])[0]
        if linktype != 1:
            raise SystemExit(f"{path}: link type {linktype}, expected Ethernet (1)")
        rec = struct.Struct(endian + "IIII")
        data = f.read()
    off = 0
    n = len(data)
    while off + 16 <= n:
        sec, sub, incl, _orig = rec.unpack_from(data, off)
        off += 16
        yield sec * 1_000_000_000 + sub * frac, data[off:off + incl]
        off += incl


def udp_times(path, port, payload, wirelab):
    times = []
    for ts, fr in read_pcap(path):
        if len(fr) < ETH_LEN + 20 + 8 or fr[12:14] != b"\x08\x00":
            continue
        ihl = (fr[ETH_LEN] & 0x0F) * 4
        if fr[ETH_LEN + 9] != 17:
            continue
        u = ETH_LEN + ihl
        dport, ulen = struct.unpack_from(">HH", fr, u + 2)
        if dport != port or (payload and ulen != payload + 8):
            continue
        if wirelab:
            p = u + 8
            if len(fr) >= p + 4 and fr[p:p + 2] == b"WL" and fr[p + 3] & 0x04:
                continue  # end-of-flow marker (repeated last probe)
        times.append(ts)
    return times


def pct(sorted_vals, q):
    if not sorted_vals:
        return None
    k = max(0, min(len(sorted_vals) - 1, math.ceil(q * len(sorted_vals)) - 1))
    return sorted_vals[k]


def slope_ppm(times, ival):
    """Least-squares slope of capture time against packet index, as ppm off
    the ideal interval: drift that ignores a late first or last packet."""
    n = len(times)
    t0 = times[0]
    mx = (n - 1) / 2
    my = sum(t - t0 for t in times) / n
    sxy = sum((i - mx) * (t - t0 - my) for i, t in enumerate(times))
    sxx = sum((i - mx) ** 2 for i in range(n))
    return round((sxy / sxx - ival) / ival * 1e6, 2)


def cmd_iat(args):
    path = args[0]
    opts = {"--interval-ns": None, "--port": None, "--payload": "0", "--count": None}
    tags = {}
    wirelab = False
    i = 1
    while i < len(args):
        a = args[i]
        if a == "--wirelab":
            wirelab = True
            i += 1
        elif a == "--tag":
            k, v = args[i + 1].split("=", 1)
            tags[k] = v
            i += 2
        elif a in opts:
            opts[a] = args[i + 1]
            i += 2
        else:
            raise SystemExit(f"unknown argument {a}")
    ival = float(opts["--interval-ns"])
    port = int(opts["--port"])
    times = udp_times(path, port, int(opts["--payload"]), wirelab)
    out = dict(tags)
    n = len(times)
    out["captured"] = n
    if opts["--count"] is not None:
        out["requested"] = int(opts["--count"])
        out["missed"] = max(0, int(opts["--count"]) - n)
    if n >= 3:
        errs = sorted(abs((b - a) - ival) for a, b in zip(times, times[1:]))
        dur = times[-1] - times[0]
        ideal = (n - 1) * ival
        out.update(
            p50_ns=pct(errs, 0.50),
            p99_ns=pct(errs, 0.99),
            p999_ns=pct(errs, 0.999),
            max_ns=errs[-1],
            mean_err_ns=round(sum(errs) / len(errs), 1),
            rate_pps=round((n - 1) / dur * 1e9, 2) if dur > 0 else None,
            drift_ppm=round((dur - ideal) / ideal * 1e6, 2),
            slope_ppm=slope_ppm(times, ival),
        )
    print(json.dumps(out))


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fmt_us(ns):
    return "-" if ns is None else f"{ns / 1000:.2f}"


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def cmd_pacing_table(args):
    rows = load(args[0])
    by = defaultdict(list)
    order_rates, order_tools = [], []
    for r in rows:
        key = (int(r["rate"]), r["tool"])
        if key[0] not in order_rates:
            order_rates.append(key[0])
        if r["tool"] not in order_tools:
            order_tools.append(r["tool"])
        by[key].append(r)
    keys = ["p50_ns", "p99_ns", "p999_ns", "max_ns", "rate_pps", "drift_ppm", "slope_ppm", "missed", "captured"]
    summary = []
    for rate in sorted(order_rates):
        print(f"\n### {rate} pps, 100-byte payload (medians over repetitions; |IAT-ideal| in us)\n")
        print("| tool | reps | p50 | p99 (min-max) | p99.9 | max | mean rate pps | drift ppm | fit drift ppm | missed | captured |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        meds = {}
        for tool in order_tools:
            rs = by.get((rate, tool))
            if not rs:
                continue
            m = {k: med([r.get(k) for r in rs]) for k in keys}
            p99s = [r["p99_ns"] for r in rs if r.get("p99_ns") is not None]
            spread = f"({fmt_us(min(p99s))}-{fmt_us(max(p99s))})" if p99s else ""
            meds[tool] = m
            missed = "n/a (timed)" if m["missed"] is None else f"{m['missed']:.0f}"
            print(f"| {tool} | {len(rs)} | {fmt_us(m['p50_ns'])} | {fmt_us(m['p99_ns'])} {spread} | "
                  f"{fmt_us(m['p999_ns'])} | {fmt_us(m['max_ns'])} | {fmt(m['rate_pps'], '.1f')} | "
                  f"{fmt(m['drift_ppm'], '.1f')} | {fmt(m['slope_ppm'], '.1f')} | {missed} | {fmt(m['captured'], '.0f')} |")
        peers = {t: m for t, m in meds.items() if not t.startswith("wirelab") and m["p99_ns"] is not None}
        # The best peer: lowest p99 among peers that reach >= 95% of the asked rate.
        ok = {t: m for t, m in peers.items() if m["rate_pps"] and m["rate_pps"] >= 0.95 * rate}
        pool = ok or peers
        if not pool:
            continue
        best99 = min(pool, key=lambda t: pool[t]["p99_ns"])
        best999 = min(pool, key=lambda t: pool[t]["p999_ns"])
        print(f"\nbest peer (>=95% of the rate): p99 {best99} {fmt_us(pool[best99]['p99_ns'])} us, "
              f"p99.9 {best999} {fmt_us(pool[best999]['p999_ns'])} us\n")
        print("| wirelab variant | p99 / best peer p99 | p99.9 / best peer p99.9 | goal <= 0.5 both | drift < 10 ppm | no missed |")
        print("|---|---|---|---|---|---|")
        for tool, m in meds.items():
            if not tool.startswith("wirelab") or m["p99_ns"] is None:
                continue
            r99 = m["p99_ns"] / pool[best99]["p99_ns"] if pool[best99]["p99_ns"] else float("inf")
            r999 = m["p999_ns"] / pool[best999]["p999_ns"] if pool[best999]["p999_ns"] else float("inf")
            goal = "yes" if r99 <= 0.5 and r999 <= 0.5 else "NO"
            drift = "yes" if abs(m["drift_ppm"]) < 10 else "NO"
            missed = "yes" if (m["missed"] or 0) == 0 else "NO"
            print(f"| {tool} | {r99:.2f} | {r999:.2f} | {goal} | {drift} | {missed} |")
            summary.append((rate, tool, r99, r999))
    print()


def cmd_maxrate_table(args):
    rows = load(args[0])
    by = defaultdict(list)
    order = []
    for r in rows:
        if r["tool"] not in order:
            order.append(r["tool"])
        by[r["tool"]].append(r)
    keys = ["sent_kpps", "if_rx_kpps", "udp_in_kpps", "app_rx_kpps", "rcvbuf_errors", "app_loss_pct"]
    print("\n### Maximum rate, 64-byte payload, one flow (medians over repetitions; kpps)\n")
    print("| tool | reps | sent (tool) | rx interface | UDP InDatagrams | received by app (min-max) | RcvbufErrors | app loss % |")
    print("|---|---|---|---|---|---|---|---|")
    meds = {}
    for tool in order:
        rs = by[tool]
        m = {k: med([r.get(k) for r in rs]) for k in keys}
        meds[tool] = m
        app = [r["app_rx_kpps"] for r in rs if r.get("app_rx_kpps") is not None]
        spread = f"({min(app):.0f}-{max(app):.0f})" if app else ""
        print(f"| {tool} | {len(rs)} | {fmt(m['sent_kpps'], '.1f')} | {fmt(m['if_rx_kpps'], '.1f')} | "
              f"{fmt(m['udp_in_kpps'], '.1f')} | {fmt(m['app_rx_kpps'], '.1f')} {spread} | "
              f"{fmt(m['rcvbuf_errors'], '.0f')} | {fmt(m['app_loss_pct'], '.2f')} |")

    def ratio(a, b, key):
        if a in meds and b in meds and meds[a].get(key) and meds[b].get(key):
            return f"{meds[a][key] / meds[b][key]:.2f}"
        return "-"

    print("\n| ratio | value | goal |")
    print("|---|---|---|")
    print(f"| wirelab sent / sockperf sent (rx interface) | {ratio('wirelab', 'sockperf', 'if_rx_kpps')} | > 1 |")
    print(f"| wirelab recv / iperf3 receiver | {ratio('wirelab', 'iperf3', 'app_rx_kpps')} | >= 1.5 |")
    print(f"| wirelab recv / D-ITG receiver | {ratio('wirelab', 'ditg', 'app_rx_kpps')} | >= 1.5 |")
    if "wirelab+record" in meds:
        print(f"| wirelab+record sent / wirelab sent | {ratio('wirelab+record', 'wirelab', 'if_rx_kpps')} | >= 0.9 |")
        print(f"| wirelab+record recv / wirelab recv | {ratio('wirelab+record', 'wirelab', 'app_rx_kpps')} | >= 0.9 |")
    print()


def cmd_loss_table(args):
    rows = load(args[0])
    by = defaultdict(list)
    tools, rates = [], []
    for r in rows:
        if r["tool"] not in tools:
            tools.append(r["tool"])
        if r["rate"] not in rates:
            rates.append(r["rate"])
        by[(r["rate"], r["tool"])].append(r)
    print("\n### Receiver loss at paced rates, 64-byte payload (app loss %, median; received kpps)\n")
    print("| rate kpps | " + " | ".join(tools) + " |")
    print("|---|" + "---|" * len(tools))
    for rate in sorted(rates):
        cells = []
        for t in tools:
            rs = by.get((rate, t), [])
            loss = med([r.get("app_loss_pct") for r in rs])
            rx = med([r.get("app_rx_kpps") for r in rs])
            cells.append("-" if loss is None else f"{loss:.2f}% ({fmt(rx, '.0f')})")
        print(f"| {rate / 1000:.0f} | " + " | ".join(cells) + " |")
    print()


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"iat": cmd_iat, "pacing-table": cmd_pacing_table, "maxrate-table": cmd_maxrate_table,
     "loss-table": cmd_loss_table}[cmd](args)


if __name__ == "__main__":
    main()
