"""The retraining share of an OINC learner's pair, chosen on the tuning instances only (as the heuristics' shares are).

    python -m benchmarks.oinc_student_share run=runs/oinc_dagger/<run> "shares=[0.8,0.81,0.815,0.82,0.83,0.8377]"
    python -m benchmarks.oinc_student_share run=slo_liu_ls "shares=[0.8377]"     # a registered inference policy

Plays the learner (a run folder of ``algo=oinc_prior`` / ``oinc_dagger``, or a registered inference policy name) beside
Ekya at each share on the tuning set (``offline.partition.tuning_set``: instances 900.., seed 77; never a reported
set) and prints per share the mean ``slo_weighted_sum`` (the ladder's metric, lower is better) and the lowest and mean
SLO hit rate. Rows also go to ``outputs/benchmarks/oinc_student_share.csv``. The metric is a cliff at the 0.9 hit
rate, so the best share is the highest one whose episodes all stay above it.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agents.cli import parse_cli
from envs.oinc.env import OINCEnv
from offline import partition
from offline.oinc.evaluation import slo_weighted_sum
from offline.protocol import episode_seed, run_episode
from offline.registry import make_policy

OUT = Path("outputs/benchmarks/oinc_student_share.csv")


@dataclass
class Options:
    """Command-line keys (module docstring)."""

    run: str = ""
    shares: list[float] = field(default_factory=lambda: [0.8, 0.81, 0.82, 0.83])
    instances: int = 5
    episodes: int = 2


def main(argv: list[str]) -> None:
    opts = vars(parse_cli(Options, argv))
    if not opts["run"]:
        raise ValueError("run= is required: a run folder of algo=oinc_prior / oinc_dagger or an inference policy name")
    shares = [float(s) for s in opts["shares"]]
    if not shares or any(not 0.0 < s < 1.0 for s in shares):
        raise ValueError(f"shares={opts['shares']} is invalid: expected a non-empty list of numbers in (0, 1)")
    chosen = partition.tuning_set(int(opts["instances"]), int(opts["episodes"]))
    rows = []
    for share in shares:
        values, hits = [], []
        for index in range(chosen.instances):
            env = OINCEnv(instance_seed=chosen.instance_base + index, retraining="ekya", retraining_share=share)
            if Path(opts["run"]).is_dir():
                from agents.oinc.prior import load_policy

                policy = load_policy(Path(opts["run"]), env)
            else:
                policy = make_policy("OINC-v0", opts["run"], env)
            for episode in range(chosen.episodes):
                info = run_episode(env, policy, seed=episode_seed(chosen.seed, index, episode)).final_info
                values.append(slo_weighted_sum(info["weighted_sum"], info["slo_hit_rate"]))
                hits.append(float(info["slo_hit_rate"]))
        rows.append({"run": opts["run"], "share": share, "slo_weighted_sum": float(np.mean(values)),
                     "min_hit_rate": float(np.min(hits)), "mean_hit_rate": float(np.mean(hits)),
                     "episodes": len(values)})
        print(f"share {share:.4f}: slo_weighted_sum {rows[-1]['slo_weighted_sum']:.3f}, hit rate min "
              f"{rows[-1]['min_hit_rate']:.3f} mean {rows[-1]['mean_hit_rate']:.3f}", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    new = not OUT.is_file()
    with OUT.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)
    print(OUT)


if __name__ == "__main__":
    main(sys.argv[1:])
