"""The paper's claim "A_ret gives the shortest retraining completion times" with every controller,
Kalmia included, on paired episodes (common random numbers), at the default shares and at an equal share.

At the defaults A_ret and Kalmia may reserve up to 0.9 of an edge while Dedas, Zhang and Ekya get a fixed
0.5 (Ekya shares its edge with inference), so the default comparison measures the share as much as
Algorithm 5; at an equal share of 0.9 Zhang and Ekya finish first (docs: OINC, "Table II at equal shares";
``python evaluate.py experiment=oinc_equal_share``). Thresholds are the measured values with a margin.
"""

from __future__ import annotations

import csv
import pathlib
from collections import defaultdict

import pytest

from offline.oinc import evaluate_policies

CONTROLLERS = ("aret", "kalmia", "ekya", "dedas", "zhang")


def paired_completion(tmp_path: pathlib.Path, controllers: tuple[str, ...], *, instances: int, episodes: int,
                      **env_kwargs: object) -> dict[str, list[float]]:
    """Retraining completion time (s) per controller, episode by episode in the same order, with liu as A_inf."""
    rows = evaluate_policies(dict(env_kwargs), [f"liu+{c}" for c in controllers], instances=instances,
                             episodes=episodes, seed=0, out_dir=tmp_path, progress=False)
    assert [r["policy"] for r in rows] == [f"liu+{c}" for c in controllers]
    by_controller: dict[str, list[float]] = defaultdict(list)
    with (tmp_path / "oinc_episodes.csv").open() as handle:
        for row in csv.DictReader(handle):
            by_controller[row["policy"].removeprefix("liu+")].append(float(row["retraining_completion_s"]))
    assert all(len(v) == instances * episodes for v in by_controller.values())
    return dict(by_controller)


def wins(first: list[float], second: list[float]) -> int:
    """Paired episodes in which ``first`` finishes its retraining jobs sooner."""
    return sum(a < b for a, b in zip(first, second, strict=True))


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_oinc_table2__aret_fastest_at_default_shares_but_not_at_equal_share(tmp_path: pathlib.Path) -> None:
    """Fast version (2 instances x 2 episodes, Table II's scenario)."""
    default = paired_completion(tmp_path / "default", CONTROLLERS, instances=2, episodes=2)
    for other in ("ekya", "dedas", "zhang"):  # measured: A_ret 42-79 s, these 87-294 s
        assert wins(default["aret"], default[other]) == 4, other
    # Kalmia has A_ret's cap: per episode a near tie (measured 79/73, 56/85, 52/51, 60/97 s), A_ret ahead on average
    assert mean(default["aret"]) < mean(default["kalmia"])
    # At an equal share of 0.9 Zhang and Ekya win every paired episode (measured 46-52 s and 40-47 s vs 52-79 s)
    equal = paired_completion(tmp_path / "equal", ("aret", "ekya", "zhang"), instances=2, episodes=2,
                              retraining_share=0.9)
    assert equal["aret"] == default["aret"]  # 0.9 is A_ret's default cap: the same episodes
    assert wins(equal["zhang"], equal["aret"]) == 4
    assert wins(equal["ekya"], equal["aret"]) == 4


@pytest.mark.slow
def test_oinc_table2__aret_gives_the_shortest_retraining_completion(tmp_path: pathlib.Path) -> None:
    """Table II's size (5 instances x 2 episodes): A_ret has the lowest mean completion time of the five
    controllers at their default shares; it beats the 0.5-share controllers in every episode and Kalmia
    (the same cap) in most (measured: 6 of 10, means 60.7 s vs 71.6 s)."""
    times = paired_completion(tmp_path, CONTROLLERS, instances=5, episodes=2)
    means = {c: mean(v) for c, v in times.items()}
    assert min(means, key=means.get) == "aret"
    for other in ("ekya", "dedas", "zhang"):
        assert wins(times["aret"], times[other]) == 10, other
    assert wins(times["aret"], times["kalmia"]) >= 6
    assert means["kalmia"] - means["aret"] > 5.0  # measured 10.9 s
