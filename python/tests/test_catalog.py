"""Introspection from Python (`machines`, `machine`, `profiles`, `schedulers`,
`tunables`) against what the command line prints: `iostack machines`,
`iostack tunables`, `iostack run --help`."""

import re

import pytest

import iostack
from conftest import cli


def lines(binary, *args):
    p = cli(binary, *args)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_machines_are_the_command_lines_listing(iostack_bin):
    listing = lines(iostack_bin, "machines")
    head = listing[0].split()
    want = [dict(zip(head, l.split())) for l in listing[1:]]
    got = iostack.machines()
    assert len(got) == len(want) >= 9
    for row, w in zip(got.to_dict("records"), want):
        assert {k: str(row[{"kind": "device_kind"}.get(k, k)]) for k in head} == w
    assert got["device_source"].str.len().min() > 20
    assert (got["capacity_bytes"] > 0).all()
    null = got.set_index("machine").loc["null"]
    assert (null["device"], null["queue_depth"], null["cpus"]) == ("null", 256, 2)


def test_machine_schedulers_are_what_tunables_shows(iostack_bin):
    """The machine's scheduler is what `iostack tunables --machine M` runs
    under a kernel that has it."""
    for row in iostack.machines().to_dict("records"):
        kernel = "6.x" if row["machine"] == "nvme-2024" else "2.6.36"
        head = lines(iostack_bin, "tunables", "--machine", row["machine"], "--kernel", kernel)[0]
        assert head.endswith(f"machine {row['machine']}, scheduler {row['scheduler']}"), head


def test_machine_file_and_its_errors(iostack_bin, job_file, tmp_path):
    m = tmp_path / "m.txt"
    m.write_text("base = null\ncpus = 8\nmem_mb = 512\n")
    row = iostack.machine(m)
    assert (row["cpus"], row["mem_mb"], row["device"], row["machine"]) == (8, 512, "null", str(m))
    assert iostack.machine("sata-2009") == iostack.machines().iloc[1].to_dict()
    bad = tmp_path / "bad.txt"
    bad.write_text("base = null\n\nfs = zfs\n")
    p = cli(iostack_bin, "run", job_file, "--machine", bad)
    assert p.returncode == 2
    with pytest.raises(iostack.MachineError) as e:
        iostack.machine(bad)
    assert p.stderr == f"iostack: {e.value}\n"
    assert (e.value.file, e.value.line, e.value.option) == (str(bad), 3, "fs")
    with pytest.raises(iostack.MachineError, match="unknown machine 'vax'"):
        iostack.machine("vax")


def test_profiles_are_the_kernels_the_command_line_takes(iostack_bin):
    prof = iostack.profiles()
    help_line = next(l for l in lines(iostack_bin, "run", "--help") if "--kernel" in l)
    assert help_line.split("kernel profile: ")[1].split(", ") == list(prof["profile"])
    for row in prof.to_dict("records"):
        for release in row["releases"]:
            head = lines(iostack_bin, "tunables", "--kernel", release)[0]
            assert head.startswith(f"# kernel profile {row['profile']},"), (release, head)
        out = lines(iostack_bin, "tunables", "--kernel", row["profile"])
        assert out[0].endswith(f"scheduler {row['default_scheduler']}")
        scheds = out[1].split()[1:]
        assert [s.strip("[]") for s in scheds] == row["schedulers"]
        values = {l.split()[0]: l.split()[1] for l in out[2:]}
        for name in prof.columns[5:]:
            if not name.startswith("iosched/"):
                assert values[name] == row[name], (row["profile"], name)
            elif name.split("/")[1] == row["default_scheduler"]:
                assert values[name] == row[name], (row["profile"], name)
    # Only tunables whose defaults differ between profiles are columns.
    assert all(prof[c].nunique() > 1 for c in prof.columns[5:])
    assert "vm/dirty_ratio" in prof.columns and "queue/nr_requests" not in prof.columns


def test_schedulers_are_the_help_listing(iostack_bin):
    help_text = lines(iostack_bin, "run", "--help")
    listed = {}
    for l in help_text:
        m = re.match(r"^\s{30,}(\S+)\s+profiles (.*?); in kernels (.*)$", l)
        if m:
            listed[m.group(1)] = (m.group(2).split(", "), m.group(3))
    got = iostack.schedulers()
    assert {r["scheduler"]: (r["profiles"], r["kernels"]) for r in got.to_dict("records")} == listed
    six = iostack.schedulers(kernel="6.x")
    assert set(six["scheduler"]) == {s for s, (p, _) in listed.items() if "6.x" in p}
    # Each modelled scheduler's tunables are what `iostack tunables --sched` lists.
    for r in got[got["modelled"]].to_dict("records"):
        kernel = r["profiles"][-1]
        out = lines(iostack_bin, "tunables", "--kernel", kernel, "--sched", r["scheduler"])
        shown = [l.split()[0] for l in out if l.startswith(f"iosched/{r['scheduler']}/")]
        assert shown == sorted(r["tunables"]), r["scheduler"]
    with pytest.raises(iostack.ConfigError, match="unknown kernel profile '9.9'"):
        iostack.schedulers(kernel="9.9")


@pytest.mark.parametrize("kernel,sched", [("2.6.32", "cfq"), ("2.6.36", "deadline"),
                                          ("6.x", "bfq"), ("2.4", "elevator_linus")])
def test_tunables_are_what_the_command_line_lists(iostack_bin, kernel, sched):
    out = lines(iostack_bin, "tunables", "--kernel", kernel, "--sched", sched)[2:]
    t = iostack.tunables(kernel=kernel, sched=sched)
    want = [f"{r.name:<40} {r.default:<20} {r.unit}" for r in t.itertuples()]
    assert want == out


def test_tunables_errors(iostack_bin):
    p = cli(iostack_bin, "tunables", "--kernel", "2.6.36", "--sched", "anticipatory")
    assert p.returncode != 0
    with pytest.raises(iostack.ConfigError) as e:
        iostack.tunables(kernel="2.6.36", sched="anticipatory")
    assert "anticipatory" in str(e.value) and "2.6.33" in str(e.value)
    assert p.stderr.strip().split(": ", 2)[-1] in str(e.value)
    with pytest.raises(iostack.ConfigError, match="unknown kernel profile"):
        iostack.tunables(kernel="2.7")
