"""What a run can be given, as DataFrames generated from the Rust registries
(the same rows as `iostack machines`, `iostack tunables`, `--help`):
`machines()`, `machine(name_or_file)`, `devices()`, `profiles()`,
`schedulers(kernel=...)`."""

from __future__ import annotations

import json
import os

from . import _iostack


def _frame(rows):
    import pandas as pd

    return pd.DataFrame(rows)


def machines():
    """Every machine preset (`--machine NAME`), one row each: `machine`,
    `description` (what it stands for and its sources), the machine-file keys'
    values (`disk`, `dev`, `partition`, `fs`, `cpus`, `mem_mb`, `scheduler`,
    `cpu_*_ns`, ...), its `device` preset and `device_kind`, what the block
    layer sees of the device (`queue_depth`, `nr_hw_queues`, `rotational`,
    `write_cache`, `fua`, `capacity_bytes`, `max_hw_sectors_kb`) and
    `device_source` (where the device's numbers come from). docs/presets.md
    is the same table."""
    return _frame(json.loads(_iostack.machines()))


def machine(name: str | os.PathLike) -> dict:
    """One machine, a preset name or a machine file (as `--machine` takes
    it), as a dict of `machines()`'s columns. A bad machine file raises
    `MachineError` with `file`, `line` and `option` (the key)."""
    return json.loads(_iostack.machine(os.fspath(name)))


def devices():
    """Every device preset (a machine file's `device = NAME`): `device`,
    `kind` (the model: fixed, hdd, raid0, fc-lun, ssd), `source` (its
    description and sources) and `params` (every parameter, a dict)."""
    return _frame(json.loads(_iostack.devices()))


def profiles():
    """Every kernel profile (`--kernel`): `profile`, `releases` (the names
    `--kernel` takes for it), `block_layer`, `schedulers` (those modelled),
    `default_scheduler` (on the default machine, sata-2009), then one column
    per tunable whose default differs between profiles, with this profile's
    default."""
    import pandas as pd

    rows = json.loads(_iostack.profiles())
    base = pd.DataFrame([{k: v for k, v in r.items() if k != "defaults"} for r in rows])
    defaults = pd.DataFrame([r["defaults"] for r in rows])
    return pd.concat([base, defaults], axis=1)


def schedulers(kernel: str | None = None):
    """Every I/O scheduler of the registry (with `kernel`, those its profile
    has): `scheduler`, `profiles` (the profiles that have it), `kernels` (the
    releases that shipped it), `modelled`, `refused` (why one is not),
    `tunables` (its `iosched/NAME/*` names) and `description`. An unknown
    kernel raises `ConfigError`."""
    return _frame(json.loads(_iostack.schedulers(kernel)))
