"""Non-learning policies for ASET-v0 and ASET-v1 (registered for both ids when imported; see ``offline.aset``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from envs.aset.types import POLICY_NAMES
from offline.protocol import run_episode
from offline.registry import register_policy

ENV_ID = "ASET-v0"
#: Every ASET version; the policies are the same rules on each.
ENV_IDS: tuple[str, ...] = ("ASET-v0", "ASET-v1")
HINDSIGHT = "best_static_hindsight"


class StaticPolicy:
    """Always the same static scheduling policy (one of the seven actions)."""

    def __init__(self, index: int) -> None:
        self.index = int(index)
        self.name = POLICY_NAMES[self.index]

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Nothing to prepare: the choice never changes."""

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return self.index


class RandomSwitchPolicy:
    """A uniformly random static policy in every window (the paper's random-switching baseline)."""

    name = "random_switch"

    def __init__(self) -> None:
        self._rng = np.random.default_rng()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return int(self._rng.integers(len(POLICY_NAMES)))


def _static_factory(index: int) -> Any:
    def factory(env: gym.Env, **kwargs: Any) -> StaticPolicy:
        return StaticPolicy(index)

    return factory


def _random_switch(env: gym.Env, **kwargs: Any) -> RandomSwitchPolicy:
    return RandomSwitchPolicy()


class PeriodicSwitchPolicy:
    """Cycles through a fixed sequence of static policies, one per window (no state is read)."""

    name = "periodic_switch"

    def __init__(self, sequence: tuple[str | int, ...] = ("least_impedance", "least_impedance", "farthest")) -> None:
        if len(sequence) == 0:
            raise ValueError(f"sequence=() is invalid: expected a non-empty list of {list(POLICY_NAMES)}")
        self.sequence = [POLICY_NAMES.index(p) if isinstance(p, str) and p in POLICY_NAMES else p for p in sequence]
        for p in self.sequence:
            if not isinstance(p, (int, np.integer)) or not 0 <= p < len(POLICY_NAMES):
                raise ValueError(f"sequence entry {p!r} is invalid: expected one of {list(POLICY_NAMES)} or 0..6")
        self._t = 0

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._t = 0

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        action = int(self.sequence[self._t % len(self.sequence)])
        self._t += 1
        return action


def cycle_candidates(max_length: int = 3) -> list[tuple[int, ...]]:
    """Every cycle of static policies of length 2..``max_length`` that is not constant and not a repeat of a
    shorter cycle, one per rotation (``(0, 6)`` and ``(6, 0)`` play the same windows one step apart)."""
    import itertools

    found: list[tuple[int, ...]] = []
    for length in range(2, max_length + 1):
        for seq in itertools.product(range(len(POLICY_NAMES)), repeat=length):
            rotations = [seq[i:] + seq[:i] for i in range(length)]
            periodic = any(length % d == 0 and seq == seq[:d] * (length // d) for d in range(1, length))
            if not periodic and seq == min(rotations):
                found.append(seq)
    return found


def best_cycle(env: gym.Env, candidates: list[tuple[int, ...]], seeds: list[int]) -> list[dict[str, Any]]:
    """Each candidate cycle's query-weighted success rate over episodes of ``env`` reset with ``seeds``, best
    first: the search that makes ``periodic_switch`` the strongest state-blind cycle of a setting. Tune on
    seeds the comparison does not use."""
    inst = env.unwrapped.instance
    table = []
    for seq in candidates:
        tally = EpisodeTally(inst.num_apps)
        for seed in seeds:
            run_episode(env, PeriodicSwitchPolicy(seq), seed=seed, on_step=tally)
        table.append({"sequence": [POLICY_NAMES[i] for i in seq], **tally.metrics(inst.app_names)})
    return sorted(table, key=lambda row: -row["success_rate"])


class BestStaticHindsightPolicy:
    """Plays the static policy with the best success rate on this very episode (reads the future).

    At reset it plays each of the seven static policies on a copy of ``env`` taken right after its reset (same
    instance, state and random streams, so the same arrivals) and then holds the best one.
    """

    name = HINDSIGHT
    #: reads the episode's future (offline.protocol): gets the env itself, a clairvoyant reference
    clairvoyant = True

    def __init__(self) -> None:
        self.choice = 0
        self.success_by_policy: dict[str, float] = {}

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        import copy

        base = env.unwrapped
        if base.state.window != 0:
            raise RuntimeError("reset(env) right after env.reset(): the hindsight policy replays the whole episode")
        for index, name in enumerate(POLICY_NAMES):
            sim = copy.deepcopy(base, {id(base.instance): base.instance})  # the instance is immutable: shared
            tally = EpisodeTally(base.instance.num_apps)
            done = False
            while not done:
                _, _, terminated, truncated, info = sim.step(index)
                tally(info)
                done = terminated or truncated
            self.success_by_policy[name] = tally.metrics(base.instance.app_names)["success_rate"]
        self.choice = POLICY_NAMES.index(max(POLICY_NAMES, key=self.success_by_policy.__getitem__))

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return self.choice


def simulate_windows(sim: Any, first: int, then: Any, horizon: int, succeeded: float = 0.0,
                     queries: float = 0.0) -> tuple[float, float]:
    """Step ``sim`` (a copy or a fork of an ASET env) ``horizon`` windows or to its end: ``first``, then
    ``then(step, obs)`` for step >= 1; returns (succeeded, queries) with the windows' succeeded queries and
    queries added to the running totals given. The rollouts' inner loop."""
    action, obs = first, None
    for step in range(horizon):
        if step > 0:
            action = then(step, obs)
        obs, _, terminated, truncated, info = sim.step(action)
        queries += info["queries"]
        succeeded += info["success"] * info["queries"]
        if terminated or truncated:
            break
    return succeeded, queries


class LookaheadOracle:
    """Clairvoyant rollout over a cycle (reads the future): each window, the action whose next ``horizon``
    windows succeed best, the action played first and ``base`` (a cycle, by default periodic_switch's) after.

    Every candidate is simulated on a copy of the env, so it sees the very arrivals the episode will bring
    (arrivals have their own random stream). Not a learner's opponent but a reference for how much an
    adaptive choice among the seven policies could gain over the cycle in this model: rollout improves on
    its base policy, and knowing the arrivals only helps it. Cost: 7 x ``horizon`` extra windows per window.
    """

    name = "lookahead_oracle"
    #: reads the episode's future (offline.protocol): gets the env itself, a clairvoyant reference
    clairvoyant = True

    def __init__(self, horizon: int = 6, base: tuple[str | int, ...] = ("least_impedance", "least_impedance", "farthest")) -> None:
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ValueError(f"horizon={horizon!r} is invalid: expected an integer >= 1")
        self.horizon = horizon
        self.base = PeriodicSwitchPolicy(base).sequence
        self._env: gym.Env | None = None

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._env = env.unwrapped

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        import copy

        if self._env is None:
            raise RuntimeError("reset(env) before act(): the oracle simulates copies of the env")
        best, best_score = 0, -1.0
        for action in range(len(POLICY_NAMES)):
            sim = copy.deepcopy(self._env, {id(self._env.instance): self._env.instance})  # shares the instance
            succeeded, queries = simulate_windows(sim, action, lambda t, _obs: int(self.base[(t - 1) % len(self.base)]),
                                                  min(self.horizon, sim.horizon - sim.state.window))
            score = succeeded / queries if queries > 0 else 1.0
            if score > best_score:
                best, best_score = action, score
        return best


CLAIRVOYANT_BEAM = "clairvoyant_beam"


class ClairvoyantBeamPolicy:
    """Clairvoyant beam search over the whole episode's windows (reads the future; a reference, not a bound).

    At reset it plays the episode ahead on copies of ``env`` (same instance, same state and random streams, so the
    very arrivals to come): every window, each of the ``width`` kept action sequences is extended by each of the
    seven policies, and the ``width`` extensions with the most succeeded queries so far are kept (every extension
    has issued the same queries, as arrivals do not depend on the actions). It then plays the best sequence found,
    whose success rate the real episode reproduces exactly. With ``width=1`` it is the greedy that plays each
    window's best of the seven; wider beams keep sequences whose early windows look worse but pay off later (a
    stream stays bound for its whole life). Not a bound: a wider beam or another search can do better, and
    nothing non-anticipative should be expected to reach it. Cost: 7 x ``width`` extra windows per window.
    """

    name = CLAIRVOYANT_BEAM
    #: reads the episode's future (offline.protocol): gets the env itself, a clairvoyant reference
    clairvoyant = True

    def __init__(self, width: int = 6) -> None:
        if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
            raise ValueError(f"width={width!r} is invalid: expected an integer >= 1")
        self.width = int(width)
        self.plan: list[int] = []
        #: the planned episode's query-weighted success rate (what playing the plan reproduces)
        self.planned_success = float("nan")
        self._t = 0

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        import copy

        base = env.unwrapped
        shared = {id(base.instance): base.instance}  # the instance is immutable: every copy shares it
        root = copy.deepcopy(base, dict(shared))
        if root.state.window != 0:
            raise RuntimeError("reset(env) right after env.reset(): the beam plans the whole episode")
        # (succeeded, queries, alive, env copy, actions) per kept sequence
        beam: list[tuple[float, float, bool, Any, list[int]]] = [(0.0, 0.0, True, root, [])]
        while any(alive for _, _, alive, _, _ in beam):
            children = []
            for succeeded, queries, alive, sim, actions in beam:
                if not alive:
                    children.append((succeeded, queries, False, sim, actions))
                    continue
                for action in range(len(POLICY_NAMES)):
                    child = copy.deepcopy(sim, dict(shared))
                    _, _, terminated, truncated, info = child.step(action)
                    children.append((succeeded + info["success"] * info["queries"], queries + info["queries"],
                                     not (terminated or truncated), child, [*actions, action]))
            # sorted() is stable: ties keep the parent's rank, then the action order (deterministic)
            beam = sorted(children, key=lambda c: -c[0])[: self.width]
        best = max(beam, key=lambda c: c[0] / c[1] if c[1] > 0 else 1.0)
        self.plan = best[4]
        self.planned_success = best[0] / best[1] if best[1] > 0 else 1.0
        self._t = 0

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        if self._t >= len(self.plan):
            raise RuntimeError("the episode ran past the beam's plan: reset(env) after env.reset()")
        action = self.plan[self._t]
        self._t += 1
        return action


def _clairvoyant_beam(env: gym.Env, **kwargs: Any) -> ClairvoyantBeamPolicy:
    return ClairvoyantBeamPolicy(**kwargs)


def _lookahead_oracle(env: gym.Env, **kwargs: Any) -> LookaheadOracle:
    return LookaheadOracle(**kwargs)


def _best_static_hindsight(env: gym.Env, **kwargs: Any) -> BestStaticHindsightPolicy:
    return BestStaticHindsightPolicy()


def _periodic_switch(env: gym.Env, **kwargs: Any) -> PeriodicSwitchPolicy:
    return PeriodicSwitchPolicy(**kwargs)


for _env_id in ENV_IDS:
    for _index, _name in enumerate(POLICY_NAMES):
        register_policy(_env_id, _name)(_static_factory(_index))
    register_policy(_env_id, "random_switch")(_random_switch)
    register_policy(_env_id, "periodic_switch")(_periodic_switch)
    register_policy(_env_id, HINDSIGHT)(_best_static_hindsight)
    register_policy(_env_id, "lookahead_oracle")(_lookahead_oracle)
    register_policy(_env_id, CLAIRVOYANT_BEAM)(_clairvoyant_beam)


class EpisodeTally:
    """Query counts of one episode, summed over its windows from the step infos (``on_step`` of
    ``offline.protocol.run_episode``; the evaluation's per-step tally)."""

    def __init__(self, num_apps: int) -> None:
        self.queries = 0.0
        self.succeeded = 0.0
        self.failed = 0.0
        self.rejected = 0.0
        self.app_queries = np.zeros(num_apps)
        self.app_succeeded = np.zeros(num_apps)
        self.window_success: list[float] = []
        self.policy_windows = dict.fromkeys(POLICY_NAMES, 0)

    def __call__(self, info: dict[str, Any]) -> None:
        q = float(info["queries"])
        self.queries += q
        self.succeeded += info["success"] * q
        self.failed += info["failed"] * q
        self.rejected += info["rejected"] * q
        self.app_queries += info["class_queries"]
        self.app_succeeded += info["class_success"] * info["class_queries"]
        self.window_success.append(float(info["success"]))
        if info.get("policy"):
            self.policy_windows[info["policy"]] += 1

    def metrics(self, app_names: tuple[str, ...]) -> dict[str, float]:
        denom = self.queries if self.queries > 0 else 1.0
        out = {
            "success_rate": self.succeeded / denom if self.queries > 0 else 1.0,
            "failed_rate": self.failed / denom,
            "rejected_rate": self.rejected / denom,
            "windows": float(len(self.window_success)),
        }
        played = max(1, sum(self.policy_windows.values()))
        out |= {f"share_{name}": count / played for name, count in self.policy_windows.items()}  # actions taken
        for a, name in enumerate(app_names):
            q = self.app_queries[a]
            out[f"success_{name}"] = self.app_succeeded[a] / q if q > 0 else float("nan")
        return out

