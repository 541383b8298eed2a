"""REINFORCE for the UEC-v0 attention dispatcher, with S rollouts per episode seed as the baseline.

Each batch draws ``seeds_per_batch`` episode seeds and runs ``samples`` (S) stochastic rollouts of each;
resetting UEC-v0 with the same seed gives the same arrivals and durations (common random numbers), so
the S rollouts differ only by the policy's choices and the mean of their profits is a per-seed baseline
(CoRaiS' S-sample baseline). All B·S env copies step in lockstep and share one batched network call per
decision; the log-probabilities are recomputed with gradients in one pass after the rollouts.

    loss = -mean_b,s[(P_bs - mean_s P_bs) / scale · Σ_t log π(a_t|s_t)] - β · mean_t H(π(·|s_t))

``scale`` is the batch's advantage standard deviation (``normalize_advantage``). ``steps`` (train.py)
is the budget of environment decisions; ``max_minutes`` caps the wall time. Contract 5:
``train(env_cfg, algo_cfg, *, run_dir, seed, steps, device) -> model path`` and
``load_policy(run_dir, env, **kwargs) -> Policy`` (greedy by default).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agents.uec.model import (
    ENV_ID,
    UECAttentionNet,
    UECModelConfig,
    config_for_layout,
    count_parameters,
    save_model,
)
from agents.uec.prior import PriorModelConfig, PriorNet, PriorPolicy, train_prior

MODEL_FILE = "model.pt"


@dataclass
class NetSizes:
    """The network sizes of :class:`agents.uec.model.UECModelConfig` (its env dimensions come from the env)."""

    embed_dim: int = 64
    heads: int = 4
    layers: int = 2
    ff_hidden: int = 128
    tanh_clip: float = 10.0


@dataclass
class TrainConfig:
    """The schema of edge_sched_gym/conf/algo/corais_uec.yaml (Hydra ConfigStore ``algo/corais_uec_schema``)."""

    name: str = "corais_uec"
    kind: str = "custom"
    default_steps: int = 1_200_000  # environment decisions
    seeds_per_batch: int = 4  # B episode seeds per batch
    samples: int = 8  # S rollouts per seed (the baseline is their mean profit)
    lr: float = 5e-4
    entropy_coef: float = 0.01  # beta
    grad_clip: float = 1.0
    normalize_advantage: bool = True
    max_minutes: float = 9.0
    eval_every: int = 20  # batches between greedy evaluations
    eval_episodes: int = 10
    eval_seed: int = 1000  # evaluation episodes use seeds eval_seed, eval_seed + 1, ...
    checkpoint_every: int = 200  # batches
    threads: int = 1
    model: NetSizes = field(default_factory=NetSizes)  # a plain dict after from_dict
    # prior != "none": train agents.uec.prior's PriorNet instead (the heuristic's score + a learnt correction)
    prior: str = "none"  # none | lp_bid_price | value_bid_price | opportunity_greedy
    prior_temperature: float = 0.3  # initial 1/alpha of the prior's logits (profit units per nat)
    prior_hidden: int = 64
    prior_layers: int = 2
    train_instances: int = 0  # pool of extra training instances (instance seeds instance_pool_base..)
    instance_pool_base: int = 10_000  # disjoint from offline.partition's 0, 100..199 and 900..909
    fixed_instance_share: float = 0.5  # share of seed groups on the env's own instance when the pool is used
    prior_method: str = "reinforce"  # reinforce | rollout_q (approximate policy iteration on the heuristic's Q)
    q_rounds: int = 1  # rollout_q: collect / fit rounds within max_minutes
    collect_fraction: float = 0.6  # rollout_q: share of each round spent collecting Q of the heuristic
    explore: float = 0.1  # rollout_q: probability of a random allowed action while collecting
    state_prob: float = 0.5  # rollout_q: share of the decisions whose action values are estimated
    q_batch: int = 256  # rollout_q: states per gradient step
    prior_init: str = ""  # a PriorNet model file to start from (e.g. a rollout_q run's model.pt); "" = the heuristic
    # prior_method=dagger (agents.uec.dagger): imitate an online rollout reference on the states the student visits
    teacher: str = "uec_rollout_preempt"  # uec_rollout_preempt | uec_rollout
    dagger_rounds: int = 4  # student-driven collections after the teacher's own (round 0)
    dagger_episodes: int = 40  # labelled episodes per round
    dagger_epochs: int = 30  # cross-entropy epochs on all labels after each round
    dagger_loss: str = "action"  # action (cross-entropy) | advantage (regression on the teacher's rollout values)
    dagger_tau: float = 0.0  # action: > 0 gives soft targets softmax(Q̂/tau); advantage: the value unit (0 = 1)
    dataset: str = ""  # a teacher_labels.npz to start from (with dagger_rounds=0: train a student from it alone)
    dagger_loads: list[float] = field(default_factory=list)  # pool episodes also at these mean arrival probabilities

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> TrainConfig:
        """Validate ``cfg`` against the schema (unknown keys, types, ranges); ``model`` stays a plain dict."""
        from agents.cli import merge_schema

        data = merge_schema(cls, cfg, "corais_uec")
        out = cls(**data)  # type: ignore[arg-type]
        for key in ("seeds_per_batch", "samples", "eval_every", "eval_episodes", "checkpoint_every", "threads"):
            if int(getattr(out, key)) < 1:
                raise ValueError(f"algo.{key}={getattr(out, key)} is invalid: expected an integer >= 1")
        if out.samples < 2:
            raise ValueError(f"algo.samples={out.samples} is invalid: the baseline needs >= 2 rollouts per seed")
        if out.eval_seed < 0:
            raise ValueError(f"algo.eval_seed={out.eval_seed} is invalid: expected an integer >= 0")
        if out.prior != "none":
            from agents.uec.prior import PRIORS

            if out.prior not in PRIORS:
                raise ValueError(f"algo.prior={out.prior!r} is invalid: expected none or one of {list(PRIORS)}")
        if not out.prior_temperature > 0 or out.prior_hidden < 1 or out.prior_layers < 1 or out.train_instances < 0:
            raise ValueError("algo.prior_temperature must be > 0, prior_hidden and prior_layers >= 1, "
                             "train_instances >= 0")
        if out.prior_method not in ("reinforce", "rollout_q", "dagger"):
            raise ValueError(f"algo.prior_method={out.prior_method!r} is invalid: expected reinforce, rollout_q or "
                             "dagger")
        if out.prior_method == "dagger":
            from agents.uec.dagger import TEACHERS

            if out.teacher not in TEACHERS:
                raise ValueError(f"algo.teacher={out.teacher!r} is invalid: expected one of {list(TEACHERS)}")
            if any(not 0.0 < float(p) <= 1.0 for p in out.dagger_loads):
                raise ValueError(f"algo.dagger_loads={list(out.dagger_loads)} is invalid: expected probabilities in (0, 1]")
            if out.dagger_loss not in ("action", "advantage"):
                raise ValueError(f"algo.dagger_loss={out.dagger_loss!r} is invalid: expected action or advantage")
            if out.dagger_rounds < 0 or out.dagger_episodes < 1 or out.dagger_epochs < 1 or not out.dagger_tau >= 0:
                raise ValueError("algo.dagger_rounds must be >= 0, dagger_episodes and dagger_epochs >= 1, "
                                 "dagger_tau >= 0")
            if out.dagger_rounds == 0 and not out.dataset and out.dagger_episodes < 1:
                raise ValueError("algo.dagger_rounds=0 needs dagger_episodes >= 1 or a dataset")
        if out.q_rounds < 1 or out.q_batch < 1 or not 0 < out.collect_fraction < 1:
            raise ValueError("algo.q_rounds and q_batch must be >= 1 and collect_fraction in (0, 1)")
        if not (0.0 <= out.explore <= 1.0 and 0.0 < out.state_prob <= 1.0):
            raise ValueError("algo.explore must be in [0, 1] and state_prob in (0, 1]")
        if not 0.0 <= out.fixed_instance_share <= 1.0:
            raise ValueError(f"algo.fixed_instance_share={out.fixed_instance_share} is invalid: expected 0..1")
        from offline.partition import check_instance_pool

        check_instance_pool(out.instance_pool_base, out.train_instances)
        return out


# --------------------------------------------------------------------------------------------------
# Vectorised rollouts
# --------------------------------------------------------------------------------------------------


def make_envs(env_cfg: dict[str, Any], count: int) -> list[gym.Env]:
    """``count`` UEC-v0 copies of ``env_cfg["kwargs"]`` (same instance); unwrapped (no wrapper overhead)
    unless the config lists observation wrappers (e.g. ``offline.uec.features:LPFeatures``)."""
    from envs.problems import make

    if str(env_cfg.get("id", ENV_ID)) != ENV_ID:
        raise ValueError(f"algo=corais_uec trains only on {ENV_ID}, not on {env_cfg.get('id')!r}")
    kwargs, wrappers = dict(env_cfg.get("kwargs") or {}), list(env_cfg.get("wrappers") or ())
    made = [make(ENV_ID, kwargs, wrappers) for _ in range(count)]
    return made if wrappers else [env.unwrapped for env in made]


def rollouts(
    model: UECAttentionNet,
    env_list: list[gym.Env],
    seeds: list[int],
    *,
    greedy: bool,
    generator: torch.Generator | None = None,
) -> tuple[np.ndarray, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run one episode in each env (env i reset with ``seeds[i]``) in lockstep.

    Returns (episode profits (N,), observations (M, n), actions (M,), env index of each decision (M,)).
    """
    n = len(env_list)
    obs = np.stack([env.reset(seed=int(s))[0] for env, s in zip(env_list, seeds, strict=True)])
    profit = np.zeros(n)
    active = np.ones(n, dtype=bool)
    obs_buf: list[torch.Tensor] = []
    act_buf: list[torch.Tensor] = []
    idx_buf: list[torch.Tensor] = []
    while active.any():
        idx = np.flatnonzero(active)
        batch = torch.from_numpy(obs[idx])
        with torch.no_grad():
            logits = model(batch)
        if greedy:
            actions = logits.argmax(dim=-1)
        else:
            actions = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(-1)
        obs_buf.append(batch)
        act_buf.append(actions)
        idx_buf.append(torch.from_numpy(idx))
        for i, a in zip(idx.tolist(), actions.tolist(), strict=True):
            o, r, terminated, truncated, _ = env_list[i].step(a)
            profit[i] += r
            obs[i] = o
            if terminated or truncated:
                active[i] = False
    return profit, torch.cat(obs_buf), torch.cat(act_buf), torch.cat(idx_buf)


def evaluate_greedy(model: UECAttentionNet, env_list: list[gym.Env], seeds: list[int]) -> np.ndarray:
    """Greedy episode profits on ``seeds`` (one env copy per seed)."""
    was_training = model.training
    model.eval()
    profit = rollouts(model, env_list[: len(seeds)], seeds, greedy=True)[0]
    model.train(was_training)
    return profit


def _reference_profits(env_cfg: dict[str, Any], seeds: list[int]) -> np.ndarray | None:
    """Profits on the eval seeds of the env config's reference policy (a name, or a list: the best of them
    by mean profit, e.g. the best faithful baseline), logged next to the learner; None if unavailable."""
    from offline.protocol import run_episode
    from offline.registry import make_policy

    wanted = env_cfg.get("reference_policy") or "rescue"
    names = [str(wanted)] if isinstance(wanted, str) else [str(n) for n in wanted]
    env = make_envs(env_cfg, 1)[0]
    best: np.ndarray | None = None
    for name in names:
        try:
            policy = make_policy(ENV_ID, name, env)
            profits = np.asarray([run_episode(env, policy, seed=s).total_reward for s in seeds])
        except Exception as err:  # never let the reference break training
            print(f"[corais_uec] reference policy {name!r} unavailable: {err}", flush=True)
            continue
        if best is None or profits.mean() > best.mean():
            best = profits
    return best


# --------------------------------------------------------------------------------------------------
# Saving / loading
# --------------------------------------------------------------------------------------------------


def load_model(path: Path, device: str = "cpu") -> tuple[UECAttentionNet, dict[str, Any]]:
    """Load a model saved by :func:`save_model` with ``torch.load(weights_only=True)``: a file that would need
    code to unpickle raises :class:`agents.loading.UnsafeFileError` (nothing in it runs), a truncated or foreign
    one :class:`agents.loading.ModelFileError`."""
    from agents.loading import load_config_model

    model, blob = load_config_model(path, device, "UEC attention model file", _build_model)
    return model, dict(blob.get("meta") or {})


def _build_model(cfg: dict[str, Any]) -> UECAttentionNet | PriorNet:
    """The network a saved ``model_config`` describes: a :class:`PriorNet` if it names a prior."""
    if "prior" in cfg:
        return PriorNet(PriorModelConfig(**cfg))
    return UECAttentionNet(UECModelConfig(**cfg))


class CoRaiSUECPolicy:
    """:class:`offline.protocol.Policy` of a trained dispatcher: greedy (argmax) or sampled actions."""

    def __init__(self, model: UECAttentionNet, name: str = "corais_uec", greedy: bool = True) -> None:
        self.model = model.eval()
        self.name = name
        self.greedy = greedy
        self._generator = torch.Generator().manual_seed(0)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        layout = env.get_wrapper_attr("layout")
        if layout != self.model.layout:
            raise ValueError(f"the model was trained on layout {self.model.layout}, the env has {layout}")
        if seed is not None:
            self._generator.manual_seed(int(seed))

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        batch = torch.as_tensor(np.asarray(obs, dtype=np.float32)).reshape(1, -1)
        with torch.no_grad():
            logits = self.model(batch)[0]
        if self.greedy:
            return int(logits.argmax())
        return int(torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=self._generator))


def load_policy(run_dir: Path, env: gym.Env, *, checkpoint: str | None = None, greedy: bool = True,
                **kwargs: Any) -> CoRaiSUECPolicy | PriorPolicy:
    """Contract 5: the dispatcher of a run folder (``checkpoint``: a model file inside the run)."""
    path = Path(run_dir) / (checkpoint or MODEL_FILE)
    if not path.is_file():
        raise ValueError(f"{run_dir} has no {path.name} (training interrupted before the first save?)")
    model = load_model(path)[0]
    layout = env.get_wrapper_attr("layout")
    if layout != model.layout:
        raise ValueError(f"run {Path(run_dir).name} was trained on layout {model.layout}, the env has {layout}")
    if isinstance(model, PriorNet):
        return PriorPolicy(model, name=f"uec_prior:{Path(run_dir).name}", greedy=greedy)
    return CoRaiSUECPolicy(model, name=f"corais_uec:{Path(run_dir).name}", greedy=greedy)


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------


def train(
    env_cfg: dict[str, Any],
    algo_cfg: dict[str, Any],
    *,
    run_dir: Path,
    seed: int,
    steps: int,
    device: str = "cpu",
    resume: bool = False,
) -> Path:
    """Train on UEC-v0 with ``env_cfg["kwargs"]`` for ``steps`` decisions; returns ``run_dir/model.pt``.

    Checkpoints hold the model, the optimiser, the counters, the elapsed time and the random states:
    ``resume=True`` continues ``run_dir`` from its newest one. On SIGINT/SIGTERM/SIGHUP the current batch
    ends, ``checkpoints/model_interrupted_<decisions>.pt`` and ``model.pt`` are saved and
    :class:`agents.callbacks.TrainingInterrupted` is raised.
    """
    from torch.utils.tensorboard import SummaryWriter

    from agents.callbacks import (
        GracefulInterrupt,
        TrainingInterrupted,
        latest_trainer_checkpoint,
        restore_rng_states,
        rng_states,
    )

    cfg = TrainConfig.from_dict(dict(algo_cfg))
    if steps < 1:
        raise ValueError(f"steps={steps} is invalid: expected >= 1 (environment decisions)")
    if cfg.prior != "none":
        if resume:
            raise ValueError("resume is not supported with algo.prior (runs are short: start a new one)")
        method = None
        if cfg.prior_method == "dagger":
            from agents.uec.dagger import train_dagger as method
        return train_prior(env_cfg, cfg, run_dir=Path(run_dir), seed=seed, steps=steps, method=method)
    if device != "cpu":
        print(f"[corais_uec] device={device}: the env-bound rollouts run on the CPU; training on cpu", flush=True)
    run_dir = Path(run_dir)
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    torch.set_num_threads(int(cfg.threads))
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)

    n_train = cfg.seeds_per_batch * cfg.samples
    train_envs = make_envs(env_cfg, n_train)
    eval_envs = make_envs(env_cfg, cfg.eval_episodes)
    saved_state: dict[str, Any] | None = None
    if resume:
        latest = latest_trainer_checkpoint(run_dir)
        if latest is None:
            raise ValueError(f"resume={run_dir} has no checkpoint to continue from (checkpoints/model_<step>.pt)")
        model, saved = load_model(latest[0])
        saved_state = saved.get("trainer_state")
        if saved_state is None:
            raise ValueError(f"{latest[0]} holds no trainer state (saved by an older trainer): it cannot be resumed")
        if int(saved_state["decisions"]) >= steps:
            raise ValueError(f"steps={steps} is invalid for resume={run_dir}: {latest[0].name} is at step "
                             f"{saved_state['decisions']}; expected steps > {saved_state['decisions']}")
    else:
        model = UECAttentionNet(config_for_layout(train_envs[0].get_wrapper_attr("layout"), **cfg.model))
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    writer = SummaryWriter(log_dir=str(run_dir))  # resumed: a new events file in the same folder
    if saved_state is None:
        meta = {"env_cfg": env_cfg, "algo_cfg": asdict(cfg), "seed": seed, "steps": steps,
                "parameters": count_parameters(model)}
        (run_dir / "corais_uec_config.json").write_text(json.dumps(meta, indent=2, default=str))
        writer.add_text("hparams", json.dumps(meta, default=str))

    eval_seeds = [cfg.eval_seed + i for i in range(cfg.eval_episodes)]
    reference = _reference_profits(env_cfg, eval_seeds)
    ref_mean = float(reference.mean()) if reference is not None else None

    def log_eval(step: int, batch: int, elapsed: float) -> float:
        profit = evaluate_greedy(model, eval_envs, eval_seeds)
        mean = float(profit.mean())
        writer.add_scalar("eval/mean_reward", mean, step)
        if ref_mean is not None:
            writer.add_scalar("reference/mean_reward", ref_mean, step)
            if ref_mean > 0:
                writer.add_scalar("eval/ratio_to_reference", mean / ref_mean, step)
        ref = f" (reference {ref_mean:.2f})" if ref_mean is not None else ""
        print(f"[corais_uec] batch {batch} step {step} {elapsed:.0f}s greedy eval {mean:.2f}{ref}", flush=True)
        return mean

    start = time.perf_counter()
    decisions, batch = 0, 0
    if saved_state is None:
        best = log_eval(0, 0, 0.0)
        save_model(run_dir / "model_best.pt", model, batches=0, steps=0, eval_mean_reward=best)
    else:
        optimiser.load_state_dict(saved_state["optimizer"])
        restore_rng_states(saved_state["rng"], rng, generator)
        start -= float(saved_state["elapsed_s"])  # the wall-time budget goes on where it was
        decisions, batch, best = int(saved_state["decisions"]), int(saved_state["batch"]), float(saved_state["best"])
        print(f"[corais_uec] resuming at batch {batch + 1} (step {decisions})", flush=True)

    def checkpoint(path: Path) -> Path:
        """Model plus everything resuming needs (tensors and plain containers only)."""
        state = {"batch": batch, "decisions": decisions, "elapsed_s": time.perf_counter() - start, "best": float(best),
                 "optimizer": optimiser.state_dict(), "rng": rng_states(rng, generator)}
        return save_model(path, model, batches=batch, steps=decisions, trainer_state=state)

    model.train()
    interrupt = GracefulInterrupt()
    with interrupt:
        while decisions < steps and time.perf_counter() - start < cfg.max_minutes * 60 and not interrupt.requested:
            batch += 1
            episode_seeds = rng.integers(0, 2**31 - 1, size=cfg.seeds_per_batch)
            seeds = np.repeat(episode_seeds, cfg.samples).tolist()  # S consecutive copies share a seed
            profit, obs, actions, index = rollouts(model, train_envs, seeds, greedy=False, generator=generator)
            decisions += int(actions.numel())

            log_p = torch.log_softmax(model(obs), dim=-1)
            chosen = log_p.gather(1, actions.unsqueeze(1)).squeeze(1)
            episode_log_p = torch.zeros(n_train).index_add(0, index, chosen)
            p = torch.where(torch.isfinite(log_p), log_p, torch.zeros_like(log_p))
            entropy = -(p.exp() * p).sum(dim=-1).mean()
            grouped = torch.as_tensor(profit, dtype=torch.float32).reshape(cfg.seeds_per_batch, cfg.samples)
            advantage = (grouped - grouped.mean(dim=1, keepdim=True)).reshape(-1)
            if cfg.normalize_advantage:
                advantage = advantage / (advantage.std() + 1e-6)
            loss = -(advantage * episode_log_p).mean() - cfg.entropy_coef * entropy
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            optimiser.step()

            elapsed = time.perf_counter() - start
            writer.add_scalar("rollout/ep_rew_mean", float(profit.mean()), decisions)
            writer.add_scalar("rollout/ep_len_mean", actions.numel() / n_train, decisions)
            writer.add_scalar("train/loss", loss.item(), decisions)
            writer.add_scalar("train/entropy", entropy.item(), decisions)
            writer.add_scalar("train/grad_norm", float(grad_norm), decisions)
            writer.add_scalar("train/profit_spread", float(grouped.std(dim=1).mean()), decisions)
            writer.add_scalar("time/fps", decisions / max(elapsed, 1e-9), decisions)
            last = decisions >= steps or elapsed >= cfg.max_minutes * 60
            if batch % cfg.eval_every == 0 or last:
                mean = log_eval(decisions, batch, elapsed)
                if mean > best:
                    best = mean
                    save_model(run_dir / "model_best.pt", model, batches=batch, steps=decisions, eval_mean_reward=mean)
            if batch % cfg.checkpoint_every == 0:
                checkpoint(run_dir / "checkpoints" / f"model_{decisions}.pt")
    if interrupt.requested:
        saved_path = checkpoint(run_dir / "checkpoints" / f"model_interrupted_{decisions}.pt")
        save_model(run_dir / MODEL_FILE, model, batches=batch, steps=decisions, best_eval_mean_reward=float(best))
        writer.flush()
        writer.close()
        raise TrainingInterrupted(interrupt.signum or 2, saved_path)
    writer.flush()
    writer.close()
    return save_model(run_dir / MODEL_FILE, model, batches=batch, steps=decisions,
                      minutes=(time.perf_counter() - start) / 60, best_eval_mean_reward=float(best))
