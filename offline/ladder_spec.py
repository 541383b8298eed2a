"""What a problem declares for the reference ladder and for tuning its heuristics (design/ladder.md).

Each ladder env has ``offline/<p>/ladder.py`` with a :class:`LadderSpec` named ``SPEC`` (``Problem.ladder``
of :mod:`envs.problems` points at it). :mod:`offline.ladder` runs every rung through
:func:`offline.runner.evaluate` on the sets of :mod:`offline.partition`, reads the per-episode CSV the
problem's hook writes, and scores each episode by ``SPEC.metric``. Clairvoyant quantities that are not
policies (an LP relaxation, a MILP's dual bound) come from ``SPEC.bounds``, a function called once per played
episode with the instance seed and the reset seed the runner used.

A tuned heuristic declares a :class:`TuningSpec`; ``python -m offline.tuning env=<id>`` tunes it with Optuna
on :func:`offline.partition.tuning_set` and, with ``publish=true``, writes the values to the problem's
``offline/<p>/tuned.yaml``, which the policy reads by default (:func:`tuned_params`) wherever its name is
played: a ladder spec passes no tuned values of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["BoundFn", "LadderSpec", "ObjectiveFn", "SpaceFn", "TuningSpec", "tuned_params", "tuned_path"]

#: ``bounds(env_kwargs, instance_seed, reset_seed) -> {name: value}``: clairvoyant numbers of one episode
#: (same units as the metric); each name is a row of the ladder (rung "bound" or "reference").
BoundFn = Callable[[dict[str, Any], int, int], dict[str, float]]
#: ``space(trial) -> params``: the search space of a tuned policy (an ``optuna.Trial``).
SpaceFn = Callable[[Any], dict[str, Any]]
#: ``objective(episode_rows) -> float``: what tuning optimises (default: the mean of the ladder metric).
ObjectiveFn = Callable[[list[dict[str, Any]]], float]


@dataclass(frozen=True)
class TuningSpec:
    """One tuned policy: ``policy`` is its registered name, ``space`` its parameters; each trial evaluates
    ``policy_kwargs = space(trial)`` on ``instances`` tuning instances x ``episodes`` episodes."""

    policy: str
    space: SpaceFn
    trials: int = 40
    instances: int = 4
    episodes: int = 5
    #: env kwargs of the tuning runs (default: the ladder's)
    env_kwargs: Mapping[str, Any] | None = None
    #: None: maximise (or minimise, per ``LadderSpec.higher_is_better``) the mean of ``LadderSpec.metric``
    #: over every row (of every setting)
    objective: ObjectiveFn | None = None
    #: env kwargs overrides, each played on the same tuning instances (e.g. several loads, so that one parameter
    #: serves them all); rows carry ``"setting"`` (the index). Empty: the env kwargs alone.
    settings: tuple[Mapping[str, Any], ...] = ()
    #: trials of ``quick=true`` (the tests' determinism check uses it)
    quick_trials: int = 4


@dataclass(frozen=True)
class LadderSpec:
    """The rungs of one env and how an episode is scored."""

    env_id: str
    #: the per-episode column (of the hook's episodes CSV) the ladder scores by
    metric: str
    higher_is_better: bool
    #: rung 1: the env's uniform (feasible) random policy
    random: str
    #: rung 2: the papers' baselines, as the papers word them
    papers: tuple[str, ...]
    #: rung 3: our strong heuristics (tuned where a TuningSpec says so)
    ours: tuple[str, ...]
    #: rung 4 beyond the shipped ``pretrained:`` agents of this env: learned policy names resolvable by
    #: ``agents.loading.resolve_policy`` (e.g. CoRaiS's shipped dispatcher)
    learners: tuple[str, ...] = ()
    #: online references: non-learning, non-anticipative policies that buy quality with compute per decision
    #: (rollouts over sampled futures, re-solved LPs, long searches); placed by quality and decision time, never
    #: counted as the strongest baseline (the normalisation keeps rungs 2-3)
    online: tuple[str, ...] = ()
    #: rung 5: clairvoyant *policies* (they see the episode's future; never baselines)
    references: tuple[str, ...] = ()
    #: rung 5: clairvoyant numbers per episode (see :data:`BoundFn`); ``bound_names`` lists what it returns
    bounds: BoundFn | None = None
    bound_names: tuple[str, ...] = ()
    #: clairvoyant numbers the problem's hook already writes per episode: column -> row name (the row name is
    #: classified by ``bound_names`` / ``proven_bounds`` too), e.g. UEC's ``lp_bound`` -> ``opt_lp``
    bound_columns: Mapping[str, str] = field(default_factory=dict)
    #: which bound names are proven bounds (no policy can beat them); the others are references
    proven_bounds: tuple[str, ...] = ()
    #: one-line description of each non-paper row (ours, references, bounds) for the Leaderboard page
    descriptions: Mapping[str, str] = field(default_factory=dict)
    #: env kwargs of every ladder run; the hook's options (``evaluation_kwargs``) and per-policy kwargs
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    evaluation_kwargs: Mapping[str, Any] = field(default_factory=dict)
    #: never tuned values: a tuned policy reads its tuned.yaml by default wherever its name is played
    #: (make_policy, evaluate.py, the ladder, score), so the ladder plays what a user gets from the name
    policy_kwargs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: other per-episode columns whose means the ladder reports (e.g. OINC's SLO hit rate)
    extra_columns: tuple[str, ...] = ()
    #: sizes: held-out episodes of the training instance (0: no such set, e.g. CoRaiS trains on the
    #: distribution), held-out instances x episodes; ``quick`` sizes for ``quick=true``
    training_episodes: int = 20
    held_out_instances: int = 10
    held_out_episodes: int = 2
    quick_training_episodes: int = 4
    quick_held_out_instances: int = 10
    quick_held_out_episodes: int = 1
    #: extra held-out sets at other env settings: name -> env kwargs (e.g. CoRaiS at other scales)
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: the variants ``quick=true`` plays (None: all of them), so the CI-size ladder stays within its budget
    quick_variants: tuple[str, ...] | None = None
    #: policies left out of ``variants`` (e.g. a solver too slow at a larger scale): a tuple for every variant,
    #: or variant name -> tuple
    variant_skip: tuple[str, ...] | Mapping[str, tuple[str, ...]] = ()
    tuning: tuple[TuningSpec, ...] = ()

    def skipped(self, variant: str | None) -> tuple[str, ...]:
        """Policies (and learner labels) not played on ``variant`` (None: the main sets play everything)."""
        if variant is None:
            return ()
        if isinstance(self.variant_skip, Mapping):
            return tuple(self.variant_skip.get(variant, ()))
        return tuple(self.variant_skip)

    def policies(self) -> list[str]:
        """Every policy rung, bottom to top (learners from ``pretrained:`` are added by the caller)."""
        return [self.random, *self.papers, *self.ours, *self.online, *self.learners, *self.references]

    def rung(self, name: str) -> str:
        """``random``, ``paper``, ``ours``, ``online``, ``learner``, ``reference`` or ``bound``."""
        if name == self.random:
            return "random"
        if name in self.papers:
            return "paper"
        if name in self.ours:
            return "ours"
        if name in self.online:
            return "online"
        if name in self.references:
            return "reference"
        if name in self.bound_names:
            return "bound" if name in self.proven_bounds else "reference"
        return "learner"


def tuned_path(package_dir: Path | str) -> Path:
    """``<package_dir>/tuned.yaml``: the checked-in tuned values of a problem's heuristics."""
    return Path(package_dir) / "tuned.yaml"


def tuned_params(package_dir: Path | str, policy: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The tuned parameters of ``policy`` from ``<package_dir>/tuned.yaml`` over ``defaults``.

    A missing file or a missing entry for ``policy`` means the defaults (an untuned policy). Anything else that is
    wrong raises ValueError naming the file: YAML that does not parse (tags included: ``yaml.safe_load``, plain
    values only), a top level or an entry that is not a mapping, ``params`` that is not a mapping, a parameter
    ``defaults`` does not have, or a value whose type differs from its default's (ints are accepted for floats),
    so a garbled file never silently plays the defaults."""
    path = tuned_path(package_dir)
    values = dict(defaults)
    if not path.is_file():
        return values
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ValueError(f"{path} is not valid YAML (plain values only, no tags): {err}") from None
    if data is None:
        return values
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of policy name -> {{params: ...}}, got {type(data).__name__}")
    if policy not in data:
        return values
    entry = data[policy]
    if not isinstance(entry, dict) or "params" not in entry:
        raise ValueError(f"{path}: the entry of {policy} must be a mapping with a 'params' mapping, got {entry!r}")
    params = entry["params"]
    if not isinstance(params, dict):
        raise ValueError(f"{path}: {policy}.params must be a mapping of parameter -> value, got {params!r}")
    unknown = sorted(set(params) - set(defaults), key=str)
    if unknown:
        raise ValueError(f"{path}: {policy} has unknown parameters {unknown}; valid: {sorted(defaults)}")
    for key, value in params.items():
        if not _same_type(value, defaults[key]):
            raise ValueError(f"{path}: {policy}.params.{key}={value!r} has the wrong type: expected "
                             f"{type(defaults[key]).__name__} like its default {defaults[key]!r}")
    values.update(params)
    return values


def _same_type(value: Any, default: Any) -> bool:
    """``value`` may replace ``default``: same plain type (an int for a float; None defaults accept a number or a
    string; bools are not numbers)."""
    if default is None:
        return value is None or (isinstance(value, (int, float, str)) and not isinstance(value, bool))
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return type(value) is type(default)
