"""What the learned dispatcher adds inside our search (``corais_ils_100ms``), at a fixed kick budget.

    python -m benchmarks.corais_kick_guidance                      # 2 scales, 10 held-out instances x 4 seeds
    python -m benchmarks.corais_kick_guidance publish=true      # the checked-in results/corais/kick_guidance.csv

``corais_ils_100ms`` is ``offline.corais.search.iterated_local_search`` with two things from the shipped
network: its start (the better of the network's greedy dispatch and ``list_greedy``) and its kicks (requests
moved to edges drawn from the network's probabilities). On held-out instances (reset seeds 100..109, as the
ladder) and a fixed budget of ``kicks`` kicks (deterministic, unlike the ladder's wall-clock budget), each
variant's cost is divided by a reference (the same search with ``reference_kicks`` kicks):

- ``uniform``: the plain ILS (``ils_*``'s search): list_greedy start, uniform kicks;
- ``flat``: the guided-kick code with uniform probabilities (a control for the guided path itself);
- ``network_kicks``: list_greedy start, kicks from the shipped network's probabilities;
- ``network``: ``corais_ils``: the network's start and kicks;
- ``oracle_kicks``: kicks from the reference dispatch itself (0.7 on its edge + 0.3 uniform): what a
  perfect predictor of where good dispatches put each request would buy; a ceiling for learned kicks.

Each row: the mean ratio over instances x seeds and the paired difference to ``uniform`` with a 95 % t
interval. Written to ``outputs/corais/kick_guidance.csv`` (git-ignored) unless ``out=`` names another file
(``publish=true``: the checked-in ``results/corais/kick_guidance.csv``; a checked-in ``out=`` needs
``publish=true`` and is refused before anything runs); the first line of the file is the command.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
VARIANTS: tuple[str, ...] = ("uniform", "flat", "network_kicks", "network", "oracle_kicks")


@dataclass
class Options:
    # N-Q-Z; not (50, 20, 400) by default: there one descent takes ~0.4 s, so 100 ms holds no kick at all
    scales: list[str] = field(default_factory=lambda: ["10-5-100", "20-10-100"])
    instances: int = 10  # reset seeds 100, 101, ...
    seeds: int = 4  # search seeds per instance
    kicks: int = 50  # the budget of every variant (about 100 ms at (20, 10, 100) on one core)
    reference_kicks: int = 1500  # the reference search (seed 99)
    out: str = ""  # "" = outputs/corais/kick_guidance.csv (publish=true: results/corais/kick_guidance.csv)
    publish: bool = False  # true: out may be (and by default is) the checked-in file

    def __post_init__(self) -> None:
        from offline.provenance import check_output_path

        self.out = self.out or f"{'results' if self.publish else 'outputs'}/corais/kick_guidance.csv"
        check_output_path(ROOT / self.out, publish=self.publish)  # a checked-in file changes only on purpose
        for scale in self.scales:
            parts = str(scale).split("-")
            if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
                raise ValueError(f"scales entry {scale!r} is invalid: expected 'N-Q-Z' positive integers")
        if self.instances < 1 or self.seeds < 2 or self.kicks < 1 or self.reference_kicks < self.kicks:
            raise ValueError(f"instances={self.instances}, seeds={self.seeds}, kicks={self.kicks}, reference_kicks="
                             f"{self.reference_kicks}: expected >= 1, >= 2, >= 1 and >= kicks")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    import gymnasium as gym
    from scipy import stats

    import envs  # noqa: F401
    from agents.corais import shipped_checkpoint
    from agents.corais.policy import load_corais_policy, search_start
    from offline.corais.policies import ILS_PARAMS
    from offline.corais.search import iterated_local_search

    rows = []
    for name in args.scales:
        scale = tuple(int(p) for p in name.split("-"))
        env = gym.make("CoRaiS-v1", scale=scale)
        checkpoint = shipped_checkpoint("CoRaiS-v1", scale)
        policy = load_corais_policy(None, env, checkpoint=checkpoint)
        z, q = scale[2], scale[1]
        ratios: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for instance_seed in range(100, 100 + args.instances):
            obs, _ = env.reset(seed=instance_seed)
            inst = env.unwrapped.instance
            probs = policy.log_probs(obs).exp().numpy().astype(np.float64)
            start = search_start(inst, probs)
            reference = iterated_local_search(inst, time_limit=None, max_iterations=args.reference_kicks, seed=99,
                                              **ILS_PARAMS)
            ref = reference.cost
            oracle = np.full((z, q), 0.3 / q)
            oracle[np.arange(z), reference.action] += 0.7
            setups = {"uniform": {}, "flat": {"kick_probs": np.full((z, q), 1.0 / q)},
                      "network_kicks": {"kick_probs": probs}, "network": {"kick_probs": probs, "start": start},
                      "oracle_kicks": {"kick_probs": oracle}}
            for seed in range(args.seeds):
                for variant, kwargs in setups.items():
                    found = iterated_local_search(inst, time_limit=None, max_iterations=args.kicks, seed=seed,
                                                  **kwargs, **ILS_PARAMS)
                    ratios[variant].append(found.cost / ref)
        base = np.array(ratios["uniform"])
        for variant in VARIANTS:
            values = np.array(ratios[variant])
            diff = values - base
            half = 0.0 if np.all(diff == 0) else float(stats.t.ppf(0.975, diff.size - 1) * diff.std(ddof=1)
                                                       / np.sqrt(diff.size))
            row = {"scale": name, "variant": variant, "checkpoint": checkpoint, "kicks": args.kicks,
                   "mean_ratio_to_reference": f"{values.mean():.5f}", "diff_vs_uniform": f"{diff.mean():+.5f}",
                   "diff_ci95": f"{half:.5f}", "n": values.size}
            rows.append(row)
            print(row, flush=True)
    from benchmarks.results import write_csv

    out = write_csv(ROOT / args.out, rows)
    print(f"wrote {out} and {write_table(out)}")


def write_table(csv_path: Path) -> Path:
    """The markdown table of a results file (``<name>.md`` beside it, included by docs/envs/corais.md)."""
    lines = csv_path.read_text().splitlines()
    command = lines[0].lstrip("# ")
    rows = list(csv.DictReader(lines[1:]))
    table = ["| scale | variant | cost / reference (mean) | vs uniform, paired [95 % CI] |", "|---|---|---|---|"]
    for row in rows:
        diff, half = float(row["diff_vs_uniform"]), float(row["diff_ci95"])
        table.append(f"| {row['scale']} | `{row['variant']}` | {float(row['mean_ratio_to_reference']):.4f} | "
                     + ("—" if row["variant"] == "uniform" else f"{diff:+.4f} [{diff - half:+.4f}, {diff + half:+.4f}]")
                     + " |")
    n = rows[0]["n"] if rows else "0"
    table.append(f"\n{rows[0]['kicks'] if rows else ''} kicks per search, {n} (instance, seed) pairs per row; "
                 f"generated by `{command}` (`{csv_path.name}`).")
    out = csv_path.with_suffix(".md")
    out.write_text("\n".join(table) + "\n")
    return out


if __name__ == "__main__":
    main()
