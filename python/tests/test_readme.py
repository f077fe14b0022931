"""The README's "From Python" example runs as written."""

import re
import subprocess
import sys

from conftest import ROOT


def test_readme_example(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## From Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert 10 <= len(code.strip().splitlines()) <= 25
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "requests" in p.stdout
