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


def _local(fn: Callable, args: list, workers, done: Callable):
    """Run `fn(*a)` for each of `args` on a thread pool, calling `done(i,
    result)` on this thread as each ends; an error stops the pool (points
    not started are cancelled; those finished were handed to `done`)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    pool = ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    try:
        futs = {pool.submit(fn, *a): i for i, a in enumerate(args)}
        for f in as_completed(futs):
            done(futs[f], f.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ray(fn: Callable, args: list, address, done: Callable):
    import ray

    if not ray.is_initialized():
        ray.init(address=address)
    task = ray.remote(fn)
    refs = [task.remote(*a) for a in args]
    index = {r: i for i, r in enumerate(refs)}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for r in ready:
                done(index[r], ray.get(r))
    finally:
        for r in pending:
            ray.cancel(r)


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


def _execute(fn, args, backend, workers, address, progress, finished=None):
    """Every `fn(*a)` of `args`, in order; `finished(i, result)` is called as
    each ends (on the calling thread)."""
    if backend not in ("local", "ray"):
        raise ValueError(f"sweep: unknown backend '{backend}' (local, ray)")
    bar = _bar(len(args), progress)
    results: list = [None] * len(args)

    def done(i, r):
        results[i] = r
        if finished is not None:
            finished(i, r)
        if bar is not None:
            bar.update(1)

    try:
        if args and backend == "local":
            _local(fn, args, workers, done)
        elif args:
            _ray(fn, args, address, done)
        return results
    finally:
        if bar is not None:
            bar.close()


class _Journal:
    """An output directory's `points.jsonl`, as `iostack sweep --out DIR` keeps
    it (the same Rust reader and line format): one line per finished point,
    its parameters and figures; a sweep started again with the same `out`
    skips the points it holds. With requests, each finished point's request
    table is kept beside it in `requests/` (a point without one is run again)."""

    def __init__(self, out, keys: Sequence[str], pts: list[dict], requests: bool):
        self.dir = os.fspath(out)
        os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, "points.jsonl")
        self.keys = [_point_key(keys, p) for p in pts]
        self.requests = requests
        if requests:
            os.makedirs(os.path.join(self.dir, "requests"), exist_ok=True)
        done = dict(_iostack.sweep_journal(self.path))
        self.done = {k: f for k, f in done.items() if k in self.keys and self._has_requests(k)}
        # Rewrite the journal with its whole lines of this grid's points only.
        with open(self.path, "w") as f:
            for k in self.keys:
                if k in self.done:
                    f.write(_iostack.sweep_journal_line(k, self.done[k]))
        self.file = open(self.path, "a")

    def _req_path(self, key: str) -> str:
        import hashlib

        name = hashlib.sha256(key.encode()).hexdigest()[:20]
        return os.path.join(self.dir, "requests", f"{name}.parquet")

    def _has_requests(self, key: str) -> bool:
        return not self.requests or os.path.exists(self._req_path(key))

    def todo(self) -> list[int]:
        return [i for i, k in enumerate(self.keys) if k not in self.done]

    def finished(self, i: int, figs: list, req) -> None:
        """Point `i` ended: its request table, then its journal line."""
        k = self.keys[i]
        if self.requests:
            _write_parquet(req, self._req_path(k))
        self.file.write(_iostack.sweep_journal_line(k, [(j, m, v) for j, m, v in figs]))
        self.file.flush()
        self.done[k] = figs

    def figures(self, i: int) -> list:
        return [(i, j, m, v) for j, m, v in self.done[self.keys[i]]]

    def request_table(self, i: int):
        import pyarrow.parquet as pq

        return _with_point(pq.read_table(self._req_path(self.keys[i])), i)

    def close(self) -> None:
        self.file.close()


def _point_key(keys: Sequence[str], point: Mapping[str, Any]) -> str:
    """A point's key in the journal: its parameters as compact JSON, as the
    command line writes it."""
    return json.dumps({k: point[k] for k in keys}, separators=(",", ":"),
                      ensure_ascii=False, default=str)


def _write_parquet(table, path) -> None:
    """Write beside and rename, so an interrupted write leaves no half file."""
    import pyarrow.parquet as pq

    path = os.fspath(path)
    pq.write_table(table, path + ".part")
    os.replace(path + ".part", path)


def _is_dir_out(out) -> bool:
    return out is not None and not os.fspath(out).endswith(".parquet")


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


def _run_all(fn, pts, keys, make_args, journal, want_req, exec_kw):
    """Run the points (those the journal lacks, when there is one); every
    point's figure rows and request table, in point order."""
    todo = journal.todo() if journal is not None else list(range(len(pts)))

    def finished(j, res):
        if journal is not None:
            rows, req = res
            figs = [(job, m, v) for _, job, m, v in rows]
            journal.finished(todo[j], figs, req.drop_columns(["point"]) if want_req else None)

    try:
        results = _execute(fn, [make_args(i) for i in todo], finished=finished, **exec_kw)
    finally:
        if journal is not None:
            journal.close()
    if journal is None:
        return [r for rows, _ in results for r in rows], [r for _, r in results]
    rows = [r for i in range(len(pts)) for r in journal.figures(i)]
    reqs = [journal.request_table(i) for i in range(len(pts))] if want_req else []
    return rows, reqs


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
    and metric: `point`, the grid's parameters, `job`, `metric`, `value`.
    `out` is a directory, as `iostack sweep --out DIR` writes it: the table
    goes to `DIR/jobs.parquet` and each finished point to the journal
    `DIR/points.jsonl`, so that a sweep interrupted and started again with the
    same `out` runs only the points the journal lacks (and gives the same
    table); an `out` ending in `.parquet` is that file alone, without a
    journal. With `requests_out`, every point's request table
    (`Result.requests()`'s columns after `point`) goes to that Parquet file;
    with `duckdb`, both tables go into that DuckDB database file as tables
    `jobs` and `requests`. `progress=True` shows a tqdm bar. The content does
    not depend on the backend or on the order the points finish in."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    grid = dict(grid)
    if seeds is not None:
        grid["seed"] = list(seeds)
    base = dict(base or {})
    pts, keys = points(grid), list(grid)
    want_req = requests_out is not None or duckdb is not None
    journal = _Journal(out, keys, pts, want_req) if _is_dir_out(out) else None
    rows, reqs = _run_all(
        run_point, pts, keys, lambda i: (base, i, pts[i], want_req), journal, want_req,
        dict(backend=backend, workers=workers, address=address, progress=progress),
    )
    table = _table(keys, pts, rows)
    req = pa.concat_tables(reqs) if want_req else None
    if journal is not None:
        _write_parquet(table, os.path.join(journal.dir, "jobs.parquet"))
    elif out is not None:
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
    (the same parser, figures and journal; docs/sweep.md): with `out`, the
    table is written to `DIR/jobs.parquet` and the finished points to
    `DIR/points.jsonl`, and points already there are not run again (a
    directory the command line started resumes here, and the other way
    round). The table goes into the DuckDB database file `duckdb` as table
    `jobs`. Ray runs it with `backend="ray"`."""
    keys_json, inputs = _iostack.sweep_grid(os.fspath(path))
    grid = {k: json.loads(v) for k, v in keys_json}
    pts, keys = points(grid), list(grid)
    journal = _Journal(out, keys, pts, False) if out is not None else None
    rows, _ = _run_all(
        run_inputs, pts, keys, lambda i: (i, inputs[i]), journal, False,
        dict(backend=backend, workers=workers, address=address, progress=progress),
    )
    table = _table(keys, pts, rows)
    if journal is not None:
        _write_parquet(table, os.path.join(journal.dir, "jobs.parquet"))
    if duckdb is not None:
        _to_duckdb(duckdb, {"jobs": table})
    return table
