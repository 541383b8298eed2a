"""Inference workload of OINC-v0: a bursty synthetic surrogate of the Alibaba trace, and a trace loader.

The paper stretches I Alibaba cluster jobs (10 s of trace each) over the 200-slot horizon and maps them
into d in [0.8, 1.6] MB and c in [100, 200] Mcycles. That trace cannot be fetched here, so the default
is a surrogate with the same shape: per device a two-state on/off burst chain (enter a burst with
probability ``burst_prob``, stay in it with ``burst_persistence``) driving an AR(1) level in [0, 1]
(coefficient ``ar_coef``, noise ``noise_std``), one series for the data size and one for the workload,
sharing the burst state. The normalised series x, y in [0, 1] map linearly into the ranges.

User trace CSV (``load_trace_csv``): one row per (device, time) sample, comma-separated, header row:

=========== ====================================================================================
column      meaning
=========== ====================================================================================
device      any label of the trace job / device (distinct labels = distinct series)
time        sample time in any unit (sorted per device; the series is stretched to T slots)
data_mb     input size in MB      } either both absolute columns (clipped to the scenario
megacycles  workload in Mcycles   } ranges) ...
mem         memory usage          } ... or both raw usage columns (e.g. Alibaba ``plan_mem`` /
cpu         CPU usage             } ``plan_cpu``), min-max normalised per device and mapped
=========== ====================================================================================

Each series is linearly interpolated onto T equally spaced points over its own time span (the paper's
"expand each of them ... to the total runtime"). The generator picks I distinct series at random.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numba
import numpy as np

#: Column sets accepted by :func:`load_trace_csv`.
ABSOLUTE_COLUMNS = ("data_mb", "megacycles")
RAW_COLUMNS = ("mem", "cpu")


def synthetic_unit_series(
    rng: np.random.Generator,
    horizon: int,
    num_devices: int,
    *,
    burst_prob: float,
    burst_persistence: float,
    ar_coef: float,
    noise_std: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Two (T, I) bursty series in [0, 1] (data size, workload) sharing one on/off burst chain per device."""
    low, high = 0.25, 0.75
    enter = burst_prob
    leave = 1.0 - burst_persistence
    p_on = enter / (enter + leave) if enter + leave > 0 else 0.0
    on = rng.random(num_devices) < p_on
    burst_u = rng.random((horizon, num_devices))
    noise = rng.standard_normal((2, horizon, num_devices)) * noise_std
    x = np.empty((horizon, num_devices))
    y = np.empty((horizon, num_devices))
    start = np.where(on, high, low)
    _burst_ar_levels(on, burst_u, noise, float(enter), float(leave), float(ar_coef), low, high,
                     start + noise[0, 0], start + noise[1, 0], x, y)
    return x, y


def continued_unit_series(
    rng: np.random.Generator,
    steps: int,
    level_x: np.ndarray,
    level_y: np.ndarray,
    *,
    burst_prob: float,
    burst_persistence: float,
    ar_coef: float,
    noise_std: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(steps, I) levels that follow present levels ``level_x``, ``level_y`` (I,) under the model of
    :func:`synthetic_unit_series`, the hidden burst state guessed from them (on when their mean is above the
    middle of the two levels): a sample of the series' future given its present, for ``OINCEnv.fork``."""
    low, high = 0.25, 0.75
    on = (level_x + level_y) / 2.0 > (low + high) / 2.0
    burst_u = rng.random((steps, level_x.size))
    noise = rng.standard_normal((2, steps, level_x.size)) * noise_std
    x = np.empty((steps, level_x.size))
    y = np.empty((steps, level_x.size))
    _burst_ar_levels(on, burst_u, noise, float(burst_prob), 1.0 - float(burst_persistence), float(ar_coef), low, high,
                     np.asarray(level_x, float), np.asarray(level_y, float), x, y)
    return x, y


@numba.njit(cache=True)
def _burst_ar_levels(on, burst_u, noise, enter, leave, ar_coef, low, high, start_x, start_y, x, y):  # pragma: no cover
    """The per-slot recursion of ``synthetic_unit_series`` from the levels ``start_x``, ``start_y``, device by
    device: the same floating-point operations in the same order as the numpy loop it replaces (no fastmath), so
    the same series, bit for bit, about 15x faster (the loop over slots dominated every reset)."""
    horizon, num_devices = burst_u.shape
    for i in range(num_devices):
        state = on[i]
        level_x = start_x[i]
        level_y = start_y[i]
        for t in range(horizon):
            u = burst_u[t, i]
            state = (u >= leave) if state else (u < enter)
            target = high if state else low
            level_x = ar_coef * level_x + (1.0 - ar_coef) * target + noise[0, t, i]
            level_y = ar_coef * level_y + (1.0 - ar_coef) * target + noise[1, t, i]
            level_x = min(max(level_x, 0.0), 1.0)
            level_y = min(max(level_y, 0.0), 1.0)
            x[t, i] = level_x
            y[t, i] = level_y


def _stretch(times: np.ndarray, values: np.ndarray, horizon: int) -> np.ndarray:
    """Linear interpolation of one series onto ``horizon`` equally spaced points over its time span."""
    if times.size == 1:
        return np.full(horizon, values[0])
    grid = np.linspace(times[0], times[-1], horizon)
    return np.interp(grid, times, values)


def load_trace_csv(path: str | Path, horizon: int) -> tuple[list[str], np.ndarray, np.ndarray, str]:
    """Read a trace CSV (columns documented in the module docstring).

    Returns:
        (device labels, (T, N) first series, (T, N) second series, kind) where kind is ``"absolute"``
        (data in MB, workload in Mcycles) or ``"raw"`` (usage values to be min-max normalised).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"trace_path={str(path)!r} is invalid: expected an existing CSV file")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields = [f.strip() for f in (reader.fieldnames or [])]
        if "device" not in fields or "time" not in fields:
            raise ValueError(
                f"trace_path={str(path)!r} has columns {fields}: expected 'device', 'time' and either "
                f"{list(ABSOLUTE_COLUMNS)} or {list(RAW_COLUMNS)}"
            )
        if all(c in fields for c in ABSOLUTE_COLUMNS):
            kind, cols = "absolute", ABSOLUTE_COLUMNS
        elif all(c in fields for c in RAW_COLUMNS):
            kind, cols = "raw", RAW_COLUMNS
        else:
            raise ValueError(
                f"trace_path={str(path)!r} has columns {fields}: expected either {list(ABSOLUTE_COLUMNS)} "
                f"or {list(RAW_COLUMNS)} next to 'device' and 'time'"
            )
        series: dict[str, list[tuple[float, float, float]]] = {}
        for line_no, row in enumerate(reader, start=2):
            row = {k.strip(): v for k, v in row.items() if k is not None}
            try:
                sample = (float(row["time"]), float(row[cols[0]]), float(row[cols[1]]))
            except (TypeError, ValueError):
                raise ValueError(f"trace_path={str(path)!r} line {line_no}: non-numeric value in {row}") from None
            if not all(np.isfinite(sample)):
                raise ValueError(f"trace_path={str(path)!r} line {line_no}: non-finite value in {row}")
            series.setdefault(row["device"].strip(), []).append(sample)
    if not series:
        raise ValueError(f"trace_path={str(path)!r} has no data rows")
    labels = sorted(series)
    first = np.empty((horizon, len(labels)))
    second = np.empty((horizon, len(labels)))
    for n, label in enumerate(labels):
        arr = np.asarray(sorted(series[label]), dtype=float)
        first[:, n] = _stretch(arr[:, 0], arr[:, 1], horizon)
        second[:, n] = _stretch(arr[:, 0], arr[:, 2], horizon)
    return labels, first, second, kind


def minmax_per_column(values: np.ndarray) -> np.ndarray:
    """Min-max normalise each column to [0, 1] (a constant column maps to 0.5)."""
    lo = values.min(axis=0, keepdims=True)
    span = values.max(axis=0, keepdims=True) - lo
    return np.where(span > 0, (values - lo) / np.where(span > 0, span, 1.0), 0.5)
