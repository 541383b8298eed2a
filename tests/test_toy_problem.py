"""A problem added through the one registry (envs.problems.register_problem) is usable everywhere:
gym.make, the env checkers, the policy registry, agents' resolver, the evaluation runner and evaluate.py.

The toy problem: each episode offers three arms in turn for ``rounds`` decisions; arm a pays a fixed
reward ``PAYOFF[a]`` and arm 2 is masked out in odd rounds. The best feasible return is therefore known
in closed form, so the runner's numbers can be checked exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.envs.registration import registry as gym_registry
from gymnasium.utils.env_checker import check_env

from envs.problems import PROBLEMS, Problem, register_problem
from offline.registry import _REGISTRY, register_policy

TOY_ID = "Toy-v0"
PAYOFF = np.array([1.0, 2.0, 5.0])


class ToyEnv(gym.Env[np.ndarray, np.int64]):
    """Pick an arm ``rounds`` times; arm 2 is infeasible in odd rounds (masked)."""

    metadata = {"render_modes": []}

    def __init__(self, rounds: int = 4) -> None:
        self.rounds = rounds
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(4,), dtype=np.float32)
        self._round: int | None = None

    def _mask(self) -> np.ndarray:
        return np.array([1, 1, self._round % 2 == 0], dtype=np.int8)

    def _obs(self) -> np.ndarray:
        return np.r_[self._round / self.rounds, self._mask()].astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._round = 0
        return self._obs(), {"action_mask": self._mask()}

    def step(self, action: Any):
        if self._round is None or self._round >= self.rounds:
            raise RuntimeError("call reset() before step()")
        feasible = bool(self._mask()[int(action)])
        reward = float(PAYOFF[int(action)]) if feasible else 0.0
        self._round += 1
        done = self._round >= self.rounds
        mask = self._mask() if not done else np.ones(3, dtype=np.int8)
        return self._obs(), reward, done, False, {"action_mask": mask, "feasible": feasible}

    def action_masks(self) -> np.ndarray:
        return self._mask().astype(bool)


class BestFeasible:
    """Highest-paying feasible arm."""

    name = "best_feasible"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        pass

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return int(np.flatnonzero(info["action_mask"])[-1])


class FirstArm:
    name = "first_arm"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        pass

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return 0


register_policy(TOY_ID, "best_feasible")(lambda env, **kw: BestFeasible())
register_policy(TOY_ID, "first_arm")(lambda env, **kw: FirstArm())


@pytest.fixture
def toy_problem() -> Iterator[Problem]:
    """The toy problem registered for one test (module name = this test file, found on pytest's path)."""
    problem = register_problem(Problem(env_id=TOY_ID, entry_point=f"{__name__}:ToyEnv", config="toy-v0",
                                       policies=__name__))
    try:
        yield problem
    finally:
        PROBLEMS.pop(TOY_ID, None)
        gym_registry.pop(TOY_ID, None)


def test_toy_problem__registered_through_the_registry_is_made_and_passes_the_checker(toy_problem):
    import envs

    env = gym.make(TOY_ID)
    check_env(env.unwrapped, skip_render_check=True)
    assert TOY_ID in PROBLEMS and TOY_ID not in envs.ENV_IDS  # the suite's own list is fixed at import
    assert toy_problem.package == __name__.rpartition(".")[2]


def test_toy_problem__policies_are_listed_by_offline_and_agents(toy_problem):
    from agents.loading import available_policies
    from offline.registry import available_policies as offline_policies

    assert offline_policies(TOY_ID) == ["best_feasible", "first_arm"]
    assert available_policies(TOY_ID) == ["best_feasible", "first_arm"]


def test_toy_problem__the_generic_runner_evaluates_its_policies_exactly(toy_problem, tmp_path):
    from agents.loading import resolve_policy
    from offline.runner import evaluate

    rows = evaluate(TOY_ID, {"rounds": 4}, ["best_feasible", "first_arm"], instances=2, episodes=3, seed=0,
                    out_dir=tmp_path, progress=False, resolve=resolve_policy)
    by_name = {row["policy"]: row for row in rows}
    assert set(by_name) == {"best_feasible", "first_arm"}
    # rounds 0 and 2 allow arm 2 (5.0), rounds 1 and 3 only arms 0-1 (best 2.0): 5 + 2 + 5 + 2
    assert by_name["best_feasible"]["return_mean"] == pytest.approx(14.0)
    assert by_name["best_feasible"]["return_ci95"] == pytest.approx(0.0)
    assert by_name["first_arm"]["return_mean"] == pytest.approx(4.0)
    assert by_name["first_arm"]["decisions"] == 4
    assert list(tmp_path.iterdir()), "the runner writes its per-episode CSV"


def test_toy_problem__evaluate_py_runs_it_from_a_config(toy_problem, tmp_path, capsys):
    from omegaconf import OmegaConf

    from edge_sched_gym import evaluate

    cfg = OmegaConf.create({
        "env": {"name": "toy-v0", "id": TOY_ID, "kwargs": {"rounds": 2}},
        "policies": ["best_feasible"], "instances": 1, "episodes": 2, "seed": 0, "out": str(tmp_path / "out"),
        "progress": False, "evaluation_kwargs": {}, "sweeps": [],
    })
    out = evaluate.run(cfg)
    assert (out / "summary.csv").is_file()
    assert "best_feasible" in capsys.readouterr().out


def test_toy_problem__an_unregistered_id_is_refused_naming_the_registered_ones():
    from offline.registry import available_policies

    with pytest.raises(ValueError, match="valid env ids"):
        available_policies("Nope-v0")


def teardown_module() -> None:
    _REGISTRY.pop(TOY_ID, None)
