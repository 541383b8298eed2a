"""Training speed of ``algo=oinc_prior`` (agents/oinc/prior.py) on OINC-v0: slots played per second.

    python -m benchmarks.oinc_prior_speed                          # 60 s of training at the algo's defaults
    python -m benchmarks.oinc_prior_speed baseline=HEAD rounds=2   # + the same at that commit, alternately
    python -m benchmarks.oinc_prior_speed samples=8 seconds=90     # another setting of the trainer
    python -m benchmarks.oinc_prior_speed -h                       # every key

Each measurement runs ``agents.oinc.prior.train`` in a fresh process (``python -c``) whose working directory is
this checkout or, for ``baseline=<commit>``, a temporary ``git worktree`` of that commit, for ``seconds`` of wall
time (the trainer's ``max_minutes``) with ``seed=0`` on the default OINC-v0 env (I = 40, J = 12). The rate is
read from the run's curve.csv between its first and last rows: steady-state slots per second, validation
included, the start-up (the validation slots) excluded. The project's target, a 1 M-slot run in <= 45 min,
needs >= 370 slots/s. The last row's greedy validation gain is printed beside it (at equal ``seconds`` a faster
trainer has seen more slots). Rows go to ``outputs/benchmarks/performance.csv`` (``publish=true``: the checked-in
results/benchmarks/performance.csv and docs/performance.md). Timings are machine-dependent: quote the ratios,
measured in one run.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SLOTS_PER_S = 1_000_000 / (45 * 60)

#: Runs in the measured tree (cwd): trains for ``seconds`` and prints the curve's rate as JSON.
WORKER = r"""
import csv, json, sys, tempfile, time
from pathlib import Path
from agents.oinc import prior
args = json.loads(sys.argv[1])
run_dir = Path(tempfile.mkdtemp(prefix="oinc-prior-speed-"))
algo = {"max_minutes": args["seconds"] / 60, **args["algo"]}
start = time.perf_counter()
prior.train({"id": "OINC-v0", "kwargs": {}}, algo, run_dir=run_dir, seed=0, steps=10**9)
rows = list(csv.DictReader((run_dir / "curve.csv").open()))
first, last = rows[0], rows[-1]
rate = (int(last["slots"]) - int(first["slots"])) / max(float(last["seconds"]) - float(first["seconds"]), 1e-9)
print(json.dumps({"slots_per_s": rate, "slots": int(last["slots"]), "wall_s": time.perf_counter() - start,
                  "val_gain": float(last["val_gain"]), "rows": len(rows)}))
"""


@dataclass
class Options:
    seconds: float = 60.0  # wall time of each training run (>= 2 validations are needed: about 20 s)
    samples: int = 16  # algo.samples
    n_envs: int = 8  # algo.n_envs
    slots_per_batch: int = 8  # algo.slots_per_batch
    threads: int = 1  # algo.threads (torch threads)
    baseline: str = ""  # a commit to measure against in the same run (a temporary git worktree)
    rounds: int = 1  # measurements per tree, alternating; the median is reported
    publish: bool = False  # write the checked-in results file and docs table

    def __post_init__(self) -> None:
        if not self.seconds > 0 or self.rounds < 1:
            raise ValueError(f"need seconds > 0 and rounds >= 1 (got {self.seconds}, {self.rounds})")


def measure(tree: Path, args: Options) -> dict[str, float]:
    """One training run in ``tree`` (a fresh process): its steady-state slots/s, slots played, last val gain."""
    payload = {"seconds": args.seconds, "algo": {"samples": args.samples, "n_envs": args.n_envs,
                                                 "slots_per_batch": args.slots_per_batch, "threads": args.threads}}
    done = subprocess.run([sys.executable, "-c", WORKER, json.dumps(payload)], cwd=tree, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the measurement in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    from benchmarks.results import write_rows

    setting = f"samples={args.samples}, n_envs={args.n_envs}, slots_per_batch={args.slots_per_batch}, " \
              f"threads={args.threads}"
    trees = {"new": ROOT}
    worktree = None
    try:
        if args.baseline:
            worktree = Path(tempfile.mkdtemp(prefix="oinc-prior-baseline-"))
            subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.baseline], cwd=ROOT, check=True,
                           capture_output=True)
            trees = {"old": worktree, "new": ROOT}
        results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for r in range(args.rounds):
            for name, tree in trees.items():
                out = measure(tree, args)
                results[name].append(out)
                print(f"round {r + 1} {name:3s}: {out['slots_per_s']:7.1f} slots/s ({out['slots']} slots in "
                      f"{out['wall_s']:.0f} s, last greedy val gain {out['val_gain']:+.5f}/slot)", flush=True)
    finally:
        if worktree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
            shutil.rmtree(worktree, ignore_errors=True)
    rates = {name: statistics.median(o["slots_per_s"] for o in outs) for name, outs in results.items()}
    rows = []
    for name, rate in rates.items():
        label = f"oinc_prior slots/s ({setting})" + (f" at {args.baseline}" if name == "old" else "")
        row = {"quantity": label, "value": round(rate, 1), "unit": "slots/s",
               "ratio_to": "target 1M slots in 45 min", "ratio": round(rate / TARGET_SLOTS_PER_S, 3)}
        rows.append(row)
        print(f"{name}: {rate:.1f} slots/s = {1e6 / rate / 60:.0f} min per 1 M slots "
              f"({rate / TARGET_SLOTS_PER_S:.2f} x the target's {TARGET_SLOTS_PER_S:.0f} slots/s)")
    if "old" in rates:
        ratio = rates["new"] / rates["old"]
        rows.append({"quantity": f"oinc_prior speed-up ({setting})", "value": round(ratio, 3), "unit": "x",
                     "ratio_to": args.baseline, "ratio": round(ratio, 3)})
        print(f"speed-up over {args.baseline}: {ratio:.2f}x")
    write_rows("oinc_prior_speed", rows, publish=args.publish)


if __name__ == "__main__":
    main()
