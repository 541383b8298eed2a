"""A custom trainer's learning curve, as a CSV file and as TensorBoard scalars.

The contract-5 trainers that evaluate on their own schedule (``uec_prior``, ``oinc_prior``) keep one row per
evaluation in ``run_dir/curve.csv`` (read by the docs and the benchmarks) and write the same values as
TensorBoard scalars against env steps, so ``tensorboard --logdir runs`` shows every run, as it does for SB3's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Column:
    """One column of the curve: its CSV name, its CSV number format, and its TensorBoard tag (None: CSV only)."""

    name: str
    fmt: str = ".4f"
    tag: str | None = None


class CurveLog:
    """Rows appended to ``run_dir/curve.csv`` and, for the columns with a tag, TensorBoard scalars at x = the
    ``step_column`` value (env steps).

    A fresh run (``resume_step`` None) starts the file with its header. A run resumed from a checkpoint at
    ``resume_step`` keeps the rows up to that step, drops the later ones (logged after the checkpoint, before the
    run stopped: they are played again) and hides the later TensorBoard events (``purge_step``), so no point of the
    curve appears twice.
    """

    def __init__(self, run_dir: Path, columns: Sequence[Column], step_column: str,
                 resume_step: int | None = None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        names = [c.name for c in columns]
        if step_column not in names:
            raise ValueError(f"step_column={step_column!r} is not a column: expected one of {names}")
        self.columns, self.step_column = tuple(columns), step_column
        self.path = Path(run_dir) / "curve.csv"
        header = ",".join(names)
        if resume_step is None or not self.path.is_file():
            self.path.write_text(header + "\n")
        else:
            index = names.index(step_column)
            kept = [line for line in self.path.read_text().splitlines()[1:]
                    if line and int(line.split(",")[index]) <= resume_step]
            self.path.write_text("\n".join([header, *kept]) + "\n")
        purge = None if resume_step is None else resume_step + 1
        self.writer = SummaryWriter(log_dir=str(run_dir), purge_step=purge)

    def add(self, **values: Any) -> None:
        """Append one row; a missing or non-finite value is an empty CSV cell and no scalar."""
        cells, step = [], int(values[self.step_column])
        for column in self.columns:
            value = values.get(column.name)
            finite = value is not None and math.isfinite(float(value))
            cells.append(format(value, column.fmt) if finite else "")
            if finite and column.tag is not None:
                self.writer.add_scalar(column.tag, float(value), step)
        with self.path.open("a") as handle:
            handle.write(",".join(cells) + "\n")
        self.writer.flush()

    def close(self) -> None:
        """Flush and close the TensorBoard writer."""
        self.writer.close()
