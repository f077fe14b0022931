"""A 64-point sweep on the local backend and on a local Ray cluster: the same
Parquet content; DuckDB reads it."""

import duckdb
import pyarrow.parquet as pq
import pytest

import iostack

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


def test_ray_sweep_is_identical(local, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "ray.parquet"
        iostack.sweep(GRID, {"job": JOB, "machine": "null"}, backend="ray", out=out)
    finally:
        ray.shutdown()
    assert pq.read_table(out).equals(pq.read_table(local))
    assert out.read_bytes() == local.read_bytes()


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
