"""ASET-v0 simulation throughput: decision windows (10 s of simulated traffic, 20 sub-windows) per second.

    python -m benchmarks.aset_throughput [seconds=5]     # -h lists the keys

``measure(seconds)`` is what benchmarks/env_throughput.py imports: windows per second on the default
full-edge topology at lambda = 60 (about 1000 live streams, 16,000 queries/s), uniformly random actions,
after a 60-window warm-up so the system holds its steady-state stream population.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from envs.aset.env import ASETEnv

WARMUP_WINDOWS = 60


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


@dataclass
class Options:
    seconds: float = 5.0  # wall time per (topology, lambda) measurement

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"seconds={self.seconds} is invalid: expected a number > 0")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(lambda args: _main(args.seconds), Options, __doc__, argv)


def _main(seconds: float) -> None:
    for topology in ("dc-cloud", "co-dc-cloud", "full-edge"):
        for lam in (60.0, 100.0):
            rate = measure(seconds, topology, lam)
            print(f"ASET-v0 {topology:12s} lambda={lam:5.0f}: {rate:7.1f} windows/s ({rate * 10 / 3600:.2f} simulated hours/s)")


if __name__ == "__main__":
    main()
