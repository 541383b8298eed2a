"""Install truths (issue 37): the test suite says what to install when a test requirement is missing, and the
README's set-up commands name the CPU wheel index of torch and a virtual environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: run pytest with ``hypothesis`` unimportable, as on a machine without it (and so without its pytest plugin)
WITHOUT_HYPOTHESIS = """
import sys
sys.modules["hypothesis"] = None  # an entry of None makes every import of it fail, as when it is not installed
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "tests/test_house.py", "-k", "nothing_matches_this"]))
"""


def test_pytest_without_hypothesis__stops_with_what_to_install() -> None:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # no hypothesis, so no hypothesis plugin either
    done = subprocess.run([sys.executable, "-c", WITHOUT_HYPOTHESIS], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    out = done.stdout + done.stderr
    assert done.returncode == 4, out[-2000:]
    assert "the tests need hypothesis" in out and "pip install -r requirements.txt" in out, out[-2000:]
    assert "Traceback" not in out, out[-2000:]


def test_readme_setup__installs_torch_from_its_cpu_index_in_a_venv() -> None:
    """The first set-up command creates a venv and installs torch's CPU wheel before the pinned set (from PyPI
    alone, ``torch==2.13.0`` on Linux brings several GB of CUDA packages)."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Set-up\s+```bash\n(.*?)```", readme, re.S)
    assert block, "README has a Set-up code block"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.split("#")[0].strip()]
    assert len(commands) == 2, commands
    install = commands[0]
    assert "python -m venv" in install and "-r requirements.txt" in install
    torch_pin = re.search(r"torch==([\d.]+)", (ROOT / "requirements.txt").read_text()).group(1)
    assert f"pip install torch=={torch_pin} --index-url https://download.pytorch.org/whl/cpu" in install
    assert install.index("--index-url") < install.index("-r requirements.txt")
    assert commands[1] == "python -m pytest -q"
    assert "python -m pytest -q" in (ROOT / ".ci" / "run").read_text()
