"""The worked example notebook (docs/examples/*.ipynb) runs: its code cells are
executed in order in one namespace, as a kernel would, and what they compute
is checked."""

import json
import os

import pytest

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "docs" / "examples").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, iostack_bin, monkeypatch):
    monkeypatch.setenv("IOSTACK_BIN", str(iostack_bin))
    nb = json.loads(path.read_text())
    ns: dict = {"__name__": "__main__"}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}[{i}]", "exec"), ns)
    if path.name == "sweep.ipynb":
        assert len(ns["df"]) == 12 * 8
        assert list(ns["best"].columns) == ["sched", "nr", "iops"]
        assert (ns["best"]["iops"] > 0).all()
        assert ns["report"].count("data-plot=") == 3


def test_there_is_a_notebook():
    assert NOTEBOOKS
    assert os.path.exists(ROOT / "docs" / "sweep.md")
