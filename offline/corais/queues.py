"""How long the backlog queues of CoRaiS-v0 and CoRaiS-v1 are: the mean number of backlog requests per region
edge and the share of region edges with none, over reset seeds 0..199 at three scales (docs/modelling_choices.md,
"CoRaiS-v1").

    python -m offline.corais.queues                                # prints the table
    python -m offline.corais.queues out=outputs/corais/queues.csv  # and writes it (git-ignored)

A path of the clone's checked-in files needs ``publish=true`` (:func:`offline.provenance.check_output_path`):
``publish=true out=results/corais/queues.csv`` refreshes the table docs/modelling_choices.md quotes. ``out`` is
checked before anything is computed; a missing parent folder is made.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import envs  # noqa: F401  (registers the ids)
from offline.provenance import check_output_path, check_writable_folder, parse_bool, parse_key_values
from offline.runner import write_csv

SCALES: tuple[tuple[int, int, int], ...] = ((10, 5, 100), (20, 10, 100), (50, 20, 400))
SEEDS = range(200)


def queue_rows(scales: tuple[tuple[int, int, int], ...] = SCALES, seeds: range = SEEDS) -> list[dict]:
    """One row per (scale, env id): backlog requests per region edge and the share of edges with none."""
    rows = []
    for scale in scales:
        for env_id in ("CoRaiS-v0", "CoRaiS-v1"):
            env = gym.make(env_id, scale=list(scale))
            per_edge, empty = [], []
            for seed in seeds:
                env.reset(seed=seed)
                inst = env.unwrapped.instance
                counts = np.bincount(inst.backlog.edge, minlength=inst.num_region)
                per_edge.append(counts.mean())
                empty.append(np.mean(counts == 0))
            env.close()
            rows.append({"scale": "-".join(map(str, scale)), "env_id": env_id, "seeds": len(seeds),
                         "backlog_per_edge": float(np.mean(per_edge)), "edges_without_backlog": float(np.mean(empty))})
    return rows


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_key_values(list(sys.argv[1:] if argv is None else argv),
                                {"out": "CSV file to write", "publish": "true: out may be a checked-in file"})
        publish = parse_bool("publish", args.get("publish", "false"))
        if "out" in args:
            out = Path(args["out"])
            if out.suffix != ".csv" or (out.exists() and not out.is_file()):
                raise ValueError(f"out={args['out']!r} is invalid: expected a path ending in .csv (a file this "
                                 "command may replace)")
            check_output_path(out, publish=publish)
            check_writable_folder("out", out.parent)  # a missing parent folder is made (below), if it can be
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    rows = queue_rows()
    for row in rows:
        print(f"{row['env_id']} {row['scale']}: {row['backlog_per_edge']:.2f} backlog requests per edge, "
              f"{100 * row['edges_without_backlog']:.0f} % of edges with none")
    if "out" in args:
        Path(args["out"]).parent.mkdir(parents=True, exist_ok=True)
        write_csv(args["out"], rows)
        print(f"wrote {args['out']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
