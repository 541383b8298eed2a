"""Export learning curves from training runs' TensorBoard event files as a PNG.

    python -m benchmarks.plot_curves 'runs=[runs/uec-v0__sac__0__*,runs/uec-v0__dqn__0__*]' \
        out=docs/img/learning_curve_uec.png publish=true
    python -m benchmarks.plot_curves runs=[runs/uec-v0__sac__0__20250101-120000] tags=[eval/mean_reward] title=SAC
    python -m benchmarks.plot_curves "runs=[runs/uec_prior/*]" "tags=[curve/eval_mean,curve/rollout_mean]" \
        out=results/uec/prior/curves.png publish=true    # a custom trainer's curve.csv (curve/<column>, x = its env steps)

``runs`` entries may be glob patterns (quote them for the shell); ``-h`` lists the keys. A checked-in ``out``
(``docs/img/...``, ``results/...``) needs ``publish=true`` and is refused before anything is read otherwise.

One panel per tag (default: eval/mean_reward and rollout/ep_rew_mean), one line per run, x = env steps. The PNG
carries the command that made it (its ``Description`` text chunk: ``PIL.Image.open(path).text``).
The reference policy's value (``reference/mean_reward``, logged by train.py next to the learner on the
same evaluation seeds; a curve.csv's ``heuristic_mean``) is drawn as a dashed line in the eval panel.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from omegaconf import MISSING
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

#: curve.csv columns that count env steps (the x axis of a custom trainer's curve), in order of preference.
CURVE_STEP_COLUMNS: tuple[str, ...] = ("decisions", "slots", "steps")


def load_scalars(run_dir: Path) -> dict[str, tuple[list[int], list[float]]]:
    """All scalar series of a run folder: tag -> (steps, values); plus ``curve/<column>`` for every column of the
    run's ``curve.csv`` (the custom trainers' curve, also in TensorBoard since agents.curves; older runs have only
    the CSV), against its env-step column."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0}).Reload()
    scalars = {
        tag: ([e.step for e in events.Scalars(tag)], [e.value for e in events.Scalars(tag)])
        for tag in events.Tags()["scalars"]
    }
    return {**scalars, **curve_scalars(run_dir / "curve.csv")}


def curve_scalars(path: Path) -> dict[str, tuple[list[int], list[float]]]:
    """``curve/<column>`` -> (env steps, values) of a curve.csv (empty cells skipped); {} without one or without a
    step column."""
    import csv

    if not path.is_file():
        return {}
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    x = next((c for c in CURVE_STEP_COLUMNS if rows and c in rows[0]), None)
    if x is None:
        return {}
    out: dict[str, tuple[list[int], list[float]]] = {}
    for column in rows[0]:
        points = [(int(float(r[x])), float(r[column])) for r in rows if r[column] not in ("", None) and r[x]]
        if column != x and points:
            out[f"curve/{column}"] = ([p[0] for p in points], [p[1] for p in points])
    return out


def reference_name(run_dir: Path) -> str:
    """The reference policy a run logged, e.g. ``rescue``: the one train.log says it chose when config.yaml lists
    several (``reference: lp_bid_price, the best of [...]``), else config.yaml's."""
    import re

    from omegaconf import OmegaConf

    log = run_dir / "train.log"
    chosen = re.search(r"reference: (\S+), the best of", log.read_text()) if log.is_file() else None
    if chosen:
        return chosen.group(1)
    config = run_dir / "config.yaml"
    name = OmegaConf.load(config).env.get("reference_policy") if config.is_file() else None
    return str(name or "reference policy")


def run_label(run_dir: Path) -> str:
    """``<algo> (seed <n>)``: the algo its config.yaml names (the folder name's for older runs), else the folder."""
    from omegaconf import OmegaConf

    parts = run_dir.name.split("__")
    config = run_dir / "config.yaml"
    algo = OmegaConf.load(config).get("algo", {}).get("name") if config.is_file() else None
    return f"{algo or parts[1]} (seed {parts[2]})" if len(parts) >= 3 else run_dir.name


#: panel tag -> the tag of the reference policy's value on the same evaluation seeds (a dashed line in that panel).
REFERENCE_OF: dict[str, str] = {"eval/mean_reward": "reference/mean_reward", "curve/eval_mean": "curve/heuristic_mean"}


def plot(runs: list[Path], tags: list[str], out: Path, title: str | None = None) -> Path:
    fig, axes = plt.subplots(1, len(tags), figsize=(5.5 * len(tags), 4), squeeze=False)
    references: dict[str, dict[str, float]] = {}  # panel tag -> reference name -> value
    for run_dir in runs:
        scalars = load_scalars(run_dir)
        for ax, tag in zip(axes[0], tags):
            evaluation = tag.startswith(("eval/", "curve/eval"))
            if tag in scalars:
                steps, values = scalars[tag]
                ax.plot(steps, values, label=run_label(run_dir), marker="o" if evaluation else None,
                        markersize=3, linewidth=1.5 if evaluation else 1.0)
            if REFERENCE_OF.get(tag) in scalars:
                name = reference_name(run_dir) if tag == "eval/mean_reward" else "the heuristic it starts as"
                references.setdefault(tag, {})[name] = scalars[REFERENCE_OF[tag]][1][-1]
    for ax, tag in zip(axes[0], tags):
        if tag in references:
            for (name, value), style in zip(references[tag].items(), ("--", ":", "-.")):
                ax.axhline(value, color="black", linestyle=style, linewidth=1, label=f"{name} (same seeds)")
        ax.set_xlabel("environment steps")
        ax.set_title(tag)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks.plot_curves " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    fig.savefig(out, dpi=120, metadata={"Description": command})  # the command that made it, inside the PNG
    plt.close(fig)
    return out


@dataclass
class Options:
    runs: list[str] = MISSING  # mandatory: training run folders or glob patterns
    tags: list[str] = field(default_factory=lambda: ["eval/mean_reward", "rollout/ep_rew_mean"])  # one panel each
    out: str = "outputs/learning_curve.png"  # git-ignored; out=docs/img/<name>.png publish=true updates a docs figure
    title: str | None = None
    publish: bool = False  # true: out may be a checked-in file

    def __post_init__(self) -> None:
        from offline.provenance import check_output_path

        check_output_path(self.out, publish=self.publish)
        if not self.tags:
            raise ValueError("tags=[] is invalid: expected at least one TensorBoard scalar tag")


def expand_runs(patterns: Sequence[str]) -> list[Path]:
    """Run folders named by ``patterns`` (glob patterns expanded, in order); ValueError when one matches nothing."""
    import glob

    runs: list[Path] = []
    for pattern in patterns:
        found = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        found = [f for f in found if Path(f).is_dir()]
        if not found:
            raise ValueError(f"runs entry {pattern!r} is invalid: expected a training run folder (or a glob matching some)")
        runs += [Path(f) for f in found]
    return runs


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    def _main(args: Options) -> None:
        try:
            runs = expand_runs(args.runs)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(2)
        print(plot(runs, list(args.tags), Path(args.out), args.title))

    run_cli(_main, Options, __doc__, argv)


if __name__ == "__main__":
    main()
