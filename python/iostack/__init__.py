"""iostack from Python: run fio jobs on the simulated Linux storage stack, get
fio's figures and the dispatched requests as pandas DataFrames, sweep
parameters locally or on Ray.

    import iostack
    r = iostack.run(job="[j]\\nrw=randread\\nsize=1m\\ndirect=1\\n", machine="null",
                    nr_requests=64)
    r.summary()     # fio's per-job figures, as `iostack run --output-format json`
    r.requests()    # one row per dispatched request (blkparse's D events)

Tunables are keyword arguments named after the tunable table with `/` as `_`
(`iosched/cfq/slice_idle` is `iosched_cfq_slice_idle`); `tunables()` lists them.
`machines()`, `machine(NAME_OR_FILE)`, `devices()`, `profiles()` and
`schedulers(kernel=...)` list the rest of what a run can be given, from the
same registries as the command line (`iostack machines`, docs/presets.md).
"""

from ._iostack import (  # noqa: F401
    ConfigError,
    IostackError,
    JobError,
    MachineError,
    RunError,
    TunableError,
    __version__,
)
from ._catalog import devices, machine, machines, profiles, schedulers
from ._run import Result, keyword_of, run, tunables
from ._sweep import sweep, sweep_file
from ._tools import ToolResult, bonnie, dd, fs_mark, iozone

__all__ = [
    "run",
    "sweep",
    "sweep_file",
    "dd",
    "iozone",
    "fs_mark",
    "bonnie",
    "ToolResult",
    "tunables",
    "machines",
    "machine",
    "devices",
    "profiles",
    "schedulers",
    "keyword_of",
    "Result",
    "IostackError",
    "MachineError",
    "JobError",
    "TunableError",
    "ConfigError",
    "RunError",
]
