import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A tiny job on the null device: two jobs, reads then writes, a few hundred I/Os.
JOB = """[global]
ioengine=libaio
direct=1
filename=/dev/nullb0
size=16m

[randread]
rw=randread
bs=4k
iodepth=4
io_size=1m

[seqwrite]
stonewall
rw=write
bs=128k
iodepth=1
io_size=2m
"""


@pytest.fixture(scope="session")
def iostack_bin() -> Path:
    """The command-line binary the binding is compared with (scripts/test builds
    it; IOSTACK_BIN overrides)."""
    b = Path(os.environ.get("IOSTACK_BIN", ROOT / "target" / "release" / "iostack"))
    if not b.exists():
        pytest.fail(f"{b} not built: run `cargo build --release --bin iostack`")
    return b


@pytest.fixture
def job_file(tmp_path) -> Path:
    p = tmp_path / "tiny.fio"
    p.write_text(JOB)
    return p


def cli(binary, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(binary), *map(str, args)], capture_output=True, text=True, cwd=cwd
    )
