"""``qoslab sweep``: run a scenario over a grid (or a Latin hypercube) of key
values and seeds into a Parquet store; query it with SQL; draw it."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from qoslab import __version__
from qoslab.sweep import execute
from qoslab.sweep.resolve import Run, resolve
from qoslab.sweep.spec import SweepSpec, is_sweep_file, parse_grid, parse_seeds, read_sweep_file
from qoslab.sweep.store import Store, check_store_dir

__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    target = Path(args.target)
    if args.report is not None:
        return _report(args, target)
    if args.query is not None or args.plot or args.heatmap:
        return _inspect(args, target)
    return _sweep(args, target)


def _report(args: argparse.Namespace, root: Path) -> int:
    from qoslab import outputs
    from qoslab.sweep import report

    if not root.is_dir():
        raise ValueError(f"{root}: not a sweep results directory")
    out = Path(args.report) if args.report else root / "report.html"
    outputs.check_file(out, "--report")
    path = report.write_report(root, out)
    print(json.dumps({"report": str(path)}) if args.json else f"wrote {path}")
    return 0


def _inspect(args: argparse.Namespace, root: Path) -> int:
    from qoslab.sweep import figures, query

    if not root.is_dir():
        raise ValueError(f"{root}: not a sweep results directory")
    if args.query is not None:
        query.write_frame(query.query(root, args.query), args.json)
        return 0
    metric = args.plot or args.heatmap
    if not args.x:
        raise ValueError("--plot/--heatmap need --x KEY")
    df = query.query(root, "SELECT * FROM points")
    out = Path(args.figure) if args.figure else root / f"{metric}.png"
    if args.heatmap:
        if not args.y:
            raise ValueError("--heatmap needs --y KEY")
        figures.heatmap(df, metric, args.x, args.y, out)
    else:
        figures.line_plot(df, metric, args.x, args.by, out)
    if args.json:
        print(json.dumps({"figure": str(out)}))
    else:
        print(f"wrote {out}")
    return 0


def _spec(args: argparse.Namespace, target: Path) -> tuple[Path, SweepSpec, str | None]:
    if not target.exists():
        raise FileNotFoundError(2, "no such file", str(target))
    if target.is_dir():
        raise ValueError(
            f"{target} is a directory: give a scenario or sweep file to run, "
            "or --query/--plot/--heatmap to read a results directory"
        )
    out = args.out
    if is_sweep_file(target):
        scenario, spec, extra = read_sweep_file(target)
        if args.grid:
            spec.axes += parse_grid(args.grid)
        out = out or extra.get("out")
    else:
        scenario, spec = target, SweepSpec(parse_grid(args.grid))
    if args.seeds is not None:
        spec.seeds = parse_seeds(args.seeds)
    if args.random:
        spec.random, spec.random_seed = args.random, args.random_seed
    if spec.random and not spec.axes:
        raise ValueError("--random needs --grid ranges to sample")
    return scenario, spec, out


def _sweep(args: argparse.Namespace, target: Path) -> int:
    scenario, spec, out = _spec(args, target)
    if not out and not args.dry_run:
        raise ValueError("--out DIR is required (where the results go)")
    if args.emulate and args.dask:
        raise ValueError("--emulate and --dask: choose one")
    t0 = time.monotonic()
    runs = resolve(scenario, spec)
    t_resolve = time.monotonic() - t0
    workers = args.workers or execute.default_workers()
    if args.dry_run:
        summary = {
            "runs": len(runs),
            "points": len(runs) // max(1, len(spec.seeds)),
            "seeds": spec.seeds,
            "validated_s": round(t_resolve, 3),
        }
        print(
            json.dumps(summary)
            if args.json
            else f"{len(runs)} runs, all valid ({t_resolve:.2f} s); nothing run (--dry-run)"
        )
        return 0
    root = Path(out)  # type: ignore[arg-type]
    check_store_dir(root)
    store = Store(root, spec.axes, batch=args.batch)
    todo = [r for r in runs if r.hash not in store.done]
    skipped = len(runs) - len(todo)
    texts = {r.hash: r.text for r in todo}
    mode = "emulate" if args.emulate else "simulate"
    if args.emulate:
        where = "emulate (one at a time)"
    elif args.dask:
        where = f"dask {args.dask}"
    else:
        where = f"{workers} local {args.executor}"
    store.note(
        {
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "qoslab": __version__,
            "scenario": str(scenario),
            "grid": {a.key: a.values for a in spec.axes},
            "random": spec.random,
            "random_seed": spec.random_seed,
            "seeds": spec.seeds,
            "runs": len(runs),
            "executor": where,
        }
    )
    progress = execute.Progress(len(todo), args.quiet or args.json)
    failures: list[tuple[Run | None, str]] = []
    ok = 0

    def sink(o: Any) -> None:
        nonlocal ok
        progress.update(o)
        if o.error is not None:
            failures.append((None, f"{_point(o.point)} seed {o.seed}: {o.error}"))
        else:
            ok += 1
            store.add(o, texts[o.hash], mode)

    t1 = time.monotonic()
    ready_s = 0.0  # a Dask cluster's start and shutdown are left out of runs/s
    dask_busy = 0.0
    interrupted = False
    try:
        if not todo:
            pass
        elif args.emulate:
            execute.run_emulate(todo, sink)
        elif args.dask:
            where, ready_s, dask_busy = execute.run_dask(todo, sink, args.dask, workers)
        else:
            execute.run_local(todo, sink, workers, args.executor)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()
        store.flush()
    wall = time.monotonic() - t1
    busy = dask_busy or wall
    summary = {
        "out": str(root),
        "runs": len(runs),
        "skipped_already_done": skipped,
        "ran": ok,
        "failed": len(failures),
        "interrupted": interrupted,
        "wall_s": round(wall, 3),
        "runs_per_s": round(ok / busy, 1) if busy > 0 and ok else 0.0,
        "cluster_ready_s": round(ready_s, 3),
        "executor": where,
        "failures": [m for _, m in failures[:20]],
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{ok} runs done, {skipped} already in {root}, {len(failures)} failed "
            f"in {wall:.1f} s ({summary['runs_per_s']} runs/s, {where}"
            + (f"; the cluster took {ready_s:.1f} s to start" if ready_s else "")
            + ")"
        )
        for _, m in failures[:5]:
            print(f"  failed: {m}", file=sys.stderr)
        if interrupted:
            left = len(todo) - ok - len(failures)
            print(
                f"interrupted: {ok} runs kept; rerun the same command to do the {left} left",
                file=sys.stderr,
            )
    if interrupted:
        raise KeyboardInterrupt
    return 1 if failures else 0


def _point(point: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items()) or "(scenario)"
