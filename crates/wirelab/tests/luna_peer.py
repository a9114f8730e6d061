#!/usr/bin/env python3
"""An independent LUNA peer for interop tests, written from the thesis
(the LUNA thesis, section 3.1 and figure 6.1), not from wirelab's code:
payload = u32 sequence (network order) | struct timespec (two native
little-endian int64) | u8 flags (bit 0: echo) | padding.

  luna_peer.py server PORT_FILE COUNT
      binds 127.0.0.1:0, writes its port to PORT_FILE, receives COUNT
      datagrams (10 s limit), mirrors those with the echo flag unchanged, and
      prints one JSON line: seqs, min/max send time, sizes.
  luna_peer.py client PORT COUNT SKIP
      sends COUNT probes (sequence 0..COUNT-1, 100 us apart, echo flag off),
      leaving out sequence SKIP.
"""
import json
import socket
import struct
import sys
import time

LAYOUT = struct.Struct(">I")
TIMESPEC = struct.Struct("<qq")


def server(port_file, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(10)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    seqs, times, sizes, echoed = [], [], [], 0
    try:
        while len(seqs) < count:
            data, src = s.recvfrom(65536)
            if len(data) < 21:
                sizes.append(len(data))
                continue
            (seq,) = LAYOUT.unpack_from(data, 0)
            sec, nsec = TIMESPEC.unpack_from(data, 4)
            flags = data[20]
            seqs.append(seq)
            times.append(sec * 1_000_000_000 + nsec)
            sizes.append(len(data))
            if flags & 1:
                s.sendto(data, src)
                echoed += 1
    except socket.timeout:
        pass
    print(json.dumps({"seqs": seqs, "min_tx_ns": min(times, default=0),
                      "max_tx_ns": max(times, default=0), "sizes": sorted(set(sizes)),
                      "echoed": echoed, "now_ns": time.time_ns()}))


def client(port, count, skip):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for seq in range(count):
        if seq != skip:
            t = time.time_ns()
            pkt = LAYOUT.pack(seq) + TIMESPEC.pack(t // 1_000_000_000, t % 1_000_000_000) + b"\x00"
            s.sendto(pkt + b"\x00" * 11, ("127.0.0.1", port))
        time.sleep(0.0001)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(sys.argv[2], int(sys.argv[3]))
    else:
        client(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
