"""Throughput of the batched CoRaiS cost R(pi) (numpy and torch), exact-solver time and decision latency.

    python -m benchmarks.corais_cost                  # cost evaluations per second at (10, 5, 100)
    python -m benchmarks.corais_cost latency=true     # + MILP solve time and CoRaiS greedy / 1k decision time
    python -m benchmarks.corais_cost scale=[100,50,800] instances=4 samples=100 seconds=2   # -h lists the keys

Prints figures only (never asserted in tests). One "evaluation" = R(pi) of one full dispatch of Z requests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


def _rate(fn, decisions: int, seconds: float) -> float:
    fn()  # warm-up
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        done += decisions
    return done / (time.perf_counter() - start)


@dataclass
class Options:
    scale: list[int] = field(default_factory=lambda: [10, 5, 100])  # (N, Q, Z)
    instances: int = 10  # B stacked instances
    samples: int = 1000  # S decisions per instance
    seconds: float = 3.0  # wall time per measurement
    latency: bool = False  # also time the MILP and the CoRaiS policy
    write: bool = True  # write rows to outputs/benchmarks/performance.csv
    publish: bool = False  # true: write the checked-in results/benchmarks/performance.csv and docs/performance.md

    def __post_init__(self) -> None:
        if len(self.scale) != 3 or min(self.scale) < 1:
            raise ValueError(f"scale={list(self.scale)} is invalid: expected [N, Q, Z], each >= 1")
        if self.instances < 1 or self.samples < 1 or not self.seconds > 0:
            raise ValueError(f"instances={self.instances}, samples={self.samples}, seconds={self.seconds} are "
                             "invalid: expected instances >= 1, samples >= 1, seconds > 0")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    import torch

    from envs.corais.dynamics import response_times, response_times_torch, stack_tables, tables_to_torch
    from envs.corais.generator import generate, make_scenario

    scenario = make_scenario(tuple(args.scale))
    rng = np.random.default_rng(0)
    insts = [generate(scenario, rng) for _ in range(args.instances)]
    tables = stack_tables([i.tables for i in insts])
    _, q, z = scenario.scale
    acts = rng.integers(0, q, size=(args.instances, args.samples, z))
    decisions = args.instances * args.samples
    print(f"CoRaiS batched cost at scale {scenario.scale}: {args.instances} instances x {args.samples} decisions")
    rate_np = _rate(lambda: response_times(tables, acts), decisions, args.seconds)
    print(f"  numpy             : {rate_np:12,.0f} evaluations/s")
    scale = "(" + ", ".join(str(s) for s in scenario.scale) + ")"
    rows: list[dict] = [{"quantity": f"CoRaiS cost R(pi), batched, {scale}, numpy", "value": rate_np,
                         "unit": "evaluations/s"}]
    for dtype in (torch.float64, torch.float32):
        tt = tables_to_torch(tables, dtype=dtype)
        ta = torch.as_tensor(acts)
        rate = _rate(lambda tt=tt, ta=ta: response_times_torch(*tt, ta), decisions, args.seconds)
        print(f"  torch {str(dtype)[6:]:<12}: {rate:12,.0f} evaluations/s  (torch threads {torch.get_num_threads()})")
        rows.append({"quantity": f"CoRaiS cost R(pi), batched, {scale}, torch {str(dtype)[6:]}, "
                                 f"{torch.get_num_threads()} threads", "value": rate, "unit": "evaluations/s",
                     "ratio_to": "numpy", "ratio": rate / rate_np})

    if args.latency:
        import gymnasium as gym

        import envs  # noqa: F401
        from agents.corais.policy import load_corais_policy
        from offline.corais import solve_exact

        times = [solve_exact(i, time_limit=10.0).seconds for i in insts]
        print(f"  exact MILP (HiGHS, 10 s limit): mean {np.mean(times):.3f} s, max {np.max(times):.3f} s")
        rows.append({"quantity": f"CoRaiS exact MILP (HiGHS, 10 s limit), {scale}, mean over {len(times)} instances",
                     "value": float(np.mean(times)), "unit": "s"})
        env = gym.make("CoRaiS-v0", scale=tuple(args.scale))
        for samples in (None, 1000):
            try:
                policy = load_corais_policy(None, env, samples=samples)
            except ValueError as err:
                print(f"  CoRaiS: {err}")
                break
            lat = []
            for k in range(20):
                obs, info = env.reset(seed=k)
                policy.reset(env, seed=k)
                start = time.perf_counter()
                policy.act(obs, info)
                lat.append(time.perf_counter() - start)
            lat = lat[2:]
            print(f"  {policy.name:<14}: {1000 * np.mean(lat):.1f} ms per decision (std {1000 * np.std(lat):.1f})")
            rows.append({"quantity": f"CoRaiS dispatcher {policy.name} decision, {scale}, CPU",
                         "value": 1000 * float(np.mean(lat)), "unit": "ms"})
    if args.write:
        from benchmarks.results import write_rows

        write_rows("corais_cost", rows, publish=args.publish)


if __name__ == "__main__":
    main()
