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

:func:`open_trace` streams a CSV in chunks of :data:`CHUNK_ROWS` rows (the
file is never held whole; an error's line is found by re-reading the file up
to it), which is how ``qoslab meter`` / ``qoslab shape`` run a trace of any
length in bounded memory; :func:`read_trace` reads a whole trace at once.
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from qoslab import outputs
from qoslab.api import COLOR_NAMES, MAX_PACKET_BYTES, TIME_HORIZON_NS
from qoslab.errors import QoslabError

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


class TraceFileError(QoslabError):
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


LineOf = Callable[[int], int]


def _column_uint(
    tf_path: str, line_of: LineOf, values: list[str], column: str, maximum: int, what: str
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
        tf_path, line_of(i), f"column {column}: expected {what}, got '{values[i]}'"
    )


#: Spellings of each colour code (after strip and lower-casing).
_COLOR_CODES = {
    spelling: code
    for code, name in enumerate(COLOR_NAMES)
    for spelling in (name, name[0], str(code))
}


def _column_color(tf_path: str, line_of: LineOf, values: list[str]) -> Any:
    # A dict look-up per value, not np.char.lower: NumPy runs that one as a
    # Python call per element and turns a Ctrl-C raised inside it into a
    # TypeError ("result array type does not match underlying function").
    get = _COLOR_CODES.get
    codes = np.fromiter(
        (get(v.strip().lower(), 255) for v in values), dtype=np.uint8, count=len(values)
    )
    bad = codes == 255
    if bad.any():
        i = int(np.argmax(bad))
        raise TraceFileError(
            tf_path,
            line_of(i),
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
    out = _header_columns(tf.path, tf.header, tf.rows, tf.line_of)
    if tf.colors is not None:
        out["color"] = tf.colors
    return out


def _header_columns(
    path: str, header: list[str], rows: list[list[str]], line_of: LineOf
) -> dict[str, Any]:
    names = [h.lower() for h in header]
    out: dict[str, Any] = {}
    for name, (dtype, maximum, what) in HEADER_COLUMNS.items():
        if name not in names:
            continue
        j = names.index(name)
        values = [r[j] for r in rows]
        if name in ("src", "dst"):
            values = [_ipv4(v) for v in values]
        elif name == "proto":
            values = [_PROTOCOLS.get(v.strip().lower(), v) for v in values]
        a = _column_uint(path, line_of, values, name, maximum, what)
        out[name] = np.ascontiguousarray(a.astype(dtype))
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
    names = _check_header(path, header, _line_of(text, -1))
    ncol = len(header)
    bad = lens != ncol
    if bad.any():
        i = int(np.argmax(bad))
        raise TraceFileError(
            path,
            _line_of(text, i),
            f"expected {ncol} fields ({','.join(header)}), got {lens[i]}",
        )

    times, sizes, colors = _numeric_columns(path, names, rows, lambda i: _line_of(text, i))
    return TraceFile(
        path=path,
        header=[h.strip() for h in header],
        rows=rows,
        times_ns=times,
        sizes=sizes,
        colors=colors,
        _text=text,
    )


_TIME_WHAT = (
    "a non-negative integer (ns) below 2^62, qoslab's time horizon (about 146 years;"
    " re-base the times to the first packet)"
)


def _numeric_columns(
    path: str, names: list[str], rows: list[list[str]], line_of: LineOf
) -> tuple[Any, Any, Any]:
    """(times uint64, sizes uint32, colours uint8 or None) of ``rows``."""

    def col(name: str) -> list[str]:
        j = names.index(name)
        return [r[j] for r in rows]

    times = _column_uint(path, line_of, col("time_ns"), "time_ns", TIME_HORIZON_NS - 1, _TIME_WHAT)
    sizes = _column_uint(
        path,
        line_of,
        col("size_bytes"),
        "size_bytes",
        MAX_PACKET_BYTES,
        f"a packet size in bytes, 0 to {MAX_PACKET_BYTES}",
    )
    colors = _column_color(path, line_of, col("color")) if "color" in names else None
    return times.astype(np.uint64), sizes.astype(np.uint32), colors


def _check_header(path: str, header: list[str], header_line: int) -> list[str]:
    """The lower-cased column names of ``header``, or a ``TraceFileError``."""
    names = [h.strip().lower() for h in header]
    for req in REQUIRED:
        if req not in names:
            raise TraceFileError(
                path, header_line, f"missing column '{req}'; expected {HEADER_HINT}"
            )
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TraceFileError(path, header_line, f"column '{dup[0]}' appears twice in the header")
    return names


#: Rows per chunk of :func:`open_trace`: about 10 MB of Python strings for a
#: two-column trace, and a few ms of work for any conditioner.
CHUNK_ROWS = 1 << 16


@dataclass
class Chunk:
    """Consecutive packets of a trace: ``start`` is the first one's 0-based
    index in the whole trace; ``rows`` are the CSV fields as read."""

    start: int
    rows: list[list[str]]
    times_ns: Any
    sizes: Any
    colors: Any | None


class TraceStream:
    """A trace CSV read in chunks (``with open_trace(path) as ts: for chunk
    in ts.chunks(): ...``); ``header`` and ``names`` are known on opening.
    Errors are ``TraceFileError``s naming the line, found by re-reading the
    file up to it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._f: TextIO = open(path, encoding="utf-8-sig", newline="")
        self._reader = csv.reader(self._f, strict=True)
        self._rows = filter(None, self._reader)  # blank lines are skipped
        try:
            header = next(self._guard(self._rows), None)
        except BaseException:
            self.close()
            raise
        if header is None:
            self.close()
            raise TraceFileError(path, 1, f"empty file; expected {HEADER_HINT}")
        self.header = [h.strip() for h in header]
        self._ncol = len(header)
        try:
            self.names = _check_header(path, header, self._reader.line_num)
        except TraceFileError:
            self.close()
            raise

    def __enter__(self) -> TraceStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._f.close()

    def _guard(self, rows: Iterator[list[str]]) -> Iterator[list[str]]:
        """``rows`` with decoding and CSV errors as ``TraceFileError``s."""
        try:
            yield from rows
        except UnicodeDecodeError:
            raise TraceFileError(self.path, _bad_utf8_line(self.path), "not UTF-8 text") from None
        except csv.Error as e:
            raise TraceFileError(self.path, self._reader.line_num, f"malformed CSV: {e}") from None

    def chunks(self, rows: int | None = None) -> Iterator[Chunk]:
        """The packets in chunks of ``rows`` (default :data:`CHUNK_ROWS`),
        validated and converted."""
        rows = rows or CHUNK_ROWS
        it = self._guard(self._rows)
        start = 0
        while batch := list(itertools.islice(it, rows)):
            yield self._chunk(start, batch)
            start += len(batch)

    def _chunk(self, start: int, rows: list[list[str]]) -> Chunk:
        def line_of(i: int) -> int:
            return self.line_of(start + i)

        lens = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        bad = lens != self._ncol
        if bad.any():
            i = int(np.argmax(bad))
            raise TraceFileError(
                self.path,
                line_of(i),
                f"expected {self._ncol} fields ({','.join(self.header)}), got {lens[i]}",
            )
        times, sizes, colors = _numeric_columns(self.path, self.names, rows, line_of)
        return Chunk(start, rows, times, sizes, colors)

    def header_columns(self, chunk: Chunk) -> dict[str, Any]:
        """:func:`header_columns` of one chunk."""

        def line_of(i: int) -> int:
            return self.line_of(chunk.start + i)

        out = _header_columns(self.path, self.header, chunk.rows, line_of)
        if chunk.colors is not None:
            out["color"] = chunk.colors
        return out

    def line_of(self, index: int) -> int:
        """The 1-based line of packet ``index`` (0-based; -1 the header),
        found by reading the file again up to it (error paths only)."""
        with open(self.path, encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f, strict=True)
            for k, _ in enumerate(filter(None, reader)):
                if k == index + 1:
                    return reader.line_num
            return reader.line_num

    def error(self, index: int, message: str) -> TraceFileError:
        return TraceFileError(self.path, self.line_of(index), message)


def _bad_utf8_line(path: str) -> int:
    """The line of the first byte of ``path`` that is not UTF-8, reading
    1 MB at a time."""
    dec = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            carry = dec.getstate()[0]  # an incomplete character from the last block
            try:
                dec.decode(block)
            except UnicodeDecodeError as e:
                return line + block[: max(0, e.start - len(carry))].count(b"\n")
            line += block.count(b"\n")
        try:
            dec.decode(b"", final=True)
        except UnicodeDecodeError:
            pass
    return line


def is_capture(path: str) -> bool:
    """Whether ``path`` starts like a pcap / pcapng capture (or xz)."""
    with open(path, "rb") as f:
        head = f.read(6)
    return head[:4] in CAPTURE_MAGICS or head[:6] == b"\xfd7zXZ\x00"


class LoadedTrace(TraceStream):
    """A trace read whole (a capture: see :func:`read_trace`) behind the
    interface of :class:`TraceStream`."""

    def __init__(self, tf: TraceFile) -> None:
        self.path, self.tf = tf.path, tf
        self.header = tf.header
        self.names = [h.lower() for h in tf.header]

    def close(self) -> None:
        pass

    def chunks(self, rows: int | None = None) -> Iterator[Chunk]:
        tf = self.tf
        rows = rows or CHUNK_ROWS
        # A capture's columns come as its reader made them (uint64 sizes).
        times = np.ascontiguousarray(tf.times_ns, dtype=np.uint64)
        sizes = np.ascontiguousarray(tf.sizes, dtype=np.uint32)
        colors = None if tf.colors is None else np.ascontiguousarray(tf.colors, dtype=np.uint8)
        for a in range(0, len(tf.rows), rows):
            b = a + rows
            c = None if colors is None else colors[a:b]
            yield Chunk(a, tf.rows[a:b], times[a:b], sizes[a:b], c)

    def line_of(self, index: int) -> int:
        return self.tf.line_of(index)


def open_trace(path: str) -> TraceStream:
    """Opens a trace CSV for reading in chunks (see :class:`TraceStream`);
    a pcap / pcapng capture, or standard input (``-``, which cannot be read
    twice), is read whole (:func:`read_trace`)."""
    if path == "-" or is_capture(path):
        return LoadedTrace(read_trace(path))
    return TraceStream(path)


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
