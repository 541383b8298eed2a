"""RESCUE's offline stage and online decision time at the paper's largest scale (figures, never asserted).

    python -m benchmarks.offline_stage                # K=7, J=18, L=8, T=200: LP build, LP solve, values, decisions
    python -m benchmarks.offline_stage repeats=3      # solve the largest LP 3 times (median wall and CPU)
    python -m benchmarks.offline_stage compare=true   # + aggregated vs direct convolution, IPM vs dual simplex
                                                      #   on the default preset (K=4, J=14, L=4, T=200; slow),
                                                      #   alternated in one run, ratios to aggregated + IPM
    python -m benchmarks.offline_stage seed=3 episodes=5 write=false     # -h lists the keys

Prints wall and CPU (process) seconds: on a shared machine the CPU time is the steadier figure. The LP solve is
split into HiGHS's interior-point iterations and seconds per iteration (what bounds the offline stage). Writes its
rows to outputs/benchmarks/performance.csv (``publish=true``: the checked-in results/benchmarks/performance.csv and
docs/performance.md; ``benchmarks.results``) unless ``write=false``. The goal of
issue 15 (offline stage ≤ 5 s at the largest scale) is written as a row too, with the measured ratio to it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

import envs  # noqa: F401
from envs.uec.generator import PRESETS, generate_instance
from envs.uec.types import Instance
from offline.uec.lp import LPSolution, solve_lp
from offline.uec.policies import RescuePolicy
from offline.uec.values import value_functions

LARGEST: dict[str, int] = {"num_servers": 7, "num_devices": 18, "num_profiles": 8, "horizon": 200}
GOAL_SECONDS = 5.0  # issue 15: RESCUE's offline stage at the largest scale
#: (formulation, method) pairs of ``compare=true``; the first is solve_lp's default, the reference of the ratios.
VARIANTS: tuple[tuple[str, str], ...] = (("aggregated", "highs-ipm"), ("direct", "highs-ipm"), ("aggregated", "highs-ds"))


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float, float]:
    """``(fn(*args, **kwargs), wall seconds, CPU seconds of this process)``."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def make_instance(overrides: dict[str, Any], seed: int) -> Instance:
    """The paper preset with ``overrides``, drawn with ``seed``; its profit table (not part of RESCUE) is built."""
    inst = generate_instance(PRESETS["paper"].replace(**overrides), np.random.default_rng(seed))
    inst.expected_profit  # noqa: B018  (the instance's cached profit table is not part of RESCUE's offline stage)
    return inst


def offline_stage(inst: Instance, repeats: int, label: str) -> list[dict[str, object]]:
    """Build + solve P1-LP ``repeats`` times (median), then the value functions; print and return the rows."""
    runs: list[tuple[LPSolution, float, float]] = [timed(solve_lp, inst) for _ in range(repeats)]
    lp = runs[0][0]
    build = statistics.median(r[0].build_seconds for r in runs)
    solve = statistics.median(r[0].solve_seconds for r in runs)
    wall = statistics.median(r[1] for r in runs)
    cpu = statistics.median(r[2] for r in runs)
    values = [r[0].value for r in runs]
    (_, _), vwall, vcpu = timed(value_functions, inst, lp.y)
    total = build + solve + vwall
    m = lp.model
    print(f"{inst.describe()}  [{m.formulation}, highs-ipm, median of {repeats}]")
    print(f"  LP size           {m.num_variables} variables, {m.num_constraints} constraints, {m.nnz} non-zeros")
    print(f"  LP build          {build:8.3f} s")
    print(f"  LP solve (HiGHS)  {solve:8.3f} s   (build + solve: wall {wall:.3f} s, CPU {cpu:.3f} s)")
    per_iteration = solve / max(lp.iterations, 1)
    print(f"    of which        {lp.iterations} interior-point iterations ({per_iteration:.3f} s each), "
          f"{lp.crossover_iterations} crossover iterations")
    print(f"  value functions   {vwall:8.3f} s   (CPU {vcpu:.3f} s)")
    print(f"  offline total     {total:8.3f} s wall, {cpu + vcpu:.3f} s CPU   (goal {GOAL_SECONDS:g} s: x{total / GOAL_SECONDS:.2f})")
    print(f"  OPT(LP) = {lp.value:.6f}" + (f"  (spread over repeats {max(values) - min(values):.2e})" if repeats > 1 else ""))
    goal = "offline-stage goal (issue 15)"
    return [
        {"quantity": f"{label}: LP variables", "value": m.num_variables, "unit": "variables"},
        {"quantity": f"{label}: LP constraints", "value": m.num_constraints, "unit": "rows"},
        {"quantity": f"{label}: LP non-zeros", "value": m.nnz, "unit": "non-zeros"},
        {"quantity": f"{label}: LP build", "value": build, "unit": "s"},
        {"quantity": f"{label}: LP solve (aggregated, highs-ipm)", "value": solve, "unit": "s"},
        {"quantity": f"{label}: LP build + solve CPU", "value": cpu, "unit": "s CPU"},
        {"quantity": f"{label}: LP interior-point iterations", "value": lp.iterations, "unit": "iterations"},
        {"quantity": f"{label}: LP solve per interior-point iteration", "value": per_iteration, "unit": "s"},
        {"quantity": f"{label}: value functions", "value": vwall, "unit": "s"},
        {"quantity": f"{label}: offline total", "value": total, "unit": "s", "ratio_to": goal, "ratio": total / GOAL_SECONDS},
        {"quantity": goal, "value": GOAL_SECONDS, "unit": "s"},
        {"quantity": f"{label}: OPT(LP)", "value": lp.value, "unit": "expected profit"},
    ]


def decision_times(overrides: dict[str, Any], seed: int, episodes: int, label: str) -> list[dict[str, object]]:
    """RESCUE's per-decision time (median and p99 in µs) over ``episodes`` episodes on one instance."""
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
    median, p99 = statistics.median(times_us), float(np.percentile(times_us, 99))
    print(f"  RESCUE online decision: median {median:.2f} µs, p99 {p99:.2f} µs over {times_us.size} decisions "
          f"({episodes} episodes)")
    return [
        {"quantity": f"{label}: RESCUE decision median", "value": median, "unit": "µs"},
        {"quantity": f"{label}: RESCUE decision p99", "value": p99, "unit": "µs"},
    ]


def compare_variants(inst: Instance, repeats: int, label: str) -> list[dict[str, object]]:
    """Solve P1-LP with every pair of :data:`VARIANTS`, alternated ``repeats`` times in one run (median wall and
    CPU); rows carry the ratio to the first (solve_lp's default) and the largest relative OPT(LP) difference."""
    walls: dict[tuple[str, str], list[float]] = {v: [] for v in VARIANTS}
    cpus: dict[tuple[str, str], list[float]] = {v: [] for v in VARIANTS}
    opts: dict[tuple[str, str], float] = {}
    for rep in range(repeats):
        order = VARIANTS if rep % 2 == 0 else VARIANTS[::-1]
        for formulation, method in order:
            lp, wall, cpu = timed(solve_lp, inst, formulation=formulation, method=method)
            walls[formulation, method].append(wall)
            cpus[formulation, method].append(cpu)
            opts[formulation, method] = lp.value
    ref = VARIANTS[0]
    ref_wall, ref_cpu = statistics.median(walls[ref]), statistics.median(cpus[ref])
    print(f"{inst.describe()}  [build + solve, median of {repeats}, alternated]")
    rows: list[dict[str, object]] = []
    for variant in VARIANTS:
        wall, cpu = statistics.median(walls[variant]), statistics.median(cpus[variant])
        name = f"{label}: LP build + solve ({variant[0]}, {variant[1]})"
        ref_name = f"{label}: LP build + solve ({ref[0]}, {ref[1]})"
        print(f"  {variant[0]:>10} {variant[1]:<9}  wall {wall:8.3f} s (x{wall / ref_wall:5.2f})   "
              f"CPU {cpu:8.3f} s (x{cpu / ref_cpu:5.2f})   OPT(LP) {opts[variant]:.8f}")
        rows.append({"quantity": name, "value": wall, "unit": "s", "ratio_to": ref_name, "ratio": wall / ref_wall})
        rows.append({"quantity": name + " CPU", "value": cpu, "unit": "s CPU", "ratio_to": ref_name + " CPU",
                     "ratio": cpu / ref_cpu})
    gap = max(abs(v - opts[ref]) for v in opts.values()) / max(abs(opts[ref]), 1e-12)
    print(f"  largest relative OPT(LP) difference to {ref[0]}/{ref[1]}: {gap:.2e}")
    rows.append({"quantity": f"{label}: max relative OPT(LP) difference between variants", "value": gap, "unit": "1"})
    return rows


@dataclass
class Options:
    seed: int = 0  # instance seed
    episodes: int = 20  # episodes for the decision-time measurement
    repeats: int = 1  # solves per measurement (median); the compare variants alternate in each repeat
    compare: bool = False  # also compare formulations and HiGHS methods on the default preset
    write: bool = True  # write the rows to outputs/benchmarks/performance.csv
    publish: bool = False  # true: write the checked-in results/benchmarks/performance.csv and docs/performance.md

    def __post_init__(self) -> None:
        if self.seed < 0 or self.episodes < 1 or self.repeats < 1:
            raise ValueError(f"seed={self.seed}, episodes={self.episodes}, repeats={self.repeats} are invalid: "
                             "expected seed >= 0, episodes >= 1, repeats >= 1")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    label = "largest K=7 J=18 L=8 T=200"
    print("== RESCUE offline stage at the paper's largest scale ==")
    rows = offline_stage(make_instance(LARGEST, args.seed), args.repeats, label)
    rows += decision_times(LARGEST, args.seed, args.episodes, label)
    if args.compare:
        print("\n== formulations and methods on the default preset ==")
        rows += compare_variants(make_instance({}, args.seed), args.repeats, "default K=4 J=14 L=4 T=200")
    if args.write:
        from benchmarks.results import write_rows

        write_rows("offline_stage", rows, publish=args.publish)


if __name__ == "__main__":
    main()
