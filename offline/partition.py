"""Which seeds and instances serve which purpose: training, tuning, reported evaluation. They never overlap.

Tuning (of heuristics' parameters and of hyperparameters), training and the evaluation the docs report all
read their seeds from here, so that no reported number comes from an episode or an instance that a policy
was tuned or trained on (design/ladder.md). An *instance* is what a problem's generator draws
(``instance_seed`` of UEC, OINC and ASET; the reset seed of CoRaiS); an *episode* is one realisation of the
randomness on it. :func:`offline.runner.evaluate` takes both apart: ``seed`` chooses the episode seeds
(through each problem's hook) and ``instance_base`` the first instance.

| purpose | instances | episode seeds (``seed`` of ``evaluate``) |
|---|---|---|
| fixed-instance training | ``TRAINING_INSTANCE`` (0) | the run's seed (0, 1, ...) and train.py's ``eval.seed`` (1000 + k) |
| tuning | ``TUNING_INSTANCE_BASE`` + 0..9 (900..909) | ``TUNING_SEED`` (77) |
| reported: the training instance | ``TRAINING_INSTANCE`` | ``EVALUATION_SEED`` (2026) |
| reported: held-out instances | ``HELD_OUT_INSTANCE_BASE`` + 0..n-1 (100..) | ``EVALUATION_SEED`` |

Episode seeds are derived from (seed, instance, episode) by each hook, so the three ``seed`` values give
disjoint streams; :func:`check_disjoint` guards the instance ranges.

Every reported split (``training_instance``, ``held_out_instances`` and a ladder variant
``held_out_instances@<name>``) has a **version** (:func:`split_version`), written into every ladder CSV row
(``split_version``): rows of different versions were played on different episodes and are never compared. A
split's content (its instances as generated, the reset observations of its episodes, its episode seeds) has a
checked-in fingerprint per version (``offline/split_fingerprints.json``, :func:`offline.ladder.split_fingerprint`);
a test fails when the content changes while the version stays. Then bump the split's entry in
:data:`SPLIT_VERSIONS` and record the new fingerprint (``python -m offline.ladder fingerprints publish=true``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EVALUATION_SEED",
    "FIRST_SPLIT_VERSION",
    "HELD_OUT_INSTANCE_BASE",
    "SPLIT_VERSIONS",
    "TRAINING_INSTANCE",
    "TUNING_INSTANCE_BASE",
    "TUNING_SEED",
    "EvaluationSet",
    "check_disjoint",
    "check_instance_pool",
    "held_out_instances",
    "split_version",
    "training_instance",
    "tuning_set",
]

#: The instance fixed-instance learners train on (``instance_seed=0``, every env's default).
TRAINING_INSTANCE = 0
#: First instance of the tuning instances (heuristics' parameters, hyperparameters).
TUNING_INSTANCE_BASE = 900
#: Largest number of tuning instances any tuner may use (900..909).
TUNING_INSTANCES_MAX = 10
#: Episode seed of tuning runs (``seed`` of :func:`offline.runner.evaluate`).
TUNING_SEED = 77
#: First held-out instance of the reported evaluation.
HELD_OUT_INSTANCE_BASE = 100
#: Largest number of held-out instances a reported evaluation may use (100..199).
HELD_OUT_INSTANCES_MAX = 100
#: Episode seed of every reported evaluation (the ladder, the learners' final tables).
EVALUATION_SEED = 2026


#: Version of each split whose content changed since version 1: env id -> split -> version (a split not listed
#: is version 1). Bump an entry when the split's fingerprint test fails because what it plays changed on purpose.
SPLIT_VERSIONS: dict[str, dict[str, int]] = {}
#: The version of a split not listed in :data:`SPLIT_VERSIONS` (and of published rows without the column).
FIRST_SPLIT_VERSION = 1


def split_version(env_id: str, split: str) -> int:
    """The current version of ``split`` (``training_instance``, ``held_out_instances[@<variant>]``) of ``env_id``."""
    return int(SPLIT_VERSIONS.get(env_id, {}).get(split, FIRST_SPLIT_VERSION))


@dataclass(frozen=True)
class EvaluationSet:
    """Instances ``instance_base .. instance_base + instances - 1``, ``episodes`` episodes each, episode
    seeds from ``seed``: the arguments of :func:`offline.runner.evaluate` that choose what is played."""

    name: str
    instance_base: int
    instances: int
    episodes: int
    seed: int

    def instance_seeds(self) -> range:
        return range(self.instance_base, self.instance_base + self.instances)

    def evaluate_kwargs(self) -> dict[str, int]:
        """``instance_base``, ``instances``, ``episodes`` and ``seed`` for :func:`offline.runner.evaluate`."""
        return {"instance_base": self.instance_base, "instances": self.instances, "episodes": self.episodes,
                "seed": self.seed}


def training_instance(episodes: int) -> EvaluationSet:
    """Held-out episodes of the training instance."""
    return EvaluationSet("training_instance", TRAINING_INSTANCE, 1, episodes, EVALUATION_SEED)


def held_out_instances(instances: int, episodes: int) -> EvaluationSet:
    """``instances`` held-out instances (never trained or tuned on), ``episodes`` episodes each."""
    if not 1 <= instances <= HELD_OUT_INSTANCES_MAX:
        raise ValueError(f"instances={instances} is invalid: expected 1..{HELD_OUT_INSTANCES_MAX}")
    return EvaluationSet("held_out_instances", HELD_OUT_INSTANCE_BASE, instances, episodes, EVALUATION_SEED)


def tuning_set(instances: int, episodes: int) -> EvaluationSet:
    """The tuning instances and episode seeds (disjoint from every reported evaluation)."""
    if not 1 <= instances <= TUNING_INSTANCES_MAX:
        raise ValueError(f"instances={instances} is invalid: expected 1..{TUNING_INSTANCES_MAX}")
    return EvaluationSet("tuning", TUNING_INSTANCE_BASE, instances, episodes, TUNING_SEED)


def check_instance_pool(base: int, count: int, key: str = "algo.instance_pool_base") -> None:
    """Raise ValueError naming ``key`` if a learner's pool of extra training instances ``base .. base+count-1``
    overlaps the training, tuning or held-out instances (a learner must never train on what it is judged on)."""
    reserved = {TRAINING_INSTANCE, *range(HELD_OUT_INSTANCE_BASE, HELD_OUT_INSTANCE_BASE + HELD_OUT_INSTANCES_MAX),
                *range(TUNING_INSTANCE_BASE, TUNING_INSTANCE_BASE + TUNING_INSTANCES_MAX)}
    if reserved & set(range(base, base + count)):
        raise ValueError(f"{key}={base}: the pool of {count} instances overlaps the training ({TRAINING_INSTANCE}), "
                         f"held-out ({HELD_OUT_INSTANCE_BASE}..) or tuning ({TUNING_INSTANCE_BASE}..) instances of "
                         "offline.partition")


def check_disjoint() -> None:
    """Raise AssertionError if two purposes share an instance or an episode seed base."""
    training = {TRAINING_INSTANCE}
    tuning = set(range(TUNING_INSTANCE_BASE, TUNING_INSTANCE_BASE + TUNING_INSTANCES_MAX))
    held_out = set(range(HELD_OUT_INSTANCE_BASE, HELD_OUT_INSTANCE_BASE + HELD_OUT_INSTANCES_MAX))
    assert not training & tuning and not training & held_out and not tuning & held_out, "instance ranges overlap"
    assert TUNING_SEED != EVALUATION_SEED, "tuning and evaluation share episode seeds"
