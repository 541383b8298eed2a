"""Environment decisions per second against Gymnasium's CartPole-v1, measured in the same run.

    python benchmarks/env_throughput.py [--seconds 5]

UEC-v0 runs its default ("paper") preset with the instance fixed, under a uniformly random *feasible*
policy (the mask is read from ``info["action_mask"]``); CartPole-v1 runs random actions. Both are
created with ``gym.make`` (so both pay the same wrapper overhead) and auto-reset at episode end.
Other envs report their own unit (OINC-v0: slots, ASET-v0: windows) when their benchmark is present.
Timings are machine-dependent: quote the ratio, measured in one run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import envs  # noqa: F401  (registers the ids)


def steps_per_second(env_id: str, seconds: float, masked: bool, seed: int = 0, **kwargs) -> float:
    """Random-policy steps per second of ``env_id`` over about ``seconds`` of wall time."""
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    n_actions = env.action_space.n
    steps, episode = 0, 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    while True:
        for _ in range(256):
            if masked:
                feasible = np.flatnonzero(info["action_mask"])
                action = int(feasible[rng.integers(feasible.size)])
            else:
                action = int(rng.integers(n_actions))
            _, _, terminated, truncated, info = env.step(action)
            steps += 1
            if terminated or truncated:
                episode += 1
                _, info = env.reset(seed=seed + episode)
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def optional_benchmarks() -> dict[str, tuple[str, Callable[[float], float]]]:
    """Per-env benchmarks other modules provide: name -> (unit, measure(seconds) -> rate)."""
    found = {}
    for label, module, unit in (
        ("OINC-v0 (I=40, J=12)", "benchmarks.oinc_throughput", "slots/s"),
        ("ASET-v0 (lambda=60)", "benchmarks.aset_throughput", "windows/s"),
    ):
        try:
            found[label] = (unit, importlib.import_module(module).measure)
        except ImportError:
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="wall time per measurement")
    args = parser.parse_args()
    cartpole = steps_per_second("CartPole-v1", args.seconds, masked=False)
    uec = steps_per_second("UEC-v0", args.seconds, masked=True)
    print(f"CartPole-v1: {cartpole:12,.0f} steps/s")
    print(f"UEC-v0     : {uec:12,.0f} decisions/s  (paper preset, fixed instance, random feasible policy)")
    print(f"ratio UEC-v0 / CartPole-v1 = {uec / cartpole:.3f}  (goal >= 0.25)")
    for label, (unit, measure) in optional_benchmarks().items():
        print(f"{label}: {measure(args.seconds):12,.1f} {unit}")


if __name__ == "__main__":
    main()
