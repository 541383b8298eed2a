"""Environment decisions per second against Gymnasium's CartPole-v1, measured in the same run.

    python -m benchmarks.env_throughput [seconds=5]     # -h lists the keys

UEC-v0 runs its default ("paper") preset with the instance fixed, under a uniformly random *feasible*
policy (the mask is read from ``info["action_mask"]``); CartPole-v1 runs random actions. Both are
created with ``gym.make`` (so both pay the same wrapper overhead), auto-reset at episode end, and are
measured in alternating bursts so that both see the same load.
Other envs report their own unit (OINC-v0: slots, ASET-v0: windows) when their benchmark is present.
Timings are machine-dependent: quote the ratio, measured in one run.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import envs  # noqa: F401  (registers the ids)


class RandomRunner:
    """Steps ``env_id`` under a random (feasible, if ``masked``) policy, auto-resetting episodes."""

    def __init__(self, env_id: str, masked: bool, seed: int = 0, **kwargs) -> None:
        self.env = gym.make(env_id, **kwargs)
        self.masked, self.seed, self.episode = masked, seed, 0
        self.rng = np.random.default_rng(seed)
        self.n_actions = self.env.action_space.n
        _, self.info = self.env.reset(seed=seed)
        self.steps, self.seconds = 0, 0.0

    def run(self, steps: int) -> None:
        env, rng, info = self.env, self.rng, self.info
        start = time.perf_counter()
        for _ in range(steps):
            if self.masked:
                feasible = np.flatnonzero(info["action_mask"])
                action = int(feasible[rng.integers(feasible.size)])
            else:
                action = int(rng.integers(self.n_actions))
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                self.episode += 1
                _, info = env.reset(seed=self.seed + self.episode)
        self.seconds += time.perf_counter() - start
        self.steps += steps
        self.info = info

    @property
    def rate(self) -> float:
        return self.steps / self.seconds


def interleaved_rates(seconds: float, rounds: int = 20) -> tuple[float, float]:
    """CartPole-v1 and UEC-v0 steps per second, measured in alternating bursts so that both see the
    same machine load (the ratio is what to quote)."""
    cartpole, uec = RandomRunner("CartPole-v1", masked=False), RandomRunner("UEC-v0", masked=True)
    cartpole.run(500)  # warm-up
    uec.run(200)
    cartpole.steps = uec.steps = 0
    cartpole.seconds = uec.seconds = 0.0
    burst = max(0.01, seconds / rounds)
    for _ in range(rounds):
        for runner, chunk in ((cartpole, 2000), (uec, 500)):
            deadline = time.perf_counter() + burst
            while time.perf_counter() < deadline:
                runner.run(chunk // 10)
    return cartpole.rate, uec.rate


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


@dataclass
class Options:
    seconds: float = 5.0  # wall time per measurement

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"seconds={self.seconds} is invalid: expected a number > 0")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    cartpole, uec = interleaved_rates(args.seconds)
    print(f"CartPole-v1: {cartpole:12,.0f} steps/s")
    print(f"UEC-v0     : {uec:12,.0f} decisions/s  (paper preset, fixed instance, random feasible policy)")
    print(f"ratio UEC-v0 / CartPole-v1 = {uec / cartpole:.3f}  (goal >= 0.25)")
    for label, (unit, measure) in optional_benchmarks().items():
        print(f"{label}: {measure(args.seconds):12,.1f} {unit}")


if __name__ == "__main__":
    main()
