"""`iostack.sweep`: every point of a parameter grid run independently, on a
local thread pool (the simulation runs without the GIL) or as Ray tasks, the
figures written to Parquet as one row per point, job and metric. The figures
kept of each run are those `iostack sweep GRID.toml` keeps (the same Rust
code), and `sweep_file` runs a grid file as that command does."""

from __future__ import annotations

import itertools
import json
import os
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import _iostack

# fio JSON figures a sweep keeps per job and direction, as `read.bw`,
# `write.clat_ns.mean` (the command line's list).
METRICS: tuple[str, ...] = tuple(_iostack.SWEEP_METRICS)

_RUN_KEYS = ("job", "machine", "kernel", "sched", "seed", "until", "layout")


def points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """The grid's points, in the order of `itertools.product` over its keys."""
    keys = list(grid)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))]


def _kwargs(base: Mapping[str, Any], point: Mapping[str, Any], requests: bool) -> dict[str, Any]:
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
    kw["requests"] = requests
    return kw


def run_point(base: Mapping[str, Any], index: int, point: Mapping[str, Any], requests=False):
    """Run one point; its rows as (point, job, metric, value) tuples, and its
    request table (a pyarrow Table with a `point` column) when asked."""
    from ._run import run

    r = run(**_kwargs(base, point, requests))
    rows = [(index, j, m, v) for j, m, v in _iostack.sweep_figures(r.report_json())]
    return rows, (_with_point(r.requests_arrow(), index) if requests else None)


def _with_point(table, index: int):
    import pyarrow as pa

    return table.add_column(0, "point", pa.array([index] * table.num_rows, pa.int64()))


def run_inputs(index: int, inputs: tuple):
    """Run one point of a grid file (`_iostack.sweep_grid`'s inputs)."""
    jobs, machine, kernel, sched, seed, sets, until, layouts = inputs
    out = _iostack.run_fio(jobs, machine=machine, kernel=kernel, sched=sched, seed=seed,
                           sets=sets, until=until, layouts=layouts, requests=False)
    return [(index, j, m, v) for j, m, v in _iostack.sweep_figures(out.json)], None


def _bar(total: int, progress: bool):
    """A tqdm bar when tqdm is installed and asked for, else nothing."""
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="point", desc="sweep")


def _local(fn: Callable, args: list, workers, bar):
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futs = {pool.submit(fn, *a): i for i, a in enumerate(args)}
        results: list = [None] * len(args)
        for f in as_completed(futs):
            results[futs[f]] = f.result()
            if bar is not None:
                bar.update(1)
        return results


def _ray(fn: Callable, args: list, address, bar):
    import ray

    if not ray.is_initialized():
        ray.init(address=address)
    task = ray.remote(fn)
    refs = [task.remote(*a) for a in args]
    index = {r: i for i, r in enumerate(refs)}
    results: list = [None] * len(refs)
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for r in ready:
            results[index[r]] = ray.get(r)
            if bar is not None:
                bar.update(1)
    return results


def _column(values: Iterable[Any]):
    import pyarrow as pa

    vals = list(values)
    if all(isinstance(v, bool) for v in vals):
        return pa.array(vals, pa.bool_())
    if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return pa.array(vals, pa.int64())
    return pa.array([str(v) for v in vals], pa.string())


def _table(keys: Sequence[str], pts: list[dict], rows: list):
    import pyarrow as pa

    cols: dict[str, Any] = {"point": pa.array([r[0] for r in rows], pa.int64())}
    for k in keys:
        cols[k] = _column(pts[r[0]][k] for r in rows)
    cols["job"] = pa.array([r[1] for r in rows], pa.string())
    cols["metric"] = pa.array([r[2] for r in rows], pa.string())
    cols["value"] = pa.array([r[3] for r in rows], pa.float64())
    return pa.table(cols)


def _execute(fn, args, backend, workers, address, progress):
    bar = _bar(len(args), progress)
    try:
        if backend == "local":
            return _local(fn, args, workers, bar)
        if backend == "ray":
            return _ray(fn, args, address, bar)
        raise ValueError(f"sweep: unknown backend '{backend}' (local, ray)")
    finally:
        if bar is not None:
            bar.close()


def _to_duckdb(path, tables: Mapping[str, Any]) -> None:
    import duckdb

    con = duckdb.connect(os.fspath(path))
    try:
        for name, t in tables.items():
            if t is None:
                continue
            con.register("_t", t)
            con.execute(f'create or replace table "{name}" as select * from _t')
            con.unregister("_t")
    finally:
        con.close()


def sweep(
    grid: Mapping[str, Sequence[Any]],
    base: Mapping[str, Any] | None = None,
    *,
    backend: str = "local",
    out: str | os.PathLike | None = None,
    workers: int | None = None,
    address: str | None = None,
    seeds: Sequence[int] | None = None,
    requests_out: str | os.PathLike | None = None,
    duckdb: str | os.PathLike | None = None,
    progress: bool = False,
):
    """Run `iostack.run(**base, **point)` for every point of `grid` (keys:
    `job`, `machine`, `kernel`, `sched`, `seed`, tunable names such as
    `iosched/cfq/slice_idle`, or their keywords) on `backend` "local" (a
    thread pool of `workers`, default one per CPU) or "ray" (Ray tasks;
    `ray.init(address=address)` unless Ray is already initialised). `seeds`
    adds a `seed` key. Returns a pyarrow Table with one row per point, job
    and metric: `point`, the grid's parameters, `job`, `metric`, `value`;
    written to the Parquet file `out` when given. With `requests_out`, every
    point's request table (`Result.requests()`'s columns after `point`) goes
    to that Parquet file; with `duckdb`, both tables go into that DuckDB
    database file as tables `jobs` and `requests`. `progress=True` shows a
    tqdm bar. The content does not depend on the backend or on the order the
    points finish in."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    grid = dict(grid)
    if seeds is not None:
        grid["seed"] = list(seeds)
    base = dict(base or {})
    pts = points(grid)
    want_req = requests_out is not None or duckdb is not None
    args = [(base, i, p, want_req) for i, p in enumerate(pts)]
    results = _execute(run_point, args, backend, workers, address, progress)
    table = _table(list(grid), pts, [row for rows, _ in results for row in rows])
    req = pa.concat_tables([r for _, r in results]) if want_req else None
    if out is not None:
        pq.write_table(table, os.fspath(out))
    if requests_out is not None:
        pq.write_table(req, os.fspath(requests_out))
    if duckdb is not None:
        _to_duckdb(duckdb, {"jobs": table, "requests": req})
    return table


def sweep_file(
    path: str | os.PathLike,
    out: str | os.PathLike | None = None,
    *,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    duckdb: str | os.PathLike | None = None,
    progress: bool = False,
):
    """Run the grid file `path` as `iostack sweep GRID.toml --out DIR` does
    (the same parser and figures; docs/sweep.md); the table is written to
    `DIR/jobs.parquet` when `out` is given, and into the DuckDB database file
    `duckdb` as table `jobs`. Ray runs it with `backend="ray"`."""
    import pyarrow.parquet as pq

    keys, inputs = _iostack.sweep_grid(os.fspath(path))
    grid = {k: json.loads(v) for k, v in keys}
    pts = points(grid)
    results = _execute(run_inputs, list(enumerate(inputs)), backend, workers, address, progress)
    table = _table(list(grid), pts, [row for rows, _ in results for row in rows])
    if out is not None:
        os.makedirs(out, exist_ok=True)
        pq.write_table(table, os.path.join(out, "jobs.parquet"))
    if duckdb is not None:
        _to_duckdb(duckdb, {"jobs": table})
    return table
