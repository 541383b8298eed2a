"""Agent tests run torch on one thread (small networks; the 2-core machine is shared) and restore it."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def interrupt_training(args: list[str], *, marker: str, signum: int, wait_s: float = 120.0) -> tuple[int, str]:
    """Run ``python train.py *args``, send ``signum`` once a log line contains ``marker`` (or after
    ``wait_s``), and return (exit code, the whole output)."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "train.py", *args], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + wait_s
    for line in proc.stdout:
        lines.append(line)
        if marker in line or time.monotonic() > deadline:
            break
    proc.send_signal(signum)
    rest, _ = proc.communicate(timeout=120)
    return proc.returncode, "".join(lines) + rest
