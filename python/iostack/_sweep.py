"""`iostack.sweep`: every point of a parameter grid run independently, on a
local thread pool (the simulation runs without the GIL) or as Ray tasks, the
figures written to Parquet as one row per point, job and metric."""

from __future__ import annotations

import itertools
import os
from typing import Any, Iterable, Mapping, Sequence

# fio JSON figures a sweep keeps per job and direction (flattened as in
# `Result.summary()`).
METRICS: tuple[str, ...] = (
    "io_bytes",
    "bw",
    "iops",
    "runtime",
    "slat_ns.mean",
    "clat_ns.mean",
    "lat_ns.mean",
    "lat_ns.max",
)

_RUN_KEYS = ("job", "machine", "kernel", "sched", "seed", "until", "layout")


def points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """The grid's points, in the order of `itertools.product` over its keys."""
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


def _kwargs(base: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    kw: dict[str, Any] = dict(base)
    tun = dict(kw.pop("tunables", None) or {})
    for k, v in point.items():
        if k in _RUN_KEYS:
            kw[k] = v
        elif "/" in k:
            tun[k] = v
        else:
            kw[k] = v
    kw["tunables"] = tun
    kw["requests"] = False
    return kw


def run_point(base: Mapping[str, Any], index: int, point: Mapping[str, Any]):
    """Run one point; its rows as (point, job, metric, value) tuples."""
    from ._run import run

    r = run(**_kwargs(base, point))
    rows = []
    for job in r.report["jobs"]:
        for ddir in ("read", "write"):
            d = job.get(ddir)
            if not d or not d.get("total_ios"):
                continue
            for m in METRICS:
                v: Any = d
                for part in m.split("."):
                    v = v.get(part) if isinstance(v, dict) else None
                if v is not None:
                    rows.append((index, job["jobname"], f"{ddir}.{m}", float(v)))
    return rows


def _local(base, pts, workers):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futs = [pool.submit(run_point, base, i, p) for i, p in enumerate(pts)]
        return [f.result() for f in futs]


def _ray(base, pts, address):
    import ray

    if not ray.is_initialized():
        ray.init(address=address)
    task = ray.remote(run_point)
    refs = [task.remote(base, i, p) for i, p in enumerate(pts)]
    return ray.get(refs)


def _column(values: Iterable[Any]):
    import pyarrow as pa

    vals = list(values)
    if all(isinstance(v, bool) for v in vals):
        return pa.array(vals, pa.bool_())
    if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return pa.array(vals, pa.int64())
    return pa.array([str(v) for v in vals], pa.string())


def sweep(
    grid: Mapping[str, Sequence[Any]],
    base: Mapping[str, Any] | None = None,
    *,
    backend: str = "local",
    out: str | os.PathLike | None = None,
    workers: int | None = None,
    address: str | None = None,
):
    """Run `iostack.run(**base, **point)` for every point of `grid` (keys:
    `job`, `machine`, `kernel`, `sched`, `seed`, tunable names such as
    `iosched/cfq/slice_idle`, or their keywords) on `backend` "local" (a
    thread pool of `workers`, default one per CPU) or "ray" (Ray tasks;
    `ray.init(address=address)` unless Ray is already initialised). Returns a
    pyarrow Table with one row per point, job and metric: `point`, the grid's
    parameters, `job`, `metric`, `value`; written to the Parquet file `out`
    when given. The content does not depend on the backend or on the order
    the points finish in."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = dict(base or {})
    pts = points(grid)
    if backend == "local":
        results = _local(base, pts, workers)
    elif backend == "ray":
        results = _ray(base, pts, address)
    else:
        raise ValueError(f"sweep: unknown backend '{backend}' (local, ray)")
    rows = [row for per_point in results for row in per_point]
    cols: dict[str, Any] = {"point": pa.array([r[0] for r in rows], pa.int64())}
    for k in grid:
        cols[k] = _column(pts[r[0]][k] for r in rows)
    cols["job"] = pa.array([r[1] for r in rows], pa.string())
    cols["metric"] = pa.array([r[2] for r in rows], pa.string())
    cols["value"] = pa.array([r[3] for r in rows], pa.float64())
    table = pa.table(cols)
    if out is not None:
        pq.write_table(table, os.fspath(out))
    return table
