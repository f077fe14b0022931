"""A 64-point sweep on the local backend and on a local Ray cluster: the same
Parquet content; DuckDB reads it."""

import os
import sys

import duckdb
import pyarrow.parquet as pq
import pytest

import iostack
from conftest import cli

JOB = """[j]
ioengine=libaio
direct=1
filename=/dev/nullb0
size=8m
rw=randread
bs=4k
iodepth=4
io_size=256k
"""

GRID = {
    "kernel": ["2.6.32", "2.6.36"],
    "sched": ["noop", "deadline"],
    "queue/nr_requests": [4, 8, 16, 32],
    "seed": [1, 2, 3, 4],
}


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "local.parquet"
    iostack.sweep(GRID, {"job": JOB, "machine": "null"}, backend="local", out=out)
    return out


def test_local_sweep_in_duckdb(local):
    con = duckdb.connect()
    n, points = con.execute(
        f"select count(*), count(distinct point) from '{local}'"
    ).fetchone()
    assert points == 64
    assert n == 64 * len(iostack._sweep.METRICS)  # libaio: slat too
    rows = con.execute(
        f"""select sched, "queue/nr_requests", count(*), avg(value)
            from '{local}' where metric = 'read.iops'
            group by all order by all"""
    ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (s, q, 8) for s in ("deadline", "noop") for q in (4, 8, 16, 32)
    ]
    assert all(r[3] > 0 for r in rows)
    # Every point moved the same bytes.
    io = con.execute(
        f"select distinct value from '{local}' where metric = 'read.io_bytes'"
    ).fetchall()
    assert io == [(256 * 1024,)]


GRID_TOML = """# the grid of GRID as a grid file
job = "j.fio"
machine = "null"

[grid]
kernel = ["2.6.32", "2.6.36"]
sched = ["noop", "deadline"]
"queue/nr_requests" = [4, 8, 16, 32]
seed = [1, 2, 3, 4]
"""


@pytest.fixture(scope="module")
def grid_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("grid")
    (d / "j.fio").write_text(JOB)
    (d / "grid.toml").write_text(GRID_TOML)
    return d / "grid.toml"


@pytest.fixture(scope="module")
def cli_sweep(iostack_bin, grid_file):
    """`iostack sweep grid.toml --out DIR --duckdb FILE` on the command line."""
    d = grid_file.parent / "cli"
    env = dict(os.environ, IOSTACK_PYTHON=sys.executable)
    import subprocess

    p = subprocess.run([str(iostack_bin), "sweep", str(grid_file), "--out", str(d),
                        "--duckdb", str(d / "results.duckdb")],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return d


def test_command_line_sweep_equals_python(cli_sweep, local):
    # The same grid as a file on the command line and as a dict in Python.
    assert pq.read_table(cli_sweep / "jobs.parquet").equals(pq.read_table(local))
    con = duckdb.connect(str(cli_sweep / "results.duckdb"), read_only=True)
    got = con.execute(
        "select count(*), count(distinct point) from jobs where metric = 'read.iops'"
    ).fetchone()
    assert got == (64, 64)


def test_ray_sweep_is_identical(local, grid_file, cli_sweep, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "ray.parquet"
        iostack.sweep(GRID, {"job": JOB, "machine": "null"}, backend="ray", out=out)
        # The grid file on Ray, as `iostack sweep GRID --ray ADDRESS` runs it.
        from_file = iostack.sweep_file(grid_file, tmp_path / "file", backend="ray")
    finally:
        ray.shutdown()
    assert pq.read_table(out).equals(pq.read_table(local))
    assert out.read_bytes() == local.read_bytes()
    assert from_file.equals(pq.read_table(cli_sweep / "jobs.parquet"))


def test_requests_and_duckdb(tmp_path):
    grid = {"queue/nr_requests": [4, 32]}
    db = tmp_path / "r.duckdb"
    t = iostack.sweep(grid, {"job": JOB, "machine": "null"}, seeds=[1, 2],
                      requests_out=tmp_path / "req.parquet", duckdb=db)
    assert t.column("seed").to_pylist()[:2] == [1, 1]
    req = pq.read_table(tmp_path / "req.parquet")
    # 256 KiB in 4 KiB reads: 64 requests per point, four points.
    assert req.num_rows == 4 * 64
    assert req.column_names[0] == "point"
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute(
        "select count(*) from requests r join jobs j using (point) "
        "where j.metric = 'read.iops'"
    ).fetchone() == (256,)


def test_points_are_independent(local):
    # A point run alone gives the sweep's figures for it.
    t = pq.read_table(local).to_pandas()
    p = t[(t["kernel"] == "2.6.36") & (t["sched"] == "deadline")
          & (t["queue/nr_requests"] == 8) & (t["seed"] == 3)]
    r = iostack.run(job=JOB, machine="null", kernel="2.6.36", sched="deadline",
                    seed=3, queue_nr_requests=8, requests=False).summary()
    got = dict(zip(p["metric"], p["value"]))
    assert got["read.iops"] == r.loc[0, "read.iops"]
    assert got["read.clat_ns.mean"] == r.loc[0, "read.clat_ns.mean"]


SMALL = {"sched": ["noop", "deadline"], "queue/nr_requests": [4, 8, 16, 32]}
BASE = {"job": JOB, "machine": "null"}


def counting(monkeypatch, name, fail_at=None):
    """Wrap `iostack._sweep.NAME` to record the points it runs (and raise at
    the `fail_at`-th, as a sweep killed in the middle would stop)."""
    real = getattr(iostack._sweep, name)
    calls = []

    def wrapper(*a):
        calls.append(a[1] if name == "run_point" else a[0])
        if len(calls) == fail_at:
            raise RuntimeError("killed")
        return real(*a)

    monkeypatch.setattr(iostack._sweep, name, wrapper)
    return calls


def test_sweep_resumes_after_an_interruption(tmp_path, monkeypatch):
    full = tmp_path / "full"
    whole = iostack.sweep(SMALL, BASE, out=full, workers=1, requests_out=tmp_path / "r0.parquet")
    assert len((full / "points.jsonl").read_text().splitlines()) == 8
    part = tmp_path / "part"
    calls = counting(monkeypatch, "run_point", fail_at=4)
    with pytest.raises(RuntimeError, match="killed"):
        iostack.sweep(SMALL, BASE, out=part, workers=1, requests_out=tmp_path / "r1.parquet")
    assert len((part / "points.jsonl").read_text().splitlines()) == 3
    assert not (part / "jobs.parquet").exists()
    calls = counting(monkeypatch, "run_point")
    again = iostack.sweep(SMALL, BASE, out=part, workers=1, requests_out=tmp_path / "r1.parquet")
    assert sorted(calls) == [3, 4, 5, 6, 7]
    assert again.equals(whole)
    assert (part / "jobs.parquet").read_bytes() == (full / "jobs.parquet").read_bytes()
    assert pq.read_table(tmp_path / "r1.parquet").equals(pq.read_table(tmp_path / "r0.parquet"))
    # Started once more: nothing left to run, the same table.
    calls = counting(monkeypatch, "run_point")
    iostack.sweep(SMALL, BASE, out=part, workers=1)
    assert calls == []
    assert (part / "jobs.parquet").read_bytes() == (full / "jobs.parquet").read_bytes()


def test_sweep_resumes_a_journal_cut_short(tmp_path, monkeypatch):
    full = tmp_path / "full"
    iostack.sweep(SMALL, BASE, out=full)
    lines = (full / "points.jsonl").read_text().splitlines(keepends=True)
    part = tmp_path / "part"
    part.mkdir()
    # Five whole lines and half of the sixth, as a kill in mid-write leaves it.
    (part / "points.jsonl").write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])
    calls = counting(monkeypatch, "run_point")
    iostack.sweep(SMALL, BASE, out=part)
    assert len(calls) == 3
    assert (part / "jobs.parquet").read_bytes() == (full / "jobs.parquet").read_bytes()
    assert (part / "points.jsonl").read_text().count("\n") == 8


def test_python_resumes_the_command_lines_sweep(cli_sweep, grid_file, tmp_path, monkeypatch):
    lines = (cli_sweep / "points.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 64
    part = tmp_path / "part"
    part.mkdir()
    (part / "points.jsonl").write_text("".join(lines[:40]))
    calls = counting(monkeypatch, "run_inputs")
    t = iostack.sweep_file(grid_file, part)
    assert len(calls) == 24
    assert t.equals(pq.read_table(cli_sweep / "jobs.parquet"))
    assert pq.read_table(part / "jobs.parquet").equals(pq.read_table(cli_sweep / "jobs.parquet"))
