"""OINC-v0 slots per second at I = 40, J = 12 (the paper's default) under a uniformly random policy.

    python -m benchmarks.oinc_throughput [seconds=5] [retraining=aret]     # -h lists the keys

The env is created with ``gym.make`` (the same wrapper overhead as every other benchmark) and auto-reset
at the end of each 200-slot episode, so the figure includes resets and the end-of-episode drain phase.
``measure(seconds)`` is what benchmarks/env_throughput.py imports. Also prints the decision time of the
heuristic inference policies (ms per slot; the paper reports < 5 s per 200-slot run for OINC).
Timings are machine-dependent.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import envs  # noqa: F401  (registers the ids)


def measure(seconds: float, retraining: str = "aret", seed: int = 0) -> float:
    """Random-policy OINC-v0 slots per second over about ``seconds`` of wall time (I = 40, J = 12)."""
    env = gym.make("OINC-v0", retraining=retraining, scenario_overrides={"num_devices": 40, "num_edges": 12})
    rng = np.random.default_rng(seed)
    nvec = env.action_space.nvec
    env.reset(seed=seed)
    actions = rng.integers(0, nvec, size=(1024, nvec.size))
    slots, episode = 0, 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for k in range(256):
            _, _, terminated, truncated, _ = env.step(actions[(slots + k) % 1024])
            if terminated or truncated:
                episode += 1
                env.reset(seed=seed + episode)
        slots += 256
        if time.perf_counter() >= deadline:
            break
    return slots / (time.perf_counter() - start)


def decision_ms(policy_name: str, episodes: int = 2) -> float:
    """Mean milliseconds per ``act`` call of a registered OINC-v0 policy."""
    from offline.protocol import run_episode
    from offline.registry import make_policy

    env = gym.make("OINC-v0")
    policy = make_policy("OINC-v0", policy_name, env)
    times: list[float] = []
    for e in range(episodes):
        times += run_episode(env, policy, seed=e, time_decisions=True).decision_seconds
    return 1e3 * float(np.mean(times))


@dataclass
class Options:
    seconds: float = 5.0  # wall time of the slots-per-second measurement
    retraining: str = "aret"  # retraining controller: aret | kalmia | ekya | dedas | zhang

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"seconds={self.seconds} is invalid: expected a number > 0")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    rate = measure(args.seconds, retraining=args.retraining)
    print(f"OINC-v0 (I=40, J=12, retraining={args.retraining}, random policy): {rate:,.0f} slots/s")
    for name in ("greedy", "liu", "nearest"):
        print(f"  {name:8s} decision time: {decision_ms(name):.3f} ms/slot")


if __name__ == "__main__":
    main()
