"""A constructive CoRaiS dispatcher: a learned list scheduler, imitation of best-known dispatches plus POMO.

Why constructive. The paper's dispatcher (``agents.corais.model``) scores every request against every edge in
one shot, independently per request; R(pi) = max_j T_j is a makespan, so the good dispatches are the ones where
the requests *coordinate* (who fills which edge), which an independent per-request distribution cannot express:
its best of 1,000 samples costs 1.21x a 5 s search at (20, 10, 100). Here the requests are placed one after
another, largest input first (the order of ``offline.corais.greedy.list_greedy``), and at each placement the
network sees what the partial dispatch already holds.

Policy. For the request being placed and every region edge j, ``Rollouts.features`` describes what placing it on
j does: edge j's completion time before and after, the growth of the makespan, the slack the other edges keep,
whether it is local, how much work is still to come and the water level it implies (``Rollouts.water_level``),
everything divided by the instance's proven lower bound (``fluid_bound``) so that the numbers mean the same at every
scale. A shared MLP embeds each edge's features,
a mean/max pool over the edges gives the context, a second MLP gives the logit of j; a softmax over the Q edges is
the policy. It is equivariant to relabelling the edges and invariant to rigid motions of the plane (it reads
distances only through the cost terms), which is the symmetry augmentation POMO's authors add by hand; and it has
no parameter whose shape depends on N, Q or Z, so one network runs at every scale.

Training (``agents.corais.pomo_train``): (1) imitation: the best-known dispatch of each training instance (our tuned ILS with a
fixed kick budget) is replayed in the list order; the network learns, by cross-entropy, the edge the search put
each request on, given the partial dispatch before it (teacher forcing). (2) POMO (Kwon et al. 2020): per instance,
P rollouts whose first (largest) request, and when P > Q the second, are forced onto different edges, the rest
sampled; REINFORCE with the P rollouts' mean cost as shared baseline, the advantage divided by it (scale-free).

Inference (``PomoDispatcher``): P multi-start greedy rollouts, run as one batch, and the cheapest of them: a forward
pass per placement and no search around it. P = min(``starts``, Q^2, ``budget`` // (Q Z)) (``starts_for``): a fixed
budget of edge evaluations per decision, so P = 100 at (20, 10, 100) and P shrinks to 1 at (200, 100, 2000).
``greedy_rollouts`` runs them with numpy bookkeeping (the same dispatches as ``rollout``, faster). It reads the
current batch's cost tables from ``env.unwrapped.instance`` (the present decision's data, as ``corais_1k`` does),
nothing later.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from envs.corais.dynamics import _edge_times, dispatch_cost
from envs.corais.types import Instance

#: Per-edge features of one placement (``Rollouts.features``).
STEP_FEATURES = 17


@dataclass
class PomoNetConfig:
    """Sizes of :class:`ListSchedulerNet`."""

    hidden: int = 64
    layers: int = 2  # of the per-edge embedding MLP

    def to_dict(self) -> dict:
        return asdict(self)


class ListSchedulerNet(nn.Module):
    """Logits (..., Q) of the edge for the request being placed, from its per-edge features (..., Q, F)."""

    def __init__(self, cfg: PomoNetConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or PomoNetConfig()
        h = self.cfg.hidden
        layers: list[nn.Module] = [nn.Linear(STEP_FEATURES, h), nn.ReLU(inplace=True)]
        for _ in range(self.cfg.layers - 1):
            layers += [nn.Linear(h, h), nn.ReLU(inplace=True)]
        self.embed = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Linear(3 * h, h), nn.ReLU(inplace=True), nn.Linear(h, 1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        e = features
        for layer in self.embed[::2]:  # the Linear layers (functional calls: a decision makes Z of these passes)
            e = torch.relu_(nn.functional.linear(e, layer.weight, layer.bias))  # (..., Q, h)
        h = e.shape[-1]
        ctx = torch.cat([e.mean(dim=-2), e.amax(dim=-2)], dim=-1)  # (..., 2h): the same for every edge
        first, last = self.head[0], self.head[2]
        # head[0] on [e_j, ctx] without repeating ctx per edge: its ctx columns are applied once per rollout
        hidden = torch.addmm((ctx @ first.weight[:, h:].T + first.bias).unsqueeze(-2).expand(*e.shape[:-1], h)
                             .reshape(-1, h), e.reshape(-1, h), first.weight[:, :h].T).view(e.shape)
        return nn.functional.linear(torch.relu_(hidden), last.weight, last.bias).squeeze(-1)


class Batch:
    """B instances of one scale as tensors, with what every placement needs precomputed once.

    ``order`` (B, Z): the placement order (decreasing input size, ``list_greedy``'s); ``scale`` (B,): the
    instance's proven lower bound, the unit of every feature; ``rest`` (B, Z): the cheapest compute of the
    requests still to place after each position, divided by Q * scale.
    """

    def __init__(self, instances: list[Instance]) -> None:
        from offline.corais.greedy import fluid_bound

        tabs = [i.tables for i in instances]
        f64 = torch.float64
        self.cmp = torch.as_tensor(np.stack([t.cmp for t in tabs]), dtype=f64)
        self.trn = torch.as_tensor(np.stack([t.trn for t in tabs]), dtype=f64)
        self.res = torch.as_tensor(np.stack([t.res for t in tabs]), dtype=f64)
        self.src = torch.as_tensor(np.stack([t.src for t in tabs]), dtype=torch.int64)
        self.workload = torch.as_tensor(np.stack([t.workload for t in tabs]), dtype=f64)
        self.order = torch.as_tensor(np.stack([np.argsort(-i.req_d, kind="stable") for i in instances]))
        self.scale = torch.as_tensor([max(fluid_bound(i), 1e-9) for i in instances], dtype=f64)
        b, z, q = self.cmp.shape
        self.shape = (b, z, q)
        rows = torch.arange(b).unsqueeze(1)
        cheapest = self.cmp.amin(dim=-1)[rows, self.order]  # (B, Z) in placement order
        after = cheapest.flip(-1).cumsum(-1).flip(-1) - cheapest  # work still to place after position t
        self.rest = after / (q * self.scale.unsqueeze(1))
        # the tables in placement order, so that placement t reads row t (no gather per step)
        self.cmp_o, self.trn_o, self.res_o = (x[rows, self.order] for x in (self.cmp, self.trn, self.res))
        self.loc_o = torch.arange(q) == self.src[rows, self.order].unsqueeze(-1)  # (B, Z, Q): edge j is i's source
        self.local_o = torch.where(self.loc_o, self.cmp_o, 0.0)  # its compute if local to edge j, else 0
        self.in_o = torch.where(self.loc_o, 0.0, self.cmp_o)  # its compute if transferred in, else 0
        self.inv_scale = (1.0 / self.scale).view(b, 1, 1)
        self.work = self.cmp_o.flip(1).cumsum(1).flip(1)  # (B, Z, Q): compute on edge j of the requests from t on


class Rollouts:
    """P partial dispatches per instance of a :class:`Batch`: per-edge aggregates (B, P, Q), as ``list_greedy``."""

    def __init__(self, batch: Batch, p: int) -> None:
        b, z, q = batch.shape
        self.batch, self.p = batch, p
        zeros = torch.zeros(b, p, q, dtype=torch.float64)
        self.local, self.inc, self.trn, self.res = zeros.clone(), zeros.clone(), zeros.clone(), zeros.clone()
        self.times = _edge_times(torch, batch.workload.unsqueeze(1), zeros, zeros, zeros, zeros)
        self.actions = torch.zeros(b, p, z, dtype=torch.int64)

    def candidates(self, t: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The placement-``t`` request's terms (B, 1, Q) and every edge's time if it went there (B, P, Q)."""
        bt = self.batch
        c, tr, rs, loc = (x[:, t].unsqueeze(1) for x in (bt.cmp_o, bt.trn_o, bt.res_o, bt.loc_o))
        cand = _edge_times(torch, bt.workload.unsqueeze(1), self.local + bt.local_o[:, t].unsqueeze(1),
                           self.inc + bt.in_o[:, t].unsqueeze(1), torch.maximum(self.trn, tr),
                           torch.maximum(self.res, rs))
        return cand, c, tr, rs, loc

    def place(self, t: int, edge: torch.Tensor, cand: torch.Tensor, c: torch.Tensor, tr: torch.Tensor,
              rs: torch.Tensor, loc: torch.Tensor) -> None:
        """Put the placement-``t`` request on ``edge`` (B, P) in every rollout."""
        j = edge.unsqueeze(-1)
        hot = torch.zeros_like(self.times, dtype=torch.bool).scatter_(-1, j, True)
        self.local = self.local + torch.where(hot & loc, c, 0.0)
        self.inc = self.inc + torch.where(hot & ~loc, c, 0.0)
        self.trn = torch.where(hot, torch.maximum(self.trn, tr), self.trn)
        self.res = torch.where(hot, torch.maximum(self.res, rs), self.res)
        self.times = torch.where(hot, cand, self.times)
        i = self.batch.order[:, t].view(-1, 1, 1).expand(-1, self.p, 1)
        self.actions.scatter_(2, i, j)

    def water_level(self, t: int) -> torch.Tensor:
        """(B, P, 1) the level L the edges would all finish at if the requests from ``t`` on were divisible:
        sum_j (L - T_j)^+ / W_j = 1, W_j = their compute on edge j alone (water filling; the minimum over the
        active sets of the level each implies)."""
        rate = 1.0 / self.batch.work[:, t].clamp_min(1e-12).unsqueeze(1)  # (B, 1, Q)
        times, idx = self.times.sort(dim=-1)
        r = rate.expand_as(self.times).gather(-1, idx)
        level = (1.0 + (times * r).cumsum(-1)) / r.cumsum(-1)
        return level.amin(dim=-1, keepdim=True)

    def features(self, t: int, cand: torch.Tensor, c: torch.Tensor, loc: torch.Tensor) -> torch.Tensor:
        """(B, P, Q, STEP_FEATURES) float32: what placing request ``t`` on each edge does (module docstring)."""
        bt = self.batch
        b, z, q = bt.shape
        s = bt.scale.view(b, 1, 1)
        now = self.times.amax(dim=-1, keepdim=True)
        after = torch.maximum(cand, now)
        best = cand.amin(dim=-1, keepdim=True)
        slack = (now - self.times).clamp_min(0.0).sum(dim=-1, keepdim=True) / (q * s)
        rest = bt.rest[:, t].view(b, 1, 1)
        level = self.water_level(t)
        c = c.expand_as(cand)
        cols = [
            cand / s, self.times / s, (cand - self.times) / s, (after - now) / s, (now - cand) / s,
            (cand - best) / s, c / s, c / c.mean(dim=-1, keepdim=True), loc.expand_as(cand).to(cand.dtype),
            now.expand_as(cand) / s, rest.expand_as(cand), slack.expand_as(cand),
            (rest - slack).expand_as(cand), torch.full_like(cand, t / max(z - 1, 1)),
            level.expand_as(cand) / s, (cand - level) / s, (self.times - level) / s,
        ]
        return torch.stack(cols, dim=-1).to(torch.float32)


def rollout(net: ListSchedulerNet, batch: Batch, p: int, *, sample: bool, forced_first: bool = True,
            teacher: torch.Tensor | None = None, generator: torch.Generator | None = None,
            temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Place every request of every instance in P rollouts; returns (actions (B, P, Z), summed log-probability
    of the rollouts' own choices (B, P), teacher cross-entropy (B, P) or zeros).

    ``forced_first``: rollout k puts the first (largest) request on edge k mod Q (POMO's multiple starts) and, when
    P > Q, the second on edge (k // Q) mod Q;
    ``sample``: draw the other placements from the policy at ``temperature`` (else argmax); ``teacher`` (B, Z) dispatches: replay
    them instead (teacher forcing) and accumulate the cross-entropy of their choices.
    """
    b, z, q = batch.shape
    roll = Rollouts(batch, p)
    logp_sum = torch.zeros(b, p)
    ce_sum = torch.zeros(b, p)
    rows = torch.arange(b)
    k = torch.arange(p)
    forced = [(k % q).unsqueeze(0).expand(b, p)] if forced_first else []
    if forced_first and p > q and z > 1:  # more starts than edges: the second request's edge varies too
        forced.append(((k // q) % q).unsqueeze(0).expand(b, p))
    for t in range(z):
        cand, c, tr, rs, loc = roll.candidates(t)
        if t < len(forced) and teacher is None:  # a forced start: no network pass needed
            roll.place(t, forced[t], cand, c, tr, rs, loc)
            continue
        logits = net(roll.features(t, cand, c, loc))
        if not sample and teacher is None and not torch.is_grad_enabled():  # greedy inference: argmax of the logits
            roll.place(t, logits.argmax(dim=-1), cand, c, tr, rs, loc)
            continue
        logp = torch.log_softmax(logits, dim=-1)
        if teacher is not None:
            edge = teacher[rows, batch.order[:, t]].unsqueeze(1).expand(b, p)
            ce_sum = ce_sum - logp.gather(-1, edge.unsqueeze(-1)).squeeze(-1)
        elif t < len(forced):
            edge = forced[t]
        elif sample:
            probs = (logp.detach() / temperature).softmax(dim=-1) if temperature != 1.0 else logp.detach().exp()
            edge = torch.multinomial(probs.reshape(-1, q), 1, generator=generator).view(b, p)
        else:
            edge = logp.detach().argmax(dim=-1)
        if teacher is None and t >= len(forced):
            logp_sum = logp_sum + logp.gather(-1, edge.unsqueeze(-1)).squeeze(-1)
        roll.place(t, edge, cand, c, tr, rs, loc)
    return roll.actions, logp_sum, ce_sum


def costs(batch: Batch, actions: torch.Tensor) -> torch.Tensor:
    """R(pi) (B, P) of each rollout, by the one cost model (``envs.corais.dynamics.response_times_torch``)."""
    from envs.corais.dynamics import response_times_torch

    return response_times_torch(batch.cmp, batch.trn, batch.res, batch.src, batch.workload, actions)[0]


#: Default of ``PomoDispatcher``: edge evaluations per decision (P rollouts x Q edges x Z placements).
DEFAULT_BUDGET = 100_000


def starts_for(q: int, z: int, starts: int, budget: int) -> int:
    """The number of multi-start rollouts: at most ``starts``, Q^2 distinct starts and ``budget`` // (Q Z); >= 1."""
    return max(1, min(int(starts), q * q, int(budget) // max(q * z, 1)))


def greedy_rollouts(net: ListSchedulerNet, batch: Batch, p: int) -> np.ndarray:
    """(P, Z) the multi-start greedy rollouts of ``rollout(net, batch, p, sample=False)`` for a batch of one instance,
    the same dispatches (a test), computed for a decision: the aggregates and features in numpy (an op on a (P, Q)
    array costs ~1 us there against ~5 us in torch, and a decision makes Z steps of ~80 of them), the network in
    torch. About 2.5x faster at (20, 10, 100)."""
    _, z, q = batch.shape
    first = lambda x: x[0].numpy()  # noqa: E731
    local_o, in_o, trn_o, res_o = (first(x) for x in (batch.local_o, batch.in_o, batch.trn_o, batch.res_o))
    cmp_o, loc_o, work, rest = first(batch.cmp_o), first(batch.loc_o), first(batch.work), first(batch.rest)
    workload, s, order = first(batch.workload), float(batch.scale[0]), first(batch.order)
    zeros = np.zeros((p, q))
    local, inc, trn, res = zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy()
    times = np.broadcast_to(_edge_times(np, workload, zeros, zeros, zeros, zeros), (p, q)).copy()
    k = np.arange(p)
    forced = [k % q] if p > 1 else []
    if p > q and z > 1 and p > 1:
        forced.append((k // q) % q)
    rows = np.arange(p)
    actions = np.zeros((p, z), dtype=np.int64)
    f = np.empty((p, q, STEP_FEATURES))
    for t in range(z):
        c, tr, rs = cmp_o[t], trn_o[t], res_o[t]
        cand = _edge_times(np, workload, local + local_o[t], inc + in_o[t], np.maximum(trn, tr), np.maximum(res, rs))
        if t < len(forced):
            edge = forced[t]
        else:  # the columns of Rollouts.features, in its order and arithmetic
            now = times.max(axis=-1, keepdims=True)
            rate = 1.0 / np.maximum(work[t], 1e-12)
            idx = np.argsort(times, axis=-1, kind="stable")
            r = rate[idx]
            level = ((1.0 + np.cumsum(np.take_along_axis(times, idx, -1) * r, -1)) / np.cumsum(r, -1)).min(
                -1, keepdims=True)
            slack = np.maximum(now - times, 0.0).sum(-1, keepdims=True) / (q * s)
            f[..., 0], f[..., 1], f[..., 2] = cand / s, times / s, (cand - times) / s
            f[..., 3], f[..., 4] = (np.maximum(cand, now) - now) / s, (now - cand) / s
            f[..., 5], f[..., 6], f[..., 7] = (cand - cand.min(-1, keepdims=True)) / s, c / s, c / c.mean()
            f[..., 8], f[..., 9], f[..., 10], f[..., 11] = loc_o[t], now / s, rest[t], slack
            f[..., 12], f[..., 13], f[..., 14] = rest[t] - slack, t / max(z - 1, 1), level / s
            f[..., 15], f[..., 16] = (cand - level) / s, (times - level) / s
            with torch.inference_mode():
                edge = net(torch.from_numpy(f.astype(np.float32))).argmax(dim=-1).numpy()
        local[rows, edge] += local_o[t][edge]
        inc[rows, edge] += in_o[t][edge]
        trn[rows, edge] = np.maximum(trn[rows, edge], tr[edge])
        res[rows, edge] = np.maximum(res[rows, edge], rs[edge])
        times[rows, edge] = cand[rows, edge]
        actions[:, order[t]] = edge
    return actions


def dispatch(net: ListSchedulerNet, instance: Instance, starts: int = 100, budget: int = DEFAULT_BUDGET) -> np.ndarray:
    """The cheapest of the ``starts_for`` multi-start greedy rollouts on ``instance``: (Z,) int64."""
    batch = Batch([instance])
    p = starts_for(batch.shape[2], batch.shape[1], starts, budget)
    acts = greedy_rollouts(net, batch, p)
    return acts[int(np.argmin(dispatch_cost(instance, acts)))].astype(np.int64)


class PomoDispatcher:
    """The learned list scheduler as a Policy (``offline.protocol``): multi-start greedy rollouts (``starts_for``),
    the cheapest. ``threads`` sets torch's intra-op threads for the process (1: the fastest for this small net)."""

    def __init__(self, net: ListSchedulerNet, starts: int = 100, budget: int = DEFAULT_BUDGET, name: str | None = None,
                 threads: int | None = 1):
        for key, value in (("starts", starts), ("budget", budget)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key}={value!r} is invalid: expected an integer >= 1 (multi-start rollouts; "
                                 "edge evaluations per decision)")
        self.net = net.eval()
        self.starts, self.budget = starts, budget
        self.name = name or "corais_pomo"
        self._env: Any = None
        if threads:
            torch.set_num_threads(int(threads))

    def reset(self, env: Any, seed: int | None = None) -> None:
        self._env = env

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        if self._env is None:
            raise RuntimeError("PomoDispatcher.reset(env) must be called before act")
        return dispatch(self.net, self._env.unwrapped.instance, self.starts, self.budget)


def scenario_instances(env_id: str, scale: tuple[int, int, int], seeds: np.ndarray) -> list[Instance]:
    """The instances ``env_id``'s env draws at ``scale`` for instance seeds ``seeds`` (``generate_seeded``)."""
    from agents.corais.trainer import training_scenario
    from envs.corais.generator import generate_seeded

    batch = generate_seeded(training_scenario({"id": env_id, "kwargs": {"scale": list(scale)}}),
                            np.asarray(seeds, dtype=np.int64))
    return [batch.instance(k) for k in range(len(seeds))]


def best_known(instance: Instance, kicks: int, seed: int) -> np.ndarray:
    """The teacher: our tuned ILS (``offline.corais.search``, tuned.yaml's parameters) stopped after ``kicks``
    kicks, deterministic given ``seed``."""
    from offline.corais.policies import ILS_PARAMS
    from offline.corais.search import iterated_local_search

    return iterated_local_search(instance, time_limit=None, max_iterations=int(kicks), seed=int(seed),
                                 **ILS_PARAMS).action.astype(np.int64)
