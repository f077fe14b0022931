"""The HTML reports (`iostack reproduce --html`, `iostack report`) in headless
Chromium with every network name unresolvable: no console error, and a
screenshot where every plot (Vega-Lite, embedded) shows data: the colours of
its marks, counted in the plot's own section of the page."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from conftest import ROOT, cli

PUBLISHED = (0xD6, 0x27, 0x28)
SIMULATED = (0x1F, 0x77, 0xB4)
READ = (0x1F, 0x77, 0xB4)
WRITE = (0xFF, 0x7F, 0x0E)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.fail("no chromium: scripts/setup installs Debian's chromium package")


def shoot(page: Path, png: Path, width: int, height: int) -> str:
    """Load `page` headless, screenshot it; Chromium's log (console messages
    included) is returned."""
    p = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--enable-logging=stderr", "--v=0",
         # Nothing may be fetched: every host name fails to resolve.
         "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=10000",
         f"--user-data-dir={png.parent / 'profile'}",
         f"--window-size={width},{height}", f"--screenshot={png}", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0 and png.exists(), p.stderr
    return p.stderr


def console_errors(log: str) -> list[str]:
    return [l for l in log.splitlines() if "CONSOLE" in l or "Uncaught" in l]


def count(img, box, rgb, tol=6) -> int:
    crop = img.crop(box)
    return sum(n for n, c in crop.getcolors(maxcolors=1 << 20)
               if all(abs(a - b) <= tol for a, b in zip(c[:3], rgb)))


@pytest.fixture(scope="module")
def report(iostack_bin, tmp_path_factory):
    """The report and records of `iostack reproduce`: scripts/test makes them
    once (IOSTACK_REPORT, IOSTACK_REPRODUCE_JSON); otherwise made here."""
    html = os.environ.get("IOSTACK_REPORT")
    recs = os.environ.get("IOSTACK_REPRODUCE_JSON")
    if not (html and recs):
        d = tmp_path_factory.mktemp("reproduce")
        html, recs = d / "reproduce.html", d / "reproduce.json"
        p = cli(iostack_bin, "reproduce", "--json", "--html", html)
        assert p.returncode == 0, p.stderr
        Path(recs).write_text(p.stdout)
    return Path(html), json.loads(Path(recs).read_text())


def test_detector_sees_console_errors(tmp_path):
    # The check below can fail: a page that logs an error is caught.
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>console.error('boom')</script></body></html>")
    log = shoot(bad, tmp_path / "bad.png", 400, 300)
    assert any("boom" in l for l in console_errors(log)), log


def sections(text: str):
    return [(n, int(t), int(h)) for n, t, h in
            re.findall(r'data-plot="([^"]+)" data-top="(\d+)" data-height="(\d+)"', text)]


def colored(img, box) -> int:
    """Pixels of a saturated colour (marks; axes and text are grey or black)."""
    crop = img.crop(box)
    return sum(n for n, c in crop.getcolors(maxcolors=1 << 22)
               if max(c[:3]) - min(c[:3]) > 80)


def render(html: Path, tmp_path):
    text = html.read_text()
    assert re.search(r"<(script|img|link)[^>]+(src|href)=", text) is None
    plots = sections(text)
    height = max(t + h for _, t, h in plots)
    png = tmp_path / (html.stem + ".png")
    log = shoot(html, png, 1200, height)
    assert console_errors(log) == [], log
    img = Image.open(png).convert("RGB")
    assert img.size == (1200, height)
    return img, plots


def test_report_renders_every_plot(report, tmp_path):
    html, records = report
    img, plots = render(html, tmp_path)
    assert [p[0] for p in plots] == list(dict.fromkeys(r["experiment"] for r in records))
    for name, top, h in plots:
        box = (0, top, 1200, top + h)
        published = any(r["published"] is not None for r in records if r["experiment"] == name)
        assert count(img, box, SIMULATED) > 200, f"{name}: no simulated bars"
        if published:
            assert count(img, box, PUBLISHED) > 30, f"{name}: no published ticks"


def test_run_report_plots(iostack_bin, job_file, tmp_path):
    html = tmp_path / "run.html"
    job_file.write_text(job_file.read_text().replace("/dev/nullb0", "/dev/sda"))
    # On a disk (the default machine): latencies spread, seeks happen.
    p = cli(iostack_bin, "report", job_file, "--html", html)
    assert p.returncode == 0, p.stderr
    img, plots = render(html, tmp_path)
    assert [n for n, _, _ in plots] == ["offset", "throughput", "iops", "seeks",
                                         "queue-depth", "latency", "latency-cdf"]
    for name, top, h in plots:
        box = (0, top + 60, 1200, top + h)
        assert colored(img, box) > 150, f"{name}: no data drawn"
    # The job reads, then writes: both colours in the offset plot.
    _, top, h = plots[0]
    assert count(img, (0, top, 1200, top + h), READ) > 50
    assert count(img, (0, top, 1200, top + h), WRITE) > 50


def test_sweep_report_plots(iostack_bin, job_file, tmp_path):
    (tmp_path / "grid.toml").write_text(
        f'job = "{job_file}"\nmachine = "null"\n[grid]\nsched = ["noop", "deadline"]\n'
        '"queue/nr_requests" = [4, 8, 32]\n')
    p = cli(iostack_bin, "sweep", tmp_path / "grid.toml", "--out", tmp_path / "s")
    assert p.returncode == 0, p.stderr
    html = tmp_path / "sweep.html"
    p = cli(iostack_bin, "report", "--sweep", tmp_path / "s", "--html", html)
    assert p.returncode == 0, p.stderr
    img, plots = render(html, tmp_path)
    assert [n for n, _, _ in plots] == ["param-sched", "param-queue-nr_requests"]
    for name, top, h in plots:
        assert colored(img, (0, top + 60, 1200, top + h)) > 150, f"{name}: no data drawn"
