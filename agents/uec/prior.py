"""A UEC-v0 dispatcher that starts AS a net-score heuristic (``lp_bid_price``) and learns a correction to it.

Why: a flat or attention policy trained from scratch has to rediscover what the LP duals already say about
the price of capacity; here the heuristic's own score is the backbone of the logits and the network only
learns what the heuristic misses (the state: which servers are busy, how much reserved work is left, the
load so far). For the arriving task and each candidate action a (reject or SSP (k, l)):

    logit(a) = α · score(a) + f_θ(x_a),   score(reject) = 0,   score(k, l) = R_jkl(t) − price_kl(t)

``score`` and ``price`` come from the heuristic (:meth:`offline.uec.heuristics.NetScoreGreedyPolicy.scores`,
``prices``; lp_bid_price: θ·Σ_s S_l(s)·μ_k(t+s−1) from P1-LP's duals), α = exp(log_alpha) > 0 is learnt, and
f_θ is a small MLP shared by all actions, fed the action's features (:func:`decision_features`). Only the
actions the heuristic may choose are allowed (reject, and safe SSPs with R > 0: unsafe ones lose ~18 % of
the profit when tried greedily). f_θ's last layer starts at zero, so the untrained greedy policy (argmax) is
exactly the heuristic (ties: the first index, like ``np.argmax``; reject wins a tie with score 0).

Training (:func:`train_prior`, called by ``agents.uec.trainer.train`` when ``algo.prior`` is set) is the
trainer's REINFORCE with S rollouts per episode seed (common random numbers) as the baseline, on the env's
instance and, for a share of the seed groups, on a pool of other instances (``train_instances`` instance
seeds from ``instance_pool_base``, disjoint from ``offline.partition``'s tuning and held-out ranges).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from agents.curves import Column, CurveLog
from agents.priors import correction_mlp
from agents.uec.model import ENV_ID, save_model
from envs.uec.env import ObservationLayout, UECEnv
from envs.uec.types import Instance
from offline.uec.heuristics import NetScoreGreedyPolicy

#: features of one action token (see :func:`decision_features`), without the device one-hot (J more)
BASE_FEATURES = 20
#: priors a model may start from: the net-score greedies of offline.uec.heuristics
PRIORS: tuple[str, ...] = ("lp_bid_price", "value_bid_price", "opportunity_greedy")
#: the SSPs a model may choose: "safe" (the heuristic's: safe with R > 0) or "useful" (any SSP the env allows with
#: R > 0, including those reserved work may pre-empt: the action set of uec_rollout_preempt, ``agents.uec.dagger``)
ACTION_SETS: tuple[str, ...] = ("safe", "useful")
#: curve.csv of the REINFORCE trainer (x = decisions): sampled-rollout and greedy-evaluation profit, the prior's.
REINFORCE_CURVE: tuple[Column, ...] = (
    Column("batch", "d"), Column("decisions", "d"), Column("seconds", ".1f"),
    Column("rollout_mean", ".3f", "rollout/ep_rew_mean"), Column("eval_mean", ".3f", "eval/mean_reward"),
    Column("heuristic_mean", ".3f", "reference/mean_reward"), Column("alpha", ".4f", "train/alpha"),
)
#: curve.csv of ``prior_method=rollout_q`` (x = decisions): the validation one-step gain per decision besides.
ROLLOUT_Q_CURVE: tuple[Column, ...] = (
    Column("round", "d"), Column("epoch", "d"), Column("decisions", "d"), Column("seconds", ".1f"),
    Column("states", "d"), Column("val_gain", ".4f", "eval/val_gain_per_decision"),
    Column("eval_mean", ".3f", "eval/mean_reward"), Column("heuristic_mean", ".3f", "reference/mean_reward"),
    Column("alpha", ".4f", "train/alpha"),
)


@dataclass
class PriorModelConfig:
    """Sizes of the correction network, the env dimensions and the heuristic it corrects (name and weight, so a
    saved model rebuilds the same prior even if ``tuned.yaml`` changes)."""

    num_servers: int
    num_devices: int
    num_profiles: int
    prior: str = "lp_bid_price"
    prior_weight: float = 1.0  # the heuristic's λ or θ
    hidden: int = 64
    layers: int = 2
    temperature: float = 0.3  # initial 1/α: the prior's logit scale (profit units per nat)
    actions: str = "safe"  # one of ACTION_SETS

    def __post_init__(self) -> None:
        if self.prior not in PRIORS:
            raise ValueError(f"prior={self.prior!r} is invalid: expected one of {list(PRIORS)}")
        if self.actions not in ACTION_SETS:
            raise ValueError(f"actions={self.actions!r} is invalid: expected one of {list(ACTION_SETS)}")
        if self.hidden < 1 or self.layers < 1 or not self.temperature > 0:
            raise ValueError(f"need hidden >= 1, layers >= 1, temperature > 0 (got {self.hidden}, {self.layers}, "
                             f"{self.temperature})")

    @property
    def layout(self) -> ObservationLayout:
        return ObservationLayout(self.num_servers, self.num_devices, self.num_profiles, False)

    @property
    def token_features(self) -> int:
        """Features per action token: BASE_FEATURES, the device one-hot, and for ``actions="useful"`` the
        probability that reserved work pre-empts the task (:func:`decision_features`)."""
        return BASE_FEATURES + self.num_devices + (1 if self.actions == "useful" else 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def make_heuristic(name: str, weight: float | None, env: gym.Env) -> NetScoreGreedyPolicy:
    """The registered heuristic ``name`` (tuned weight unless ``weight`` is given), reset on ``env``."""
    from offline.registry import make_policy

    kwargs = {} if weight is None else {"price" if name == "opportunity_greedy" else "scale": float(weight)}
    policy = make_policy("UEC-v0", name, env, **kwargs)
    if not isinstance(policy, NetScoreGreedyPolicy):
        raise ValueError(f"prior={name!r} is not a net-score greedy of offline.uec.heuristics")
    policy.reset(env)
    return policy


def decision_features(
    obs: np.ndarray, info: dict[str, Any], heuristic: NetScoreGreedyPolicy, layout: ObservationLayout,
    profit_scale: float, actions: str = "safe",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tokens (A, F) float32, score (A,) float64, allowed (A,) bool) of one decision, A = 1 + K·L (env order).

    Token of SSP (k, l): R/maxR, price/maxR, net score/maxR (0 if not allowed), E[d_l]/D, server k's 5 features,
    the task's budget on k, allowed bit (``actions="useful"``: the safe bit, since every useful SSP is allowed),
    reject flag 0; the reject token has zeros there and flag 1. Every token also carries the context: t/T, P(t),
    weight, accuracy gap, share of idle servers, share of allowed SSPs, best allowed net score/maxR, mean elapsed
    busy time, then the device one-hot (J). With ``actions="useful"`` a last feature: P(d_l > the longest block
    server k can give before its reserved work needs it), the chance reserved work pre-empts the task.
    """
    parts = layout.split(obs)
    K, L, J = layout.num_servers, layout.num_profiles, layout.num_devices
    A = 1 + K * L
    allowed = np.ones(A, dtype=bool)
    if actions == "useful":
        allowed[1:] = heuristic.useful(info)
        net = heuristic.net_scores(info)
        bit = heuristic.candidates(info)
    else:
        allowed[1:] = heuristic.candidates(info)
        net = heuristic.scores(info)
        bit = allowed[1:]
    score = np.zeros(A)
    score[1:] = np.where(allowed[1:], net, 0.0)
    inv = 1.0 / profit_scale
    tokens = np.zeros((A, BASE_FEATURES + J + (1 if actions == "useful" else 0)), dtype=np.float32)
    ssp = tokens[1:]
    ssp[:, 0] = parts["ssp_profit"]
    ssp[:, 1] = heuristic.prices(info) * inv
    ssp[:, 2] = score[1:] * inv
    ssp[:, 3] = parts["ssp_duration"]
    ssp[:, 4:9] = np.repeat(parts["servers"], L, axis=0)
    ssp[:, 9] = np.repeat(parts["task"][2:], L)
    ssp[:, 10] = bit
    tokens[0, 11] = 1.0
    servers = parts["servers"]
    context = tokens[:, 12:]
    context[:, 0:2] = parts["time"]
    context[:, 2:4] = parts["task"][:2]
    context[:, 4] = 1.0 - servers[:, 1].mean()
    context[:, 5] = allowed[1:].mean()
    context[:, 6] = max(float(score[1:].max()), 0.0) * inv
    context[:, 7] = servers[:, 2].mean()
    context[:, 8 : 8 + J] = parts["device"]
    if actions == "useful":  # P(d_l > longest feasible block on k): the chance a started task is cut (earns 0)
        instance = heuristic.instance
        pmf = instance.duration_pmf  # (L, S), d = 1..S
        D = int(instance.max_duration.max())  # the obs's block scale
        tail = np.clip(1.0 - np.cumsum(pmf, axis=1), 0.0, 1.0)  # tail[l, b - 1] = P(d_l > b)
        block = np.rint(servers[:, 4] * D).astype(np.int64)  # the obs caps the block at D (then nothing is cut)
        cut = np.where(block[:, None] >= D, 0.0, np.where(block[:, None] < 1, 1.0,
                                                           tail[:, np.clip(block - 1, 0, pmf.shape[1] - 1)].T))
        tokens[1:, -1] = cut.reshape(K * L)
    return tokens, score, allowed


class PriorNet(nn.Module):
    """logits = α·score + f_θ(tokens) on allowed actions, −inf elsewhere (float64 logits, so the untrained
    argmax reproduces the heuristic's float64 comparison exactly)."""

    def __init__(self, cfg: PriorModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.layout = cfg.layout
        self.correction = correction_mlp(cfg.token_features, cfg.hidden, cfg.layers)
        self.log_alpha = nn.Parameter(torch.tensor(-float(np.log(cfg.temperature))))

    def forward(self, tokens: torch.Tensor, score: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """(N, A, F), (N, A) float64, (N, A) bool -> logits (N, A) float64."""
        logits = self.log_alpha.double().exp() * score + self.correction(tokens).squeeze(-1).double()
        return logits.masked_fill(~allowed, float("-inf"))


class PriorPolicy:
    """:class:`offline.protocol.Policy` of a :class:`PriorNet`: greedy (argmax) or sampled actions. Reads the
    instance through its heuristic (rebuilt on ``reset`` from the model's prior name and weight)."""

    def __init__(self, model: PriorNet, name: str = "uec_prior", greedy: bool = True) -> None:
        self.model = model.eval()
        self.name = name
        self.greedy = greedy
        self._generator = torch.Generator().manual_seed(0)
        self._heuristic: NetScoreGreedyPolicy | None = None
        self._scale = 1.0

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        layout = env.get_wrapper_attr("layout")
        if layout != self.model.layout:
            raise ValueError(f"the model was trained on layout {self.model.layout}, the env has {layout}")
        if self._heuristic is None:
            self._heuristic = make_heuristic(self.model.cfg.prior, self.model.cfg.prior_weight, env)
        else:
            self._heuristic.reset(env)
        self._scale = max(float(env.unwrapped.instance.expected_profit.max()), 1e-12)
        if seed is not None:
            self._generator.manual_seed(int(seed))

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        if self._heuristic is None:
            raise RuntimeError("PriorPolicy.act before reset(env)")
        tokens, score, allowed = decision_features(np.asarray(obs), info, self._heuristic, self.model.layout,
                                                   self._scale, self.model.cfg.actions)
        with torch.no_grad():
            logits = self.model(torch.from_numpy(tokens)[None], torch.from_numpy(score)[None],
                                torch.from_numpy(allowed)[None])[0]
        if self.greedy:
            return int(logits.argmax())
        return int(torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=self._generator))


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------


@dataclass
class _Slot:
    """One training instance: the instance, its heuristic (tables prepared) and max R (feature scale)."""

    instance: Instance
    heuristic: NetScoreGreedyPolicy
    scale: float
    instance_seed: int = -1
    arrival_prob: float = float("nan")  # the scenario's mean arrival probability when overridden (DAgger's loads)


def _slot(env_kwargs: dict[str, Any], instance_seed: int, prior: str, weight: float) -> _Slot:
    env = UECEnv(**{**env_kwargs, "instance_seed": int(instance_seed), "resample_instance": False})
    env.reset(seed=0)
    heuristic = make_heuristic(prior, weight, env)
    return _Slot(env.instance, heuristic, max(float(env.instance.expected_profit.max()), 1e-12), int(instance_seed))


def rollouts(
    model: PriorNet, envs: list[UECEnv], slots: list[_Slot], seeds: list[int], *, greedy: bool,
    generator: torch.Generator | None = None,
) -> tuple[np.ndarray, tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor, torch.Tensor]:
    """One episode per env (env i on ``slots[i]``'s instance, reset with ``seeds[i]``), in lockstep.

    Returns (profits (N,), the decisions' (tokens, score, allowed), actions (M,), env index per decision (M,)).
    """
    n = len(envs)
    obs, infos = [], []
    for env, slot, seed in zip(envs, slots, seeds, strict=True):
        options = None if env.instance is slot.instance else {"instance": slot.instance}
        o, info = env.reset(seed=int(seed), options=options)
        obs.append(o)
        infos.append(info)
    profit = np.zeros(n)
    active = list(range(n))
    buffers: list[list[torch.Tensor]] = [[], [], [], [], []]
    layout = model.layout
    while active:
        feats = [decision_features(obs[i], infos[i], slots[i].heuristic, layout, slots[i].scale, model.cfg.actions)
                 for i in active]
        tokens = torch.from_numpy(np.stack([f[0] for f in feats]))
        score = torch.from_numpy(np.stack([f[1] for f in feats]))
        allowed = torch.from_numpy(np.stack([f[2] for f in feats]))
        with torch.no_grad():
            logits = model(tokens, score, allowed)
        if greedy:
            actions = logits.argmax(dim=-1)
        else:
            actions = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(-1)
        for buf, x in zip(buffers, (tokens, score, allowed, actions, torch.tensor(active)), strict=True):
            buf.append(x)
        still = []
        for i, a in zip(active, actions.tolist(), strict=True):
            o, r, terminated, truncated, info = envs[i].step(a)
            profit[i] += r
            obs[i], infos[i] = o, info
            if not (terminated or truncated):
                still.append(i)
        active = still
    tokens, score, allowed, actions, index = (torch.cat(b) for b in buffers)
    return profit, (tokens, score, allowed), actions, index


#: the attributes of UECEnv that ``step`` changes during an episode (what :func:`action_values` saves and restores)
_EPISODE_ATTRS: tuple[str, ...] = ("_state", "_obs_table", "_safe_table", "_reserved_work")


def action_values(env: UECEnv, obs: np.ndarray, info: dict[str, Any], heuristic: NetScoreGreedyPolicy,
                  allowed: np.ndarray) -> np.ndarray:
    """(A,) Q̂(s, a): the profit from now to the end of the episode of taking action a, then following
    ``heuristic``, for each allowed a (NaN elsewhere); the env is left as it was.

    The episode's arrivals and duration draws are fixed at reset and unseen by the policies, so each Q̂ is an
    unbiased one-sample estimate of Q(s, a), and all actions of a state share that sample (common random
    numbers: their differences are much less noisy than the values)."""
    saved = {name: copy.deepcopy(getattr(env, name)) for name in _EPISODE_ATTRS}
    q = np.full(allowed.shape, np.nan)
    for action in np.flatnonzero(allowed):
        o, total, terminated, truncated, i = env.step(int(action))
        while not (terminated or truncated):
            o, r, terminated, truncated, i = env.step(heuristic.act(o, i))
            total += r
        q[action] = total
        for name, value in saved.items():
            setattr(env, name, copy.deepcopy(value))
    return q


def q_policy_loss(logits: torch.Tensor, allowed: torch.Tensor, advantage: torch.Tensor) -> torch.Tensor:
    """−mean_s Σ_a π(a|s)·Â(s, a): the expected one-step gain over the states (the all-action policy gradient of
    one policy-iteration step; ``advantage`` is 0 where not allowed)."""
    probs = torch.softmax(logits, dim=-1)
    return -(probs * torch.where(allowed, advantage, torch.zeros_like(advantage))).sum(dim=-1).mean()


def collect_action_values(
    model: PriorNet, env: UECEnv, slot: _Slot, seed: int, rng: np.random.Generator, *, explore: float,
    state_prob: float,
) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], int]:
    """Play one episode (greedy ``model``, a random allowed action with probability ``explore``); return
    (tokens, score, allowed, Q̂) of a random share ``state_prob`` of its decisions, and its decision count."""
    options = None if env.instance is slot.instance else {"instance": slot.instance}
    obs, info = env.reset(seed=int(seed), options=options)
    out = []
    done, played = False, 0
    while not done:
        tokens, score, allowed = decision_features(obs, info, slot.heuristic, model.layout, slot.scale,
                                                   model.cfg.actions)
        if rng.random() < state_prob and allowed.sum() > 1:
            out.append((tokens, score, allowed, action_values(env, obs, info, slot.heuristic, allowed)))
        if rng.random() < explore:
            action = int(rng.choice(np.flatnonzero(allowed)))
        else:
            with torch.no_grad():
                action = int(model(torch.from_numpy(tokens)[None], torch.from_numpy(score)[None],
                                   torch.from_numpy(allowed)[None])[0].argmax())
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        played += 1
    return out, played


def reinforce_loss(
    log_p: torch.Tensor, allowed: torch.Tensor, actions: torch.Tensor, index: torch.Tensor, profit: np.ndarray,
    samples: int, *, entropy_coef: float = 0.0, normalize: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, mean entropy) of REINFORCE with the S-sample baseline: episodes ``samples`` consecutive to a seed
    share it (their mean profit); ``log_p`` (M, A) of the M decisions, ``index`` the episode of each.

        loss = −mean_e[(P_e − mean_{same seed} P) / scale · Σ_{t ∈ e} log π(a_t|s_t)] − β · mean_t H(π(·|s_t))
    """
    n = len(profit)
    chosen = log_p.gather(1, actions.unsqueeze(1)).squeeze(1)
    episode_log_p = torch.zeros(n, dtype=chosen.dtype).index_add(0, index, chosen)
    p = torch.where(allowed, log_p, torch.zeros_like(log_p))
    entropy = -(p.exp() * p).sum(dim=-1).mean()
    grouped = torch.as_tensor(np.asarray(profit, dtype=np.float64)).reshape(n // samples, samples)
    advantage = (grouped - grouped.mean(dim=1, keepdim=True)).reshape(-1).to(chosen.dtype)
    if normalize:
        advantage = advantage / (advantage.std() + 1e-6)
    return -(advantage * episode_log_p).mean() - entropy_coef * entropy, entropy


def train_prior(env_cfg: dict[str, Any], cfg: Any, *, run_dir: Path, seed: int, steps: int,
                method: Any = None) -> Path:
    """Train a :class:`PriorNet` (``cfg``: ``agents.uec.trainer.TrainConfig`` with ``prior`` set) by REINFORCE
    (``prior_method=reinforce``), :func:`_train_rollout_q` or ``method`` (a trainer with ``_train_rollout_q``'s
    arguments, e.g. ``agents.uec.dagger.train_dagger``); returns ``run_dir/model.pt``. Starts from the
    heuristic (or ``prior_init``'s model). Logs greedy evaluations (the env's instance, seeds ``eval_seed``..)
    next to the start model's (the heuristic's) on the same seeds, keeps ``model_best.pt`` by that evaluation,
    and writes ``curve.csv`` (batch, decisions, seconds, rollout mean, eval mean, start mean, alpha)."""

    if env_cfg.get("wrappers"):
        raise ValueError("algo.prior reads the instance itself: use UEC-v0 without observation wrappers")
    if str(env_cfg.get("id", ENV_ID)) != ENV_ID:
        raise ValueError(f"algo.prior trains only on {ENV_ID}, not on {env_cfg.get('id')!r}")
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    torch.set_num_threads(int(cfg.threads))
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    kwargs = dict(env_cfg.get("kwargs") or {})
    if kwargs.get("resample_instance") or kwargs.get("instance_seed", 0) is None:
        raise ValueError("algo.prior: use a fixed instance_seed; train_instances adds the instance distribution")
    base_seed = int(kwargs.get("instance_seed", 0))

    start = time.perf_counter()
    probe = UECEnv(**{**kwargs, "resample_instance": False})
    probe.reset(seed=0)
    weight = make_heuristic(cfg.prior, None, probe).weight  # the tuned λ / θ, frozen into the model
    base = _slot(kwargs, base_seed, cfg.prior, weight)
    pool = [_slot(kwargs, cfg.instance_pool_base + i, cfg.prior, weight) for i in range(cfg.train_instances)]
    print(f"[uec_prior] {cfg.prior} weight {weight:.4f}; {len(pool)} pool instances ready in "
          f"{time.perf_counter() - start:.0f}s", flush=True)

    layout = probe.layout
    init = None
    if cfg.prior_init:
        from agents.loading import load_config_model

        def build(saved: dict[str, Any]) -> PriorNet:
            if "prior" not in saved:
                raise ValueError(f"algo.prior_init={cfg.prior_init!r} is not a PriorNet (an attention dispatcher?)")
            return PriorNet(PriorModelConfig(**saved))

        init, _ = load_config_model(Path(cfg.prior_init), "cpu", "UEC prior model file", build)
    # the action set: the teacher's for DAgger, the start model's when fine-tuning one (e.g. a DAgger student)
    actions = init.cfg.actions if init is not None else "useful" if cfg.prior_method == "dagger" else "safe"
    model = PriorNet(PriorModelConfig(layout.num_servers, layout.num_devices, layout.num_profiles, cfg.prior,
                                      float(weight), int(cfg.prior_hidden), int(cfg.prior_layers),
                                      float(cfg.prior_temperature), actions))
    if init is not None:
        if init.cfg != model.cfg:
            raise ValueError(f"algo.prior_init={cfg.prior_init!r} is not a PriorNet with config {model.cfg}")
        model.load_state_dict(init.state_dict())
    optimiser = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    n_train = cfg.seeds_per_batch * cfg.samples
    train_envs = [UECEnv(**{**kwargs, "resample_instance": False}) for _ in range(n_train)]
    eval_envs = [UECEnv(**{**kwargs, "resample_instance": False}) for _ in range(cfg.eval_episodes)]
    eval_seeds = [cfg.eval_seed + i for i in range(cfg.eval_episodes)]
    meta = {"env_cfg": env_cfg, "algo_cfg": asdict(cfg), "seed": seed, "steps": steps, "prior_weight": weight,
            "parameters": sum(p.numel() for p in model.parameters())}
    (run_dir / "corais_uec_config.json").write_text(json.dumps(meta, indent=2, default=str))

    def evaluate() -> float:
        model.eval()
        out = float(rollouts(model, eval_envs, [base] * len(eval_envs), eval_seeds, greedy=True)[0].mean())
        model.train()
        return out

    heuristic_mean = evaluate()  # the untrained model is the heuristic (prior_init: the model it starts from)
    best = heuristic_mean
    save_model(run_dir / "model_best.pt", model, batches=0, steps=0, eval_mean_reward=best)
    alpha0 = float(model.log_alpha.detach().exp())
    print(f"[uec_prior] {'prior_init' if cfg.prior_init else 'heuristic'} greedy eval {heuristic_mean:.2f}", flush=True)
    if method is not None:  # e.g. agents.uec.dagger.train_dagger (passed in: it imports this module)
        return method(model, optimiser, cfg, base, pool, rng, env_kwargs=kwargs, start=start, run_dir=run_dir,
                      evaluate=evaluate, heuristic_mean=heuristic_mean, seed=seed)
    if cfg.prior_method == "rollout_q":
        return _train_rollout_q(model, optimiser, cfg, base, pool, rng, env_kwargs=kwargs, start=start, steps=steps,
                                run_dir=run_dir, evaluate=evaluate, heuristic_mean=heuristic_mean)
    curve = CurveLog(run_dir, REINFORCE_CURVE, "decisions")
    curve.add(batch=0, decisions=0, seconds=time.perf_counter() - start, eval_mean=best, heuristic_mean=heuristic_mean,
              alpha=alpha0)
    decisions, batch, window = 0, 0, []
    model.train()
    while decisions < steps and time.perf_counter() - start < cfg.max_minutes * 60:
        batch += 1
        episode_seeds = rng.integers(0, 2**31 - 1, size=cfg.seeds_per_batch)
        groups = [base if not pool or rng.random() < cfg.fixed_instance_share else pool[rng.integers(len(pool))]
                  for _ in range(cfg.seeds_per_batch)]
        seeds = np.repeat(episode_seeds, cfg.samples).tolist()
        slots = [g for g in groups for _ in range(cfg.samples)]
        profit, (tokens, score, allowed), actions, index = rollouts(model, train_envs, slots, seeds, greedy=False,
                                                                    generator=generator)
        decisions += int(actions.numel())
        log_p = torch.log_softmax(model(tokens, score, allowed), dim=-1)
        loss, entropy = reinforce_loss(log_p, allowed, actions, index, profit, cfg.samples,
                                       entropy_coef=cfg.entropy_coef, normalize=cfg.normalize_advantage)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimiser.step()
        window.append(float(profit.mean()))
        if batch % cfg.eval_every == 0:
            mean = evaluate()
            elapsed = time.perf_counter() - start
            alpha = float(model.log_alpha.detach().exp())
            curve.add(batch=batch, decisions=decisions, seconds=elapsed, rollout_mean=float(np.mean(window)),
                      eval_mean=mean, heuristic_mean=heuristic_mean, alpha=alpha)
            print(f"[uec_prior] batch {batch} step {decisions} {elapsed:.0f}s rollout {np.mean(window):.2f} greedy "
                  f"eval {mean:.2f} (start {heuristic_mean:.2f}) alpha {alpha:.2f} entropy {entropy:.3f}",
                  flush=True)
            window = []
            if mean > best:
                best = mean
                save_model(run_dir / "model_best.pt", model, batches=batch, steps=decisions, eval_mean_reward=mean)
    curve.close()
    return save_model(run_dir / "model.pt", model, batches=batch, steps=decisions,
                      minutes=(time.perf_counter() - start) / 60, best_eval_mean_reward=float(best))


def _train_rollout_q(
    model: PriorNet, optimiser: torch.optim.Optimizer, cfg: Any, base: _Slot, pool: list[_Slot],
    rng: np.random.Generator, *, env_kwargs: dict[str, Any], start: float, steps: int, run_dir: Path, evaluate: Any,
    heuristic_mean: float,
) -> Path:
    """One (or ``q_rounds``) step(s) of approximate policy iteration: collect Q̂(s, ·) of the heuristic by
    rollouts (:func:`collect_action_values`) for ``collect_fraction`` of each round, then fit the policy to
    maximise E_π[Â] (:func:`q_policy_loss`) on all data so far for the rest of the round. One episode in ten
    is kept for validation; ``model.pt`` is the epoch with the best validation one-step gain
    mean_s Â(s, argmax π) (profit per decision over the heuristic's continuation, in the data only)."""

    env = UECEnv(**{**env_kwargs, "resample_instance": False})
    train_rows: list[tuple[np.ndarray, ...]] = []
    val_rows: list[tuple[np.ndarray, ...]] = []
    curve = CurveLog(run_dir, ROLLOUT_Q_CURVE, "decisions")
    decisions, episodes = 0, 0
    best_gain, best_state = 0.0, copy.deepcopy(model.state_dict())
    round_s = cfg.max_minutes * 60 / cfg.q_rounds
    for round_index in range(cfg.q_rounds):
        model.eval()
        collect_until = start + round_s * (round_index + cfg.collect_fraction)
        while time.perf_counter() < collect_until and decisions < steps:
            slot = base if not pool or rng.random() < cfg.fixed_instance_share else pool[rng.integers(len(pool))]
            rows, played = collect_action_values(model, env, slot, int(rng.integers(0, 2**31 - 1)), rng,
                                                 explore=cfg.explore, state_prob=cfg.state_prob)
            decisions += played
            (val_rows if episodes % 10 == 9 else train_rows).extend(rows)
            episodes += 1
        print(f"[uec_prior] round {round_index}: {episodes} episodes, {len(train_rows)} + {len(val_rows)} states "
              f"at {time.perf_counter() - start:.0f}s", flush=True)
        train_t, val_t = _stack(train_rows), _stack(val_rows)
        scale = float(train_t[3][train_t[2]].std()) + 1e-6
        model.train()
        epoch = 0
        train_until = start + round_s * (round_index + 1)
        while time.perf_counter() < train_until and train_t[0].shape[0]:
            epoch += 1
            order = torch.randperm(train_t[0].shape[0])
            for first in range(0, order.numel(), cfg.q_batch):
                idx = order[first : first + cfg.q_batch]
                logits = model(train_t[0][idx], train_t[1][idx], train_t[2][idx])
                loss = q_policy_loss(logits, train_t[2][idx], train_t[3][idx] / scale)
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                optimiser.step()
            gain = _greedy_gain(model, val_t)
            eval_mean = evaluate() if epoch % cfg.eval_every == 0 else float("nan")
            alpha = float(model.log_alpha.detach().exp())
            elapsed = time.perf_counter() - start
            curve.add(round=round_index, epoch=epoch, decisions=decisions, seconds=elapsed, states=train_t[0].shape[0],
                      val_gain=gain, eval_mean=eval_mean, heuristic_mean=heuristic_mean, alpha=alpha)
            print(f"[uec_prior] round {round_index} epoch {epoch} {elapsed:.0f}s val gain/decision {gain:+.4f} "
                  f"greedy eval {eval_mean:.2f} (start {heuristic_mean:.2f}) alpha {alpha:.2f}", flush=True)
            if gain > best_gain:
                best_gain, best_state = gain, copy.deepcopy(model.state_dict())
        model.load_state_dict(best_state)
    curve.close()
    model.eval()
    final = evaluate()
    print(f"[uec_prior] best val gain/decision {best_gain:+.4f}; greedy eval {final:.2f} (heuristic "
          f"{heuristic_mean:.2f})", flush=True)
    save_model(run_dir / "model_best.pt", model, episodes=episodes, steps=decisions, val_gain=best_gain,
               eval_mean_reward=final)
    return save_model(run_dir / "model.pt", model, episodes=episodes, steps=decisions, val_gain=best_gain,
                      minutes=(time.perf_counter() - start) / 60, eval_mean_reward=final)


def _stack(rows: list[tuple[np.ndarray, ...]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(tokens, score, allowed, advantage Q̂ − mean over allowed Q̂ (0 elsewhere)) tensors of collected rows."""
    if not rows:
        return torch.zeros(0, 1, 1), torch.zeros(0, 1, dtype=torch.float64), torch.zeros(0, 1, dtype=torch.bool), \
            torch.zeros(0, 1, dtype=torch.float64)
    tokens = torch.from_numpy(np.stack([r[0] for r in rows]))
    score = torch.from_numpy(np.stack([r[1] for r in rows]))
    allowed = torch.from_numpy(np.stack([r[2] for r in rows]))
    q = np.stack([r[3] for r in rows])
    mean = np.nanmean(q, axis=1, keepdims=True)
    advantage = torch.from_numpy(np.nan_to_num(q - mean, nan=0.0))
    return tokens, score, allowed, advantage


def _greedy_gain(model: PriorNet, data: tuple[torch.Tensor, ...]) -> float:
    """mean_s [Â(s, argmax π) − Â(s, heuristic's action)]: what the greedy policy gains per decision over the
    heuristic in the data (heuristic's action: argmax of the score, reject if no score is > 0)."""
    tokens, score, allowed, advantage = data
    if not tokens.shape[0]:
        return 0.0
    with torch.no_grad():
        chosen = model(tokens, score, allowed).argmax(dim=-1)
    heuristic = torch.where(allowed, score, torch.full_like(score, float("-inf"))).argmax(dim=-1)
    take = advantage.gather(1, chosen[:, None]) - advantage.gather(1, heuristic[:, None])
    return float(take.mean())
