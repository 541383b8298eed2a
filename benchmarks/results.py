"""One results file for every benchmark: ``results/benchmarks/performance.csv``.

Benchmarks write it (and refresh docs/performance.md's table) only with ``publish=true``; otherwise their rows go
to ``outputs/benchmarks/performance.csv`` (git-ignored), so a run never changes checked-in files by accident.

Each benchmark calls :func:`write_rows` once at the end of a run with its measured rows; the rows of that
benchmark already in the file are replaced, the other benchmarks' rows are kept. Every row carries the
command that made it, the machine, the commit and the date, so the docs' Performance table (docs/performance.md,
generated from this file) can say where each figure comes from. Timings are machine-dependent: quote the ratios, which
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
#: where a benchmark writes its rows without publish=true (git-ignored)
OUT_FILE = Path(__file__).resolve().parent.parent / "outputs" / "benchmarks" / "performance.csv"
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
               command: str | None = None, publish: bool = False) -> Path:
    """Replace ``benchmark``'s rows in the results file by ``rows`` (keys: quantity, value, unit and
    optionally ratio_to, ratio); provenance columns are filled in here. Returns the file's path.

    The file is ``path`` when given; otherwise ``outputs/benchmarks/performance.csv`` (git-ignored), or, with
    ``publish=True``, the checked-in ``results/benchmarks/performance.csv`` and docs/performance.md's table (the
    files that changed are printed)."""
    if path is None and publish:
        before = {f: f.read_bytes() if f.is_file() else None for f in (RESULTS_FILE, PAGE)}
        written = write_rows(benchmark, rows, RESULTS_FILE, command or command_line())
        PAGE.write_text(page_with_table(PAGE.read_text(encoding="utf-8"), read_rows()), encoding="utf-8")
        changed = [str(f.relative_to(PAGE.parents[1])) for f, old in before.items()
                   if (f.read_bytes() if f.is_file() else None) != old]
        print(f"publish=true changed {len(changed)} file(s)" + "".join(f"\n  {c}" for c in changed))
        return written
    if path is None:
        print("(publish=true writes the checked-in results/benchmarks/performance.csv and docs/performance.md)")
    path = Path(path or OUT_FILE)
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


def write_csv(path: Path, rows: list[dict[str, object]], command: str | None = None) -> Path:
    """A benchmark's own results file: ``# <command>`` on the first line, then ``rows`` as CSV."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        f.write("# " + (command or command_line()) + "\n")
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_rows(path: Path | None = None) -> list[dict[str, str]]:
    """All rows of the results file (empty when it does not exist yet)."""
    path = Path(path or RESULTS_FILE)
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


#: The page that holds the generated table, between these markers.
PAGE = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
TABLE_BEGIN = "<!-- performance-table: generated by `python -m benchmarks.results` from results/benchmarks/performance.csv -->"
TABLE_END = "<!-- end performance-table -->"


def markdown_table(rows: list[dict[str, str]]) -> str:
    """The Performance table (docs/performance.md): one line per result row, grouped by benchmark, with its command and commit."""
    lines = ["| benchmark | quantity | value | ratio | command | commit, date |", "|---|---|---|---|---|---|"]
    for row in rows:
        ratio = f"{float(row['ratio']):.3g} vs {row['ratio_to']}" if row.get("ratio") else ""
        value = f"{float(row['value']):.4g} {row['unit']}".strip()
        lines.append(f"| {row['benchmark']} | {row['quantity']} | {value} | {ratio} | `{row['command']}` | "
                     f"{row['commit']}, {row['date']} |")
    return "\n".join(lines)


def page_with_table(page: str, rows: list[dict[str, str]]) -> str:
    """``page`` with the text between :data:`TABLE_BEGIN` and :data:`TABLE_END` replaced by the table."""
    if TABLE_BEGIN not in page or TABLE_END not in page:
        raise ValueError(f"the page has no performance-table markers ({TABLE_BEGIN!r} ... {TABLE_END!r})")
    head, rest = page.split(TABLE_BEGIN, 1)
    _, tail = rest.split(TABLE_END, 1)
    return f"{head}{TABLE_BEGIN}\n{markdown_table(rows)}\n{TABLE_END}{tail}"


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks.results [publish=true]``: print the Performance table built from the results file;
    with ``publish=true`` write it into docs/performance.md."""
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a not in ("publish=true", "publish=false") for a in args):
        print(f"error: {args} is not understood; usage: python -m benchmarks.results [publish=true]", file=sys.stderr)
        sys.exit(2)
    if "publish=true" not in args:
        print(markdown_table(read_rows()))
        print("(publish=true writes this table into docs/performance.md)")
        return
    PAGE.write_text(page_with_table(PAGE.read_text(encoding="utf-8"), read_rows()), encoding="utf-8")
    print(f"updated the performance table in {PAGE}")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


if __name__ == "__main__":
    main()
