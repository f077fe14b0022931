"""The HTML report of `iostack reproduce --html` in headless Chromium: no console
error, and a screenshot where every experiment's plot shows published and
simulated bars."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from conftest import ROOT, cli

PUBLISHED = (0x8C, 0x8C, 0x8C)
SIMULATED = (0x1F, 0x77, 0xB4)


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


def test_report_renders_every_plot(report, tmp_path):
    html, records = report
    text = html.read_text()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script" not in text and "https://" not in text
    plots = re.findall(r'data-experiment="([^"]+)" data-top="(\d+)" data-height="(\d+)"', text)
    assert [p[0] for p in plots] == list(dict.fromkeys(r["experiment"] for r in records))
    height = max(int(t) + int(h) for _, t, h in plots)
    png = tmp_path / "report.png"
    log = shoot(html, png, 1200, height)
    assert console_errors(log) == [], log
    img = Image.open(png).convert("RGB")
    assert img.size == (1200, height)
    for name, top, h in plots:
        box = (0, int(top), 1200, int(top) + int(h))
        published = any(r["published"] is not None for r in records if r["experiment"] == name)
        assert count(img, box, SIMULATED) > 200, f"{name}: no simulated bars"
        if published:
            assert count(img, box, PUBLISHED) > 200, f"{name}: no published bars"
