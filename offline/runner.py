"""Contract 3 for every problem: one evaluation loop, with the per-problem parts in a hook.

    rows = evaluate("UEC-v0", {"scenario": "tiny"}, ["rescue", "pickconfigs"], instances=3, episodes=20,
                    seed=0, out_dir=Path("results/x"))

:func:`evaluate` runs every policy on the same instances and the same episode seeds (common random
numbers), writes one CSV row per episode, and returns one summary row per policy (means with 95 % CI
half-widths). What differs between problems lives in the problem's hook, ``Problem.evaluation`` of
:mod:`envs.problems` (``offline.<p>.evaluation:HOOK``, an :class:`EvaluationHook`): its default sizes,
which policy names it accepts, how instance i's env is built, the episode and policy seeds, the
per-instance context (a bound, an exact reference), what one episode records, the summary columns,
cross-policy columns and extra files and plots. A problem without a hook gets :class:`EvaluationHook`
itself (returns, decision counts and decision times on ``offline.protocol.episode_seed``).

Policies are made by ``resolve(env_id, name, env, **kwargs)``: :func:`offline.registry.make_policy` by
default (non-learning policies only); evaluate.py passes ``agents.loading.resolve_policy`` so that
training run folders and shipped learned policies are accepted too (offline never imports agents).

The loop, for instance ``i`` in ``range(instances)``:

1. ``env = hook.make_env(run, i, entry)`` (then ``wrappers``), one per ``hook.env_key(run, i, entry)``
   (default: one env per instance shared by all policies); policies are resolved once per env;
2. ``context = hook.instance_context(run, i, env)`` on the instance's first env;
3. for each runnable entry, for each episode ``e``: ``record = hook.play(run, env, policy, entry, i, e,
   context)`` (the default plays ``offline.protocol.run_episode`` on ``hook.seeds(run, i, e)``);
4. ``hook.end_instance(run, i, context, records_of_i)``.

Then ``records = hook.episode_rows(run, records)`` is written to ``out_dir / hook.episodes_csv``,
``rows = hook.summary_rows(run, records)`` and ``rows = hook.finish(run, rows, records)`` (cross-policy
columns, extra CSVs, plots).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import gymnasium as gym
import numpy as np

from envs.problems import get_problem, load_attr, wrap
from offline.protocol import EpisodeResult, Policy, TimedPolicy, episode_seed, run_episode
from offline.registry import make_policy, policy_label
from offline.stats import mean_ci95

__all__ = ["Entry", "EvaluationHook", "Resolver", "Run", "evaluate", "get_hook", "read_csv", "write_csv"]

#: ``resolve(env_id, name_or_run, env, **kwargs) -> Policy``
Resolver = Callable[..., Policy]


@dataclass
class Entry:
    """One policy the loop runs: ``name`` labels its records and rows, ``policy`` is what ``resolve``
    receives (None: it cannot run, its summary row says why), ``kwargs`` go to the policy factory and
    ``extra`` holds what the problem's hook needs (OINC: the retraining controller)."""

    name: str
    policy: str | None
    kwargs: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    index: int = 0


@dataclass
class Run:
    """One evaluation's inputs and the hook's working state (``state``)."""

    env_id: str
    env_kwargs: dict[str, Any]
    policies: list[str]
    instances: int
    episodes: int
    seed: int
    out_dir: Path
    options: dict[str, Any]
    policy_kwargs: dict[str, dict[str, Any]]
    resolve: Resolver
    wrappers: tuple[str, ...] = ()
    entries: list[Entry] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    #: First instance seed (None: ``seed``); lets an evaluation pin instances apart from its episode seeds,
    #: e.g. held-out episodes of the training instance (``offline.partition``).
    instance_base: int | None = None

    def instance_seed(self, instance: int) -> int:
        """The seed that draws instance ``instance``: ``instance_base + instance`` (default ``seed + instance``)."""
        return (self.seed if self.instance_base is None else self.instance_base) + instance


class EvaluationHook:
    """The per-problem parts of :func:`evaluate`; subclass it in ``offline/<p>/evaluation.py`` as ``HOOK``.

    Every method has a generic default, so a hook overrides only what its problem needs. ``options``
    names the problem's extra keyword arguments of :func:`evaluate` (evaluate.py's
    ``evaluation_kwargs``) with their defaults; ``run.options`` holds the values.
    """

    #: The env id the hook belongs to (the generic hook gets it from its constructor).
    env_id: str = ""
    #: What ``python evaluate.py env=<name>`` runs when policies / instances / episodes are not given.
    default_evaluation: dict[str, Any] = {"instances": 1, "episodes": 5}
    #: The per-episode CSV written into ``out_dir`` (None: none).
    episodes_csv: str | None = "episodes.csv"
    #: Extra keyword arguments of :func:`evaluate` and their defaults.
    options: dict[str, Any] = {}
    #: The summary columns evaluate.py prints (at most 8, with a one-line legend), column -> meaning; the full
    #: table always goes to ``summary.csv``. Empty: the first 8 columns.
    key_columns: dict[str, str] = {}
    #: The summary column learners are scored by (evaluate.py's rliable table) and whether higher is better.
    score_metric: str | None = None
    higher_is_better: bool = True

    def __init__(self, env_id: str | None = None) -> None:
        if env_id is not None:
            self.env_id = env_id

    # ------------------------------------------------------------------ names
    def check_policy_names(self, env_id: str, policies: Sequence[str], available: Sequence[str]) -> None:
        """Raise ValueError naming the choices unless every name is in ``available`` or a run folder."""
        valid = sorted(available)
        for name in policies:
            if name not in valid and not Path(name).is_dir():
                raise ValueError(
                    f"policy {name!r} is neither a registered policy of {env_id} nor a run folder; "
                    f"valid policies: {valid}"
                )

    def check_options(self, policies: Sequence[str], options: dict[str, Any]) -> None:
        """Raise ValueError naming a bad option value (called before any output is written)."""

    def prepare(self, run: Run) -> None:
        """Adjust ``run.env_kwargs`` / ``run.state`` before anything runs."""

    def entries(self, run: Run) -> list[Entry]:
        """What to run, in order: each distinct requested name once, with its ``policy_kwargs``."""
        names = list(dict.fromkeys(str(p) for p in run.policies))
        return [Entry(name, name, dict(run.policy_kwargs.get(name, {}))) for name in names]

    # ------------------------------------------------------------------ envs and seeds
    def env_key(self, run: Run, instance: int, entry: Entry) -> Hashable:
        """Entries (and instances) with the same key share one env and its resolved policies."""
        return instance

    def make_env(self, run: Run, instance: int, entry: Entry) -> gym.Env:
        """The env of instance ``instance`` (default: ``gym.make`` with the env kwargs; instances then
        differ only by their episode seeds)."""
        return gym.make(run.env_id, **run.env_kwargs)

    def seeds(self, run: Run, instance: int, episode: int) -> tuple[int, int | None]:
        """(env reset seed, policy seed or None = the reset seed): the same for every policy."""
        return episode_seed(run.seed, instance, episode), None

    def instance_context(self, run: Run, instance: int, env: gym.Env) -> Any:
        """Per-instance data shared by all policies (a bound, an exact reference); passed to ``play``."""
        return None

    # ------------------------------------------------------------------ episodes
    def tally(self, run: Run, env: gym.Env) -> Callable[[dict[str, Any]], None] | None:
        """A per-step callback (``on_step`` of ``run_episode``) for one episode, or None."""
        return None

    def play(
        self, run: Run, env: gym.Env, policy: Policy, entry: Entry, instance: int, episode: int, context: Any
    ) -> dict[str, Any]:
        """Run one episode and return its per-episode CSV row (its ``"policy"`` is ``entry.name``)."""
        reset_seed, policy_seed = self.seeds(run, instance, episode)
        tally = self.tally(run, env)
        start = perf_counter()
        result = run_episode(
            env, policy, seed=reset_seed, policy_seed=policy_seed, time_decisions=True, on_step=tally
        )
        wall = perf_counter() - start
        return self.record(run, entry, instance, episode, reset_seed, result, tally, context, wall)

    def record(
        self,
        run: Run,
        entry: Entry,
        instance: int,
        episode: int,
        reset_seed: int,
        result: EpisodeResult,
        tally: Any,
        context: Any,
        wall_s: float,
    ) -> dict[str, Any]:
        """The per-episode row of the default ``play``."""
        return {
            "policy": entry.name,
            "instance": instance,
            "episode": episode,
            "seed": reset_seed,
            "return": result.total_reward,
            "decisions": result.decisions,
            "act_seconds_total": float(np.sum(result.decision_seconds)),
        }

    def end_instance(self, run: Run, instance: int, context: Any, records: list[dict[str, Any]]) -> None:
        """Called after every policy ran on instance ``instance`` (``records``: its rows, editable)."""

    # ------------------------------------------------------------------ outputs
    def episode_rows(self, run: Run, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The per-episode CSV rows (may add derived policies or reorder); also what summaries read."""
        return records

    def summary_row(self, run: Run, name: str, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Default summary: mean return with its 95 % CI, decisions per episode, decision time."""
        mean, half = mean_ci95([r["return"] for r in records])
        decisions = sum(r["decisions"] for r in records)
        seconds = sum(r["act_seconds_total"] for r in records)
        return {
            "policy": name,
            "return_mean": mean,
            "return_ci95": half,
            "decisions": decisions / len(records),
            "decision_us": 1e6 * seconds / decisions if decisions else float("nan"),
        }

    def summary_rows(self, run: Run, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One row per requested policy, in the requested order."""
        by_name = group_by_policy(records)
        return [self.summary_row(run, name, by_name.get(name, [])) for name in run.policies]

    def finish(self, run: Run, rows: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Cross-policy columns, extra CSVs and plots; returns the final summary rows."""
        return rows

    def progress_desc(self, run: Run) -> str:
        return run.env_id


def group_by_policy(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Records grouped by their ``"policy"``, in first-seen order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["policy"], []).append(record)
    return groups


def get_hook(env_id: str) -> EvaluationHook:
    """The evaluation hook of ``env_id`` (``Problem.evaluation``), or the generic one."""
    path = get_problem(env_id).evaluation
    if path is None:
        return EvaluationHook(env_id)
    hook = load_attr(path)
    if not isinstance(hook, EvaluationHook):
        raise ValueError(f"{path} is not an offline.runner.EvaluationHook (Problem.evaluation of {env_id})")
    return hook


def _count(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r} is invalid: expected an integer >= {minimum}")
    return int(value)


def evaluate(
    env_id: str,
    env_kwargs: dict[str, Any] | None,
    policies: Sequence[str],
    *,
    instances: int,
    episodes: int,
    seed: int,
    out_dir: Path | str,
    progress: bool = True,
    resolve: Resolver | None = None,
    policy_kwargs: dict[str, dict[str, Any]] | None = None,
    wrappers: Sequence[str] = (),
    instance_base: int | None = None,
    decision_seconds: dict[str, list[float]] | None = None,
    **problem_kwargs: Any,
) -> list[dict[str, Any]]:
    """Evaluate ``policies`` on ``env_id`` (contract 3); one summary row per policy.

    Instances ``0..instances-1`` (the hook says how instance i is drawn, e.g. ``instance_seed = seed + i``)
    each get ``episodes`` episodes per policy on the same seeds. ``resolve`` makes a policy from a name
    (default :func:`offline.registry.make_policy`); ``policy_kwargs`` maps a name to its factory kwargs;
    ``wrappers`` (``"module:Class"``) wrap each env; ``instance_base`` (default ``seed``) is the seed of
    instance 0 (:meth:`Run.instance_seed`), so episodes and instances can be chosen apart;
    ``decision_seconds`` (a dict), when given, collects every ``act`` time per entry name (the ladder's
    ``decision_ms`` columns); ``problem_kwargs`` are the hook's ``options``.
    """
    hook = get_hook(env_id)
    instances = _count("instances", instances, 1)
    episodes = _count("episodes", episodes, 1)
    seed = _count("seed", seed, 0)
    if instance_base is not None:
        instance_base = _count("instance_base", instance_base, 0)
    policies = [str(p) for p in policies]
    if not policies:
        raise ValueError("policies=[] is invalid: expected at least one policy name or run folder")
    unknown = sorted(set(problem_kwargs) - set(hook.options))
    if unknown:
        raise ValueError(
            f"evaluation option(s) {unknown} are not known for {env_id}; valid options: {sorted(hook.options)}"
        )
    hook.check_options(policies, {**hook.options, **problem_kwargs})
    run = Run(
        env_id=env_id,
        env_kwargs=dict(env_kwargs or {}),
        policies=policies,
        instances=instances,
        episodes=episodes,
        seed=seed,
        out_dir=Path(out_dir),
        options={**hook.options, **problem_kwargs},
        policy_kwargs=dict(policy_kwargs or {}),
        resolve=resolve or make_policy,
        wrappers=tuple(str(w) for w in wrappers),
        instance_base=instance_base,
    )
    hook.prepare(run)
    run.out_dir.mkdir(parents=True, exist_ok=True)
    run.entries = hook.entries(run)
    for index, entry in enumerate(run.entries):
        entry.index = index
    runnable = [e for e in run.entries if e.policy is not None]

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=instances * episodes * len(runnable), desc=hook.progress_desc(run), unit="ep", leave=False)
    envs: dict[Hashable, gym.Env] = {}
    made: dict[tuple[Hashable, int], Policy] = {}
    records: list[dict[str, Any]] = []
    try:
        for i in range(instances):
            context: Any = None
            first = True
            start = len(records)
            for entry in runnable:
                key = hook.env_key(run, i, entry)
                if key not in envs:
                    envs[key] = wrap(hook.make_env(run, i, entry), run.wrappers)
                env = envs[key]
                if first:
                    context = hook.instance_context(run, i, env)
                    first = False
                if (key, entry.index) not in made:
                    made[key, entry.index] = run.resolve(env_id, entry.policy, env, **entry.kwargs)
                    if decision_seconds is not None:
                        made[key, entry.index] = TimedPolicy(made[key, entry.index],
                                                             decision_seconds.setdefault(entry.name, []))
                policy = made[key, entry.index]
                for e in range(episodes):
                    records.append(hook.play(run, env, policy, entry, i, e, context))
                    if bar is not None:
                        bar.update(1)
            hook.end_instance(run, i, context, records[start:])
            keep = {hook.env_key(run, i + 1, entry) for entry in runnable} if i + 1 < instances else set()
            for key in [k for k in envs if k not in keep]:
                envs.pop(key).close()
                made = {k: p for k, p in made.items() if k[0] != key}
    finally:
        for env in envs.values():
            env.close()
        if bar is not None:
            bar.close()

    records = hook.episode_rows(run, records)
    if hook.episodes_csv and records:
        write_csv(run.out_dir / hook.episodes_csv, records)
    rows = hook.summary_rows(run, records)
    return hook.finish(run, rows, records)


def label_policies(rows: list[dict[str, Any]], out_dir: Path | str | None = None,
                   hook: EvaluationHook | None = None) -> list[dict[str, Any]]:
    """``rows`` with every policy as tables show it (:func:`offline.registry.policy_label`: a shipped agent
    ``pretrained:<name>``, a run folder relative to the working directory), in ``"policy"`` and in any other cell
    that names a path (OINC's ``inference``); with ``out_dir`` and ``hook``, the hook's per-episode CSV there is
    rewritten the same way. For what people read (evaluate.py's tables and CSVs): :func:`evaluate` itself names
    rows by the names it was given, which its callers (the ladder, tuning, score) match its rows by."""
    labels: dict[str, str] = {}

    def label(row: dict[str, Any]) -> dict[str, Any]:
        out = dict(row)
        for key, value in row.items():
            if isinstance(value, str) and (key == "policy" or "/" in value or "\\" in value):
                if value not in labels:
                    labels[value] = policy_label(value)
                out[key] = labels[value]
        return out

    labelled = [label(row) for row in rows]
    if out_dir is not None and hook is not None and hook.episodes_csv:
        path = Path(out_dir) / hook.episodes_csv
        if path.is_file():
            with open(path, newline="") as handle:
                records = list(csv.DictReader(handle))
            write_csv(path, [label(r) for r in records])
    return labelled


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rows as CSV; the columns are every key in first-seen order (missing cells are empty)."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def read_csv(path: Path | str) -> list[dict[str, Any]]:
    """Rows of a CSV written by :func:`write_csv`, with numbers (and True/False) converted back."""

    def convert(text: str) -> Any:
        if text in ("True", "False"):
            return text == "True"
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return text

    with open(path, newline="") as handle:
        return [{k: convert(v) for k, v in row.items()} for row in csv.DictReader(handle)]
