"""CoRaiS-v1's cost against decision time: the anytime search and the MILP from 10 ms to 60 s, beside a lower bound.

    python -m benchmarks.corais_profile                  # (20, 10, 100) and (50, 20, 400), 3 held-out instances
    python -m benchmarks.corais_profile quick=true       # budgets up to 1 s, 1 instance per scale (~10 s)
    python -m benchmarks.corais_profile publish=true     # the checked-in results/corais_profile/ (+ docs/img)

On held-out instances (reset seeds 100, 101, ...: ``offline.partition``'s reported instances, as the ladder),
at each budget b (seconds of wall clock per dispatch):

- ``ils_cost``: the best cost the anytime iterated local search (``offline.corais.search``, tuned parameters,
  seed ``seed``) has found after b seconds. One search of the largest budget is run per instance with a trace
  (``iterated_local_search(trace=...)``): a search stopped at b follows the same path up to b, so the
  trace read at b is what ``ils_<b>`` would return, up to the last, cut descent (the first descent is traced
  every 8 steps, so small budgets are not rounded up to a whole descent). Non-increasing in b by construction.
- ``milp_incumbent`` / ``milp_dual_bound``: the incumbent and the dual bound HiGHS (scipy) reports in its log
  of one solve of the largest budget, at the last log line within b (model build included; HiGHS logs
  with 0.1 s resolution, so below 0.1 s this column is approximate); NaN without an incumbent yet.
- ``lower_bound``: max(backlog-only bound, fluid bound, HiGHS's dual bound at the end of the solve): proven
  (``offline.corais.bounds``), the same for every budget.

Writes ``profile.csv`` (first line: the command), ``profile.md`` (mean ratios per scale and budget),
``profile.png`` (cost / lower bound against the budget, log scale) and ``command.txt`` (commit, machine, date,
load) under ``outputs/corais_profile/`` (git-ignored) unless ``out=`` names another folder; ``publish=true``
writes the checked-in ``results/corais_profile/`` and ``docs/img/corais_profile.png`` (a checked-in ``out=``
needs ``publish=true`` and is refused before anything runs). The searches run one after the other on one
core: times are wall clock, so run it on a quiet machine (``command.txt`` records the load average).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BUDGETS: tuple[float, ...] = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 60.0)
#: ``quick=true`` keeps the budgets up to this many seconds and one instance per scale.
QUICK_MAX_BUDGET = 1.0
COLUMNS = ("scale", "instance", "budget_s", "ils_cost", "ils_kicks", "milp_incumbent", "milp_dual_bound",
           "lower_bound", "ils_over_lower_bound", "milp_over_lower_bound", "load_1min")


@dataclass
class Options:
    scales: list[str] = field(default_factory=lambda: ["20-10-100", "50-20-400"])  # N-Q-Z
    instances: int = 3  # held-out reset seeds 100, 101, ... per scale
    budgets: list[float] = field(default_factory=lambda: list(BUDGETS))  # seconds, increasing
    milp: bool = True  # also the MILP's incumbent and dual bound over time (one solve of the largest budget)
    seed: int = 0  # the search's seed
    quick: bool = False  # budgets <= 1 s, 1 instance per scale
    out: str = ""  # "" = outputs/corais_profile (publish=true: results/corais_profile)
    publish: bool = False  # true: out may be (and by default is) the checked-in folder; also docs/img

    def __post_init__(self) -> None:
        from offline.partition import HELD_OUT_INSTANCES_MAX
        from offline.provenance import check_output_path

        for scale in self.scales:
            parts = str(scale).split("-")
            if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
                raise ValueError(f"scales entry {scale!r} is invalid: expected 'N-Q-Z' positive integers")
        if not self.scales:
            raise ValueError("scales=[] is invalid: expected at least one 'N-Q-Z' scale")
        if isinstance(self.instances, bool) or not 1 <= int(self.instances) <= HELD_OUT_INSTANCES_MAX:
            raise ValueError(f"instances={self.instances!r} is invalid: expected an integer in "
                             f"1..{HELD_OUT_INSTANCES_MAX} (held-out instances)")
        budgets = [float(b) for b in self.budgets]
        if not budgets or not all(np.isfinite(b) and b > 0 for b in budgets) or sorted(set(budgets)) != budgets:
            raise ValueError(f"budgets={list(self.budgets)} is invalid: expected seconds > 0, strictly increasing")
        if self.quick:
            budgets = [b for b in budgets if b <= QUICK_MAX_BUDGET] or budgets[:1]
            self.instances = 1
        self.budgets = budgets
        self.out = self.out or f"{'results' if self.publish else 'outputs'}/corais_profile"
        check_output_path(ROOT / self.out, publish=self.publish)  # a checked-in folder changes only on purpose


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def search_profile(instance: Any, budgets: Sequence[float], seed: int) -> list[tuple[float, int]]:
    """(best cost, kicks done) of the anytime search after each budget (one traced search of the largest)."""
    from offline.corais.policies import ILS_PARAMS
    from offline.corais.search import iterated_local_search

    trace: list[tuple[float, int, float]] = []
    iterated_local_search(instance, time_limit=float(max(budgets)), seed=seed, trace=trace, **ILS_PARAMS)
    out = []
    for budget in budgets:
        seen = [(kicks, cost) for t, kicks, cost in trace if t <= budget]
        out.append((min(c for _, c in seen), seen[-1][0]) if seen else (float("nan"), 0))
    return out


_LINE = re.compile(r"(\d+(?:\.\d+)?)s\s*$")


def parse_highs_log(text: str) -> list[tuple[float, float, float]]:
    """(seconds, best bound, best solution) of every progress line of a HiGHS MIP log (inf: none yet)."""
    points = []
    for line in text.splitlines():
        match = _LINE.search(line)
        tokens = line.split()
        pct = [k for k, tok in enumerate(tokens) if tok.endswith("%")]
        if not match or not pct or len(tokens) < pct[0] + 3:
            continue
        try:
            bound, best = (float(tokens[pct[0] + i]) for i in (1, 2))
        except ValueError:
            continue
        points.append((float(match.group(1)), bound, best))
    return points


def milp_profile(instance: Any, budgets: Sequence[float]) -> tuple[list[tuple[float, float]], float]:
    """(incumbent, dual bound) after each budget from the log of one HiGHS solve of the largest budget, and
    the dual bound at its end (the optimum when HiGHS proved it)."""
    from scipy.optimize import milp

    from offline.corais.milp import build_milp

    began = time.perf_counter()
    c, integrality, bounds, constraints = build_milp(instance)
    built = time.perf_counter() - began
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 1)  # HiGHS writes its log to the process's stdout
        try:
            res = milp(c, integrality=integrality, bounds=bounds, constraints=constraints,
                       options={"time_limit": max(float(max(budgets)) - built, 1e-3), "mip_rel_gap": 1e-4,
                                "presolve": True, "disp": True})
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        points = parse_highs_log(log.read())
    final_bound = getattr(res, "mip_dual_bound", None)
    final_bound = float(final_bound) if final_bound is not None and np.isfinite(final_bound) else float("nan")
    if res.status == 0 and res.fun is not None:  # proven optimal: the optimum is the bound
        final_bound = max(final_bound, float(res.fun) * (1 - 1e-4)) if np.isfinite(final_bound) else float(res.fun)
    out = []
    for budget in budgets:
        seen = [(b, s) for t, b, s in points if t + built <= budget]
        incumbent = min((s for _, s in seen if np.isfinite(s)), default=float("nan"))
        bound = max((b for b, _ in seen if np.isfinite(b)), default=float("nan"))
        out.append((incumbent, bound))
    return out, final_bound


def profile_rows(args: Options) -> list[dict[str, Any]]:
    """Every (scale, instance, budget) row of the profile."""
    import gymnasium as gym

    import envs  # noqa: F401
    from envs.corais.dynamics import backlog_bound
    from offline.corais.greedy import fluid_bound
    from offline.corais.search import iterated_local_search
    from offline.partition import HELD_OUT_INSTANCE_BASE

    rows = []
    for name in args.scales:
        scale = tuple(int(p) for p in name.split("-"))
        env = gym.make("CoRaiS-v1", scale=scale)
        for k in range(args.instances):
            reset_seed = HELD_OUT_INSTANCE_BASE + k
            env.reset(seed=reset_seed)
            instance = env.unwrapped.instance
            iterated_local_search(instance, time_limit=None, max_iterations=1, seed=0)  # compile before timing
            load = os.getloadavg()[0]
            ils = search_profile(instance, args.budgets, args.seed)
            milp, dual = milp_profile(instance, args.budgets) if args.milp else (
                [(float("nan"), float("nan"))] * len(args.budgets), float("nan"))
            lower = max(backlog_bound(instance), fluid_bound(instance), dual if np.isfinite(dual) else -np.inf)
            for budget, (cost, kicks), (incumbent, bound) in zip(args.budgets, ils, milp):
                rows.append({"scale": name, "instance": reset_seed, "budget_s": budget, "ils_cost": cost,
                             "ils_kicks": kicks, "milp_incumbent": incumbent, "milp_dual_bound": bound,
                             "lower_bound": lower, "ils_over_lower_bound": cost / lower,
                             "milp_over_lower_bound": incumbent / lower, "load_1min": round(load, 2)})
            print(f"[profile] {name} instance {reset_seed}: ils {ils[0][0]:.4f} -> {ils[-1][0]:.4f}, milp "
                  f"{milp[-1][0]:.4f}, lower bound {lower:.4f} (load {load:.2f})", flush=True)
        env.close()
    return rows


def _main(args: Options) -> None:
    from benchmarks.results import write_csv
    from offline.provenance import command_line, git_commit, machine, utc_now

    began = time.perf_counter()
    rows = profile_rows(args)
    out = ROOT / args.out
    command = command_line("benchmarks.corais_profile")
    path = write_csv(out / "profile.csv", [{k: r[k] for k in COLUMNS} for r in rows], command=command)
    (out / "profile.md").write_text(markdown_table(rows, command))
    plot_profile(rows, out / "profile.png")
    loads = [float(r["load_1min"]) for r in rows]
    (out / "command.txt").write_text(
        f"{command}  # {time.perf_counter() - began:.0f} s wall; load average {min(loads):.2f}-{max(loads):.2f}; "
        f"commit {git_commit()}; {machine()}; {utc_now()}\n")
    if args.publish:
        image = ROOT / "docs" / "img" / "corais_profile.png"
        shutil.copyfile(out / "profile.png", image)
        print(f"wrote {image}")
    print(f"wrote {path}, profile.md, profile.png and command.txt in {out}")


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (scale, budget): the mean over instances of cost / lower bound (search and MILP), and on how many
    instances each had an answer by then."""
    out = []
    for scale in dict.fromkeys(r["scale"] for r in rows):
        for budget in dict.fromkeys(float(r["budget_s"]) for r in rows if r["scale"] == scale):
            sub = [r for r in rows if r["scale"] == scale and float(r["budget_s"]) == budget]
            ils = [float(r["ils_over_lower_bound"]) for r in sub if np.isfinite(float(r["ils_over_lower_bound"]))]
            milp = [float(r["milp_over_lower_bound"]) for r in sub if np.isfinite(float(r["milp_over_lower_bound"]))]
            out.append({"scale": scale, "budget_s": budget, "n": len(sub),
                        "ils": float(np.mean(ils)) if ils else float("nan"), "ils_n": len(ils),
                        "milp": float(np.mean(milp)) if milp else float("nan"), "milp_n": len(milp)})
    return out


def _budget(seconds: float) -> str:
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def markdown_table(rows: list[dict[str, Any]], command: str) -> str:
    """The mean cost / lower bound per scale and budget (the docs include it)."""
    lines = ["| scale | budget | search: cost / lower bound | MILP incumbent: cost / lower bound | instances with "
             "an answer (search, MILP) |", "|---|---|---|---|---|"]
    for s in summary(rows):
        ils = "—" if not s["ils_n"] else f"{s['ils']:.4f}"
        milp = "—" if not s["milp_n"] else f"{s['milp']:.4f}"
        lines.append(f"| ({s['scale'].replace('-', ', ')}) | {_budget(s['budget_s'])} | {ils} | {milp} | "
                     f"{s['ils_n']}, {s['milp_n']} of {s['n']} |")
    n = summary(rows)[0]["n"] if rows else 0
    lines.append(f"\nMean over {n} held-out instance(s) per scale; generated by `{command}` (`profile.csv`).")
    return "\n".join(lines) + "\n"


def plot_profile(rows: list[dict[str, Any]], path: Path) -> None:
    """One panel per scale: cost / lower bound against the budget (log x), one colour per instance, the search
    solid, the MILP incumbent dashed; 1 = the proven lower bound."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scales = list(dict.fromkeys(r["scale"] for r in rows))
    fig, axes = plt.subplots(1, len(scales), figsize=(6.0 * len(scales), 4.2), squeeze=False)
    for ax, scale in zip(axes.flat, scales):
        sub = [r for r in rows if r["scale"] == scale]
        for k, inst in enumerate(dict.fromkeys(r["instance"] for r in sub)):
            mine = [r for r in sub if r["instance"] == inst]
            x = [float(r["budget_s"]) for r in mine]
            colour = f"C{k}"
            ax.plot(x, [float(r["ils_over_lower_bound"]) for r in mine], "o-", color=colour, ms=3.5)
            milp = [float(r["milp_over_lower_bound"]) for r in mine]
            if any(np.isfinite(milp)):
                ax.plot(x, milp, "s--", color=colour, ms=3, alpha=0.8)
            ax.annotate(f"{inst}", (x[-1], float(mine[-1]["ils_over_lower_bound"])), xytext=(3, 0),
                        textcoords="offset points", fontsize=6.5, color=colour, va="center")
        ax.axhline(1.0, color="black", lw=1.0)
        ax.set_xscale("log")
        ax.set_xlabel("budget per dispatch (s, wall clock, log scale)", fontsize=8)
        ax.set_ylabel("cost / proven lower bound (log scale)", fontsize=8)
        ax.set_title(f"CoRaiS-v1 at ({scale.replace('-', ', ')})", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.tick_params(labelsize=8)
        finite = [v for r in sub for v in (float(r["ils_over_lower_bound"]), float(r["milp_over_lower_bound"]))
                  if np.isfinite(v)]
        if finite:  # log y: the MILP's early incumbents are 2-3x the bound, the search's within a few %
            top = max(finite) * 1.05
            ax.set_yscale("log")
            ax.set_ylim(0.99, top)
            ticks = [t for t in (1.0, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0) if t <= top]
            ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
            ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%.2f"))
    handles = [plt.Line2D([], [], color="#555555", marker="o", ms=3.5, ls="-"),
               plt.Line2D([], [], color="#555555", marker="s", ms=3, ls="--"),
               plt.Line2D([], [], color="black", lw=1.0)]
    fig.legend(handles, ["anytime search (best so far), one colour per held-out instance",
                         "MILP (HiGHS) incumbent at that time", "proven lower bound (= 1)"],
               loc="lower center", ncol=3, fontsize=7.5, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def read_profile(path: Path) -> list[dict[str, str]]:
    """The rows of a ``profile.csv`` (its first line is the command)."""
    lines = Path(path).read_text().splitlines()
    return list(csv.DictReader(lines[1:]))


if __name__ == "__main__":
    main()
