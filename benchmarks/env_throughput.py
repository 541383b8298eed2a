"""Environment decisions per second against Gymnasium's CartPole-v1, measured in the same run.

    python -m benchmarks.env_throughput [seconds=5] [vector_seconds=1] [sizes=[1,16,64,256]]   # -h lists the keys

UEC-v0 runs its default ("paper") preset with the instance fixed, under a uniformly random *feasible*
policy (the mask is read from ``info["action_mask"]``); CartPole-v1 runs random actions. Both are
created with ``gym.make`` (so both pay the same wrapper overhead), auto-reset at episode end, and are
measured in alternating bursts so that both see the same load.
Other envs report their own unit (OINC-v0: slots, ASET-v0: windows) when their benchmark is present.

Vector section: for every env with a native vector env (the newest version of each problem, from the
problem registry), decisions per second of N sub-envs (N in ``sizes``) of the native vector env
(``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``), of Gymnasium's ``SyncVectorEnv``
of ``gym.make(id)`` (``vectorization_mode="sync"``) and of Gymnasium's own CartPole-v1 vector env, under the
same random (feasible, where the env gives ``info["action_mask"]``) policy, all NEXT_STEP autoreset; a decision
is a sub-env step that is not an autoreset (OINC: a slot, ASET: a window, CoRaiS: a whole dispatch). The three
are measured in alternating bursts per env and N.
Timings are machine-dependent: quote the ratios, measured in one run. The rows go to
``outputs/benchmarks/performance.csv``; ``publish=true`` writes the checked-in ``results/benchmarks/performance.csv``
and docs/performance.md's table (``benchmarks.results``).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np

import envs  # registers the ids; envs.PROBLEMS lists the vector envs


class RandomRunner:
    """Steps ``env_id`` under a random (feasible, if ``masked``) policy, auto-resetting episodes."""

    def __init__(self, env_id: str, masked: bool, seed: int = 0, **kwargs) -> None:
        self.env = gym.make(env_id, **kwargs)
        self.masked, self.seed, self.episode = masked, seed, 0
        self.rng = np.random.default_rng(seed)
        self.n_actions = self.env.action_space.n
        _, self.info = self.env.reset(seed=seed)
        self.steps, self.seconds = 0, 0.0

    def run(self, steps: int) -> None:
        env, rng, info = self.env, self.rng, self.info
        start = time.perf_counter()
        for _ in range(steps):
            if self.masked:
                feasible = np.flatnonzero(info["action_mask"])
                action = int(feasible[rng.integers(feasible.size)])
            else:
                action = int(rng.integers(self.n_actions))
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                self.episode += 1
                _, info = env.reset(seed=self.seed + self.episode)
        self.seconds += time.perf_counter() - start
        self.steps += steps
        self.info = info

    @property
    def rate(self) -> float:
        return self.steps / self.seconds


def interleaved_rates(seconds: float, rounds: int = 20) -> tuple[float, float]:
    """CartPole-v1 and UEC-v0 steps per second, measured in alternating bursts so that both see the
    same machine load (the ratio is what to quote)."""
    cartpole, uec = RandomRunner("CartPole-v1", masked=False), RandomRunner("UEC-v0", masked=True)
    cartpole.run(500)  # warm-up
    uec.run(200)
    cartpole.steps = uec.steps = 0
    cartpole.seconds = uec.seconds = 0.0
    burst = max(0.01, seconds / rounds)
    for _ in range(rounds):
        for runner, chunk in ((cartpole, 2000), (uec, 500)):
            deadline = time.perf_counter() + burst
            while time.perf_counter() < deadline:
                runner.run(chunk // 10)
    return cartpole.rate, uec.rate


class VectorRunner:
    """Steps a vector env under a uniformly random (feasible, if ``masked``) policy; counts decisions
    (sub-env steps that are not NEXT_STEP autoresets)."""

    def __init__(self, env: gym.vector.VectorEnv, masked: bool, seed: int = 0) -> None:
        self.env = env
        self.rng = np.random.default_rng(seed)
        space = env.single_action_space
        self.nvec = np.asarray(space.nvec, np.int64) if isinstance(space, gym.spaces.MultiDiscrete) else None
        self.n_actions = int(space.n) if self.nvec is None else 0
        _, self.info = env.reset(seed=seed)
        self.masked = masked and self.nvec is None and "action_mask" in self.info
        self.resetting = np.zeros(env.num_envs, bool)
        self.decisions, self.seconds = 0, 0.0

    def run(self, steps: int) -> None:
        env, rng, info, n = self.env, self.rng, self.info, self.env.num_envs
        decisions = 0
        start = time.perf_counter()
        for _ in range(steps):
            if self.masked:  # uniform over the feasible actions: the largest random score among them
                actions = np.argmax(np.where(info["action_mask"] > 0, rng.random((n, self.n_actions)), -1.0), axis=1)
            elif self.nvec is not None:  # MultiDiscrete: every head uniform
                actions = (rng.random((n, self.nvec.size)) * self.nvec).astype(np.int64)
            else:
                actions = rng.integers(self.n_actions, size=n)
            decisions += n - int(self.resetting.sum())
            _, _, terminated, truncated, info = env.step(actions)
            self.resetting = terminated | truncated
        self.seconds += time.perf_counter() - start
        self.decisions += decisions
        self.info = info

    @property
    def rate(self) -> float:
        return self.decisions / self.seconds


def vector_env_ids() -> list[str]:
    """The newest version of each problem that has a native vector env (``Problem.vector_entry_point``)."""
    newest: dict[str, str] = {}
    for env_id, problem in envs.PROBLEMS.items():
        if problem.vector_entry_point is not None:
            name, _, version = env_id.rpartition("-v")
            if name not in newest or int(version) > int(newest[name].rpartition("-v")[2]):
                newest[name] = env_id
    return list(newest.values())


def vector_rates(num_envs: int, seconds: float, rounds: int = 10, env_id: str = "UEC-v0") -> dict[str, float]:
    """Decisions per second of ``env_id``'s native vector env, SyncVectorEnv over gym.make(env_id) and
    CartPole-v1's native vector env at ``num_envs``, in alternating bursts (``seconds`` each in all)."""
    runners = {
        "native": VectorRunner(gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point"), True),
        "sync": VectorRunner(gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync"), True),
        "cartpole": VectorRunner(
            gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point"), False
        ),
    }
    for runner in runners.values():  # warm-up
        runner.run(3)
        runner.decisions, runner.seconds = 0, 0.0
    burst = max(0.01, seconds / rounds)
    for _ in range(rounds):
        for runner in runners.values():
            deadline = time.perf_counter() + burst
            while time.perf_counter() < deadline:
                runner.run(1)
    for runner in runners.values():
        runner.env.close()
    return {name: runner.rate for name, runner in runners.items()}


def optional_benchmarks() -> dict[str, tuple[str, Callable[[float], float]]]:
    """Per-env benchmarks other modules provide: name -> (unit, measure(seconds) -> rate)."""
    found = {}
    for label, module, unit in (
        ("OINC-v0 (I=40, J=12)", "benchmarks.oinc_throughput", "slots/s"),
        ("ASET-v0 (lambda=60)", "benchmarks.aset_throughput", "windows/s"),
    ):
        try:
            found[label] = (unit, importlib.import_module(module).measure)
        except ImportError:
            continue
    return found


@dataclass
class Options:
    seconds: float = 5.0  # wall time per measurement
    vector_seconds: float = 1.0  # wall time per vector env and N (0: skip the vector section)
    sizes: list[int] = field(default_factory=lambda: [1, 16, 64, 256])  # numbers of sub-envs N
    write: bool = True  # write the rows to outputs/benchmarks/performance.csv
    publish: bool = False  # true: write the checked-in results/benchmarks/performance.csv and docs/performance.md

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"seconds={self.seconds} is invalid: expected a number > 0")
        if not self.vector_seconds >= 0:
            raise ValueError(f"vector_seconds={self.vector_seconds} is invalid: expected a number >= 0")
        if not self.sizes or any(n < 1 for n in self.sizes):
            raise ValueError(f"sizes={self.sizes} is invalid: expected a non-empty list of integers >= 1")


def main(argv: Sequence[str] | None = None) -> None:
    from agents.cli import run_cli

    run_cli(_main, Options, __doc__, argv)


def _main(args: Options) -> None:
    rows: list[dict[str, object]] = []
    cartpole, uec = interleaved_rates(args.seconds)
    print(f"CartPole-v1: {cartpole:12,.0f} steps/s")
    print(f"UEC-v0     : {uec:12,.0f} decisions/s  (paper preset, fixed instance, random feasible policy)")
    print(f"ratio UEC-v0 / CartPole-v1 = {uec / cartpole:.3f}  (goal >= 0.25)")
    rows.append({"quantity": "CartPole-v1 gym.make", "value": cartpole, "unit": "steps/s"})
    rows.append({"quantity": "UEC-v0 gym.make", "value": uec, "unit": "decisions/s",
                 "ratio_to": "CartPole-v1 gym.make", "ratio": uec / cartpole})
    for label, (unit, measure) in optional_benchmarks().items():
        rate = measure(args.seconds)
        print(f"{label}: {rate:12,.1f} {unit}")
        rows.append({"quantity": label, "value": rate, "unit": unit})
    if args.vector_seconds > 0:
        print("\nvector envs, decisions/s (default kwargs, random feasible policy; CartPole: random):")
        print(f"{'env':>10} {'N':>5} {'native':>12} {'Sync':>12} {'native/Sync':>12} {'CartPole vec':>13}")
        vector_ids = vector_env_ids()
        for env_id in vector_ids:
            for n in args.sizes:
                rates = vector_rates(n, args.vector_seconds, env_id=env_id)
                native, sync, cart = rates["native"], rates["sync"], rates["cartpole"]
                print(f"{env_id:>10} {n:>5} {native:>12,.0f} {sync:>12,.0f} {native / sync:>12.1f} {cart:>13,.0f}")
                rows.append({"quantity": f"{env_id} native vector N={n}", "value": native, "unit": "decisions/s",
                             "ratio_to": f"{env_id} SyncVectorEnv N={n}", "ratio": native / sync})
                rows.append({"quantity": f"{env_id} SyncVectorEnv N={n}", "value": sync, "unit": "decisions/s"})
                if env_id == vector_ids[0]:  # CartPole's vector env: one row per N
                    rows.append({"quantity": f"CartPole-v1 native vector N={n}", "value": cart, "unit": "steps/s"})
    if args.write:
        from benchmarks.results import write_rows

        write_rows("env_throughput", rows, publish=args.publish)


if __name__ == "__main__":
    main()
