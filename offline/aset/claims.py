"""Which of ASET's claims about static policies hold under which modelling setting (issue 17).

    python evaluate.py experiment=aset_claims out=results/aset/claims publish=true
    python -m offline.aset.claims results/aset/claims          # -> results/aset/claims/claims.csv and claims.md

Reads each sweep CSV of ``edge_sched_gym/conf/experiment/aset_claims.yaml`` (one per (queueing, capacity_scale) setting,
swept over the topologies) and checks, per setting:

* (a) *no static policy is best everywhere*: the policy with the highest success rate differs between
  the topologies (``holds`` when at least two distinct best policies);
* (c) *every policy does better on co-dc-cloud than on dc-cloud*: the share of static policies whose
  success rate on co-dc-cloud exceeds their dc-cloud one by more than the two 95 % half-widths combined
  (``holds`` when every policy does); the detail also counts those significantly worse and those whose
  mean alone is higher.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

CLAIM_A = "a: no static policy is best on every topology"
CLAIM_C = "c: every policy does better on co-dc-cloud than on dc-cloud"


def check_claims(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The two claims on one sweep's rows (``topology``, ``policy``, ``success_rate``, ``success_rate_ci95``)."""
    by_topology: dict[str, dict[str, tuple[float, float]]] = {}
    for row in rows:
        by_topology.setdefault(str(row["topology"]), {})[str(row["policy"])] = (
            float(row["success_rate"]), float(row.get("success_rate_ci95") or 0.0))
    best = {t: max(p, key=lambda name: p[name][0]) for t, p in by_topology.items()}
    out = [{"claim": CLAIM_A, "holds": len(set(best.values())) >= 2,
            "detail": "; ".join(f"{t}: {b}" for t, b in best.items())}]
    if {"dc-cloud", "co-dc-cloud"} <= set(by_topology):
        dc, co = by_topology["dc-cloud"], by_topology["co-dc-cloud"]
        names = sorted(set(dc) & set(co))
        better = [n for n in names if co[n][0] - dc[n][0] > co[n][1] + dc[n][1]]
        worse = [n for n in names if dc[n][0] - co[n][0] > co[n][1] + dc[n][1]]
        out.append({"claim": CLAIM_C, "holds": len(better) == len(names),
                    "detail": f"significantly better on co-dc-cloud: {len(better)} of {len(names)}, significantly worse: "
                              f"{len(worse)}, higher mean: {sum(co[n][0] > dc[n][0] for n in names)}"})
    return out


def claims_table(folder: Path) -> list[dict[str, Any]]:
    """One row per (setting, claim) from every sweep CSV in ``folder`` (named ``<queueing>_x<scale>.csv``)."""
    table = []
    for path in sorted(folder.glob("*_x*.csv")):
        queueing, _, scale = path.stem.rpartition("_x")
        with path.open() as handle:
            rows = list(csv.DictReader(handle))
        for result in check_claims(rows):
            table.append({"queueing": queueing, "capacity_scale": float(scale), **result})
    if not table:
        raise ValueError(f"folder={str(folder)!r} holds no sweep CSVs named <queueing>_x<scale>.csv: run "
                         "python evaluate.py experiment=aset_claims out=<folder> first")
    return table


def claims_markdown(table: list[dict[str, Any]]) -> str:
    """One row per setting, one column per claim (``holds``/``fails`` and the detail); the docs include it."""
    settings = list(dict.fromkeys((r["queueing"], r["capacity_scale"]) for r in table))
    claims = list(dict.fromkeys(r["claim"] for r in table))
    lines = ["| queueing | capacity_scale | " + " | ".join(claims) + " |", "|---|---|" + "---|" * len(claims)]
    for queueing, scale in settings:
        cells = []
        for claim in claims:
            row = next((r for r in table if (r["queueing"], r["capacity_scale"], r["claim"]) == (queueing, scale, claim)), None)
            cells.append("" if row is None else f"{'holds' if row['holds'] else 'fails'} ({row['detail']})")
        lines.append(f"| {queueing} | {scale:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    folder = Path(argv[0]) if argv else Path("results/aset/claims")
    try:
        table = claims_table(folder)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    with (folder / "claims.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    (folder / "claims.md").write_text(claims_markdown(table))
    for row in table:
        print(f"{row['queueing']:>12} x{row['capacity_scale']:<4g} {'holds ' if row['holds'] else 'fails '} "
              f"{row['claim']}  ({row['detail']})")
    print(folder / "claims.csv")


if __name__ == "__main__":
    main(sys.argv[1:])
