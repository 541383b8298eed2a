"""Retraining controllers of OINC-v0: how much of each edge retraining gets, where jobs go, which runs.

A controller is an env component chosen by config (``OINCEnv(retraining=...)``), not the agent. Per
slot t the env calls

1. ``begin_slot(t, new_jobs, data_bits, cycles)`` after the slot's tasks and jobs are known; it returns
   p^r (J,), the retraining share of each edge; the agent observes f_j^t = 1 - p_j^r;
2. (the agent schedules inference within f_j^t)
3. ``dispatch(t)`` places waiting jobs on edges, ``running_edges()`` tells which edges would run
   retraining (the candidates of the pause rule when ``pauses_for_inference``);
4. ``process(t, paused)`` runs the selected job of every edge for one slot at share p_j^r (0 if paused).

Controllers (``CONTROLLERS``):

* ``aret`` -- OINC: Alg. 2 reservation + Alg. 5 dispatch/sequencing + the pause-for-inference rule.
* ``kalmia`` -- Kalmia (INFOCOM'22) idea: inference urgent, retraining non-urgent; every slot each edge
  holding jobs keeps for inference only the current need, retraining gets the rest and is pre-empted
  when inference needs more; earliest-available dispatch, FIFO.
* ``ekya`` -- Ekya (NSDI'22) idea: a retraining job treated like one more inference task, i.e. a fixed
  share 1 / (1 + I/J) of its edge, set once and never adapted, no pre-emption; least-jobs dispatch, FIFO.
* ``dedas`` -- Dedas (INFOCOM'19) idea: greedy deadline-aware dispatch (the edge keeping the most
  deadlines met, then the earliest completion), EDF on each edge; resources split by the weights.
* ``zhang`` -- Zhang et al. (MobiHoc'20) idea: jobs collected into batches (every 10 s), each given a
  weight 1/(D_k - t) at batch time, dispatched heaviest first to the edge where it would finish first,
  processed by largest weight per remaining workload; resources split by the weights.

The baselines' papers are not available here; each implements the idea the OINC paper describes (Sec.
V-A) and says so. "Split by the weights" is the paper's ablation rule: each edge holding jobs gives
beta / (alpha + beta) = 1/2 to retraining.

Every controller takes ``retraining_share`` in (0, 1): the cap of the share for ``aret`` and ``kalmia``
(default 0.9), the fixed share for ``ekya`` (default None: 1 / (1 + I/J)), ``dedas`` and ``zhang``
(default 0.5). The defaults are the behaviour above; set one value for all to compare at equal compute.

No controller writes a formula of its own: remaining times h_kj (eq. 8, ``dyn.remaining_time_s``; at share 1
for "(queued work + job) / capacity"), weights l_k, densities, eq. (9) (``dyn.dispatch_costs``), eq. (2)
and Alg. 2's latency estimate all come from ``envs.oinc.dynamics``.
"""

from __future__ import annotations

import numpy as np

from envs.common.validation import check_choice, check_in_range
from envs.oinc import dynamics as dyn
from envs.oinc.types import Instance, Jobs

#: Weight ratios alpha/beta searched by Alg. 2 (B3).
RATIO_SET = (1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 8.0)
#: Largest retraining share of an edge (every edge keeps >= 10 % for inference, B2): the default cap of
#: ``aret`` and ``kalmia``.
MAX_RETRAIN_SHARE = 0.9
#: Fixed retraining share of ``dedas`` and ``zhang``: the paper's ablation rule beta / (alpha + beta) with
#: alpha = beta = 1.
WEIGHT_SPLIT_SHARE = 0.5


def check_retraining_share(value: float) -> float:
    """ValueError naming ``retraining_share`` unless it is a number in (0, 1) (an edge never gives all of
    itself to retraining, and a zero share would never finish a job)."""
    check_in_range("retraining_share", value, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    return float(value)


class RetrainingController:
    """Common state and the per-slot processing; subclasses choose shares, dispatch and sequencing."""

    name = "base"
    pauses_for_inference = False

    def __init__(self, retraining_share: float | None = None) -> None:
        """``retraining_share`` is the controller's explicit share knob (see each subclass for whether it is
        a cap or a fixed share), so controllers can be compared at equal compute; None only where a
        subclass documents a derived default."""
        self.retraining_share = None if retraining_share is None else check_retraining_share(retraining_share)
        self.share = np.zeros(0)

    # -------------------------------------------------------------- lifecycle
    def reset(self, instance: Instance, jobs: Jobs) -> None:
        self.instance = instance
        self.jobs = jobs
        self.cpu_hz = instance.cpu_hz
        self.num_edges = instance.num_edges
        self.share = np.zeros(self.num_edges)

    def begin_slot(self, t: int, new_jobs: np.ndarray, data_bits: np.ndarray | None, cycles: np.ndarray | None) -> np.ndarray:
        """Set and return p^r (J,) for slot t. ``data_bits``/``cycles`` are None in the drain phase."""
        return self.share

    def dispatch(self, t: int) -> None:
        """Place waiting jobs (edge == -1) on edges."""

    # -------------------------------------------------------------- helpers
    def _waiting(self) -> np.ndarray:
        n = self.jobs.count
        return np.flatnonzero((self.jobs.edge[:n] < 0) & np.isnan(self.jobs.finish_s[:n]))

    def _queued(self) -> np.ndarray:
        n = self.jobs.count
        return np.flatnonzero((self.jobs.edge[:n] >= 0) & np.isnan(self.jobs.finish_s[:n]))

    def edges_with_jobs(self) -> np.ndarray:
        """(J,) bool: edges holding at least one unfinished dispatched job."""
        held = np.zeros(self.num_edges, dtype=bool)
        held[self.jobs.edge[self._queued()]] = True
        return held

    def running_edges(self) -> np.ndarray:
        """(J,) bool: edges that would run retraining this slot (a job and a positive share)."""
        return self.edges_with_jobs() & (self.share > 0)

    def priority(self, idx: np.ndarray, t: int) -> np.ndarray:
        """Sequencing key of queued jobs ``idx`` (larger runs first). Default FIFO."""
        return -self.jobs.arrival_s[idx]

    def selected_jobs(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(edges, jobs): the job each edge processes in slot t (one per edge, largest priority)."""
        idx = self._queued()
        if idx.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        edge = self.jobs.edge[idx]
        key = self.priority(idx, t)
        order = np.lexsort((-key, edge))
        first = np.ones(order.size, dtype=bool)
        first[1:] = edge[order][1:] != edge[order][:-1]
        chosen = idx[order[first]]
        return self.jobs.edge[chosen], chosen

    def process(self, t: int, paused: np.ndarray) -> np.ndarray:
        """Run one slot of retraining; returns the indices of jobs finished in it."""
        edges, chosen = self.selected_jobs(t)
        if chosen.size == 0:
            self._release_idle_edges()
            return chosen
        rate = self.share[edges] * self.cpu_hz[edges] * ~paused[edges]
        after, done, finish = dyn.run_slot(self.jobs.remaining[chosen], rate, t * dyn.SLOT_S)
        self.jobs.remaining[chosen] = after
        finished = chosen[done]
        self.jobs.finish_s[finished] = finish[done]
        self._release_idle_edges()
        return finished

    def _release_idle_edges(self) -> None:
        """p_j^r returns to 0 when edge j has no job left (Alg. 2's note)."""
        self.share[~self.edges_with_jobs()] = 0.0


class OINCRetraining(RetrainingController):
    """OINC's retraining side: Alg. 2 reservation, Alg. 5 dispatch and sequencing, pause for inference.

    Reservation (Alg. 2, with B1-B4): when jobs wait and edges without jobs exist, take
    num = min(#waiting jobs, #edges without jobs) of the strongest such edges and give them
    p^r = beta (sum_j f_j (1 - p_j) - res_min) / ((alpha + beta) num f_j'), clipped to [0, 0.9], where
    res_min = max(current need, 0.9-quantile of the last ``history`` needs) and the ratio alpha/beta is
    the one of ``RATIO_SET`` minimising the estimated tau / tau_norm + h / b_norm (unit weights), where
    tau assumes I/J tasks per edge sharing f_j (1 - p_j) and the band equally, and h is the mean waiting
    job's w / (p_j' f_j') (B3, B4).
    Dispatch: each waiting job goes to the edge of least C_kj (eq. 9), among edges with p^r > 0.
    Sequencing: each edge runs its job of largest density l_k(t) / h_kj(t).
    ``retraining_share`` is the clip bound of eq. (2), the largest share an edge gives retraining
    (default ``MAX_RETRAIN_SHARE`` = 0.9).
    """

    name = "aret"
    pauses_for_inference = True

    def __init__(
        self,
        history: int = 10,
        quantile: float = 0.9,
        tau_norm_s: float = 0.25,
        b_norm_s: float = 100.0,
        retraining_share: float = MAX_RETRAIN_SHARE,
    ) -> None:
        super().__init__(retraining_share)
        self.history_len = history
        self.quantile = quantile
        self.tau_norm_s = tau_norm_s
        self.b_norm_s = b_norm_s
        self.last_ratio = float("nan")

    def reset(self, instance: Instance, jobs: Jobs) -> None:
        super().reset(instance, jobs)
        self.need_history = np.zeros(self.history_len + 1)  # the last W needs and the current one
        self.need_count = 0
        self.need_now = 0.0
        self.last_ratio = float("nan")

    def res_min_hz(self) -> float:
        """res_min (B1): the compute meeting all current SLOs, at least the quantile of the recent needs."""
        filled = min(self.need_count - 1, self.history_len)
        if filled <= 0:
            return self.need_now
        size = self.need_history.size
        past = self.need_history[(self.need_count - 1 - np.arange(1, filled + 1)) % size]
        return max(self.need_now, float(np.quantile(past, self.quantile)))

    def _record_need(self, data_bits: np.ndarray | None, cycles: np.ndarray | None) -> None:
        if data_bits is None or cycles is None:
            self.need_now = 0.0
            return
        self._upload = dyn.equal_share_upload_s(data_bits, self.instance.full_rate_bps, self.num_edges)
        self.need_now = dyn.inference_need_hz(cycles, self.instance.slo_s, self._upload)
        self.need_history[self.need_count % self.need_history.size] = self.need_now
        self.need_count += 1

    def begin_slot(self, t: int, new_jobs: np.ndarray, data_bits: np.ndarray | None, cycles: np.ndarray | None) -> np.ndarray:
        self._record_need(data_bits, cycles)
        waiting = self._waiting()
        if waiting.size == 0:
            return self.share
        free_edges = np.flatnonzero(~self.edges_with_jobs() & (self.share == 0))
        if free_edges.size:
            num = min(waiting.size, free_edges.size)
            chosen = free_edges[np.argsort(-self.cpu_hz[free_edges], kind="stable")[:num]]
            self.share[chosen] = self._reserve(chosen, self.res_min_hz(), waiting, data_bits, cycles)
        return self.share

    def _reserve(
        self,
        chosen: np.ndarray,
        res_min: float,
        waiting: np.ndarray,
        data_bits: np.ndarray | None,
        cycles: np.ndarray | None,
    ) -> np.ndarray:
        """Eq. (2) for every ratio of ``RATIO_SET`` at once; keep the ratio of least estimated cost."""
        free_hz = float(np.sum(self.cpu_hz * (1.0 - self.share)))
        cpu = self.cpu_hz[chosen]
        ratios = np.asarray(RATIO_SET)[:, None]
        cand = np.clip(
            dyn.reservation_share(free_hz, res_min, ratios, 1.0, chosen.size, cpu[None, :]), 0.0, self.retraining_share
        )
        usable = cand.max(axis=1) > 0
        if not usable.any():
            self.last_ratio = float("nan")
            return np.zeros(chosen.size)
        if data_bits is not None and cycles is not None:
            shares = np.repeat(self.share[None, :], len(RATIO_SET), axis=0)
            shares[:, chosen] = cand
            tau = dyn.equal_split_latency_s(self._upload, cycles, self.cpu_hz * (1.0 - shares))
        else:
            tau = np.zeros(len(RATIO_SET))
        mean_work = float(self.jobs.remaining[waiting].mean())
        h = dyn.remaining_time_s(mean_work, cand, cpu[None, :]).mean(axis=1)
        cost = np.where(usable, tau / self.tau_norm_s + h / self.b_norm_s, np.inf)
        best = int(np.argmin(cost))
        self.last_ratio = float(RATIO_SET[best])
        return cand[best]

    def dispatch_costs(self, k: int, t: int) -> np.ndarray:
        """C_kj(t) of eq. (9) for every edge j (inf where p_j^r = 0)."""
        now = t * dyn.SLOT_S
        l_new = float(dyn.job_weight(self.jobs.deadline_s[k], now))
        h_new = dyn.remaining_time_s(self.jobs.remaining[k], self.share, self.cpu_hz)
        q = self._queued()
        e = self.jobs.edge[q]
        l_q = dyn.job_weight(self.jobs.deadline_s[q], now)
        h_q = dyn.remaining_time_s(self.jobs.remaining[q], self.share[e], self.cpu_hz[e])
        return dyn.dispatch_costs(l_new, h_new, e, l_q, h_q)

    def dispatch(self, t: int) -> None:
        for k in self._waiting():
            costs = self.dispatch_costs(int(k), t)
            if np.isfinite(costs).any():
                self.jobs.edge[k] = int(np.argmin(costs))

    def priority(self, idx: np.ndarray, t: int) -> np.ndarray:
        e = self.jobs.edge[idx]
        l_k = dyn.job_weight(self.jobs.deadline_s[idx], t * dyn.SLOT_S)
        h = dyn.remaining_time_s(self.jobs.remaining[idx], np.maximum(self.share[e], 1e-12), self.cpu_hz[e])
        return dyn.job_density(l_k, np.maximum(h, 1e-12))


class KalmiaRetraining(RetrainingController):
    """Kalmia (INFOCOM'22) as the OINC paper describes it; the Kalmia paper is not reproduced here.

    Inference tasks are urgent, retraining jobs non-urgent. Every slot each edge holding jobs keeps the
    current inference need (sum_i c_i / (SLO_i - upload_i), no history margin) in proportion to its
    capacity and gives the rest to retraining (clipped to [0, 0.9]); retraining is pre-empted on an
    edge whenever inference there needs more (the pause rule). Jobs go to the edge that becomes free
    earliest ((queued work + the job) / capacity), FIFO on each edge. ``retraining_share`` is the cap of the
    leftover share (default ``MAX_RETRAIN_SHARE`` = 0.9, as A_ret).
    """

    name = "kalmia"
    pauses_for_inference = True

    def __init__(self, retraining_share: float = MAX_RETRAIN_SHARE) -> None:
        super().__init__(retraining_share)

    def begin_slot(self, t: int, new_jobs: np.ndarray, data_bits: np.ndarray | None, cycles: np.ndarray | None) -> np.ndarray:
        need = 0.0
        if data_bits is not None and cycles is not None:
            upload = dyn.equal_share_upload_s(data_bits, self.instance.full_rate_bps, self.num_edges)
            need = dyn.inference_need_hz(cycles, self.instance.slo_s, upload)
        self.leftover = float(np.clip(1.0 - need / self.cpu_hz.sum(), 0.0, self.retraining_share))
        self.dispatch(t)
        self.share = np.where(self.edges_with_jobs(), self.leftover, 0.0)
        return self.share

    def dispatch(self, t: int) -> None:
        q = self._queued()
        load = np.bincount(self.jobs.edge[q], weights=self.jobs.remaining[q], minlength=self.num_edges)
        for k in self._waiting():
            j = int(np.argmin(dyn.remaining_time_s(load + self.jobs.remaining[k], 1.0, self.cpu_hz)))
            self.jobs.edge[k] = j
            load[j] += self.jobs.remaining[k]


class EkyaRetraining(RetrainingController):
    """Ekya (NSDI'22) as the OINC paper describes it; Ekya's thief scheduler is not reproduced here.

    Inference tasks and retraining jobs are scheduled alike: a job is one more task of its edge and gets
    the share an average task gets, 1 / (1 + I/J), fixed once and never adapted (no pre-emption). Jobs go
    to the edge with the fewest jobs (ties: the strongest), FIFO on each edge. ``retraining_share`` fixes
    that share explicitly; None (default) derives it from the instance as above.
    """

    name = "ekya"

    def __init__(self, retraining_share: float | None = None) -> None:
        super().__init__(retraining_share)

    def reset(self, instance: Instance, jobs: Jobs) -> None:
        super().reset(instance, jobs)
        if self.retraining_share is None:
            self.fixed_share = 1.0 / (1.0 + instance.num_devices / instance.num_edges)
        else:
            self.fixed_share = self.retraining_share

    def begin_slot(self, t: int, new_jobs: np.ndarray, data_bits: np.ndarray | None, cycles: np.ndarray | None) -> np.ndarray:
        self.dispatch(t)
        self.share = np.where(self.edges_with_jobs(), self.fixed_share, 0.0)
        return self.share

    def dispatch(self, t: int) -> None:
        q = self._queued()
        count = np.bincount(self.jobs.edge[q], minlength=self.num_edges).astype(float)
        for k in self._waiting():
            j = int(np.lexsort((-self.cpu_hz, count))[0])
            self.jobs.edge[k] = j
            count[j] += 1


class WeightSplitRetraining(RetrainingController):
    """Shares by the paper's ablation rule: each edge holding jobs gives ``retraining_share`` to retraining
    (default beta / (alpha + beta) = 1/2 with alpha = beta = 1)."""

    def __init__(self, retraining_share: float = WEIGHT_SPLIT_SHARE) -> None:
        super().__init__(retraining_share)

    @property
    def split(self) -> float:
        """The fixed share of every edge holding jobs (``retraining_share``)."""
        return float(self.retraining_share)  # type: ignore[arg-type]

    def begin_slot(self, t: int, new_jobs: np.ndarray, data_bits: np.ndarray | None, cycles: np.ndarray | None) -> np.ndarray:
        self.dispatch(t)
        self.share = np.where(self.edges_with_jobs(), self.split, 0.0)
        return self.share


class DedasRetraining(WeightSplitRetraining):
    """Dedas (INFOCOM'19) as the OINC paper describes it ("dispatches and schedules jobs greedily to
    satisfy deadlines as much as possible"); Dedas' bandwidth model is not reproduced here.

    Each new job goes to the edge where, inserted in earliest-deadline-first order, the most deadlines
    of that edge's jobs are met, ties broken by the new job's earliest completion; edges run EDF.
    """

    name = "dedas"

    def dispatch(self, t: int) -> None:
        now = t * dyn.SLOT_S
        for k in self._waiting():
            q = self._queued()
            e = self.jobs.edge[q]
            times = dyn.remaining_time_s(self.jobs.remaining[q], self.split, self.cpu_hz[e])
            deadline = self.jobs.deadline_s[q]
            finish_q = now + dyn.back_to_back_finish(e, deadline, times)
            ahead = deadline <= self.jobs.deadline_s[k]
            own = dyn.remaining_time_s(self.jobs.remaining[k], self.split, self.cpu_hz)
            finish_new = now + np.bincount(e[ahead], weights=times[ahead], minlength=self.num_edges) + own
            behind = ~ahead
            lost = (finish_q <= deadline) & (finish_q + own[e] > deadline) & behind
            score = (finish_new <= self.jobs.deadline_s[k]) - np.bincount(e[lost], minlength=self.num_edges)
            self.jobs.edge[k] = int(np.lexsort((finish_new, -score))[0])

    def priority(self, idx: np.ndarray, t: int) -> np.ndarray:
        return -self.jobs.deadline_s[idx]


class ZhangRetraining(WeightSplitRetraining):
    """Zhang et al. (MobiHoc'20) as the OINC paper describes it ("schedules jobs in batches and configures
    a weight for each job in the batch"); their primal-dual pricing is not reproduced here.

    Waiting jobs are dispatched only at batch boundaries (every ``batch_s`` seconds); at that time each
    gets the weight 1 / max(D_k - t, 1), and the batch is placed heaviest first on the edge where the job
    would finish first ((queued work + job) / capacity). Edges run the job of largest weight / remaining workload.
    """

    name = "zhang"

    def __init__(self, batch_s: float = 10.0, retraining_share: float = WEIGHT_SPLIT_SHARE) -> None:
        super().__init__(retraining_share)
        self.batch_s = batch_s

    def reset(self, instance: Instance, jobs: Jobs) -> None:
        super().reset(instance, jobs)
        self.weight: dict[int, float] = {}

    def dispatch(self, t: int) -> None:
        now = t * dyn.SLOT_S
        if round(now) % round(self.batch_s) != 0:
            return
        waiting = self._waiting()
        if waiting.size == 0:
            return
        weights = dyn.job_weight(self.jobs.deadline_s[waiting], now)
        q = self._queued()
        load = np.bincount(self.jobs.edge[q], weights=self.jobs.remaining[q], minlength=self.num_edges)
        for pos in np.argsort(-weights, kind="stable"):
            k = int(waiting[pos])
            self.weight[k] = float(weights[pos])
            j = int(np.argmin(dyn.remaining_time_s(load + self.jobs.remaining[k], 1.0, self.cpu_hz)))
            self.jobs.edge[k] = j
            load[j] += self.jobs.remaining[k]

    def priority(self, idx: np.ndarray, t: int) -> np.ndarray:
        w = np.array([self.weight.get(int(k), 0.0) for k in idx])
        return w / np.maximum(self.jobs.remaining[idx], 1.0)


CONTROLLERS: dict[str, type[RetrainingController]] = {
    "aret": OINCRetraining,
    "kalmia": KalmiaRetraining,
    "ekya": EkyaRetraining,
    "dedas": DedasRetraining,
    "zhang": ZhangRetraining,
}


def make_controller(name: str, **params: float | int | None) -> RetrainingController:
    """Controller by name with optional constructor parameters (e.g. ``retraining_share``); ValueError
    listing the valid names."""
    return CONTROLLERS[check_choice("retraining", name, CONTROLLERS)](**params)
