"""RESCUE's offline stage and online decision time at the paper's largest scale (figures, never asserted).

    python -m benchmarks.offline_stage                # K=7, J=18, L=8, T=200: LP build, LP solve, values, decisions
    python -m benchmarks.offline_stage compare=true   # + aggregated vs direct convolution, IPM vs dual simplex
                                                      #   on the default preset (K=4, J=14, L=4, T=200; slow)
    python -m benchmarks.offline_stage seed=3 episodes=5     # -h lists the keys

Prints wall and CPU (process) seconds: on a shared machine the CPU time is the steadier figure.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import envs  # noqa: F401
from envs.uec.generator import PRESETS, generate_instance
from offline.uec.lp import solve_lp
from offline.uec.policies import RescuePolicy
from offline.uec.values import value_functions


def timed(fn, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def offline_stage(overrides: dict, seed: int, formulation: str = "aggregated", method: str = "highs-ipm") -> None:
    scenario = PRESETS["paper"].replace(**overrides)
    inst = generate_instance(scenario, np.random.default_rng(seed))
    inst.expected_profit  # noqa: B018  (the instance's cached profit table is not part of RESCUE's offline stage)
    lp, wall, cpu = timed(solve_lp, inst, formulation=formulation, method=method)
    m = lp.model
    print(f"{inst.describe()}  [{formulation}, {method}]")
    print(f"  LP size           {m.num_variables} variables, {m.num_constraints} constraints, {m.nnz} non-zeros")
    print(f"  LP build          {lp.build_seconds:8.3f} s")
    print(f"  LP solve (HiGHS)  {lp.solve_seconds:8.3f} s   (build + solve: wall {wall:.3f} s, CPU {cpu:.3f} s)")
    (_, _), vwall, vcpu = timed(value_functions, inst, lp.y)
    print(f"  value functions   {vwall:8.3f} s   (CPU {vcpu:.3f} s)")
    print(f"  offline total     {lp.build_seconds + lp.solve_seconds + vwall:8.3f} s wall, {cpu + vcpu:.3f} s CPU")
    print(f"  OPT(LP) = {lp.value:.4f}")


def decision_times(overrides: dict, seed: int, episodes: int) -> None:
    env = gym.make("UEC-v0", scenario_overrides=overrides, instance_seed=seed)
    policy = RescuePolicy()
    times = []
    for e in range(episodes):
        obs, info = env.reset(seed=e)
        policy.reset(env, seed=e)
        done = False
        while not done:
            start = time.perf_counter()
            action = policy.act(obs, info)
            times.append(time.perf_counter() - start)
            obs, _, done, _, info = env.step(action)
    times_us = np.array(times) * 1e6
    print(
        f"  RESCUE online decision: median {statistics.median(times_us):.2f} µs, p99 {np.percentile(times_us, 99):.2f} µs "
        f"over {times_us.size} decisions ({episodes} episodes)"
    )


@dataclass
class Options:
    seed: int = 0  # instance seed
    episodes: int = 20  # episodes for the decision-time measurement
    compare: bool = False  # also compare formulations and HiGHS methods on the default preset

    def __post_init__(self) -> None:
        if self.seed < 0 or self.episodes < 1:
            raise ValueError(f"seed={self.seed}, episodes={self.episodes} are invalid: expected seed >= 0, episodes >= 1")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    largest = {"num_servers": 7, "num_devices": 18, "num_profiles": 8, "horizon": 200}
    print("== RESCUE offline stage at the paper's largest scale ==")
    offline_stage(largest, args.seed)
    decision_times(largest, args.seed, args.episodes)
    if args.compare:
        print("\n== formulations and methods on the default preset ==")
        for formulation, method in (("aggregated", "highs-ipm"), ("direct", "highs-ipm"), ("aggregated", "highs-ds")):
            offline_stage({}, args.seed, formulation, method)


if __name__ == "__main__":
    main()
