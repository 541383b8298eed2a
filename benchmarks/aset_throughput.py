"""ASET-v0 simulation throughput: decision windows (10 s of simulated traffic, 20 sub-windows) per second.

    python benchmarks/aset_throughput.py [seconds]

``measure(seconds)`` is what benchmarks/env_throughput.py imports: windows per second on the default
full-edge topology at lambda = 60 (about 1000 live streams, 16,000 queries/s), uniformly random actions,
after a 60-window warm-up so the system holds its steady-state stream population.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    for topology in ("dc-cloud", "co-dc-cloud", "full-edge"):
        for lam in (60.0, 100.0):
            rate = measure(seconds, topology, lam)
            print(f"ASET-v0 {topology:12s} lambda={lam:5.0f}: {rate:7.1f} windows/s ({rate * 10 / 3600:.2f} simulated hours/s)")


if __name__ == "__main__":
    main()
