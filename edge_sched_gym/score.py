"""One-call scoring: play a policy on the reference ladder's episodes of one split and place it on the ladder.

    import edge_sched_gym
    result = edge_sched_gym.score("UEC-v0", "lp_bid_price")                  # a registered name
    result = edge_sched_gym.score("UEC-v0", MyPolicy())                      # reset(env, seed) / act(obs, info)
    result = edge_sched_gym.score("UEC-v0", "mypkg.policies:MyPolicy", split="training_instance", quick=True)
    print(result)              # mean ± CI, normalised, Δ vs the strongest heuristic, ms per decision, rank
    result.to_row()            # the ladder's columns (what python -m offline.ladder submit merges)

``policy`` is a name :func:`offline.registry.make_policy` accepts (non-learning, shipped learned,
``pretrained:<name>``, a training run folder), a ``"module:Class"`` string (the class is built per env, with
the env when its constructor takes a required argument, else with none) or an object with ``reset(env, seed)``
and ``act(obs, info)``. It plays exactly the episodes :mod:`offline.ladder` plays on ``split`` (same instances,
episode seeds, env kwargs and counts, through the env's evaluation hook; a registered name gets the ladder's
``policy_kwargs``, e.g. its tuned values). On OINC-v0 an object is the inference policy, paired with the retraining
controller of the ladder's random row (the env's default, A_ret).

**Normalisation.** The ladder's formula, (mean − random) / (strongest − random), 0 = random, 1 = the strongest
non-learning policy. At the published size (``quick=False``) random and strongest are the published rows of
``results/ladder/<env>.csv`` for the split, so the number reads straight against the Leaderboard. With
``quick=True`` the split's first instances and episodes are played (the ladder's CI size), and the random and
strongest policies are replayed on those same episodes: a quick score is normalised on its own episodes and its
rank among the published rows is indicative only. The paired difference to the strongest policy always comes
from replaying it on the same episodes. Where the published rows are missing or on another split version
(``offline.partition.split_version``), random and every rung-2/3 policy are replayed and nothing is ranked.
Decision times are the wall time of each ``act`` call; the first call (lazy model loading, JIT compilation) is
reported apart (``first_decision_ms``) and left out of the mean and p99.

The command line (evaluate.py's runner of ``experiment=ladder``, :func:`run_ladder`)::

    python evaluate.py experiment=ladder "ladder_envs=[UEC-v0]" "policies=[mypkg.mod:MyPolicy]"   # or edge-sched-evaluate

plays only the given policies, on every set of each env's ladder, and writes ``<out>/<env>.scores.csv`` (default
``outputs/ladder/``): one :meth:`Score.to_row` per policy and set with provenance (commit, machine, date, command);
``python -m offline.ladder submit <that file>`` merges it into a Leaderboard. Without ``policies`` the runner is the
full ladder (:func:`agents.ladder.run_from_config`).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import re
import sys
import tempfile
import types
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from offline.protocol import TimedPolicy

__all__ = ["Score", "check_policy", "run_ladder", "score", "score_policies"]

#: ``package.module:Class``
_CLASS_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
#: Name prefixes of make_policy's own forms (``pretrained:<name>``, ablations): never a module.
_NAME_PREFIXES = ("pretrained", "zeroed-obs", "shuffled-obs")
#: Per process: the reference policies' per-episode rows, keyed by what decides them.
_REFERENCE_ROWS: dict[str, dict[str, list[dict[str, Any]]]] = {}


@dataclass(repr=False)
class Score:
    """A policy's score on one split of an env's ladder (see the module docstring)."""

    env_id: str
    split: str
    split_version: int
    policy: str
    metric: str
    higher_is_better: bool
    quick: bool
    n: int
    mean: float
    ci95: float
    normalised: float
    normalised_lo: float
    normalised_hi: float
    #: "published" (the ladder's rows) or "replayed" (random and strongest replayed on the same episodes)
    normalised_against: str
    random_mean: float
    strongest: str
    strongest_mean: float
    diff_vs_strongest: float
    diff_ci95: float
    at_least_as_good: float
    decisions: int
    #: over every decision but the first (the first pays one-off costs: lazy model loading, JIT compilation)
    decision_ms_mean: float
    decision_ms_p99: float
    #: the first decision's time, kept apart from the mean and p99
    first_decision_ms: float
    #: 1 + the published rows (other policies) with a higher normalised score; None when nothing was ranked
    rank: int | None
    ranked_rows: int
    #: the published rows just above and below: {"policy", "rung", "normalised"}
    above: dict[str, Any] | None
    below: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    #: (instance, episode) -> the metric of that episode
    episode_values: dict[tuple[int, int], float] = field(default_factory=dict)

    def to_row(self) -> dict[str, Any]:
        """The ladder CSV's columns (``rung`` = submitted) plus the size, decision times and rank."""
        row = {k: v for k, v in asdict(self).items() if k not in ("episode_values", "notes", "above", "below", "split")}
        return {"env_id": self.env_id, "set": self.split, "rung": "submitted", **row,
                "above": self.above["policy"] if self.above else "", "below": self.below["policy"] if self.below else ""}

    def __repr__(self) -> str:
        better = "higher" if self.higher_is_better else "lower"
        size = "quick" if self.quick else "full"
        place = "not ranked"
        if self.rank is not None:
            place = f"rank {self.rank} of {self.ranked_rows + 1}"
            if self.above:
                place += f", below {self.above['policy']} ({self.above['normalised']:.3f})"
            if self.below:
                place += f", above {self.below['policy']} ({self.below['normalised']:.3f})"
        lines = [
            f"Score({self.env_id} {self.split} v{self.split_version}, {size} size, n={self.n}: {self.policy}",
            f"  {self.metric} ({better} is better): {self.mean:.4g} ± {self.ci95:.2g}",
            f"  normalised {self.normalised:.3f} [{self.normalised_lo:.3f}, {self.normalised_hi:.3f}] against the "
            f"{self.normalised_against} random ({self.random_mean:.4g}) and {self.strongest} ({self.strongest_mean:.4g})",
            f"  vs {self.strongest}: {self.diff_vs_strongest:+.3g} ± {self.diff_ci95:.2g} per episode (paired), at "
            f"least as good in {100 * self.at_least_as_good:.0f} % of episodes",
            f"  {self.decision_ms_mean:.3g} ms per decision (p99 {self.decision_ms_p99:.3g} ms, {self.decisions} "
            f"decisions; the first, {self.first_decision_ms:.3g} ms, left out as warm-up)",
            f"  {place}",
            *(f"  note: {note}" for note in self.notes),
        ]
        return "\n".join(lines) + ")"

    __str__ = __repr__


@dataclass
class _Candidate:
    """What is scored: its label, the name the hook plays (None: an object or a class, played under a stand-in)
    and, for those, how to make it for an env."""

    label: str
    name: str | None
    make: Callable[[Any], Any] | None = None


def _is_policy(obj: Any) -> bool:
    return callable(getattr(obj, "reset", None)) and callable(getattr(obj, "act", None))


def _load_class(path: str) -> Callable[[Any], Any]:
    """The factory ``env -> instance`` of ``"module:Class"`` (imported now: the caller named it)."""
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"policy={path!r}: module {module_name!r} cannot be imported ({err})") from None
    cls = getattr(module, attr, None)
    if cls is None or not callable(cls):
        raise ValueError(f"policy={path!r}: {module_name} has no class {attr!r}")
    try:
        params = [p for p in inspect.signature(cls).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):
        params = []
    if len(params) > 1:
        raise ValueError(f"policy={path!r}: the class must be constructible with no arguments or with the env; "
                         f"it requires {[p.name for p in params]}")

    def make(env: Any) -> Any:
        obj = cls(env) if params else cls()
        if not _is_policy(obj):
            raise ValueError(f"policy={path!r}: {attr} has no reset(env, seed) and act(obs, info)")
        return obj

    return make


def check_policy(env_id: str, policy: Any, label: str | None = None) -> _Candidate:
    """What ``policy`` is (see :func:`score`); ValueError naming the valid forms before anything is played."""
    from agents.loading import available_policies, check_run_env, expand_pretrained, is_run_path, split_ablation
    from offline.runner import get_hook

    if isinstance(policy, Path):
        policy = str(policy)
    if isinstance(policy, str):
        names = available_policies(env_id)
        if policy in names:
            return _Candidate(label or policy, policy)
        if _CLASS_PATH.match(policy) and policy.partition(":")[0] not in _NAME_PREFIXES:
            return _Candidate(label or policy, None, _load_class(policy))
        inner = split_ablation(policy)[1]
        try:
            played = expand_pretrained(policy) if policy.startswith("pretrained:") else policy
            inner = expand_pretrained(inner)
            if is_run_path(inner):
                check_run_env(inner, env_id)
            else:
                get_hook(env_id).check_policy_names(env_id, [inner], names)
        except ValueError as err:
            raise ValueError(f"policy={policy!r} is invalid for {env_id} ({err}); the other forms: pretrained:<name>, "
                             "a training run folder, 'module:Class' or an object with reset(env, seed) and act(obs, "
                             "info)") from None
        return _Candidate(label or policy, played)
    if isinstance(policy, type):
        raise ValueError(f"policy={policy.__name__} is a class: pass an instance, or 'module:Class'")
    if not _is_policy(policy):
        raise ValueError(f"policy={policy!r} is invalid: expected a registered name, 'module:Class' or an object "
                         "with reset(env, seed) and act(obs, info)")
    name = getattr(policy, "name", None)
    return _Candidate(label or (name if isinstance(name, str) and name else type(policy).__name__), None,
                      lambda env: policy)


def _accepts(env_id: str, name: str, env_kwargs: dict[str, Any], options: dict[str, Any]) -> bool:
    """Whether the env's hook plays an entry named ``name`` (OINC's accepts its own names only)."""
    from offline.registry import make_policy
    from offline.runner import Run, get_hook

    hook = get_hook(env_id)
    run = Run(env_id=env_id, env_kwargs=dict(env_kwargs), policies=[name], instances=1, episodes=1, seed=0,
              out_dir=Path("."), options={**hook.options, **options}, policy_kwargs={}, resolve=make_policy)
    try:
        hook.prepare(run)
        hook.entries(run)
    except ValueError:
        return False
    return True


def _mean(values: dict[tuple[int, int], float]) -> float:
    return float(np.mean(list(values.values())))


def score(
    env_id: str,
    policy: Any,
    split: str = "held_out_instances",
    *,
    quick: bool = False,
    label: str | None = None,
    instance_file: str | Path | None = None,
) -> Score:
    """Score ``policy`` on ``split`` of ``env_id``'s reference ladder (see the module docstring).

    ``split``: ``training_instance``, ``held_out_instances`` or ``held_out_instances@<variant>`` (the sets of
    ``results/ladder/<env>.csv``); ``quick``: the ladder's CI size; ``label``: the row's name (default: the
    policy's name, the ``module:Class`` string, or the object's ``name`` / class name); ``instance_file``: your own
    instance (a file ``env.unwrapped.export_instance`` writes, edited to your system's parameters), played on the
    ``training_instance`` split's episode seeds in place of instance 0; random and every heuristic of rungs 2-3 are
    then replayed on it and nothing is ranked against the published rows. Raises ValueError for an unknown env id,
    split, policy or instance file, listing the valid values, before anything is played.
    """
    from offline import ladder, partition
    from offline.registry import make_policy
    from offline.stats import mean_ci95
    from offline.tuning import get_spec, ladder_env_ids, play_rows

    if env_id not in ladder_env_ids():
        raise ValueError(f"env_id={env_id!r} has no reference ladder; valid env ids: {ladder_env_ids()}")
    spec = get_spec(env_id)
    if not isinstance(quick, bool):
        raise ValueError(f"quick={quick!r} is invalid: expected True or False")
    if not isinstance(split, str):
        raise ValueError(f"split={split!r} is invalid: valid splits: {ladder.split_names(spec)}")
    eval_set, env_kwargs = ladder.evaluation_set(spec, split, quick)
    file_digest = None
    if instance_file is not None:
        if split != "training_instance":
            raise ValueError(f"instance_file={str(instance_file)!r} goes with split='training_instance' (one "
                             f"instance, the ladder's episode seeds), not split={split!r}")
        from envs.common.instance_io import load_instance

        load_instance(env_id, instance_file)  # validated now, with the error naming the field
        file_digest = hashlib.sha256(Path(instance_file).read_bytes()).hexdigest()
        env_kwargs = {**env_kwargs, "instance_file": str(Path(instance_file).resolve())}
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise ValueError(f"label={label!r} is invalid: expected a non-empty string")
    candidate = check_policy(env_id, policy, label)
    version = partition.split_version(env_id, split)
    higher = spec.higher_is_better
    notes: list[str] = []

    published = ladder.published_rows(env_id, split)
    if instance_file is not None:
        notes.append(f"played on the instance of {instance_file}: random and the heuristics replayed, nothing ranked")
        published = []
    if published and ladder.row_split_version(published[0]) != version:
        notes.append(f"the published rows are at split version {ladder.row_split_version(published[0])}, the split "
                     f"at {version}: random and strongest replayed, nothing ranked")
        published = []
    strongest = str(published[0]["strongest"]) if published else None
    use_published = bool(published) and not quick
    references = [] if use_published else [spec.random]
    references += [strongest] if strongest else [n for n in (*spec.papers, *spec.ours) if n not in spec.skipped(
        split.partition("@")[2] or None)]
    # policies the hook's options name (CoRaiS's gap reference) must be played alongside
    options = [v for v in spec.evaluation_kwargs.values() if isinstance(v, str) and v in spec.policies()]
    key = json.dumps([env_id, split, version, quick, env_kwargs, file_digest], sort_keys=True, default=str)
    cached = _REFERENCE_ROWS.setdefault(key, {})
    missing = [n for n in dict.fromkeys(references) if n not in cached]

    seconds: list[float] = []
    own_name = candidate.name
    if own_name is None:  # an object or a class: its own entry if the hook takes any name, else a stand-in's
        own_name = "scored-policy"
        if not _accepts(env_id, own_name, env_kwargs, dict(spec.evaluation_kwargs)):
            own_name = spec.random

    def resolve(env_id_: str, name: Any, env: Any, **kwargs: Any) -> Any:
        if str(name) == own_name and playing_own:
            made = candidate.make(env) if candidate.make is not None else make_policy(env_id_, name, env, **kwargs)
            return TimedPolicy(made, seconds)
        return make_policy(env_id_, name, env, **kwargs)

    def play(names: list[str]) -> dict[str, list[dict[str, Any]]]:
        with tempfile.TemporaryDirectory() as tmp:
            rows = play_rows(spec, list(dict.fromkeys(names)), eval_set, Path(tmp), env_kwargs=dict(env_kwargs),
                             resolve=resolve)
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            grouped.setdefault(str(row["policy"]), []).append(row)
        return grouped

    start = perf_counter()
    if candidate.name is None and own_name == spec.random:  # the stand-in name: refs and the policy apart
        if missing:
            playing_own = False
            played = play([*missing, *options])
            cached.update({n: played[n] for n in missing})
        playing_own = True
        own_rows = play([own_name, *[o for o in options if o != own_name]])[own_name]
    else:
        playing_own = True
        played = play([own_name, *missing, *options])
        own_rows = played[own_name]
        cached.update({n: played[n] for n in missing if n != own_name})
        if own_name in references:
            cached[own_name] = own_rows

    def values_of(rows: list[dict[str, Any]]) -> dict[tuple[int, int], float]:
        return {(int(r["instance"]), int(r.get("episode", 0))): float(r[spec.metric]) for r in rows}

    values = {n: values_of(cached[n]) for n in dict.fromkeys(references)}
    own = values_of(own_rows)
    if strongest is None:  # the ladder's rule: the best rung-2/3 policy on these episodes
        pick = max if higher else min
        strongest = pick([n for n in values if n != spec.random], key=lambda n: _mean(values[n]))
    if use_published:
        r = float(next(row["mean"] for row in published if row["rung"] == "random"))
        b = float(next(row["mean"] for row in published if row["policy"] == strongest))
        replayed = _mean(values[strongest])
        if abs(replayed - b) > 1e-6 * max(1.0, abs(b)):
            notes.append(f"{strongest} replayed to {replayed:.6g} on these episodes, published {b:.6g}: the published "
                         "ladder is older than this code (the lead republishes it)")
            warnings.warn(f"score({env_id!r}): {notes[-1]}", stacklevel=2)
    else:
        r, b = _mean(values[spec.random]), _mean(values[strongest])
    scale = b - r if abs(b - r) > 1e-12 else float("nan")
    mean, half = mean_ci95(list(own.values()))
    diff, diff_half, good = ladder._paired({"own": own, "best": values[strongest]}, "own", "best", higher)
    lo, hi = sorted(((mean - half - r) / scale, (mean + half - r) / scale))
    normalised = (mean - r) / scale

    rank, above, below, ranked = None, None, None, 0
    if published:
        others = sorted((row for row in published if str(row["policy"]) != candidate.label
                         and np.isfinite(float(row["normalised"]))), key=lambda row: -float(row["normalised"]))
        ranked = len(others)
        better = [row for row in others if float(row["normalised"]) > normalised]
        rank = len(better) + 1
        brief = [{"policy": str(row["policy"]), "rung": str(row["rung"]), "normalised": float(row["normalised"])}
                 for row in others]
        above = brief[rank - 2] if rank > 1 else None
        below = brief[rank - 1] if rank - 1 < len(brief) else None
        if quick:
            notes.append("quick size: normalised on its own episodes, so the rank among the published (full-size) "
                         "rows is indicative")
    first_ms = 1e3 * float(seconds[0]) if seconds else float("nan")
    ms = 1e3 * np.asarray(seconds[1:], dtype=float)  # the first decision is warm-up (see Score.first_decision_ms)
    notes.append(f"played in {perf_counter() - start:.1f} s")
    return Score(
        env_id=env_id, split=split, split_version=version, policy=candidate.label, metric=spec.metric,
        higher_is_better=higher, quick=quick, n=len(own), mean=mean, ci95=half, normalised=normalised,
        normalised_lo=lo, normalised_hi=hi, normalised_against="published" if use_published else "replayed",
        random_mean=r, strongest=strongest, strongest_mean=b, diff_vs_strongest=diff, diff_ci95=diff_half,
        at_least_as_good=good, decisions=len(seconds), first_decision_ms=first_ms,
        decision_ms_mean=float(ms.mean()) if ms.size else float("nan"),
        decision_ms_p99=float(np.percentile(ms, 99)) if ms.size else float("nan"),
        rank=rank, ranked_rows=ranked, above=above, below=below, notes=notes, episode_values=own,
    )


def score_policies(env_ids: list[str], policies: list[str], *, quick: bool, out: Path, command: str) -> list[Path]:
    """Play ``policies`` on every set of each env's ladder (:func:`score`) and write ``<out>/<env>.scores.csv``
    (one row per policy and set, with provenance); every policy is checked for every env before anything is played."""
    from offline import ladder
    from offline.provenance import git_commit, machine, utc_now
    from offline.runner import write_csv
    from offline.tuning import get_spec

    for env_id in env_ids:
        for policy in policies:
            check_policy(env_id, policy)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    provenance = {"commit": git_commit(), "machine": machine(), "date": utc_now(), "command": command}
    for env_id in env_ids:
        rows = []
        for _, split, _ in ladder.evaluation_sets(get_spec(env_id), quick):
            for policy in policies:
                result = score(env_id, policy, split, quick=quick)
                print(result, flush=True)
                rows.append({**result.to_row(), **provenance})
        path = out / f"{env_id}.scores.csv"
        write_csv(path, rows)
        written.append(path)
        print(f"[ladder] wrote {path}" + ("" if quick else f"; merge it into a Leaderboard with: python -m "
                                                            f"offline.ladder submit {path}"), flush=True)
    return written


def run_ladder(cfg: Any) -> Path:
    """evaluate.py's runner for ``experiment=ladder``: with ``policies=[...]`` score those on every set of each
    env's ladder (:func:`score_policies`; not with ``publish`` or ``learners``), else the full ladder
    (:func:`agents.ladder.run_from_config`)."""
    from omegaconf import OmegaConf

    from agents import ladder as full
    from agents.registry import check_writable_folder
    from offline.provenance import check_output_path, default_output, parse_bool

    value = cfg.get("policies") or []
    policies = [value] if isinstance(value, str) else [
        str(p) for p in (OmegaConf.to_container(value) if OmegaConf.is_config(value) else value)]
    if not policies:
        return full.run_from_config(cfg)
    envs_value = cfg.get("ladder_envs", "all")
    env_ids = full._env_ids(OmegaConf.to_container(envs_value) if OmegaConf.is_config(envs_value) else envs_value)
    quick = parse_bool("quick", cfg.get("quick", False))
    if parse_bool("publish", cfg.get("publish", False)):
        raise ValueError("policies=... with publish=true is refused: merge the scored rows with python -m offline.ladder "
                         "submit <out>/<env>.scores.csv publish=true")
    if cfg.get("learners"):
        raise ValueError("policies=... with learners=... is refused: put the run folders in policies=[...]")
    out = Path(cfg.out) if cfg.get("out") else default_output("ladder")
    check_writable_folder("out", out)
    check_output_path(out, publish=False)  # scored rows reach results/ only through offline.ladder submit publish=true
    parts = ["python evaluate.py experiment=ladder", *(["quick=true"] if quick else [])]
    if envs_value != "all":
        parts.append(f"ladder_envs=[{','.join(env_ids)}]")
    parts.append(f"policies=[{','.join(policies)}]")
    if cfg.get("out"):
        parts.append(f"out={cfg.out}")
    score_policies(env_ids, policies, quick=quick, out=out, command=" ".join(parts))
    return out


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`score`: importing ``edge_sched_gym.score`` binds the package's ``score`` to
    the module, so ``edge_sched_gym.score(...)`` works whichever was imported first."""

    def __call__(self, *args: Any, **kwargs: Any) -> Score:
        return score(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
