"""SQL over a sweep directory with DuckDB (embedded, reads the Parquet parts
in place): views ``points``, ``flows`` and ``scenarios``.

The views keep one row per run hash (per run and flow for ``flows``) even if
two parts hold the same run (two sweeps writing one directory at once): the
writer never writes a hash it already holds, the views make sure of it.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from qoslab.sweep.store import TABLES, has_results

__all__ = ["connect", "query", "write_frame"]

_KEYS = {"points": "hash", "flows": "hash, flow", "scenarios": "hash"}


def connect(root: Path) -> Any:
    """A DuckDB connection with the sweep's tables as views."""
    import duckdb

    if not has_results(root):
        raise ValueError(f"{root}: no sweep results here (expected {root}/points/part-*.parquet)")
    con = duckdb.connect(":memory:")
    for t in TABLES:
        files = sorted((root / t).glob("part-*.parquet"))
        if not files:
            continue
        glob = str(root / t / "part-*.parquet").replace("'", "''")
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{glob}', union_by_name = true) "
            f"QUALIFY row_number() OVER (PARTITION BY {_KEYS[t]}) = 1"
        )
    return con


def query(root: Path, sql: str) -> pd.DataFrame:
    """Runs ``sql`` against the sweep in ``root``; errors become ``ValueError``."""
    import duckdb

    con = connect(root)
    try:
        return con.execute(sql).fetchdf()
    except duckdb.Error as e:
        raise ValueError(f"--query: {' '.join(str(e).split())}") from None
    finally:
        con.close()


def _plain(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


def write_frame(df: pd.DataFrame, as_json: bool, out: TextIO | None = None) -> None:
    """CSV (header + rows), or JSON: a list of objects (on stdout by default)."""
    out = out or sys.stdout
    if as_json:
        rows = [{k: _plain(v) for k, v in r.items()} for r in df.to_dict(orient="records")]
        json.dump(rows, out, indent=2, default=str)
        out.write("\n")
    else:
        df.to_csv(out, index=False)
