"""CoRaiS-v1 dispatchers from training runs against ``list_greedy_ls`` on the same test instances.

    python -m benchmarks.corais_model_size "runs=[runs/corais_v1_10-5-100,runs/corais_v1_paper_10-5-100]"

For each run folder (``agents/corais/trainer.py`` output; its ``model_best.pt``) and each decoding (greedy,
best of 1,000 samples): the mean, min and max over the test seeds of cost / ``list_greedy_ls``'s cost, the
model's parameter count. Written to ``outputs/corais/model_size.csv`` (``publish=true``: the checked-in
``results/corais/model_size.csv``; a checked-in ``out=`` needs ``publish=true``) with
the command, so the comparison of the paper-sized network (docs/envs/corais.md) with the CPU recipe comes from a file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Options:
    runs: list[str] = field(default_factory=list)  # trainer run folders
    scale: list[int] = field(default_factory=lambda: [10, 5, 100])  # (N, Q, Z)
    seed: int = 10_000  # first test seed
    instances: int = 20  # test seeds seed, seed + 1, ...
    out: str = ""  # "" = outputs/corais/model_size.csv (git-ignored; publish=true: results/corais/model_size.csv)
    publish: bool = False  # true: out may be (and by default is) the checked-in file

    def __post_init__(self) -> None:
        from offline.provenance import check_output_path

        self.out = self.out or f"{'results' if self.publish else 'outputs'}/corais/model_size.csv"
        check_output_path(ROOT / self.out, publish=self.publish)  # first: a checked-in file changes only on purpose
        if not self.runs:
            raise ValueError("runs=[] is invalid: expected one or more CoRaiS training run folders")
        if len(self.scale) != 3 or min(self.scale) < 1 or self.instances < 1 or self.seed < 0:
            raise ValueError(f"scale={list(self.scale)}, instances={self.instances}, seed={self.seed}: expected "
                             "[N, Q, Z] each >= 1, instances >= 1, seed >= 0")
        for run in self.runs:
            if not (Path(run) / "model_best.pt").is_file():
                raise ValueError(f"runs entry {run!r} has no model_best.pt: expected a CoRaiS training run folder")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    import gymnasium as gym

    import envs  # noqa: F401
    from agents.corais.policy import load_corais_policy
    from offline.corais.policies import ListGreedyPolicy

    env = gym.make("CoRaiS-v1", scale=tuple(args.scale))
    seeds = range(args.seed, args.seed + args.instances)

    def costs(policy) -> np.ndarray:
        out = []
        for s in seeds:
            obs, info = env.reset(seed=s)
            policy.reset(env, seed=s)
            _, reward, *_ = env.step(policy.act(obs, info))
            out.append(-reward)
        return np.array(out)

    reference = costs(ListGreedyPolicy(local_search=True))
    rows = []
    for run in args.runs:
        config = json.loads((Path(run) / "corais_config.json").read_text())
        for samples in (None, 1000):
            ratio = costs(load_corais_policy(run, env, samples=samples, checkpoint="model_best.pt")) / reference
            row = {"run": run, "decoding": "greedy" if samples is None else f"best of {samples}",
                   "parameters": config.get("parameters", ""), "mean_vs_list_greedy_ls": f"{ratio.mean():.4f}",
                   "min": f"{ratio.min():.4f}", "max": f"{ratio.max():.4f}", "instances": args.instances,
                   "scale": "x".join(map(str, args.scale))}
            rows.append(row)
            print(row)
    from benchmarks.results import write_csv

    out = write_csv(ROOT / args.out, rows)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
