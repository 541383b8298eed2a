"""Cost against decision time of the constructive CoRaiS dispatcher as its number of multi-start rollouts grows.

    python -m benchmarks.corais_pomo_starts run=agents/pretrained/corais-v1-pomo "scale=[20,10,100]" \\
        "starts=[1,10,25,50,100]" instances=30

Plays ``PomoDispatcher`` with P = each of ``starts`` (``budget`` lifted, so P is what is asked, capped at Q^2) on the
tuning instances of CoRaiS-v1 at ``scale`` (seeds 900.., ``offline.partition``'s tuning set: never a reported set),
and ``list_greedy`` / ``list_greedy_ls`` on the same instances. Prints per row the mean cost divided by
``list_greedy_ls``'s and the median decision time (one thread; quote it from a quiet machine). Rows also go to
``outputs/benchmarks/corais_pomo_starts.csv``. It is how the shipped P = 100 (``budget`` 100,000 edge evaluations)
was placed: the most starts inside the 50 ms target at (20, 10, 100).
"""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from agents.cli import parse_cli
from agents.corais.pomo import dispatch, scenario_instances
from agents.corais.pomo_train import load_net
from envs.corais.dynamics import dispatch_cost
from envs.corais.types import Instance
from offline.corais.greedy import list_greedy, list_greedy_ls

OUT = Path("outputs/benchmarks/corais_pomo_starts.csv")
TUNING_BASE = 900


@dataclass
class Options:
    """Command-line keys (module docstring)."""

    run: str = "agents/pretrained/corais-v1-pomo"
    scale: list[int] = field(default_factory=lambda: [20, 10, 100])
    starts: list[int] = field(default_factory=lambda: [1, 10, 25, 50, 100])
    instances: int = 30


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    opts = parse_cli(Options, list(sys.argv[1:] if argv is None else argv))
    torch.set_num_threads(1)
    net, _ = load_net(Path(opts.run) / "model.pt")
    instances = scenario_instances("CoRaiS-v1", tuple(opts.scale),  # type: ignore[arg-type]
                                   np.arange(TUNING_BASE, TUNING_BASE + opts.instances))
    reference = np.array([float(dispatch_cost(i, list_greedy_ls(i))) for i in instances])
    rows = []

    def row(name: str, decide: Callable[[Instance], np.ndarray]) -> None:
        costs, times = [], []
        for inst in instances:
            start = time.perf_counter()
            action = decide(inst)
            times.append(time.perf_counter() - start)
            costs.append(float(dispatch_cost(inst, action)))
        rows.append({"policy": name, "cost_vs_list_greedy_ls": float(np.mean(np.array(costs) / reference)),
                     "median_ms": 1e3 * float(np.median(times))})
        print(f"{name:>24}  {rows[-1]['cost_vs_list_greedy_ls']:.4f}  {rows[-1]['median_ms']:8.1f} ms", flush=True)

    row("list_greedy", list_greedy)
    row("list_greedy_ls", list_greedy_ls)
    dispatch(net, instances[0], 1)  # warm-up
    for p in opts.starts:
        row(f"corais_pomo P={p}", lambda inst, p=p: dispatch(net, inst, p, budget=10**12))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return rows


if __name__ == "__main__":
    main()
