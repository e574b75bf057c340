"""A sweep's results on disk: a Parquet dataset in three tables.

``DIR/points/part-*.parquet`` (one row per point x seed), ``DIR/flows/…``
(one row per flow of each run) and ``DIR/scenarios/…`` (the resolved
scenario of each run, to re-run one with ``qoslab run``), plus
``DIR/sweep.json`` (what was asked, run after run).

Rows are written in batched parts, never one file per run (10,000 one-row
files cost tens of seconds to write and seconds per query; a few large parts
cost milliseconds). Each part is written to a temporary name and renamed
into place; the ``points`` part of a batch is renamed last, so it marks the
batch complete: a ``flows`` or ``scenarios`` part without its ``points``
twin (a crash between the renames) is removed when the store is opened.

Resume and dedup: the store knows the hashes it holds (``hash`` column of
``points``); a rerun skips them, and a batch never writes a hash twice.
"""

from __future__ import annotations

import errno
import json
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qoslab.sweep.spec import Axis
from qoslab.sweep.worker import Outcome

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["TABLES", "Store", "check_store_dir"]

TABLES = ("points", "flows", "scenarios")
MANIFEST = "sweep.json"


def check_store_dir(root: Path) -> None:
    """Refuses a path that is a file, or a non-empty directory that is not a
    sweep store (so a typo cannot scatter parts into someone's home)."""
    if root.exists():
        if not root.is_dir():
            raise FileExistsError(errno.EEXIST, "exists and is not a directory", str(root))
        if any(root.iterdir()) and not (root / MANIFEST).exists():
            raise FileExistsError(
                errno.EEXIST,
                "is a non-empty directory that is not a qoslab sweep; choose another --out",
                str(root),
            )


def _parts(d: Path) -> list[Path]:
    return sorted(d.glob("part-*.parquet")) if d.is_dir() else []


def part_ids(root: Path, table: str) -> set[str]:
    return {p.stem for p in _parts(root / table)}


def has_results(root: Path) -> bool:
    return bool(_parts(root / "points"))


class Store:
    """Appends outcomes to a sweep directory in batches (see the module doc)."""

    def __init__(self, root: Path, axes: list[Axis], batch: int = 1000, every_s: float = 10.0):
        check_store_dir(root)
        self.root = root
        self.axes = axes
        self.batch = max(1, batch)
        self.every_s = every_s
        for t in TABLES:
            (root / t).mkdir(parents=True, exist_ok=True)
        self._clean()
        self.done: set[str] = self._hashes()
        self._rows: list[dict[str, Any]] = []
        self._flows: list[dict[str, Any]] = []
        self._texts: list[dict[str, Any]] = []
        self._last = time.monotonic()
        self.written = 0

    def _clean(self) -> None:
        """Removes temporaries and the parts of batches that never completed."""
        for t in TABLES:
            for p in (self.root / t).glob(".tmp-*"):
                p.unlink(missing_ok=True)
        complete = part_ids(self.root, "points")
        for t in ("flows", "scenarios"):
            for p in _parts(self.root / t):
                if p.stem not in complete:
                    p.unlink(missing_ok=True)

    def _hashes(self) -> set[str]:
        import pyarrow.parquet as pq  # pyarrow on use: `qoslab sweep --help` stays fast

        done: set[str] = set()
        for p in _parts(self.root / "points"):
            done.update(pq.read_table(p, columns=["hash"]).column("hash").to_pylist())
        return done

    def note(self, entry: dict[str, Any]) -> None:
        """Appends ``entry`` to ``sweep.json`` (atomically)."""
        path = self.root / MANIFEST
        runs: list[Any] = []
        if path.exists():
            try:
                runs = json.loads(path.read_text(encoding="utf-8")).get("sweeps", [])
            except (ValueError, AttributeError):
                runs = []
        runs.append(entry)
        tmp = path.with_name(f".tmp-{uuid.uuid4().hex}.json")
        tmp.write_text(json.dumps({"sweeps": runs}, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def add(self, o: Outcome, text: str, mode: str) -> None:
        """Queues a successful outcome; writes a batch when it is full or old."""
        if o.row is None or o.hash in self.done:
            return
        self.done.add(o.hash)
        row: dict[str, Any] = {"hash": o.hash, "seed": o.seed, "mode": mode}
        for a in self.axes:
            v = o.point.get(a.key)
            row[a.key] = v
            if a.column:
                row[a.column] = a.base(v)
        row.update(o.row)
        self._rows.append(row)
        self._flows.extend({"hash": o.hash, "seed": o.seed, **f} for f in o.flows)
        self._texts.append({"hash": o.hash, "seed": o.seed, "scenario_toml": text})
        if len(self._rows) >= self.batch or time.monotonic() - self._last >= self.every_s:
            self.flush()

    def _table(self, rows: list[dict[str, Any]]) -> pa.Table:
        # An axis of mixed value types (1, 2.5, "auto") is stored as text.
        for a in self.axes:
            kinds = {type(r.get(a.key)) for r in rows if r.get(a.key) is not None}
            if len(kinds) > 1 and kinds != {int, float}:
                for r in rows:
                    if a.key in r and r[a.key] is not None:
                        r[a.key] = str(r[a.key])
        import pyarrow as pa

        return pa.Table.from_pylist(rows)

    def flush(self) -> None:
        """Writes the queued rows as one part per table (points last)."""
        self._last = time.monotonic()
        if not self._rows:
            return
        import pyarrow.parquet as pq

        part = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        staged: list[tuple[Path, Path]] = []
        try:
            for table, rows in (
                ("flows", self._flows),
                ("scenarios", self._texts),
                ("points", self._rows),
            ):
                d = self.root / table
                tmp = d / f".tmp-{part}.parquet"
                if rows:
                    pq.write_table(self._table(rows), tmp, compression="zstd")
                    staged.append((tmp, d / f"{part}.parquet"))
            for tmp, final in staged:
                os.replace(tmp, final)
        finally:
            for tmp, _ in staged:
                tmp.unlink(missing_ok=True)
        self.written += len(self._rows)
        self._rows, self._flows, self._texts = [], [], []
