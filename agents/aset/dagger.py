"""Expert iteration on ASET (DAgger): a small network imitates the online rollout reference ``aset_rollout``.

Why: ``aset_rollout`` (``offline.aset.online``) simulates every candidate policy on sampled futures each window
(~110-150 ms a decision) and is the strongest non-clairvoyant policy at both loads the ladder reports (λ = 60 and
the stress load λ = 100), where each tuned heuristic is strong at one load only and the PPO/DQN agents, trained at
λ = 60, lose at 100. The student decides in about a millisecond.

The student (:class:`AsetStudent`) reads the env's observation through the 1-D convolution the DQN uses
(:class:`agents.aset.extractor.TimeConvExtractor`) and a few features of its own (:class:`StudentState`): the
instance's arrival rate λ (instance data, as the teacher's forks use), the near-tier and cloud utilisations
``threshold_switch`` reads, what ``threshold_switch`` and the ``periodic_switch`` cycle would play now, its previous
action, the length of its current run of relief windows and the cycle position. All of it is the instance, the
present observation or the policy's own past actions (the non-anticipation contract). It chooses among the
teacher's candidates (``aset_rollout``'s ``actions`` plus both bases' actions): the teacher never plays the others.

Training (:func:`train`, ``python train.py env=aset-v1 algo=aset_dagger``):
1. round 0: the teacher plays ``episodes`` episodes and labels each of its decisions (its action and its rollout
   success estimate of every action it compared);
2. rounds 1..``rounds``: the current student plays greedily, the teacher labels every state the student visits (its
   own counters synchronised with the actions actually played), and the labels join the data;
3. after each round the student is refitted on all labels by cross-entropy to the teacher's action (``value_tau`` > 0:
   to soft targets softmax(Q̂/τ) over the compared actions, :func:`agents.imitation.value_targets`); the epoch with
   the best greedy evaluation (seeds ``eval_seed``.., at every ``eval_lams``, disjoint from every reporting set) is
   kept.

Every episode is ``episode_windows`` windows with θ = 0 (no early end) at a λ drawn from ``lams``, half on the env's
instance and half on ``train_instances`` pool instances (seeds ``instance_pool_base``.., disjoint from
``offline.partition``'s). The labels are kept as ``teacher_labels.npz`` (:class:`AsetLabels`, plain arrays loaded
without pickle; observations as float16, which holds the env's [0, 10] values to 3 significant digits): a student
fits from them alone in about a minute (``dataset=<file> rounds=0``).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from agents.aset.extractor import TimeConvExtractor
from agents.curves import Column, CurveLog
from agents.imitation import (
    LabelArrays,
    fixed_instance_kwargs,
    gradient_step,
    soft_imitation_loss,
    value_targets,
)
from agents.loading import save_config_model as save_model
from envs.aset.types import POLICY_NAMES
from offline.aset.heuristics import LEAST_IMPEDANCE, THRESHOLD_DEFAULTS, THRESHOLD_SWITCH, ThresholdSwitchPolicy
from offline.aset.online import ASET_ROLLOUT, ROLLOUT_DEFAULTS
from offline.aset.policies import EpisodeTally
from offline.ladder_spec import tuned_params
from offline.protocol import policy_env, policy_seed_for, run_episode

ENV_IDS: tuple[str, ...] = ("ASET-v0", "ASET-v1")
MODEL_FILE = "model.pt"
LABELS_FILE = "teacher_labels.npz"
NUM_ACTIONS = len(POLICY_NAMES)
#: periodic_switch's tuned cycle (offline.aset.policies.PeriodicSwitchPolicy's default, the teacher's base)
CYCLE: tuple[int, ...] = (LEAST_IMPEDANCE, LEAST_IMPEDANCE, POLICY_NAMES.index("farthest"))
#: the student's own features (:meth:`StudentState.features`): λ/100, near and cloud utilisation, relief run,
#: threshold_switch's and the cycle's action, the previous action (one-hot each), the cycle position (one-hot)
EXTRA_FEATURES = 4 + 3 * NUM_ACTIONS + len(CYCLE)
CURVE: tuple[Column, ...] = (
    Column("round", "d"), Column("epoch", "d"), Column("decisions", "d"), Column("seconds", ".1f"),
    Column("train_loss", ".4f", "train/loss"), Column("val_agreement", ".4f", "eval/teacher_agreement"),
    Column("eval_gain", ".5f", "eval/success_gain"),
)


# --------------------------------------------------------------------------------------------------
# The student
# --------------------------------------------------------------------------------------------------


class StudentState:
    """The student's own features, from the instance, the observation and its own past actions only."""

    def __init__(self, candidate_actions: tuple[str, ...] = tuple(ROLLOUT_DEFAULTS["actions"])) -> None:
        self._threshold = ThresholdSwitchPolicy(**tuned_params(
            Path(__file__).resolve().parents[2] / "offline" / "aset", THRESHOLD_SWITCH, THRESHOLD_DEFAULTS))
        self._candidates = sorted({POLICY_NAMES.index(a) for a in candidate_actions})
        self.lam = 60.0
        self.window = self.relief_run = 0
        self.previous = -1

    def reset(self, env: gym.Env) -> None:
        """A new episode on ``env`` (the env or its policy view): reads the instance only."""
        self._threshold.reset(env)
        self.lam = float(env.unwrapped.instance.lam)
        self.window = self.relief_run = 0
        self.previous = -1

    def features(self, obs: Any) -> tuple[np.ndarray, np.ndarray]:
        """(extra (EXTRA_FEATURES,) float32, candidates (7,) bool) for the present window."""
        shadow = copy.copy(self._threshold)
        shadow._relief_run = self.relief_run
        threshold_action = shadow.act(obs, {})
        cycle_action = CYCLE[self.window % len(CYCLE)]
        near, cloud = self._threshold.utilisations(obs)
        extra = np.zeros(EXTRA_FEATURES, np.float32)
        extra[:4] = (self.lam / 100.0, near, cloud, min(self.relief_run, shadow.max_relief_run) / shadow.max_relief_run)
        extra[4 + threshold_action] = 1.0
        extra[4 + NUM_ACTIONS + cycle_action] = 1.0
        if self.previous >= 0:
            extra[4 + 2 * NUM_ACTIONS + self.previous] = 1.0
        extra[4 + 3 * NUM_ACTIONS + self.window % len(CYCLE)] = 1.0
        candidates = np.zeros(NUM_ACTIONS, bool)
        candidates[[*self._candidates, threshold_action, cycle_action]] = True
        return extra, candidates

    def played(self, action: int) -> None:
        """Record the action played this window (the teacher counts relief windows the same way)."""
        self.relief_run = 0 if action == LEAST_IMPEDANCE else self.relief_run + 1
        self.previous = int(action)
        self.window += 1


@dataclass
class StudentConfig:
    """Sizes of :class:`AsetStudent` (saved with the weights)."""

    obs_dim: int
    time_steps: int = 20
    channels: list[int] = field(default_factory=lambda: [32, 32])
    features_dim: int = 64
    hidden: int = 64

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class AsetStudent(nn.Module):
    """logits = MLP([conv(obs), extra]) over the seven policies, −inf off the candidates."""

    def __init__(self, cfg: StudentConfig) -> None:
        super().__init__()
        self.cfg = cfg
        space = gym.spaces.Box(0.0, 10.0, (cfg.obs_dim,), np.float32)
        self.conv = TimeConvExtractor(space, features_dim=cfg.features_dim, conv="1d", channels=cfg.channels,
                                      time_steps=cfg.time_steps)
        self.head = nn.Sequential(nn.Linear(cfg.features_dim + EXTRA_FEATURES, cfg.hidden), nn.ReLU(),
                                  nn.Linear(cfg.hidden, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, NUM_ACTIONS))

    def forward(self, obs: torch.Tensor, extra: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        logits = self.head(torch.cat([self.conv(obs.float()), extra], dim=-1))
        return logits.masked_fill(~candidates, float("-inf"))


class AsetDaggerPolicy:
    """The greedy student as a policy (offline.protocol): non-anticipative (module docstring)."""

    def __init__(self, model: AsetStudent, name: str = "aset_dagger") -> None:
        self.model = model.eval()
        self.name = name
        self.state = StudentState()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.state.reset(env)

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        extra, candidates = self.state.features(obs)
        with torch.inference_mode():
            logits = self.model(torch.as_tensor(np.asarray(obs, np.float32))[None], torch.from_numpy(extra)[None],
                                torch.from_numpy(candidates)[None])
        action = int(logits[0].argmax())
        self.state.played(action)
        return action


def load_model(path: Path | str) -> tuple[AsetStudent, dict[str, Any]]:
    """A saved student, read weights-only."""
    from agents.loading import load_config_model

    return load_config_model(path, "cpu", "ASET DAgger model file", lambda cfg: AsetStudent(StudentConfig(**cfg)))


def load_policy(run_dir: Path, env: gym.Env, *, checkpoint: str | None = None, greedy: bool = True,
                **kwargs: Any) -> AsetDaggerPolicy:
    """Contract 5: the greedy student of a run folder (``checkpoint``: a model file inside the run)."""
    path = Path(run_dir) / (checkpoint or MODEL_FILE)
    if not path.is_file():
        raise ValueError(f"{run_dir} has no {path.name} (training interrupted before the first save?)")
    model = load_model(path)[0]
    obs_dim = int(np.prod(env.observation_space.shape))
    if obs_dim != model.cfg.obs_dim:
        raise ValueError(f"run {Path(run_dir).name} was trained on observations of size {model.cfg.obs_dim}, "
                         f"the env has {obs_dim} (another topology?)")
    return AsetDaggerPolicy(model, name=f"aset_dagger:{Path(run_dir).name}")


# --------------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------------


@dataclass
class AsetLabels(LabelArrays):
    """Teacher-labelled decisions, one row each, in episode order (an episode's rows are consecutive).

    ``behaviour`` is the action played (the teacher's in round 0, the student's after), ``success`` and ``queries``
    the window's outcome; ``teacher_action`` the teacher's choice, ``teacher_values`` (7,) its rollout success
    estimate of each action it compared (NaN elsewhere); ``extra`` and ``candidates`` the student's own features
    (:class:`StudentState`) at that state, so a student refits without replaying anything."""

    obs: np.ndarray  # (N, O) float16
    extra: np.ndarray  # (N, EXTRA_FEATURES) float32
    candidates: np.ndarray  # (N, 7) int8
    instance_seed: np.ndarray  # (N,) int64
    lam: np.ndarray  # (N,) float64
    episode_seed: np.ndarray  # (N,) int64
    episode: np.ndarray  # (N,) int64
    round: np.ndarray  # (N,) int64
    behaviour: np.ndarray  # (N,) int64
    success: np.ndarray  # (N,) float64
    queries: np.ndarray  # (N,) float64
    teacher_action: np.ndarray  # (N,) int64
    teacher_values: np.ndarray  # (N, 7) float32

    WHAT = "a teacher_labels.npz written by algo=aset_dagger"


def label_episode(env: gym.Env, episode_seed: int, teacher: Any, student: AsetStudent | None, *,
                  instance_seed: int, round_index: int, episode: int) -> AsetLabels:
    """Play one episode of ``env``, stepping with ``student``'s greedy action (the teacher's when ``student`` is
    None), and label every decision with the teacher's action and rollout values. The teacher sees only the policy
    view, as in evaluation; its relief counter and window follow the actions actually played."""
    obs, _ = env.reset(seed=int(episode_seed))
    view = policy_env(env, teacher)
    teacher.reset(view, seed=policy_seed_for(int(episode_seed)))
    state = StudentState(tuple(POLICY_NAMES[a] for a in teacher.actions))
    state.reset(view)
    rows: dict[str, list[Any]] = {f.name: [] for f in fields(AsetLabels)}
    done = False
    while not done:
        teacher._relief_run, teacher._window = state.relief_run, state.window  # the played history, not its own
        best = int(teacher.act(obs, {}))
        extra, candidates = state.features(obs)
        if student is None:
            action = best
        else:
            with torch.no_grad():
                action = int(student(torch.from_numpy(np.asarray(obs, np.float32))[None], torch.from_numpy(extra)[None],
                                     torch.from_numpy(candidates)[None])[0].argmax())
        for name, value in (("obs", np.asarray(obs, np.float16)), ("extra", extra),
                            ("candidates", candidates.astype(np.int8)), ("instance_seed", instance_seed),
                            ("lam", state.lam), ("episode_seed", episode_seed), ("episode", episode),
                            ("round", round_index), ("behaviour", action), ("teacher_action", best),
                            ("teacher_values", np.asarray(teacher.last_scores, np.float32))):
            rows[name].append(value)
        obs, _, terminated, truncated, info = env.step(action)
        state.played(action)
        rows["success"].append(float(info["success"]))
        rows["queries"].append(float(info["queries"]))
        done = terminated or truncated
    dtypes = {"obs": np.float16, "extra": np.float32, "candidates": np.int8, "lam": np.float64,
              "success": np.float64, "queries": np.float64, "teacher_values": np.float32}
    return AsetLabels(**{k: np.asarray(v, dtypes.get(k, np.int64)) for k, v in rows.items()})


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    """The schema of edge_sched_gym/conf/algo/aset_dagger.yaml (Hydra ConfigStore ``algo/aset_dagger_schema``)."""

    name: str = "aset_dagger"
    kind: str = "custom"
    default_steps: int = 100_000  # the most teacher-labelled decisions
    rounds: int = 4  # student-driven collections after the teacher's own (round 0)
    episodes: int = 24  # labelled episodes per round
    episode_windows: int = 60  # windows per labelled episode (θ = 0: none ends early)
    lams: list[float] = field(default_factory=lambda: [40.0, 60.0, 80.0, 100.0])  # each episode's λ, uniformly
    train_instances: int = 16  # pool of extra training instances (instance seeds instance_pool_base..)
    instance_pool_base: int = 10_000  # disjoint from offline.partition's 0, 100..199 and 900..909
    fixed_instance_share: float = 0.5  # share of episodes on the env's own instance
    epochs: int = 40  # cross-entropy epochs on all labels after each round
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    value_tau: float = 0.0  # > 0: soft targets softmax(Q̂/value_tau) over the compared actions (success-rate units)
    channels: list[int] = field(default_factory=lambda: [32, 32])
    features_dim: int = 64
    hidden: int = 64
    eval_lams: list[float] = field(default_factory=lambda: [60.0, 100.0])  # the greedy evaluation's loads
    eval_episodes: int = 6  # per load, alternately on the env's instance and on pool instances
    eval_seed: int = 1000
    eval_every: int = 10  # epochs between greedy evaluations (and the last epoch of each round)
    max_minutes: float = 60.0
    dataset: str = ""  # a teacher_labels.npz to start from (with rounds=0: fit a student from it alone)
    threads: int = 1

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> TrainConfig:
        """Validate ``cfg`` against the schema (unknown keys, types, ranges)."""
        from agents.cli import merge_schema
        from offline.partition import check_instance_pool

        out = cls(**merge_schema(cls, cfg, "aset_dagger"))  # type: ignore[arg-type]
        for key in ("episodes", "episode_windows", "epochs", "batch_size", "features_dim", "hidden", "eval_episodes",
                    "eval_every", "threads"):
            if int(getattr(out, key)) < 1:
                raise ValueError(f"algo.{key}={getattr(out, key)} is invalid: expected an integer >= 1")
        if out.rounds < 0 or not out.value_tau >= 0 or not 0.0 <= out.fixed_instance_share <= 1.0:
            raise ValueError("algo.rounds must be >= 0, value_tau >= 0 and fixed_instance_share in [0, 1]")
        from envs.aset.generator import LAM_RANGE

        for key in ("lams", "eval_lams"):
            values = list(getattr(out, key))
            if not values or any(not LAM_RANGE[0] <= float(v) <= LAM_RANGE[1] for v in values):
                raise ValueError(f"algo.{key}={values} is invalid: expected a non-empty list of λ in {list(LAM_RANGE)}")
        if not out.channels or any(int(c) < 1 for c in out.channels):
            raise ValueError(f"algo.channels={list(out.channels)} is invalid: expected a non-empty list of integers >= 1")
        check_instance_pool(out.instance_pool_base, out.train_instances)
        return out


class _Envs:
    """One env per (instance seed, λ), made on first use, with the run's other kwargs, θ = 0 and
    ``episode_windows`` windows."""

    def __init__(self, env_id: str, kwargs: dict[str, Any], windows: int) -> None:
        self.env_id = env_id
        self.kwargs = {**kwargs, "theta": 0.0, "horizon": int(windows), "resample_instance": False}
        self._made: dict[tuple[int, float], gym.Env] = {}

    def get(self, instance_seed: int, lam: float) -> gym.Env:
        key = (int(instance_seed), round(float(lam), 6))
        if key not in self._made:
            self._made[key] = gym.make(self.env_id, **{**self.kwargs, "instance_seed": key[0], "lam": key[1]})
        return self._made[key]


def _success(env: gym.Env, policy: Any, seed: int) -> float:
    """Query-weighted success of one episode of ``policy``: the evaluation's own metric (``EpisodeTally``)."""
    tally = EpisodeTally(env.unwrapped.instance.num_apps)
    run_episode(env, policy, seed=int(seed), on_step=tally)
    return tally.metrics(env.unwrapped.instance.app_names)["success_rate"]


def _eval_set(cfg: TrainConfig, base_seed: int, pool: list[int]) -> list[tuple[int, float, int]]:
    """(instance seed, λ, episode seed) of the greedy evaluation: every eval λ, alternately the env's instance
    and a pool instance."""
    out = []
    for lam in cfg.eval_lams:
        for e in range(cfg.eval_episodes):
            inst = base_seed if e % 2 == 0 or not pool else pool[(e // 2) % len(pool)]
            out.append((inst, float(lam), cfg.eval_seed + e))
    return out


def train(env_cfg: dict[str, Any], algo_cfg: dict[str, Any], *, run_dir: Path, seed: int, steps: int,
          device: str = "cpu", resume: bool = False) -> Path:
    """DAgger rounds (module docstring); returns ``run_dir/model.pt`` (the epoch with the best greedy evaluation).

    On SIGINT/SIGTERM/SIGHUP the current episode or epoch ends; the labels so far and ``model.pt`` are saved, the
    command that continues is printed and :class:`agents.callbacks.TrainingInterrupted` is raised. ``resume=True``
    continues ``run_dir`` from its ``teacher_labels.npz`` with the rounds still to do."""
    from agents.callbacks import GracefulInterrupt, TrainingInterrupted
    from offline.registry import make_policy

    cfg = TrainConfig.from_dict(dict(algo_cfg))
    kwargs = fixed_instance_kwargs("aset_dagger", env_cfg, ENV_IDS, steps, "labelled decisions")
    env_id = str(env_cfg.get("id", "ASET-v1"))
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    torch.set_num_threads(int(cfg.threads))
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    envs = _Envs(env_id, kwargs, cfg.episode_windows)
    base_seed = int(kwargs.get("instance_seed", 0))
    pool = [cfg.instance_pool_base + i for i in range(cfg.train_instances)]
    probe = envs.get(base_seed, float(kwargs.get("lam", 60.0)))
    model = AsetStudent(StudentConfig(int(np.prod(probe.observation_space.shape)), channels=list(cfg.channels),
                                      features_dim=cfg.features_dim, hidden=cfg.hidden))
    optimiser = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    teacher = make_policy(env_id, ASET_ROLLOUT, probe)

    dataset = cfg.dataset
    state_file = run_dir / "dagger_state.json"
    if resume:
        if not (run_dir / LABELS_FILE).is_file() or not state_file.is_file():
            raise ValueError(f"resume={run_dir} has no {LABELS_FILE} and {state_file.name} to continue from")
        dataset = str(run_dir / LABELS_FILE)
    parts: list[AsetLabels] = []
    meta = {"env_id": env_id, "env_kwargs": envs.kwargs, "teacher": ASET_ROLLOUT, "seed": seed,
            "lams": list(map(float, cfg.lams)), "instance_pool_base": cfg.instance_pool_base,
            "train_instances": cfg.train_instances, "fixed_instance_share": cfg.fixed_instance_share,
            "episodes_per_round": cfg.episodes}
    if dataset:
        labels, saved = AsetLabels.load(Path(dataset))
        ignore = ("lam", "instance_seed")
        if saved.get("env_kwargs") is not None and {k: v for k, v in saved["env_kwargs"].items() if k not in ignore} \
                != {k: v for k, v in envs.kwargs.items() if k not in ignore}:
            raise ValueError(f"dataset={dataset!r} was labelled with env kwargs {saved['env_kwargs']}, "
                             f"the run has {envs.kwargs}")
        parts.append(labels)
    first_round = int(parts[0].round.max()) + 1 if parts and len(parts[0]) else 0
    # round 0 is the teacher's own; with labels given: a fit on them first (None), then student-driven rounds
    last_round = json.loads(state_file.read_text())["last_round"] if resume else \
        first_round + cfg.rounds - (1 if parts else 0)
    state_file.write_text(json.dumps({"last_round": last_round}))
    if resume:  # new episodes, not the first run's sequence again
        rng = np.random.default_rng([seed, first_round])
    plan: list[int | None] = ([None] if parts else []) + list(range(first_round, last_round + 1))
    print(f"[aset_dagger] rounds {first_round}..{last_round} after {len(parts[0]) if parts else 0} given labels",
          flush=True)

    # the bar: the better of the two tuned heuristics at each eval load, on the very eval episodes
    eval_set = _eval_set(cfg, base_seed, pool)
    heuristics = {name: make_policy(env_id, name, probe) for name in ("threshold_switch", "periodic_switch")}
    bar: dict[float, float] = {}
    for lam in map(float, cfg.eval_lams):
        runs = [(inst, s) for inst, lam_, s in eval_set if lam_ == lam]
        bar[lam] = max(float(np.mean([_success(envs.get(i, lam), h, s) for i, s in runs])) for h in heuristics.values())

    def evaluate() -> float:
        """Mean over the eval loads of (greedy student − the better heuristic), in success rate."""
        policy = AsetDaggerPolicy(copy.deepcopy(model).eval())
        gains = []
        for lam in map(float, cfg.eval_lams):
            runs = [(inst, s) for inst, lam_, s in eval_set if lam_ == lam]
            gains.append(float(np.mean([_success(envs.get(i, lam), policy, s) for i, s in runs])) - bar[lam])
        return float(np.mean(gains))

    print(f"[aset_dagger] the bar (better heuristic per eval λ): {bar} at {time.perf_counter() - start:.0f}s",
          flush=True)
    curve = CurveLog(run_dir, CURVE, "decisions")
    best_gain, best_state = float("-inf"), copy.deepcopy(model.state_dict())
    episode = int(parts[0].episode.max()) + 1 if parts and len(parts[0]) else 0
    interrupt = GracefulInterrupt()
    round_index: int | None = None
    with interrupt:
        for round_index in plan:
            interrupt.requested  # noqa: B018  (the loop runs: from here a signal stops it at the next episode or epoch)
            student = None if round_index == 0 else copy.deepcopy(model).eval()
            for _ in range(0 if round_index is None else cfg.episodes):
                inst = base_seed if rng.random() < cfg.fixed_instance_share or not pool else \
                    pool[int(rng.integers(len(pool)))]
                lam = float(cfg.lams[int(rng.integers(len(cfg.lams)))])
                parts.append(label_episode(envs.get(inst, lam), int(rng.integers(10_000_000, 2**31 - 1)), teacher,
                                           student, instance_seed=inst, round_index=round_index, episode=episode))
                episode += 1
                if interrupt.requested or time.perf_counter() - start > cfg.max_minutes * 60 * 0.8 \
                        or sum(len(p) for p in parts) >= steps:
                    break
            collected = len(parts) > 1 or not dataset
            round_index = first_round - 1 if round_index is None else round_index
            labels = AsetLabels.concatenate(parts)
            parts = [labels]
            if collected or resume:  # a student fitted on a given dataset alone does not copy it
                labels.save(run_dir / LABELS_FILE, meta)
            gain, state = _fit(model, optimiser, labels, cfg, rng, curve, evaluate, round_index, start, interrupt)
            if state is not None:  # the next round's student (and fit) start from this round's best epoch
                model.load_state_dict(state)
            if gain > best_gain:
                best_gain, best_state = gain, copy.deepcopy(model.state_dict())
                save_model(run_dir / "model_best.pt", model, round=round_index, steps=len(labels), eval_gain=gain)
            print(f"[aset_dagger] round {round_index}: {len(labels)} labelled decisions, best greedy gain so far "
                  f"{best_gain:+.4f} at {time.perf_counter() - start:.0f}s", flush=True)
            if interrupt.requested or time.perf_counter() - start > cfg.max_minutes * 60 or len(labels) >= steps:
                break
    curve.close()
    model.load_state_dict(best_state)
    model.eval()
    path = save_model(run_dir / MODEL_FILE, model, steps=len(parts[0]) if parts else 0, best_eval_gain=best_gain,
                      bar=bar, minutes=(time.perf_counter() - start) / 60, teacher=ASET_ROLLOUT)
    (run_dir / "aset_dagger_config.json").write_text(json.dumps(
        {"algo_cfg": asdict(cfg), "env_id": env_id, "env_kwargs": envs.kwargs, "seed": seed, "bar": bar,
         "best_eval_gain": best_gain}, indent=2, default=str))
    if interrupt.requested:
        print(f"[aset_dagger] stopped after round {round_index}: continue with python train.py resume={run_dir}",
              flush=True)
        raise TrainingInterrupted(interrupt.signum or 2, path)
    return path


def _fit(model: AsetStudent, optimiser: torch.optim.Optimizer, labels: AsetLabels, cfg: TrainConfig,
         rng: np.random.Generator, curve: CurveLog, evaluate: Any, round_index: int, start: float, interrupt: Any,
         ) -> tuple[float, dict[str, torch.Tensor] | None]:
    """``cfg.epochs`` epochs of imitation on ``labels`` (one episode in ten held out for the agreement); returns
    the best greedy gain among the evaluated epochs and those weights; the model ends at the last epoch."""
    obs = torch.from_numpy(labels.obs)
    extra = torch.from_numpy(labels.extra)
    candidates = torch.from_numpy(labels.candidates.astype(bool))
    teacher = torch.from_numpy(labels.teacher_action)
    targets = value_targets(torch.from_numpy(labels.teacher_values), teacher, float(cfg.value_tau))
    val = labels.episode % 10 == 9
    train_idx, val_idx = np.flatnonzero(~val), np.flatnonzero(val)
    best: tuple[float, dict[str, torch.Tensor] | None] = (float("-inf"), None)
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        order = torch.from_numpy(rng.permutation(train_idx))
        losses = []
        for first in range(0, order.numel(), cfg.batch_size):
            idx = order[first:first + cfg.batch_size]
            loss = soft_imitation_loss(model(obs[idx], extra[idx], candidates[idx]), targets[idx])
            losses.append(gradient_step(optimiser, loss, model.parameters(), cfg.grad_clip))
        model.eval()
        with torch.no_grad():
            agree = float((model(obs[val_idx], extra[val_idx], candidates[val_idx]).argmax(-1) == teacher[val_idx])
                          .double().mean()) if val_idx.size else float("nan")
        last = epoch == cfg.epochs or interrupt.requested
        gain = evaluate() if epoch % cfg.eval_every == 0 or last else float("nan")
        elapsed = time.perf_counter() - start
        curve.add(round=round_index, epoch=epoch, decisions=len(labels), seconds=elapsed,
                  train_loss=float(np.mean(losses)) if losses else float("nan"), val_agreement=agree, eval_gain=gain)
        print(f"[aset_dagger] round {round_index} epoch {epoch} {elapsed:.0f}s loss {np.mean(losses):.4f} "
              f"agreement {agree:.3f} greedy gain over the better heuristic {gain:+.4f}", flush=True)
        if not np.isnan(gain) and gain > best[0]:
            best = (gain, copy.deepcopy(model.state_dict()))
        if interrupt.requested:
            break
    return best
