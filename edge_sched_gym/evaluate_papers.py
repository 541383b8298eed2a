"""Every table and figure of the four papers, beside the papers' numbers (issue 19).

    python evaluate.py experiment=papers                 # all four papers, full size, into outputs/papers/
    python evaluate.py experiment=papers quick=true      # the CI size (minutes on 2 cores)
    python evaluate.py experiment=papers publish=true    # refresh the checked-in results/, docs/papers/, README
    python evaluate.py experiment=papers out=DIR         # another output folder
    python evaluate.py experiment=papers_rescue          # one paper (papers_oinc, papers_aset, papers_corais)
    python -m evaluate_papers paper=rescue quick=true    # the same without Hydra's command line (paper=all: all four)
    python -m evaluate_papers readme                     # README's results-at-a-glance from results/papers/summary.csv
    python -m evaluate_papers figures                    # the checked-in plots onto docs/papers/ (no rerun)

The papers' numbers live beside each experiment: a ``paper:`` block in ``edge_sched_gym/conf/experiment/<name>.yaml``
(``# @package _global_``, so it is the composed config's top-level key ``paper``; evaluate.py ignores it).
A block names its paper, how ``quick=true`` shrinks the experiment, and its ``checks``: for every
quantity the paper reports, the quantity, the paper's value and unit, the table or figure, the paper's
setting, which of our result files (a sweep's CSV or ``summary``), rows (``where``) and column it compares
to, a tolerance and, where ours is known to differ, a link explaining why. Check kinds and verdicts:

``value``      one row's column (mean ± its ``<column>_ci95``) against the paper's number: reproduced when
               the 95 % CI widened by the tolerance (``rel`` of the paper's value, or ``abs``) covers it,
               differs when it does not, inconclusive when it covers it only because the CI is wider than
               a quarter of the paper's value plus the tolerance (too few instances to tell).
``range``      every selected row inside the paper's [lo, hi], widened by the tolerance.
``bound``      a statistic of the selected rows (``stat``: mean, min, max or spread = max - min) on the
               right side (``relation``: ">=" or "<=") of the paper's number.
``best``       ``policy`` has the best ``column`` (``better``: higher | lower) among the selected rows at
               every point of ``by`` (the swept column); ours is the share of points where it does.
``trend``      the column rises (``direction: increasing``) or falls along ``by`` for each selected policy;
               ours is the mean Spearman correlation, reproduced when its sign matches and |rho| >= ``min_rho``.
``paired``     for every policy, the column at ``by = a`` is above (``relation: ">"``) or below the one at
               ``by = b``; ours is the share of policies where it holds.
``best_differs`` "no one-size-fits-all": the best policy differs between the ``columns``; ours is the
               number of distinct best policies (reproduced when >= 2).
``not_run``    the row needs a trained agent: its ``command`` is printed and the verdict is "not run".

Two optional keys widen what a check reads. ``results_file`` (a CSV path relative to the clone, checked in by a
longer run, e.g. a trained agent's table) is judged instead of this run's ``file``; the row then names it.
``sum_of`` (a list of columns) judges their sum per row instead of one ``column``.

A check whose rows are not in this run's results (a point ``quick=true`` drops) is "not run" too.

For each paper the runner composes every experiment whose block names that paper (Hydra's compose API,
the same composition as ``python evaluate.py experiment=<name>``), runs it with evaluate.py's ``run`` into
``results/<paper>/<experiment>/`` (CSV + PNG, as evaluate.py writes them), writes the comparison
``results/<paper>/<experiment>.csv``, the page ``docs/papers/<paper>.md`` and ``results/papers/summary.csv``,
and refreshes README's results-at-a-glance table from the summary. Those are the checked-in paths, written only
with ``publish=true`` (the command then prints the files it changed); otherwise the same tree goes under ``out``
(default ``outputs/papers/``, git-ignored), with the table in ``<out>/results-at-a-glance.md``.
"""

from __future__ import annotations

import csv
import math
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from omegaconf import DictConfig, OmegaConf
from scipy import stats

from edge_sched_gym import CONF_DIR, points
from edge_sched_gym import evaluate as evaluate_cli
from offline.provenance import check_output_path, default_output, require_clone

ROOT = Path(__file__).resolve().parents[1]  # the clone: results/, docs/, README.md
CONF = CONF_DIR
PAPERS: dict[str, str] = {
    "rescue": "RESCUE: retraining on under-utilised edge computing resources (UEC-v0)",
    "oinc": "OINC: online inference with continuous learning (OINC-v0)",
    "aset": "ASET: adaptive stream-scheduling policies per time window (ASET-v0, ASET-v1)",
    "corais": "CoRaiS: cooperative request dispatching over multiple edges (CoRaiS-v0, CoRaiS-v1)",
}
KINDS = ("value", "range", "bound", "best", "trend", "paired", "best_differs", "not_run")
VERDICTS = ("reproduced", "differs", "inconclusive", "not run")
#: A value check whose 95 % CI half-width exceeds this share of the paper's value (plus the tolerance) and
#: covers the paper's value cannot tell: "inconclusive" (run the full size), not "reproduced".
WIDE_CI = 0.25
BLOCK_KEYS = {"name", "quick", "full_time", "checks"}
CHECK_KEYS = {"id", "kind", "quantity", "source", "setting", "paper_value", "unit", "file", "where", "column",
              "tolerance", "explanation", "policy", "better", "by", "direction", "policies", "a", "b", "relation",
              "stat", "columns", "command", "note", "results_file", "sum_of"}
QUICK_KEYS = {"instances", "episodes", "values", "sweeps", "set"}
README_BEGIN = "<!-- results-at-a-glance: generated by python -m evaluate_papers (do not edit) -->"
README_END = "<!-- end results-at-a-glance -->"
COMPARISON_COLUMNS = ("experiment", "check", "quantity", "source", "setting", "kind", "paper_value", "unit", "ours",
                      "ours_ci95", "ratio", "verdict", "tolerance", "compares_to", "explanation", "note")


# --------------------------------------------------------------------------------------------- inputs

def parse_quick(value: Any) -> bool:
    """``quick`` as a bool; anything else raises naming the parameter and the allowed values."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"quick={value!r} is invalid: expected true or false")


def parse_papers(value: Any) -> list[str]:
    """``papers`` as a list of known paper names (a name, a list, or ``all``)."""
    names = [value] if isinstance(value, str) else list(value or [])
    names = [str(n) for n in names]
    if names == ["all"]:
        return list(PAPERS)
    unknown = [n for n in names if n not in PAPERS]
    if unknown or not names:
        raise ValueError(f"papers={names!r} is invalid: expected 'all' or a list among {list(PAPERS)}")
    return names


def experiment_blocks(paper: str | None = None) -> dict[str, dict]:
    """``{experiment: paper block}`` of every edge_sched_gym/conf/experiment/*.yaml whose ``paper.name`` is ``paper`` (or any)."""
    blocks = {}
    for path in sorted((CONF / "experiment").glob("*.yaml")):
        block = (yaml.safe_load(path.read_text()) or {}).get("paper")
        if isinstance(block, dict) and (paper is None or block.get("name") == paper):
            blocks[path.stem] = block
    return blocks


def check_block(experiment: str, block: dict) -> None:
    """Raise ValueError naming the experiment and the bad key if a paper block is malformed."""
    where = f"edge_sched_gym/conf/experiment/{experiment}.yaml paper"
    unknown = sorted(set(block) - BLOCK_KEYS)
    if unknown:
        raise ValueError(f"{where}: keys {unknown} are not known; valid keys: {sorted(BLOCK_KEYS)}")
    if block.get("name") not in PAPERS:
        raise ValueError(f"{where}.name={block.get('name')!r} is invalid: expected one of {list(PAPERS)}")
    unknown = sorted(set(block.get("quick") or {}) - QUICK_KEYS)
    if unknown:
        raise ValueError(f"{where}.quick: keys {unknown} are not known; valid keys: {sorted(QUICK_KEYS)}")
    ids = set()
    for check in block.get("checks") or []:
        cid = check.get("id")
        if not cid or cid in ids:
            raise ValueError(f"{where}.checks: every check needs a unique id (got {cid!r})")
        ids.add(cid)
        unknown = sorted(set(check) - CHECK_KEYS)
        if unknown:
            raise ValueError(f"{where}.checks[{cid}]: keys {unknown} are not known; valid keys: {sorted(CHECK_KEYS)}")
        if check.get("kind") not in KINDS:
            raise ValueError(f"{where}.checks[{cid}].kind={check.get('kind')!r} is invalid: expected one of {KINDS}")
        for key in ("quantity", "source"):
            if not check.get(key):
                raise ValueError(f"{where}.checks[{cid}] needs {key!r}")
        if check["kind"] == "not_run":
            if not check.get("command"):
                raise ValueError(f"{where}.checks[{cid}] (not_run) needs the 'command' that makes the trained run")
        elif not check.get("column") and not check.get("sum_of") and check["kind"] != "best_differs":
            raise ValueError(f"{where}.checks[{cid}] needs 'column'")
        if check.get("results_file") and not (ROOT / str(check["results_file"])).is_file():
            raise ValueError(f"{where}.checks[{cid}]: results_file {check['results_file']!r} is not a file of the "
                             "clone")


# ------------------------------------------------------------------------------------------ verdicts

def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _matches(row: dict, where: dict) -> bool:
    for key, want in (where or {}).items():
        have = row.get(key)
        if isinstance(want, (list, tuple)):
            if not any(_same(have, w) for w in want):
                return False
        elif not _same(have, want):
            return False
    return True


def _same(have: Any, want: Any) -> bool:
    if have is None:
        return False
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return math.isclose(_float(have), float(want), rel_tol=1e-9, abs_tol=1e-12)
    return str(have) == str(want)


def _tolerance(check: dict, reference: float) -> float:
    tol = check.get("tolerance") or {}
    if "abs" in tol:
        return float(tol["abs"])
    return abs(reference) * float(tol.get("rel", 0.0))


def _tolerance_text(check: dict) -> str:
    tol = check.get("tolerance") or {}
    parts = [f"{k} {v}" for k, v in tol.items()]
    return ", ".join(parts)


def _result(ours: Any, ci: Any = "", ratio: Any = "", verdict: str = "not run", note: str = "") -> dict:
    return {"ours": ours, "ours_ci95": ci, "ratio": ratio, "verdict": verdict, "note": note}


def judge(check: dict, rows: list[dict]) -> dict:
    """Our value(s) and the verdict of one check on the result rows of its file (dicts of strings or numbers).

    Returns ``{ours, ours_ci95, ratio, verdict, note}``; rows the check needs but the run lacks give "not run".
    """
    kind = check["kind"]
    if kind == "not_run":
        return _result("", note=f"needs a trained run: {check['command']}")
    selected = [r for r in rows if _matches(r, check.get("where") or {})]
    if check.get("sum_of"):  # judge the sum of these columns per row, as the column "+".join(sum_of)
        parts = list(check["sum_of"])
        selected = [{**r, "+".join(parts): sum(_float(r.get(c)) for c in parts)} for r in selected]
        check = {**check, "column": "+".join(parts)}
    if not selected:
        return _result("", note=f"no row with {check.get('where')} in this run's results (a quick run drops it)")
    column = check.get("column")
    if kind != "best_differs" and not any(column in r for r in selected):
        raise ValueError(f"check {check['id']}: column {column!r} is not in the results; columns: {sorted(selected[0])}")
    paper = check.get("paper_value")
    if kind == "value":
        if len(selected) != 1:
            return _result("", note=f"{len(selected)} rows match {check.get('where')}; a value check needs one")
        mean = _float(selected[0].get(column))
        ci = _float(selected[0].get(f"{column}_ci95"))  # absent (nan): no CI, the tolerance alone
        if math.isnan(mean):
            return _result("nan", note="our value is undefined (e.g. no instance solved)")
        tol = _tolerance(check, float(paper))
        half = 0.0 if math.isnan(ci) else ci
        ok = abs(mean - float(paper)) <= half + tol
        verdict = "reproduced" if ok else "differs"
        if ok and half > WIDE_CI * abs(float(paper)) + tol:
            verdict = "inconclusive"
        ratio = mean / float(paper) if float(paper) else ""
        return _result(mean, "" if math.isnan(ci) else ci, ratio, verdict)
    values = [_float(r.get(column)) for r in selected] if column else []
    if kind == "range":
        lo, hi = (float(x) for x in paper)
        finite = [v for v in values if not math.isnan(v)]
        if not finite:
            return _result("nan", note="no finite value")
        ok = min(finite) >= lo - _tolerance(check, lo) and max(finite) <= hi + _tolerance(check, hi)
        return _result(f"{min(finite):.4g}–{max(finite):.4g}", verdict="reproduced" if ok else "differs")
    if kind == "bound":
        stat = check.get("stat", "mean")
        finite = np.array([v for v in values if not math.isnan(v)])
        if not finite.size:
            return _result("nan", note="no finite value")
        ours = {"mean": finite.mean(), "min": finite.min(), "max": finite.max(),
                "spread": finite.max() - finite.min()}[stat]
        relation = check.get("relation", ">=")
        ok = ours >= float(paper) if relation == ">=" else ours <= float(paper)
        ci = stats.t.ppf(0.975, finite.size - 1) * finite.std(ddof=1) / np.sqrt(finite.size) \
            if stat == "mean" and finite.size > 1 else ""
        ratio = ours / float(paper) if float(paper) else ""
        return _result(float(ours), ci, ratio, "reproduced" if ok else "differs")
    if kind == "best":
        better = check.get("better", "higher")
        points = _group(selected, check.get("by"))
        wins = 0
        for group in points.values():
            best = (max if better == "higher" else min)(group, key=lambda r: _float(r.get(column)))
            wins += str(best.get("policy")) == str(check["policy"])
        share = wins / len(points)
        target = float(paper if paper is not None else 1.0)
        return _result(share, verdict="reproduced" if share >= target - 1e-12 else "differs",
                       note=f"best at {wins} of {len(points)} points")
    if kind == "trend":
        by = check["by"]
        rhos = []
        for policy in check.get("policies") or sorted({str(r["policy"]) for r in selected}):
            mine = [r for r in selected if str(r.get("policy")) == str(policy)]
            if len(mine) >= 3:
                rho = stats.spearmanr([_float(r[by]) for r in mine], [_float(r[column]) for r in mine])[0]
            elif len(mine) == 2:  # two points: the sign of the change
                (x0, y0), (x1, y1) = sorted((_float(r[by]), _float(r[column])) for r in mine)
                rho = float(np.sign((y1 - y0) * (x1 - x0)))
            else:
                continue
            rhos.append(float(rho) if not math.isnan(rho) else 0.0)
        if not rhos:
            return _result("", note="fewer than two points per policy in this run")
        rho = float(np.mean(rhos))
        min_rho = float((check.get("tolerance") or {}).get("min_rho", 0.8))
        sign = 1.0 if check.get("direction", "increasing") == "increasing" else -1.0
        return _result(rho, verdict="reproduced" if sign * rho >= min_rho else "differs",
                       note=f"mean Spearman rho over {len(rhos)} policies")
    if kind == "paired":
        by, relation = check["by"], check.get("relation", ">")
        held, total = 0, 0
        for policy in sorted({str(r["policy"]) for r in selected}):
            a = [r for r in selected if str(r["policy"]) == policy and _same(r.get(by), check["a"])]
            b = [r for r in selected if str(r["policy"]) == policy and _same(r.get(by), check["b"])]
            if a and b:
                total += 1
                va, vb = _float(a[0][column]), _float(b[0][column])
                held += va > vb if relation == ">" else va < vb
        if not total:
            return _result("", note=f"no policy has both {by}={check['a']} and {by}={check['b']} in this run")
        share = held / total
        target = float(paper if paper is not None else 1.0)
        return _result(share, verdict="reproduced" if share >= target - 1e-12 else "differs",
                       note=f"holds for {held} of {total} policies")
    if kind == "best_differs":
        winners = {max(selected, key=lambda r: _float(r.get(c))).get("policy") for c in check["columns"]}
        return _result(len(winners), verdict="reproduced" if len(winners) >= float(paper or 2) else "differs",
                       note="best: " + ", ".join(sorted(map(str, winners))))
    raise ValueError(f"check {check['id']}: kind {kind!r} is not known; valid kinds: {KINDS}")


def _group(rows: list[dict], by: str | None) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(str(row.get(by)) if by else "", []).append(row)
    return groups


def compares_to(experiment: str, check: dict) -> str:
    if check["kind"] == "not_run":
        return ""
    file = str(check["results_file"]) if check.get("results_file") else \
        f"{experiment}/{check.get('file', 'summary')}.csv"
    where = ", ".join(f"{k}={v}" for k, v in (check.get("where") or {}).items())
    column = check.get("column") or "+".join(check.get("sum_of") or []) or ",".join(check.get("columns") or [])
    return f"{file} [{where}] {column}".replace(" []", "")


def read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def compare_experiment(paper: str, experiment: str, block: dict, out_dir: Path) -> list[dict]:
    """The comparison rows of one experiment from its results in ``out_dir`` (see :func:`judge`)."""
    rows = []
    cache: dict[str, list[dict]] = {}
    for check in block.get("checks") or []:
        path = ROOT / str(check["results_file"]) if check.get("results_file") else \
            out_dir / f"{check.get('file', 'summary')}.csv"
        if path not in cache:
            cache[path] = read_rows(path)
        result = judge(check, cache[path])
        if check.get("results_file"):
            result["note"] = "; ".join(x for x in (f"judged on {check['results_file']}", result["note"]) if x)
        note = "; ".join(x for x in (check.get("note", ""), result.pop("note")) if x)
        paper_value = check.get("paper_value", "")
        if paper_value in ("", None) or check["kind"] in ("trend", "best_differs"):  # the claim, in words
            paper_value = {"best": "at every point", "paired": "for every policy",
                           "trend": check.get("direction", "increasing"),
                           "best_differs": f">= {paper_value or 2}"}.get(check["kind"], paper_value)
        rows.append({
            "experiment": experiment, "check": check["id"], "quantity": check["quantity"],
            "source": check["source"], "setting": check.get("setting", ""), "kind": check["kind"],
            "paper_value": "–".join(map(str, paper_value)) if isinstance(paper_value, list) else paper_value,
            "unit": check.get("unit", ""), **result, "tolerance": _tolerance_text(check),
            "compares_to": compares_to(experiment, check),
            "explanation": check.get("explanation", "") if result["verdict"] != "reproduced" else "",
            "note": note,
        })
    return [{k: r.get(k, "") for k in COMPARISON_COLUMNS} for r in rows]


# --------------------------------------------------------------------------------------------- runs

def compose(experiment: str, overrides: list[str] | None = None) -> DictConfig:
    """evaluate.py's configuration for ``experiment=<experiment>`` (Hydra's compose API)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    args = [f"experiment={experiment}", *(overrides or [])]
    if GlobalHydra.instance().is_initialized():  # inside `python evaluate.py experiment=papers`
        return hydra_compose(config_name="evaluate", overrides=args)
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return hydra_compose(config_name="evaluate", overrides=args)


def shrink(cfg: DictConfig, quick: dict) -> DictConfig:
    """The quick size of an experiment: fewer instances/episodes, sweep points, sweeps; ``set`` overrides."""
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    for key in ("instances", "episodes"):
        if quick.get(key) is not None:
            cfg[key] = int(quick[key])
    keep = quick.get("sweeps")
    sweeps = [s for s in (cfg.get("sweeps") or []) if keep is None or s["name"] in keep]
    for sweep in sweeps:
        if sweep["name"] in (quick.get("values") or {}):
            sweep["values"] = quick["values"][sweep["name"]]
    cfg.sweeps = sweeps
    for key, value in (quick.get("set") or {}).items():
        OmegaConf.update(cfg, str(key), value, force_add=True)
    return cfg


def _size(cfg: DictConfig) -> str:
    sweeps = cfg.get("sweeps") or []
    points = sum(len(s["values"]) for s in sweeps) or 1
    return f"{cfg.instances or 'default'} instances × {cfg.episodes or 'default'} episodes, {points} point(s)"


def run_experiment(paper: str, experiment: str, block: dict, *, quick: bool, results: Path,
                   extra: dict | None = None, reuse: bool = True, publish: bool = False,
                   ) -> tuple[list[dict], float, str]:
    """Run one experiment into ``results/<paper>/<experiment>/`` and write ``results/<paper>/<experiment>.csv``;
    sweep points finished there by an earlier run of the same config and code are reused (``reuse``,
    :mod:`edge_sched_gym.points`), so a long run resumes where it stopped."""
    cfg = compose(experiment)
    if quick:
        cfg = shrink(cfg, block.get("quick") or {})
    if extra:
        cfg = shrink(cfg, extra)
    out_dir = results / paper / experiment
    cfg.out = str(out_dir)
    cfg.progress = False
    cfg.reuse = reuse
    cfg.publish = publish  # results/ is checked in: evaluate.py writes there only on purpose
    size = _size(cfg)
    print(f"== {paper}: {experiment} ({'quick' if quick else 'full'} size: {size})", flush=True)
    start = time.perf_counter()
    reused_before = points.REUSED[0]
    evaluate_cli.run(cfg)
    wall = time.perf_counter() - start
    reused = points.REUSED[0] - reused_before
    if reused:  # the run time is then not the experiment's: say how much came from an earlier run
        total = sum(len(s["values"]) for s in (cfg.get("sweeps") or []))
        size += f"; {reused} of {total} point(s) reused from an earlier run into the same folder"
    rows = compare_experiment(paper, experiment, block, out_dir)
    evaluate_cli.write_csv(results / paper / f"{experiment}.csv", rows)
    return rows, wall, size


def provenance(command: str) -> dict[str, str]:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.rstrip()
        except (OSError, subprocess.SubprocessError):
            return "unknown"

    try:
        import torch

        torch_version = torch.__version__
    except ImportError:  # pragma: no cover
        torch_version = "not installed"
    # tracked files changed since the commit, outputs aside (this run's results, pages and README's table)
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
               if not line[3:].startswith(("results/", "docs/papers/", "README.md"))]
    dirty = f" (uncommitted changes in: {', '.join(changed[:5])}{' ...' if len(changed) > 5 else ''})" if changed else ""
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    return {
        "commit": git("rev-parse", "--short", "HEAD") + dirty,
        "command": command,
        "machine": " ".join(platform.uname()),
        "cores": str(os.cpu_count()),
        "load average at start": " ".join(f"{x:.2f}" for x in load),
        "python": platform.python_version(),
        "torch": torch_version,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def counts(rows: list[dict]) -> dict[str, int]:
    return {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}


def _counts_text(c: dict[str, int]) -> str:
    return f"{c['reproduced']} reproduced, {c['differs']} differ, {c['inconclusive']} inconclusive, {c['not run']} not run"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, str):
        try:
            return _fmt(float(value)) if value not in ("", "nan") else value
        except ValueError:
            return value
    return str(value)


def _cell(text: Any) -> str:
    return _fmt(text).replace("|", "\\|").replace("\n", " ")


FIGURES_HEADING = "## Figures"


def copy_figures(paper: str, experiments: list[str], results: Path, docs: Path) -> list[tuple[str, str]]:
    """Copy each experiment's sweep plots (``results/<paper>/<experiment>/*.png``) to
    ``<docs>/../assets/papers/<experiment>/``; returns (experiment, path relative to the page) pairs."""
    import shutil

    assets = docs.parent / "assets" / "papers"
    found = []
    for experiment in experiments:
        for png in sorted((results / paper / experiment).glob("*.png")):
            target = assets / experiment / png.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(png, target)
            found.append((experiment, f"../assets/papers/{experiment}/{png.name}"))
    return found


def figures_section(paper: str, figures: list[tuple[str, str]]) -> list[str]:
    """The page's figures: each experiment's plots (every metric against the swept value, one line per policy)."""
    if not figures:
        return []
    lines = [FIGURES_HEADING, "", f"Each experiment's plots, as written to `results/{paper}/<experiment>/*.png` by the "
             "run above (every metric against the swept value, one line per policy).", ""]
    for experiment in dict.fromkeys(e for e, _ in figures):
        lines += [f"### {experiment}", ""]
        lines += [f"![{experiment}: {Path(path).stem.replace('_', ' ')}]({path})" for e, path in figures if e == experiment]
        lines.append("")
    return lines


def refresh_figures(papers: Any = "all", *, results: Path | None = None, docs: Path | None = None) -> list[Path]:
    """Copy the checked-in plots to the docs' assets and rewrite the Figures section of the existing
    ``docs/papers/<paper>.md`` pages, without rerunning anything (``python -m evaluate_papers figures``)."""
    results = Path(results) if results is not None else require_clone("figures") / "results"
    docs = Path(docs) if docs is not None else ROOT / "docs" / "papers"
    changed = []
    for paper in parse_papers(papers):
        page_file = docs / f"{paper}.md"
        if not page_file.is_file():
            continue
        page = page_file.read_text()
        section = "\n".join(figures_section(paper, copy_figures(paper, list(experiment_blocks(paper)), results, docs)))
        head, sep, tail = page.partition("## Provenance")
        if not sep:
            raise ValueError(f"{page_file} has no '## Provenance' section: regenerate it with python -m evaluate_papers")
        head = head.partition(FIGURES_HEADING)[0].rstrip("\n") + "\n\n"
        new = head + (section + "\n" if section else "") + sep + tail
        if new != page:
            page_file.write_text(new)
            changed.append(page_file)
    return changed


def render_page(paper: str, runs: list[dict], prov: dict[str, str], quick: bool,
                figures: list[tuple[str, str]] | None = None) -> str:
    """docs/papers/<paper>.md: the command, the run time, one comparison table per experiment, provenance."""
    all_rows = [r for run in runs for r in run["rows"]]
    c = counts(all_rows)
    size = "quick" if quick else "full"
    lines = [
        f"# {PAPERS[paper]}",
        "",
        "Generated by `python -m evaluate_papers` from the experiments' `paper:` blocks "
        "(edge_sched_gym/conf/experiment/*.yaml); do not edit by hand.",
        "",
        f"**Size: {size}.** " + ("These numbers come from the CI-size run (`quick=true`: fewer instances, "
                                 "episodes and sweep points, shorter solver limits), so their CIs are wide and "
                                 "some of the paper's points are not run. The full size is "
                                 f"`python evaluate.py experiment=papers_{paper}`." if quick else
                                 "The experiments' own sizes (edge_sched_gym/conf/experiment/*.yaml)."),
        "",
        f"Command: `{prov['command']}`  ",
        f"Run time: {sum(r['wall_s'] for r in runs):.0f} s on this machine ({prov['cores']} cores, load average "
        f"{prov['load average at start']} at the start)"
        + ("; sweep points finished by an earlier run were reused (each experiment below says how many), so this "
           "is not the experiments' run time." if any("reused" in r["size"] for r in runs) else "."),
        "",
        f"**Verdicts: {_counts_text(c)}** "
        f"(of {len(all_rows)} quantities).",
        "",
        "Verdict rules: a number is *reproduced* when our 95 % CI, widened by the check's tolerance, covers the "
        "paper's value, *inconclusive* when it covers it only because the CI is wider than a quarter of the paper's "
        "value plus the tolerance (too few instances or episodes to tell); a range when every point lies inside it (widened likewise); a qualitative claim when it "
        "holds at every point of our sweep (or as stated in the row). *Not run*: the row needs a trained agent "
        "(the command is given) or a point the quick size leaves out. Ours is mean ± 95 % CI (Student t over "
        "instances × episodes) where the column has one.",
        "",
        "| experiment | full size | full run time | results |",
        "|---|---|---|---|",
    ]
    for run in runs:
        lines.append(f"| `{run['experiment']}` | `python evaluate.py experiment={run['experiment']}` | "
                     f"{_cell(run['full_time'])} | `results/{paper}/{run['experiment']}.csv`, "
                     f"`results/{paper}/{run['experiment']}/` |")
    for run in runs:
        rc = counts(run["rows"])
        lines += ["", f"## {run['experiment']}", "",
                  f"Run here: {run['size']}, {run['wall_s']:.0f} s. Verdicts: {_counts_text(rc)}.", "",
                  "| quantity | source | paper | ours | ratio | verdict | setting / compares to | why it differs |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in run["rows"]:
            ours = _fmt(r["ours"]) + (f" ± {_fmt(r['ours_ci95'])}" if r["ours_ci95"] not in ("", None) else "")
            unit = f" {r['unit']}" if r["unit"] else ""
            why = f"[why]({r['explanation']})" if r["explanation"] else ""
            note = f" ({r['note']})" if r["note"] else ""
            lines.append(f"| {_cell(r['quantity'])} | {_cell(r['source'])} | {_cell(r['paper_value'])}{unit} | "
                         f"{_cell(ours)} | {_cell(r['ratio'])} | {r['verdict']} | {_cell(r['setting'])}"
                         f"{'; `' + _cell(r['compares_to']) + '`' if r['compares_to'] else ''}{_cell(note)} | {why} |")
    lines += ["", *figures_section(paper, figures or []), "## Provenance", ""]
    lines += [f"- {k}: `{v}`" for k, v in prov.items()] + [""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- README

#: README's one-line answer per paper to "why do so many quantities differ?" (each check's own reason is on its page).
WHY_IT_DIFFERS: dict[str, str] = {
    "rescue": "RESCUE's Alg. 1 as worded loses to the paper's baselines at full strength (PickConfigs, SRS), "
              "while bid prices from its own LP's duals beat them all (`lp_bid_price`, the ladder's strongest)",
    "oinc": "the trained A_inf rows need SAC runs (commands on the page; not run); where none exists the `liu` "
            "heuristic stands in for A_inf",
    "aset": "in our topology model the static policies differ more on dc-cloud, and not every policy does better on "
            "co-dc-cloud, than Fig. 5 shows; the agent trained at λ = 60 is not the best at λ = 100; the DQN row "
            "needs a trained run (command on the page)",
    "corais": "CoRaiS-v1 draws non-trivial instances, not the paper's; "
              "one shipped model trained at (10, 5, 100), the paper trains one per scale",
}


def render_readme_table(summary: Path) -> str:
    """The results-at-a-glance table from ``results/papers/summary.csv``."""
    rows = read_rows(summary)
    lines = ["| paper | quantities checked | reproduced | differ | inconclusive | not run | size | why it differs | "
             "details |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['paper']} | {r['quantities']} | {r['reproduced']} | {r['differs']} | {r['inconclusive']} | "
                     f"{r['not_run']} | {r['size']} | {WHY_IT_DIFFERS.get(r['paper'], '')} | "
                     f"[docs/papers/{r['paper']}.md](docs/papers/{r['paper']}.md) |")
    return "\n".join(lines)


def update_readme(readme: Path = ROOT / "README.md", summary: Path = ROOT / "results" / "papers" / "summary.csv",
                  ) -> bool:
    """Replace the text between README's results-at-a-glance markers; False if README has no markers."""
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        return False
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_BEGIN}\n{render_readme_table(summary)}\n{README_END}{tail}"
    if new != text:
        readme.write_text(new)
    return True


# --------------------------------------------------------------------------------------------- driver

#: where a papers run writes without publish=true (git-ignored)
DEFAULT_OUT = default_output("papers")
_AUTO = "auto"


def _snapshot(paths: list[Path]) -> dict[Path, bytes | None]:
    """The bytes of every file under ``paths`` (files or folders); None for a missing file."""
    found: dict[Path, bytes | None] = {}
    for path in paths:
        if path.is_dir():
            found.update({f: f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()})
        else:
            found[path] = path.read_bytes() if path.is_file() else None
    return found


def run_papers(papers: Any = "all", quick: Any = False, *, results: Path | str | None = None,
               docs: Path | str | None = None, readme: Path | str | None = _AUTO, out: Path | str | None = None,
               publish: Any = False, experiments: list[str] | None = None, extra: dict | None = None,
               command: str | None = None, reuse: Any = True) -> Path:
    """Run the papers' experiments, compare with the papers, write CSVs, pages, summary and README's table.

    Without ``publish`` everything goes under ``out`` (default ``outputs/papers/``, git-ignored): ``<paper>/``,
    ``papers/summary.csv``, ``docs/papers/<paper>.md`` and ``results-at-a-glance.md``. With ``publish=true`` the
    checked-in ``results/``, ``docs/papers/`` and README's results-at-a-glance table are refreshed, and the files
    that changed are printed. ``results``/``docs``/``readme`` given explicitly win (tests).
    ``experiments`` restricts the run to some experiments and ``extra`` shrinks further (tests); both change
    nothing else. ``reuse`` (default true): sweep points an earlier, interrupted run of the same config and code
    finished under the same folders are reused (:mod:`edge_sched_gym.points`). Bad input raises ValueError before
    anything is written.
    """
    from offline.provenance import parse_bool

    names = parse_papers(papers)
    quick = parse_quick(quick)
    publish = parse_bool("publish", publish)
    reuse = parse_bool("reuse", reuse)
    if publish:
        require_clone()
    out = Path(out) if out else DEFAULT_OUT
    check_output_path(out, publish=publish)  # without publish, everything goes under a scratch out=
    if results is None:
        results = ROOT / "results" if publish else out
    if docs is None:
        docs = ROOT / "docs" / "papers" if publish else out / "docs" / "papers"
    results, docs = Path(results), Path(docs)
    if readme == _AUTO:
        readme = ROOT / "README.md" if publish else None
    table_file = None if publish else results / "results-at-a-glance.md"
    watched = [results / p for p in names] + [results / "papers" / "summary.csv"] + \
        [docs / f"{p}.md" for p in names] + ([Path(readme)] if readme is not None else [])
    plan = {}
    for paper in names:
        blocks = experiment_blocks(paper)
        if experiments is not None:
            blocks = {k: v for k, v in blocks.items() if k in experiments}
        for experiment, block in blocks.items():
            check_block(experiment, block)
        plan[paper] = blocks
    if experiments is not None:
        known = {e for blocks in plan.values() for e in blocks}
        missing = sorted(set(experiments) - known)
        if missing:
            raise ValueError(f"experiments {missing} are not paper experiments of {names}; valid: {sorted(known)}")
    command = command or ("python evaluate.py experiment=" + ("papers" if len(names) == len(PAPERS) else
                                                               f"papers_{names[0]}") + (" quick=true" if quick else ""))
    if not publish:
        from agents.registry import check_writable_folder

        check_writable_folder("out", out)
    before = _snapshot(watched) if publish else {}
    prov = provenance(command)
    summary_path = results / "papers" / "summary.csv"
    summary = {r["paper"]: r for r in read_rows(summary_path)}
    for paper, blocks in plan.items():
        runs = []
        for experiment, block in blocks.items():
            rows, wall, size = run_experiment(paper, experiment, block, quick=quick, results=results, extra=extra,
                                              reuse=reuse, publish=publish)
            runs.append({"experiment": experiment, "rows": rows, "wall_s": wall, "size": size,
                         "full_time": block.get("full_time", "")})
        docs.mkdir(parents=True, exist_ok=True)
        figures = copy_figures(paper, [run["experiment"] for run in runs], results, docs)
        (docs / f"{paper}.md").write_text(render_page(paper, runs, prov, quick, figures))
        all_rows = [r for run in runs for r in run["rows"]]
        c = counts(all_rows)
        summary[paper] = {"paper": paper, "experiments": len(runs), "quantities": len(all_rows),
                          "reproduced": c["reproduced"], "differs": c["differs"], "inconclusive": c["inconclusive"],
                          "not_run": c["not run"],
                          "size": "quick" if quick else "full", "wall_s": round(sum(r["wall_s"] for r in runs), 1),
                          "commit": prov["commit"], "date": prov["date"], "command": command}
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        ordered = [summary[p] for p in PAPERS if p in summary]
        evaluate_cli.write_csv(summary_path, ordered)
        print(f"{paper}: {_counts_text(c)} -> {docs / f'{paper}.md'}", flush=True)
    if readme is not None:
        update_readme(Path(readme), summary_path)
    if table_file is not None:
        table_file.parent.mkdir(parents=True, exist_ok=True)
        table_file.write_text(render_readme_table(summary_path) + "\n")
    if publish:
        after = _snapshot(watched)
        changed = sorted(str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
                         for p in set(before) | set(after) if before.get(p) != after.get(p))
        print(f"publish=true changed {len(changed)} file(s)" + "".join(f"\n  {c}" for c in changed), flush=True)
    else:
        print(f"wrote {out} (nothing checked in changed; publish=true refreshes results/, docs/papers/ and "
              "README's table)", flush=True)
    return summary_path


def run_from_config(cfg: DictConfig) -> Path:
    """evaluate.py's ``runner`` for ``experiment=papers`` / ``papers_<paper>`` (keys ``papers``, ``quick``,
    ``publish``, ``out``, ``reuse``)."""
    args = [a for a in sys.argv[1:]]
    command = "python evaluate.py " + " ".join(args) if args else None
    return run_papers(cfg.get("papers", "all"), cfg.get("quick", False), out=cfg.get("out") or None,
                      publish=cfg.get("publish", False), command=command, reuse=cfg.get("reuse", True))


def main(argv: list[str]) -> int:
    """``python -m evaluate_papers [paper=<name>|all] [quick=true]`` or ``python -m evaluate_papers readme``."""
    if argv and argv[0] == "figures":  # figures [paper=<name>|all]: the checked-in plots onto the pages
        try:
            paper = argv[1].partition("=")[2] if len(argv) > 1 else "all"
            for page in refresh_figures(paper):
                print(f"changed {page.relative_to(ROOT)}")
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        return 0
    if argv == ["readme"]:
        if not update_readme():
            print(f"README.md has no markers {README_BEGIN!r} ... {README_END!r}", file=sys.stderr)
            return 1
        return 0
    options = {"paper": "all", "quick": "false", "publish": "false", "out": ""}
    for arg in argv:
        key, sep, value = arg.partition("=")
        key = "paper" if key == "papers" else key
        if not sep or key not in options:
            print(f"error: {arg!r} is not understood; usage: python -m evaluate_papers [paper=<{'|'.join(PAPERS)}|all>]"
                  " [quick=true|false] [publish=true|false] [out=DIR] | readme", file=sys.stderr)
            return 2
        options[key] = value
    try:
        run_papers(options["paper"], options["quick"], publish=options["publish"], out=options["out"] or None,
                   command="python -m evaluate_papers " + " ".join(argv) if argv else "python -m evaluate_papers")
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
