"""Issue 16: the front ends from Python (`iostack.dd`, `iozone`, `fs_mark`,
`bonnie`) print what the command line prints for the same inputs; a run's
per-request latency agrees with blkparse's text of the same run, and its
blktrace files are the command line's, byte for byte."""

import re

import pytest

import iostack
from conftest import JOB, cli

FRONT_ENDS = [
    (iostack.dd, ["dd", "if=/dev/zero", "of=/mnt/test/f", "bs=4k", "count=64"]),
    (iostack.iozone, ["iozone", "-s", "256k", "-r", "4k", "-i", "0", "-f", "/mnt/test/ioz"]),
    (iostack.fs_mark, ["fs_mark", "-d", "/mnt/test/f", "-n", "10", "-s", "4096"]),
    (iostack.bonnie, ["bonnie", "-s", "8", "-fast", "-d", "/mnt/test"]),
]


@pytest.mark.parametrize("front,argv", FRONT_ENDS, ids=[a[0] for _, a in FRONT_ENDS])
def test_front_end_prints_what_the_command_prints(iostack_bin, front, argv):
    opts = ["--machine", "null", "--seed", "3", "--set", "vm/dirty_ratio=20"]
    p = cli(iostack_bin, *argv, *opts)
    assert p.returncode == 0, p.stderr
    r = front(*argv[1:], machine="null", seed=3, vm_dirty_ratio=20)
    assert r.text == p.stdout
    assert r.text.strip()


def test_front_end_errors_are_typed(iostack_bin):
    p = cli(iostack_bin, "dd", "if=/mnt/test/x", "of=/dev/null", "iflag=direct", "bs=64q")
    with pytest.raises(iostack.IostackError) as e:
        iostack.dd("if=/mnt/test/x", "of=/dev/null", "iflag=direct", "bs=64q")
    assert str(e.value) in p.stderr
    with pytest.raises(TypeError, match="did you mean"):
        iostack.dd("if=/dev/zero", "of=/mnt/test/f", "count=1", vm_dirty_rati=1)


def blkparse_events(path):
    """(action, sector) -> time in ns, from blkparse's default text."""
    ev = {}
    pat = re.compile(r"^\s*\d+,\d+\s+\d+\s+\d+\s+(\d+)\.(\d{9})\s+\d+\s+([DC])\s+\S+\s+(\d+) \+ \d+")
    for line in open(path):
        m = pat.match(line)
        if m:
            ev.setdefault((m.group(3), int(m.group(4))), int(m.group(1)) * 10**9 + int(m.group(2)))
    return ev


def test_latency_agrees_with_blkparse(job_file, iostack_bin, tmp_path):
    text = tmp_path / "run.txt"
    p = cli(iostack_bin, "run", job_file, "--machine", "null", "--blkparse", text)
    assert p.returncode == 0, p.stderr
    r = iostack.run(job_file, machine="null")
    lat = r.latency()
    assert len(lat) == len(r.requests())
    ev = blkparse_events(text)
    # Every request's D2C is blkparse's C time less its D time (sectors are
    # unique in this job's first phase of random 4 KiB reads on 16 MiB).
    reads = lat[lat["rwbs"].str.contains("R")].drop_duplicates("sector", keep=False)
    assert len(reads) > 100
    for row in reads.itertuples():
        assert row.d2c_ns == ev[("C", row.sector)] - ev[("D", row.sector)]
    pct = r.latency(percentiles=[50, 100])
    assert pct.loc[("R", 100), "d2c_ns"] == lat[lat["rwbs"].str.contains("R")]["d2c_ns"].max()
    assert (pct["q2c_ns"] >= pct["d2c_ns"]).all()


def test_blktrace_files_are_the_command_lines(job_file, iostack_bin, tmp_path):
    p = cli(iostack_bin, "run", job_file, "--machine", "null", "--blktrace", tmp_path / "cli")
    assert p.returncode == 0, p.stderr
    r = iostack.run(JOB, machine="null")
    files = r.blktrace(tmp_path / "py")
    assert files and all(f.startswith(str(tmp_path / "py")) for f in files)
    mem = r.blktrace()
    for f in files:
        name = f.rsplit("/", 1)[1]
        cli_file = tmp_path / name.replace("py.", "cli.", 1)
        assert open(f, "rb").read() == cli_file.read_bytes()
        assert mem[name.replace("py.", "trace.", 1)] == cli_file.read_bytes()
