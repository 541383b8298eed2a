"""Where do RESCUE's claims hold? A table per sweep point, generated from evaluate.py's sweep CSVs.

    python -m offline.uec.report results/uec/sensitivity results/uec/rescue_fig6 ... > results/uec/regimes.md

For every point of every sweep CSV in the given folders (written by ``python evaluate.py
experiment=uec_sensitivity`` or ``rescue_fig6``…``9``): OPT(LP); Σ_k B_k(1)/OPT(LP) (RESCUE's expected
share, ≥ ½ by Theorem 1); RESCUE's realised competitive ratio with its 95 % CI and its realised /
expected profit; the best faithful baseline (the strongest of the paper's five) and its ratio;
RESCUE / best baseline; ``rescue_fallback`` / best baseline when evaluated; and whether the paper's two
headline numbers hold there: RESCUE ≥ 1.6 × the best baseline ("+60 %") and RESCUE ≥ 0.87 · OPT(LP).
Also writes ``regimes.csv`` next to the first folder.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

from offline.uec.evaluation import BASELINE_NAMES

PAPER_GAIN = 1.6  # RESCUE's "+60 %" over the best baseline
PAPER_RATIO = 0.87  # the paper's best empirical competitive ratio


def regime_rows(folder: Path) -> list[dict[str, Any]]:
    """One row per (sweep, point) of the sweep CSVs in ``folder``."""
    rows: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.csv")):
        if path.name in ("summary.csv", "regimes.csv"):
            continue
        with open(path) as handle:
            records = list(csv.DictReader(handle))
        if not records or "competitive_ratio" not in records[0]:
            continue
        column = next(iter(records[0]))
        for point in dict.fromkeys(r[column] for r in records):
            by_policy = {r["policy"]: r for r in records if r[column] == point}
            if "rescue" not in by_policy:
                continue
            rescue = by_policy["rescue"]
            baselines = [by_policy[n] for n in BASELINE_NAMES if n in by_policy]
            best = max(baselines, key=lambda r: float(r["profit_mean"]))
            gain = float(rescue["profit_mean"]) / float(best["profit_mean"])
            ratio = float(rescue["competitive_ratio"])
            fallback = by_policy.get("rescue_fallback")
            rows.append({
                "experiment": folder.name, "sweep": path.stem, "parameter": column, "value": point,
                "opt_lp": float(rescue["lp_bound"]),
                "value_ratio": float(rescue["value_bound"]) / float(rescue["lp_bound"]),
                "rescue_ratio": ratio,
                "rescue_ratio_ci95": float(rescue.get("competitive_ratio_ci95") or float(rescue["profit_ci95"]) / float(rescue["lp_bound"])),
                "rescue_realised_over_expected": float(rescue["profit_mean"]) / float(rescue["value_bound"]),
                "best_baseline": best["policy"], "best_baseline_ratio": float(best["competitive_ratio"]),
                "rescue_vs_best": gain,
                "fallback_vs_best": float(fallback["profit_mean"]) / float(best["profit_mean"]) if fallback else float("nan"),
                "paper_gain_holds": gain >= PAPER_GAIN, "paper_ratio_holds": ratio >= PAPER_RATIO,
            })
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    head = ("| experiment / sweep | value | OPT(LP) | ΣB(1)/OPT | RESCUE / OPT (95 % CI) | realised / ΣB(1) | best baseline "
            "(/ OPT) | RESCUE / best | fallback / best | ≥ 1.6× best | ≥ 0.87 OPT |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        fallback = "" if r["fallback_vs_best"] != r["fallback_vs_best"] else f"{r['fallback_vs_best']:.2f}"
        lines.append(
            f"| {r['experiment']} / {r['sweep']} | {r['value']} | {r['opt_lp']:.1f} | {r['value_ratio']:.3f} | "
            f"{r['rescue_ratio']:.3f} ± {r['rescue_ratio_ci95']:.3f} | {r['rescue_realised_over_expected']:.2f} | "
            f"{r['best_baseline']} ({r['best_baseline_ratio']:.3f}) | {r['rescue_vs_best']:.2f} | {fallback} | "
            f"{'yes' if r['paper_gain_holds'] else 'no'} | {'yes' if r['paper_ratio_holds'] else 'no'} |"
        )
    holds = [r for r in rows if r["paper_gain_holds"] and r["paper_ratio_holds"]]
    gains = [r["rescue_vs_best"] for r in rows]
    ratios = [r["rescue_ratio"] for r in rows]
    values = [r["value_ratio"] for r in rows]
    lines += [
        "",
        f"{len(rows)} points. RESCUE / best faithful baseline: {min(gains):.2f}–{max(gains):.2f}; RESCUE's realised "
        f"ratio to OPT(LP): {min(ratios):.3f}–{max(ratios):.3f}; its expected share Σ_k B_k(1)/OPT(LP): "
        f"{min(values):.3f}–{max(values):.3f}. Points where both paper numbers hold: {len(holds)}.",
    ]
    return "\n".join(lines)


def main(folders: list[str]) -> None:
    if not folders:
        raise SystemExit("usage: python -m offline.uec.report <sweep folder> [<sweep folder> ...]")
    rows: list[dict[str, Any]] = []
    for name in folders:
        folder = Path(name)
        if not folder.is_dir():
            raise SystemExit(f"error: {name} is not a folder of evaluate.py sweep CSVs")
        rows += regime_rows(folder)
    if not rows:
        raise SystemExit(f"error: no UEC sweep CSV with a rescue row in {folders}")
    with open(Path(folders[0]).parent / "regimes.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"<!-- generated by: python -m offline.uec.report {' '.join(folders)} -->")
    print(markdown(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
