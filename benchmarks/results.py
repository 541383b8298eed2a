"""One results file for every benchmark: ``results/benchmarks/performance.csv``.

Each benchmark calls :func:`write_rows` once at the end of a run with its measured rows; the rows of that
benchmark already in the file are replaced, the other benchmarks' rows are kept. Every row carries the
command that made it, the machine, the commit and the date, so README's Performance table (generated from
this file) can say where each figure comes from. Timings are machine-dependent: quote the ratios, which
each benchmark measures within one run.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

RESULTS_FILE = Path(__file__).resolve().parent.parent / "results" / "benchmarks" / "performance.csv"
COLUMNS: tuple[str, ...] = ("benchmark", "quantity", "value", "unit", "ratio_to", "ratio", "command",
                            "machine", "commit", "date")


def machine() -> str:
    """``<cores> cores, <cpu model>, python x.y, torch x.y`` (what makes timings comparable)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        import torch

        torch_version = f", torch {torch.__version__}"
    except ImportError:  # pragma: no cover - torch is a dependency
        torch_version = ""
    return f"{os.cpu_count()} cores, {cpu}, python {platform.python_version()}{torch_version}"


def commit() -> str:
    """Short hash of HEAD, with ``+dirty`` when tracked files differ from it; ``unknown`` outside git."""
    root = RESULTS_FILE.parent.parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def command_line() -> str:
    """The command as a user would type it (``python -m benchmarks.x key=value ...``)."""
    module = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "?"
    return " ".join(["python -m benchmarks." + module, *sys.argv[1:]])


def write_rows(benchmark: str, rows: Iterable[Mapping[str, object]], path: Path | None = None,
               command: str | None = None) -> Path:
    """Replace ``benchmark``'s rows in the results file by ``rows`` (keys: quantity, value, unit and
    optionally ratio_to, ratio); provenance columns are filled in here. Returns the file's path."""
    path = Path(path or RESULTS_FILE)
    stamp = {"machine": machine(), "commit": commit(), "command": command or command_line(),
             "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    new = []
    for row in rows:
        unknown = set(row) - set(COLUMNS)
        if unknown or "quantity" not in row or "value" not in row:
            raise ValueError(f"benchmark rows need quantity and value and only the columns {list(COLUMNS)}; "
                             f"got {sorted(row)}")
        new.append({**{c: "" for c in COLUMNS}, **stamp, **{k: _fmt(v) for k, v in row.items()},
                    "benchmark": benchmark})
    kept = []
    if path.exists():
        with path.open(newline="", encoding="utf-8") as f:
            kept = [r for r in csv.DictReader(f) if r.get("benchmark") != benchmark]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows([*kept, *new])
    print(f"wrote {len(new)} rows of {benchmark!r} to {path}")
    return path


def read_rows(path: Path | None = None) -> list[dict[str, str]]:
    """All rows of the results file (empty when it does not exist yet)."""
    path = Path(path or RESULTS_FILE)
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
