"""ASET-v0 simulation throughput: decision windows (10 s of simulated traffic, 20 sub-windows) per second.

    python -m benchmarks.aset_throughput [seconds=5] [compare=false] [rounds=3] [write=true]   # -h lists the keys

``measure(seconds)`` is what benchmarks/env_throughput.py imports: windows per second on the default
full-edge topology at lambda = 60 (about 1000 live streams, 16,000 queries/s), uniformly random actions,
after a 60-window warm-up so the system holds its steady-state stream population.

``compare=true`` measures the current simulator against the one before issue 17's speed-up in the same run
(full-edge, lambda = 60 and 100): the old one is the verbatim reference copy that
tests/aset/test_aset_fast_equals_reference.py checks the new one against, patched into the env. The two
alternate in ``rounds`` short measurements each (so machine load affects both alike); the median rates
and their ratio are printed and (unless ``write=false``) written to outputs/benchmarks/performance.csv
(``publish=true``: the checked-in results/benchmarks/performance.csv and docs/performance.md).
"""

from __future__ import annotations

import contextlib
import importlib.util
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import envs.aset.env as aset_env
from envs.aset.env import ASETEnv

WARMUP_WINDOWS = 60
REFERENCE_FILE = Path(__file__).resolve().parent.parent / "tests" / "aset" / "test_aset_fast_equals_reference.py"


def measure(seconds: float, topology: str = "full-edge", lam: float = 60.0) -> float:
    """Windows per second of ASET-v0 (steady state, random actions) over about ``seconds`` of wall time."""
    env = ASETEnv(topology=topology, lam=lam, theta=0.0, horizon=10**5)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(WARMUP_WINDOWS):
        env.step(int(rng.integers(7)))
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds or steps == 0:
        env.step(int(rng.integers(7)))
        steps += 1
    return steps / elapsed


def reference_simulate_window() -> Callable[..., Any]:
    """The pre-speed-up ``simulate_window`` kept (verbatim) by the equality test."""
    spec = importlib.util.spec_from_file_location("_aset_reference", REFERENCE_FILE)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{REFERENCE_FILE} is missing: compare=true needs the reference implementation")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._reference_simulate_window


@contextlib.contextmanager
def simulator(fn: Callable[..., Any] | None) -> Iterator[None]:
    """Run ASETEnv with ``fn`` as its simulate_window (None: the current one)."""
    current = aset_env.simulate_window
    aset_env.simulate_window = fn or current
    try:
        yield
    finally:
        aset_env.simulate_window = current


def compare(seconds: float, rounds: int, lams: Sequence[float] = (60.0, 100.0)) -> list[dict[str, object]]:
    """Old vs new windows/s on full-edge at each lambda, alternating ``rounds`` times; result rows."""
    old_fn = reference_simulate_window()
    rows: list[dict[str, object]] = []
    for lam in lams:
        rates: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(rounds):
            for name, fn in (("old", old_fn), ("new", None)):
                with simulator(fn):
                    rates[name].append(measure(seconds, "full-edge", lam))
        old, new = statistics.median(rates["old"]), statistics.median(rates["new"])
        print(f"ASET-v0 full-edge lambda={lam:5.0f}: old {old:7.1f}  new {new:7.1f} windows/s  "
              f"ratio {new / old:.2f}x  (medians of {rounds}; old {[round(r) for r in rates['old']]}, "
              f"new {[round(r) for r in rates['new']]})")
        quantity = f"full-edge lambda={lam:g} windows/s"
        rows.append({"quantity": f"{quantity} (before issue 17)", "value": old, "unit": "windows/s"})
        rows.append({"quantity": quantity, "value": new, "unit": "windows/s", "ratio_to": "before issue 17",
                     "ratio": new / old})
    return rows


@dataclass
class Options:
    seconds: float = 5.0  # wall time per (topology, lambda) measurement; per round with compare=true
    compare: bool = False  # old (pre-issue-17 reference) vs new simulator, full-edge, lambda 60 and 100
    rounds: int = 3  # alternating old/new measurements per lambda with compare=true
    write: bool = True  # with compare=true: write the rows to outputs/benchmarks/performance.csv
    publish: bool = False  # true: write the checked-in results/benchmarks/performance.csv and docs/performance.md

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"seconds={self.seconds} is invalid: expected a number > 0")
        if not self.rounds >= 1:
            raise ValueError(f"rounds={self.rounds} is invalid: expected an integer >= 1")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    if args.compare:
        rows = compare(args.seconds, args.rounds)
        if args.write:
            from benchmarks.results import write_rows

            write_rows("aset_throughput", rows, publish=args.publish)
        return
    for topology in ("dc-cloud", "co-dc-cloud", "full-edge"):
        for lam in (60.0, 100.0):
            rate = measure(args.seconds, topology, lam)
            print(f"ASET-v0 {topology:12s} lambda={lam:5.0f}: {rate:7.1f} windows/s ({rate * 10 / 3600:.2f} simulated hours/s)")


if __name__ == "__main__":
    main()
