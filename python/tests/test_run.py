"""iostack.run against `iostack run`: the same figures, a request per D event,
the same errors."""

import json

import pandas as pd
import pytest

import iostack
from conftest import JOB, cli


def test_summary_equals_cli_json(iostack_bin, job_file):
    args = ["--machine", "null", "--kernel", "2.6.32", "--sched", "deadline", "--seed", "7"]
    p = cli(iostack_bin, "run", job_file, *args, "--set", "queue/nr_requests=32",
            "--output-format", "json")
    assert p.returncode == 0, p.stderr
    r = iostack.run(job=str(job_file), machine="null", kernel="2.6.32",
                    sched="deadline", seed=7, queue_nr_requests=32)
    # The whole report is the same bytes, so every figure is the same.
    assert r.report_json() == p.stdout
    want = pd.json_normalize(json.loads(p.stdout)["jobs"])
    got = r.summary()
    assert list(got["jobname"]) == ["randread", "seqwrite"]
    pd.testing.assert_frame_equal(got, want)
    assert got.loc[0, "read.total_ios"] == 256
    assert got.loc[1, "write.total_ios"] == 16
    assert got.loc[0, "read.bw"] > 0


def test_job_text_and_keywords(job_file):
    a = iostack.run(job=JOB, machine="null", seed=3, requests=False)
    b = iostack.run(job=str(job_file), machine="null", seed=3,
                    tunables={"queue/nr_requests": 128}, requests=False)
    pd.testing.assert_frame_equal(a.summary(), b.summary())
    with pytest.raises(ValueError):
        a.requests()
    # A tunable changes the run: a queue depth of 1 on the fixed device.
    c = iostack.run(job=JOB, machine="null", seed=3, requests=False,
                    queue_nr_requests=4, kernel="2.6.36")
    assert c.config_hash != a.config_hash


def test_requests_are_blkparse_d_events(iostack_bin, job_file, tmp_path):
    bp = tmp_path / "out.blkparse"
    p = cli(iostack_bin, "run", job_file, "--machine", "null", "--blkparse", bp)
    assert p.returncode == 0, p.stderr
    d = []
    for line in bp.read_text().splitlines():
        f = line.split()
        # dev cpu seq time pid action rwbs sector + blocks [comm]
        if len(f) >= 10 and f[5] == "D" and f[8] == "+":
            d.append((f[6], int(f[7]), int(f[9])))
    r = iostack.run(job=str(job_file), machine="null", blkparse=tmp_path / "py.blkparse")
    # The binding writes the same trace text as the command line.
    assert (tmp_path / "py.blkparse").read_text() == bp.read_text()
    iostack.run(job=str(job_file), machine="null", blktrace=tmp_path / "py", requests=False)
    assert (tmp_path / "py.blktrace.0").stat().st_size > 0
    with pytest.raises(iostack.ConfigError, match="not '-'"):
        iostack.run(job=str(job_file), machine="null", blkparse="-")
    req = r.requests()
    assert len(req) == len(d) > 0
    got = list(zip(req["rwbs"], req["sector"].astype(int), (req["bytes"] // 512).astype(int)))
    assert got == d
    assert (req["c_ns"] >= req["d_ns"]).all()
    assert (req["device_ns"] > 0).all()
    assert set(req["comm"]) == {"fio"}
    assert req["d_ns"].is_monotonic_increasing
    # Every request was queued and inserted before it was dispatched.
    assert req["q_ns"].notna().all() and req["i_ns"].notna().all()
    assert ((req["q_ns"] <= req["i_ns"]) & (req["i_ns"] <= req["d_ns"])).all()
    assert (req["queue_ns"] >= 0).all()
    # The stream is made of Arrow record batches.
    batches = list(r.request_batches())
    assert sum(b.num_rows for b in batches) == len(req)


def test_errors_carry_the_cli_message(iostack_bin, job_file, tmp_path):
    m = tmp_path / "m.txt"
    m.write_text("base = null\ncpu_wake_ns = 18446744073709551615\n")
    p = cli(iostack_bin, "run", job_file, "--machine", m)
    assert p.returncode == 2
    with pytest.raises(iostack.MachineError) as e:
        iostack.run(job=str(job_file), machine=str(m))
    assert f"iostack: {e.value}\n" == p.stderr
    assert (e.value.file, e.value.line, e.value.option) == (str(m), 2, "cpu_wake_ns")

    bad = tmp_path / "bad.fio"
    bad.write_text("[j]\nrw=read\nsize=1m\nbogus_option=1\n")
    with pytest.raises(iostack.JobError) as e:
        iostack.run(job=str(bad), machine="null")
    assert e.value.file == str(bad) and e.value.line == 4
    assert e.value.option == "bogus_option"
    assert isinstance(e.value, iostack.IostackError)

    with pytest.raises(iostack.TunableError) as e:
        iostack.run(job=JOB, machine="null", tunables={"queue/nr_requests": -1})
    assert e.value.option == "queue/nr_requests"
    with pytest.raises(iostack.ConfigError):
        iostack.run(job=JOB, machine="null", kernel="9.9")
    with pytest.raises(TypeError, match="nr_requests"):
        iostack.run(job=JOB, machine="null", nr_request=4)


def test_keywords_are_the_tunable_table(iostack_bin):
    t = iostack.tunables()
    p = cli(iostack_bin, "tunables", "--markdown")
    names = [l.split("`")[1] for l in p.stdout.splitlines() if l.startswith("| `") and "/" in l.split("`")[1]]
    assert sorted(t["name"]) == sorted(names)
    assert t["keyword"].is_unique
    assert t.set_index("name").loc["iosched/cfq/slice_idle", "keyword"] == "iosched_cfq_slice_idle"


def test_tunables_of_a_scheduler():
    t = iostack.tunables(kernel="2.6.32", sched="deadline")
    io = [n for n in t["name"] if n.startswith("iosched/")]
    assert io and all(n.startswith("iosched/deadline/") for n in io)
    assert t.set_index("name").loc["queue/nr_requests", "default"] == "128"


def test_requests_parquet_from_the_command_line(iostack_bin, job_file, tmp_path):
    """`iostack run --requests FILE.parquet`: a row per blkparse D event of the
    same run, the content of `Result.requests()`."""
    import pyarrow.parquet as pq

    out, bp = tmp_path / "req.parquet", tmp_path / "out.blkparse"
    args = ["--machine", "null", "--kernel", "2.6.32", "--sched", "deadline", "--seed", "5"]
    p = cli(iostack_bin, "run", job_file, *args, "--requests", out, "--blkparse", bp)
    assert p.returncode == 0, p.stderr
    d = [l for l in bp.read_text().splitlines() if len(l.split()) > 6 and l.split()[5] == "D"]
    table = pq.read_table(out)
    assert table.num_rows == len(d) > 0
    r = iostack.run(job=str(job_file), machine="null", kernel="2.6.32", sched="deadline", seed=5)
    assert table.equals(r.requests_arrow())
    got = table.to_pandas(types_mapper=iostack._run._nullable)
    pd.testing.assert_frame_equal(got, r.requests())
    assert "--requests FILE.parquet" in cli(iostack_bin, "run", "--help").stdout
    bad = cli(iostack_bin, "run", job_file, "--machine", "null", "--requests", "-")
    assert bad.returncode != 0 and "--requests -" in bad.stderr
