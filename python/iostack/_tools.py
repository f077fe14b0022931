"""`iostack.dd`, `iostack.iozone`, `iostack.fs_mark`, `iostack.bonnie`: the
command line's front ends, run through the same Rust entry point
(`iostack TOOL ARGS...`), their report text returned."""

from __future__ import annotations

import os
from typing import Any, Mapping

from . import _iostack
from ._run import _sets


class ToolResult:
    """A front end's run: the text the command prints (`text`: the tool's own
    report after iostack's provenance and notes) and its standard error."""

    def __init__(self, tool: str, argv: list[str], out: str, err: str):
        self.tool = tool
        self.argv = argv
        self.text = out
        self.stderr = err

    def report_text(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<iostack {self.tool} result: {len(self.text)} characters>"


def _run(tool: str, args, machine, kernel, sched, seed, tunables, traces, kw) -> ToolResult:
    argv = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    for flag, v in (("machine", machine), ("kernel", kernel), ("sched", sched), ("seed", seed),
                    *traces.items()):
        if v is not None:
            argv += [f"--{flag}", os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    for s in _sets(tunables, kw):
        argv += ["--set", s]
    out, err = _iostack.run_tool(tool, argv)
    return ToolResult(tool, argv, out, err)


def _front(tool: str, doc: str):
    def front(
        *args: Any,
        machine: str | None = None,
        kernel: str | None = None,
        sched: str | None = None,
        seed: int | None = None,
        tunables: Mapping[str, Any] | None = None,
        blktrace=None,
        blkparse=None,
        ftrace=None,
        **kw: Any,
    ) -> ToolResult:
        traces = {"blktrace": blktrace, "blkparse": blkparse, "ftrace": ftrace}
        return _run(tool, args, machine, kernel, sched, seed, tunables, traces, kw)

    front.__name__ = front.__qualname__ = tool
    front.__doc__ = doc
    return front


dd = _front("dd", """`iostack dd OPERAND...`: `iostack.dd("if=/dev/zero", "of=/mnt/test/f",
"bs=4k", "count=100", machine=..., kernel=..., sched=..., seed=...,
tunables={...}, **tunable_keywords)`; dd's report as the command prints it.""")
iozone = _front("iozone", """`iostack iozone IOZONE-OPTION...`: `iostack.iozone("-i", "0", "-s", "1m",
"-r", "4k", machine=...)`; iozone's report as the command prints it.""")
fs_mark = _front("fs_mark", """`iostack fs_mark FS_MARK-OPTION...`: `iostack.fs_mark("-d", "/mnt/test",
"-n", "10", "-s", "4096", machine=...)`; fs_mark's report as the command prints it.""")
bonnie = _front("bonnie", """`iostack bonnie BONNIE-OPTION...`: `iostack.bonnie("-d", "/mnt/test",
"-s", "8", machine=...)`; bonnie's report as the command prints it.""")
