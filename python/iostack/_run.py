"""`iostack.run` and its result."""

from __future__ import annotations

import difflib
import json
import os
from typing import Any, Iterator, Mapping

from . import _iostack


def keyword_of(name: str) -> str:
    """The Python keyword of a tunable: its name with `/` and `-` as `_`."""
    return name.replace("/", "_").replace("-", "_")


def _table(kernel: str = "2.6.36", sched: str | None = None):
    return _iostack.tunables(kernel, sched)


def _keywords() -> dict[str, str]:
    """keyword -> tunable name, generated from the tunable table."""
    kw: dict[str, str] = {}
    for name, _unit, _default, _doc in _table():
        k = keyword_of(name)
        if k in kw:  # pragma: no cover - guarded by a test
            raise RuntimeError(f"tunables {kw[k]} and {name} share keyword {k}")
        kw[k] = name
    return kw


TUNABLE_KEYWORDS: dict[str, str] = _keywords()


def tunables(kernel: str = "2.6.36", sched: str | None = None):
    """Every tunable with its keyword, unit, default under `kernel` and
    description, as a DataFrame; with `sched`, the `iosched/*` ones of that
    scheduler only (as `iostack tunables --sched` lists them; a scheduler the
    kernel does not have raises `ConfigError`)."""
    import pandas as pd

    def shown(name: str) -> bool:
        return sched is None or not name.startswith("iosched/") or name.startswith(
            f"iosched/{sched}/"
        )

    rows = [
        {
            "name": name,
            "keyword": keyword_of(name),
            "unit": unit,
            "default": default,
            "description": doc,
        }
        for name, unit, default, doc in _table(kernel, sched)
        if shown(name)
    ]
    return pd.DataFrame(rows)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _sets(tunables: Mapping[str, Any] | None, kw: Mapping[str, Any]) -> list[str]:
    sets = [f"{k}={_value(v)}" for k, v in (tunables or {}).items()]
    for k, v in kw.items():
        name = TUNABLE_KEYWORDS.get(k)
        if name is None:
            close = difflib.get_close_matches(k, TUNABLE_KEYWORDS, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise TypeError(f"run() got an unexpected keyword argument '{k}'{hint}")
        sets.append(f"{name}={_value(v)}")
    return sets


def _jobs(job) -> list[tuple[str, str | None]]:
    """A job file path, job text, or a list of them, as (name, text) pairs."""
    items = job if isinstance(job, (list, tuple)) else [job]
    out: list[tuple[str, str | None]] = []
    for i, j in enumerate(items):
        j = os.fspath(j)
        if "\n" in j or j.lstrip().startswith("["):
            out.append((f"<job{i}>" if len(items) > 1 else "<job>", j))
        else:
            out.append((j, None))
    return out


def run(
    job,
    machine: str | None = None,
    kernel: str | None = None,
    sched: str | None = None,
    seed: int | None = None,
    *,
    tunables: Mapping[str, Any] | None = None,
    until: str | None = None,
    layout: list[str] | tuple[str, ...] = (),
    requests: bool = True,
    blktrace: str | os.PathLike | None = None,
    blkparse: str | os.PathLike | None = None,
    ftrace: str | os.PathLike | None = None,
    **kw: Any,
) -> "Result":
    """Run fio job(s) as `iostack run JOB --machine M --kernel P --sched S
    --seed N --set NAME=VALUE...` does. `job` is a job file path or job text
    (or a list of them). Tunables go as keywords (see `tunables()`) or as
    `tunables={"iosched/cfq/slice_idle": 0}`. With `requests=False` the
    request table is not collected (it holds every dispatched request). Trace
    files as the options of the same names write them: `blktrace=PREFIX`
    (`PREFIX.blktrace.N` for blkparse, btt, iowatcher), `blkparse=FILE`,
    `ftrace=FILE`. Errors raise `IostackError` subclasses
    carrying the command line's message and `file`, `line`, `option`.
    """
    args = dict(
        machine=machine,
        kernel=kernel,
        sched=sched,
        seed=seed,
        sets=_sets(tunables, kw),
        until=until,
        layouts=list(layout),
    )
    out = _iostack.run_fio(
        _jobs(job),
        requests=requests,
        traces=tuple(None if t is None else os.fspath(t) for t in (blktrace, blkparse, ftrace)),
        **args,
    )
    return Result(out, (_jobs(job), args))


class Result:
    """A finished run."""

    def __init__(self, out, inputs=None):
        self._out = out
        self._inputs = inputs
        self.report: dict = json.loads(out.json)
        self.seed: int = out.seed
        self.config_hash: int = out.config_hash
        self.truncated: bool = out.truncated

    def summary(self):
        """fio's per-job figures: one row per job, columns named as in fio's
        JSON (nested keys joined by `.`, e.g. `read.bw`, `read.clat_ns.mean`)."""
        import pandas as pd

        return pd.json_normalize(self.report["jobs"])

    @property
    def jobs(self):
        """fio's per-job figures as a DataFrame (`summary()`)."""
        return self.summary()

    def latency(self, percentiles=None):
        """Per-request latency (one row per dispatched request, in dispatch
        order): `rwbs`, `sector`, `bytes`, `pid`, `comm` and, in ns, `q2c_ns`
        (first bio queued to completion), `d2c_ns` (at the device: dispatch
        to completion, btt's D2C), `q2d_ns` (before the device). With
        `percentiles` (e.g. `[50, 99, 99.9]`), those percentiles of the three
        per direction (`R`, `W`; the value of a request, no interpolation)."""
        df = self.requests()
        lat = df[["rwbs", "sector", "bytes", "pid", "comm"]].copy()
        lat["q2c_ns"] = df["c_ns"] - df["q_ns"]
        lat["d2c_ns"] = df["c_ns"] - df["d_ns"]
        lat["q2d_ns"] = df["d_ns"] - df["q_ns"]
        if percentiles is None:
            return lat
        lat["dir"] = lat["rwbs"].str.contains("W").map({True: "W", False: "R"})
        cols = ["q2c_ns", "d2c_ns", "q2d_ns"]
        qs = [p / 100 for p in percentiles]
        out = lat.dropna(subset=cols).astype({c: "int64" for c in cols})
        out = out.groupby("dir")[cols].quantile(qs, interpolation="lower")
        out.index = out.index.set_names(["dir", "percentile"])
        return out.rename(index=lambda q: round(q * 100, 6), level="percentile")

    def blktrace(self, path=None):
        """The run's blktrace files (`PREFIX.blktrace.N`, what blkparse, btt
        and iowatcher read), made by running the same inputs again with
        `blktrace=PREFIX` (a run is a pure function of its inputs): with
        `path`, the files are written with that prefix and their paths
        returned; without, a dict of file name to bytes."""
        import glob
        import tempfile

        if self._inputs is None:
            raise ValueError("this result has no inputs to run again")
        jobs, args = self._inputs

        def write(prefix: str) -> list[str]:
            _iostack.run_fio(jobs, requests=False, traces=(prefix, None, None), **args)
            return sorted(glob.glob(glob.escape(prefix) + ".blktrace.*"))

        if path is not None:
            return write(os.fspath(path))
        with tempfile.TemporaryDirectory() as d:
            files = write(os.path.join(d, "trace"))
            return {os.path.basename(f): open(f, "rb").read() for f in files}

    def report_text(self) -> str:
        """fio's normal output for the run."""
        return self._out.text

    def report_json(self) -> str:
        """fio's JSON output, byte for byte as `--output-format json`."""
        return self._out.json

    def request_batches(self) -> Iterator:
        """The request table as a stream of pyarrow RecordBatches."""
        import pyarrow as pa

        buf = self._out.requests_ipc()
        if buf is None:
            raise ValueError("the run was made with requests=False")
        yield from pa.ipc.open_stream(pa.py_buffer(buf))

    def requests_arrow(self):
        """The request table as a pyarrow Table."""
        import pyarrow as pa

        buf = self._out.requests_ipc()
        if buf is None:
            raise ValueError("the run was made with requests=False")
        return pa.ipc.open_stream(pa.py_buffer(buf)).read_all()

    def requests(self):
        """One row per dispatched request (blkparse's D events): `q_ns`,
        `i_ns`, `d_ns`, `c_ns` (first bio queued, inserted, dispatched,
        completed; ns from the start, null when the trace has none), `major`,
        `minor`, `sector`, `bytes`, `rwbs`, `pid`, `comm`, `cpu`, and the
        derived `queue_ns` (D - I) and `device_ns` (C - D). The columns of
        `iostack run --requests FILE.parquet` (the same Rust table)."""
        return self.requests_arrow().to_pandas(types_mapper=_nullable)


def _nullable(t):
    import pandas as pd
    import pyarrow as pa

    if t == pa.uint64():
        return pd.Int64Dtype()
    return None
