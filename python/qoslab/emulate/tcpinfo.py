"""Per-connection TCP state from the kernel (``struct tcp_info`` over sock_diag).

Run inside a host namespace by the emulator as a script (``python .../tcpinfo.py``:
standard library only, so it starts in milliseconds), it
dumps every established TCP socket whose remote port is in ``--ports`` every
``--interval`` seconds and prints one JSON line per socket and sample: the CLOCK_MONOTONIC
time (shared by every namespace) and the fields the simulator reports — cwnd and
ssthresh in segments, ca_state (Linux's ``tcp_ca_state``: 0 open, 1 disorder, 2 cwr,
3 recovery, 4 loss), srtt, total retransmissions, data segments sent, and the number of
retransmission timeouts (``tcpi_total_rto``, Linux ≥ 6.7; absent on older kernels).

This is what ``ss -ti`` reads (iproute2 misc/ss.c), through the same netlink request
(linux/inet_diag.h ``inet_diag_req_v2`` with ``INET_DIAG_INFO``); iproute2 6.1 does not
print ``tcpi_total_rto`` yet, hence our own reader. The layout of ``struct tcp_info`` is
include/uapi/linux/tcp.h; fields past the length the kernel returns are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import sys
import time
from typing import Any

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_DONE, NLMSG_ERROR = 3, 2
INET_DIAG_INFO = 2
TCP_ESTABLISHED, TCP_FIN_WAIT1, TCP_CLOSE_WAIT = 1, 4, 8

# (name, struct format, offset) in struct tcp_info (include/uapi/linux/tcp.h)
_FIELDS: tuple[tuple[str, str, int], ...] = (
    ("ca_state", "B", 1),
    ("rto_us", "I", 8),
    ("snd_mss", "I", 16),
    ("lost", "I", 32),
    ("rtt_us", "I", 68),
    ("snd_ssthresh", "I", 76),
    ("snd_cwnd", "I", 80),
    ("total_retrans", "I", 100),
    ("bytes_acked", "Q", 120),
    ("data_segs_out", "I", 156),
    ("bytes_retrans", "Q", 208),
    ("total_rto", "H", 240),
    ("total_rto_recoveries", "H", 242),
)


def _request() -> bytes:
    states = (1 << TCP_ESTABLISHED) | (1 << TCP_FIN_WAIT1) | (1 << TCP_CLOSE_WAIT)
    sockid = b"\0" * 48
    req = struct.pack(
        "=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0, states
    )
    body = req + sockid
    return (
        struct.pack("=IHHII", 16 + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
        + body
    )


def parse_tcp_info(info: bytes) -> dict[str, int]:
    """The fields we report from a ``struct tcp_info`` of ``len(info)`` bytes."""
    out = {}
    for name, fmt, off in _FIELDS:
        size = struct.calcsize(fmt)
        if off + size <= len(info):
            out[name] = struct.unpack_from("=" + fmt, info, off)[0]
    return out


def dump(sock: socket.socket, ports: range) -> list[dict[str, Any]]:
    """One sock_diag dump: the sockets whose remote port is in ``ports``."""
    sock.send(_request())
    rows: list[dict[str, Any]] = []
    while True:
        data = sock.recv(1 << 20)
        off = 0
        while off + 16 <= len(data):
            length, kind, _, _, _ = struct.unpack_from("=IHHII", data, off)
            if length < 16:
                return rows
            if kind == NLMSG_DONE or kind == NLMSG_ERROR:
                return rows
            msg = data[off + 16 : off + length]
            sport, dport = struct.unpack_from(">HH", msg, 4)
            if dport in ports:
                row: dict[str, Any] = {"sport": sport, "dport": dport}
                a = 72  # inet_diag_msg is 72 bytes; rtattrs follow
                while a + 4 <= len(msg):
                    alen, atype = struct.unpack_from("=HH", msg, a)
                    if alen < 4:
                        break
                    if atype == INET_DIAG_INFO:
                        row.update(parse_tcp_info(msg[a + 4 : a + alen]))
                    a += (alen + 3) & ~3
                rows.append(row)
            off += (length + 3) & ~3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--ports", default="5201-5999", help="remote port range A-B")
    ap.add_argument("--max-seconds", type=float, default=3600.0, help="stop after this long")
    a = ap.parse_args(argv)
    lo, _, hi = a.ports.partition("-")
    ports = range(int(lo), int(hi or lo) + 1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    end = time.monotonic() + a.max_seconds
    out = sys.stdout
    out.write('{"ready":true}\n')  # the emulator waits for this before traffic starts
    out.flush()
    while time.monotonic() < end:
        t = time.monotonic_ns()
        for row in dump(sock, ports):
            row["t"] = t
            out.write(json.dumps(row, separators=(",", ":")) + "\n")
        out.flush()
        time.sleep(max(0.0, a.interval - (time.monotonic_ns() - t) / 1e9))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (KeyboardInterrupt, BrokenPipeError):
        os._exit(0)
