"""Trace CSV files: a fast, strict reader and an atomic writer.

Input: a header line naming at least ``time_ns`` and ``size_bytes`` (and
optionally ``color``: green/yellow/red, g/y/r or 0/1/2), one packet per line.
Other columns are kept and passed through to the output untouched; the header
columns a scheduler or filter looks at (``flow``, ``dscp``, ``src``, ``dst``,
``src_port``, ``dst_port``, ``proto``; see ``HEADER_COLUMNS``) are parsed on
demand by ``header_columns`` (``qoslab shape``), never for ``qoslab meter``.

The reader parses with the C ``csv`` module, then validates and converts each
numeric column at once with NumPy; only when a column is bad does it look for
the first offending row, so every error still names the file, the 1-based
line, the column and what was expected.
"""

from __future__ import annotations

import csv
import io
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from qoslab import outputs
from qoslab.api import COLOR_NAMES, MAX_PACKET_BYTES, TIME_HORIZON_NS

REQUIRED = ("time_ns", "size_bytes")

#: Optional packet header columns ``qoslab shape`` reads: name -> (NumPy
#: dtype, largest value, what is expected). ``src``/``dst`` take a.b.c.d or
#: an integer, ``proto`` a number or tcp/udp/icmp.
HEADER_COLUMNS: dict[str, tuple[type[np.unsignedinteger], int, str]] = {
    "flow": (np.uint32, 2**32 - 1, "a flow id, 0 to 4294967295"),
    "dscp": (np.uint8, 63, "a DSCP, 0 to 63"),
    "src": (np.uint32, 2**32 - 1, "an IPv4 address a.b.c.d"),
    "dst": (np.uint32, 2**32 - 1, "an IPv4 address a.b.c.d"),
    "src_port": (np.uint16, 65535, "a port, 0 to 65535"),
    "dst_port": (np.uint16, 65535, "a port, 0 to 65535"),
    "proto": (np.uint8, 255, "an IP protocol number or tcp, udp, icmp"),
}
_PROTOCOLS = {"icmp": "1", "tcp": "6", "udp": "17"}
HEADER_HINT = "a header line 'time_ns,size_bytes[,color]'"


class TraceFileError(Exception):
    """A problem in a trace file at a 1-based line (0 = the file as a whole)."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")
        self.file = file
        self.line = line
        self.message = message


#: First bytes of pcap (µs/ns, either byte order) and pcapng files.
CAPTURE_MAGICS = (
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",
)


@dataclass
class TraceFile:
    path: str
    header: list[str]
    rows: list[list[str]]
    times_ns: Any
    sizes: Any
    colors: Any | None
    _text: str

    def line_of(self, index: int) -> int:
        """The 1-based line number of packet ``index`` (0-based)."""
        return _line_of(self._text, index)

    def error(self, index: int, message: str) -> TraceFileError:
        return TraceFileError(self.path, self.line_of(index), message)


def _rows(text: str) -> Any:
    """Non-blank CSV rows with the reader (for ``line_num``)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    return reader, (r for r in reader if r)


def _line_of(text: str, index: int) -> int:
    # Only called on the error path: re-scan to get the true line, which
    # differs from index + 2 when there are blank lines or quoted newlines.
    reader, rows = _rows(text)
    for k, _ in enumerate(rows):
        if k == index + 1:  # +1 for the header row
            return reader.line_num
    return reader.line_num


def _column_uint(
    tf_path: str, text: str, values: list[str], column: str, maximum: int, what: str
) -> Any:
    n = len(values)
    max_digits = len(str(maximum))
    try:
        b = np.char.strip(np.array(values, dtype="S")) if n else np.zeros(0, dtype="S1")
        ok = np.char.isdigit(b) & (np.char.str_len(b) <= max_digits)
        if ok.all():
            a = b.astype(np.uint64)
            over = a > np.uint64(maximum)
            if not over.any():
                return a
            i = int(np.argmax(over))
        else:
            i = int(np.argmax(~ok))
    except UnicodeEncodeError:
        i = next(k for k, v in enumerate(values) if not v.isascii())
    raise TraceFileError(
        tf_path, _line_of(text, i), f"column {column}: expected {what}, got '{values[i]}'"
    )


def _column_color(tf_path: str, text: str, values: list[str]) -> Any:
    names = np.char.lower(np.char.strip(np.array(values, dtype=str)))
    codes = np.full(len(values), 255, dtype=np.uint8)
    for code, nm in enumerate(COLOR_NAMES):
        codes[(names == nm) | (names == nm[0]) | (names == str(code))] = code
    bad = codes == 255
    if bad.any():
        i = int(np.argmax(bad))
        raise TraceFileError(
            tf_path,
            _line_of(text, i),
            f"column color: expected green, yellow, red or 0, 1, 2, got '{values[i]}'",
        )
    return codes


def _ipv4(value: str) -> str:
    """``a.b.c.d`` as its 32-bit integer in decimal; anything else unchanged
    (the integer check then reports it)."""
    parts = value.strip().split(".")
    if len(parts) == 4 and all(p.isdigit() and int(p) <= 255 for p in parts):
        return str(int.from_bytes(bytes(int(p) for p in parts), "big"))
    return value


def header_columns(tf: TraceFile) -> dict[str, Any]:
    """The optional header columns ``tf`` has (``HEADER_COLUMNS``), as
    contiguous arrays of their dtypes; a bad value is a ``TraceFileError``
    naming its line. The ``color`` column is added when present."""
    names = [h.lower() for h in tf.header]
    out: dict[str, Any] = {}
    for name, (dtype, maximum, what) in HEADER_COLUMNS.items():
        if name not in names:
            continue
        j = names.index(name)
        values = [r[j] for r in tf.rows]
        if name in ("src", "dst"):
            values = [_ipv4(v) for v in values]
        elif name == "proto":
            values = [_PROTOCOLS.get(v.strip().lower(), v) for v in values]
        a = _column_uint(tf.path, tf._text, values, name, maximum, what)
        out[name] = np.ascontiguousarray(a.astype(dtype))
    if tf.colors is not None:
        out["color"] = tf.colors
    return out


def read_trace(path: str) -> TraceFile:
    """Reads and validates a trace CSV (see the module doc), or a pcap/pcapng
    capture (also .xz): its frames' times and lengths on the wire."""
    # '-' is standard input, as Unix filters read it.
    data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    if data[:4] in CAPTURE_MAGICS or data[:6] == b"\xfd7zXZ\x00":
        from qoslab.analyze import capture_trace_file

        return capture_trace_file(path, data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise TraceFileError(path, line, "not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        rows = list(reader)
    except csv.Error as e:
        raise TraceFileError(path, reader.line_num, f"malformed CSV: {e}") from None
    lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    blank = lens == 0
    if blank.any():  # blank lines are skipped (here and in _line_of alike)
        rows = [r for r in rows if r]
        lens = lens[~blank]
    if not rows:
        raise TraceFileError(path, 1, f"empty file; expected {HEADER_HINT}")
    header, rows, lens = rows[0], rows[1:], lens[1:]
    header_line = _line_of(text, -1)
    names = [h.strip().lower() for h in header]
    for req in REQUIRED:
        if req not in names:
            raise TraceFileError(
                path, header_line, f"missing column '{req}'; expected {HEADER_HINT}"
            )
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TraceFileError(path, header_line, f"column '{dup[0]}' appears twice in the header")
    ncol = len(header)
    bad = lens != ncol
    if bad.any():
        i = int(np.argmax(bad))
        raise TraceFileError(
            path,
            _line_of(text, i),
            f"expected {ncol} fields ({','.join(header)}), got {lens[i]}",
        )

    def col(name: str) -> list[str]:
        j = names.index(name)
        return [r[j] for r in rows]

    times = _column_uint(
        path,
        text,
        col("time_ns"),
        "time_ns",
        TIME_HORIZON_NS - 1,
        "a non-negative integer (ns) below 2^62, qoslab's time horizon (about 146 years;"
        " re-base the times to the first packet)",
    )
    sizes = _column_uint(
        path,
        text,
        col("size_bytes"),
        "size_bytes",
        MAX_PACKET_BYTES,
        f"a packet size in bytes, 0 to {MAX_PACKET_BYTES}",
    )
    colors = _column_color(path, text, col("color")) if "color" in names else None
    return TraceFile(
        path=path,
        header=[h.strip() for h in header],
        rows=rows,
        times_ns=times.astype(np.uint64),
        sizes=sizes.astype(np.uint32),
        colors=colors,
        _text=text,
    )


def replacing(path: str | os.PathLike[str], binary: bool = False) -> Any:
    """``with replacing(path) as f: ...``: see :func:`qoslab.outputs.replacing`."""
    return outputs.replacing(path, binary)


def write_atomic(path: str | os.PathLike[str], write: Callable[[TextIO], object]) -> None:
    """Writes ``path`` with ``write(f)`` atomically (see :func:`replacing`)."""
    with replacing(path) as f:
        write(f)


def write_csv(path: str, header: Sequence[str], rows: Any) -> None:
    """Writes a CSV (``\\n`` line ends, minimal quoting) atomically."""

    def write(f: TextIO) -> None:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)

    write_atomic(path, write)
