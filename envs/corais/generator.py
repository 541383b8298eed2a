"""Instance generator for CoRaiS-v0: a validated ``Scenario`` (scale + parameter ranges) and named scales.

Defaults are the calibrated generator of design/corais.md (paper-gaps 1.14): coordinates U[0,1]^2,
replicas m_j ~ U{1..10}, f_j(d) = a_j d + b_j with a_j, b_j ~ U[0.1, 1], per region edge backlogs
|Q^L_j|, |Q^I_j| ~ U{0..8} with d, o ~ U[0,1] and predicted edge ~ U[N] (Q^I source: another region edge),
new requests with source ~ U[Q], predicted edge ~ U[N], d, o ~ U[0,1]; mu = 1. The region edges are the
first Q of the N edges.

Batched: ``generate_batch`` / ``generate_seeded`` draw B instances at once, instance b from its own random
stream (exactly what ``generate`` draws from it: ``generate`` is ``generate_batch`` with one generator),
and compute everything from the draws batched over a leading instance axis (the vector env's resets).
With numpy's default bit generator (PCG64) the draws are made in compiled code from its raw outputs
(``RawDraws``: numpy's ``random`` / ``integers`` algorithms, and ``default_rng(seed)``'s seeding, checked
bit for bit against numpy by tests/corais/test_corais_vector.py); any other bit generator is called as is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from envs.common.validation import check_choice, check_in_range, check_interval
from envs.corais.dynamics import backlog_times, cost_tables, gather_rows, workload_features
from envs.corais.types import Backlog, CostTables, Instance

#: Largest supported scale (the paper's largest is (2000, 1000, 15000)).
MAX_EDGES = 10_000
MAX_REQUESTS = 100_000

#: The paper's scales (N, Q, Z) by group.
TRAINING_SCALES: tuple[tuple[int, int, int], ...] = ((10, 5, 50), (10, 5, 100), (20, 10, 50), (20, 10, 100))
GENERALISATION_SCALES: tuple[tuple[int, int, int], ...] = (
    (20, 10, 200),
    (60, 30, 400),
    (100, 50, 600),
    (100, 50, 800),
)
LARGE_SCALES: tuple[tuple[int, int, int], ...] = (
    (200, 100, 2000),
    (600, 300, 4000),
    (1000, 500, 6000),
    (2000, 1000, 10000),
    (2000, 1000, 15000),
)
#: How backlogs are drawn: "uniform" (CoRaiS-v0, the paper's reading: counts U{0..backlog_max} whatever the
#: edge or the load) and "load" (CoRaiS-v1: each edge's backlog compute time is a random share of the
#: batch's fluid level, so queue lengths scale with the edge's replicas and the batch's load).
BACKLOG_MODELS: tuple[str, ...] = ("uniform", "load")
#: Scenario fields of CoRaiS-v1 that differ from CoRaiS-v0 (design in docs/envs/corais.md, "CoRaiS-v1").
V1_DEFAULTS: dict[str, Any] = {"backlog": "load", "backlog_load": 1.0}

#: Named presets: "N-Q-Z" for every paper scale, plus "tiny" (brute-forceable) for tests.
PRESETS: dict[str, tuple[int, int, int]] = {
    f"{n}-{q}-{z}": (n, q, z) for (n, q, z) in TRAINING_SCALES + GENERALISATION_SCALES + LARGE_SCALES
}
PRESETS["tiny"] = (4, 3, 6)


@dataclass(frozen=True)
class InstanceBatch:
    """B instances of one scale stacked on a leading axis (``generate_batch``; the vector env's
    state). Every array of ``Instance`` gains the axis B, except the backlog: the requests of all instances
    in one flat ``Backlog`` (each instance's in its own order), ``backlog_owner`` (K,) saying whose.
    ``tables`` are batched (B, Z, Q) ``CostTables``, as ``dynamics.response_times`` takes them.
    """

    coords: np.ndarray  # (B, N, 2)
    replicas: np.ndarray  # (B, Q)
    coef_a: np.ndarray  # (B, Q)
    coef_b: np.ndarray  # (B, Q)
    mu: float
    backlog: Backlog
    backlog_owner: np.ndarray  # (K,) int64 in [B]
    workload: np.ndarray  # (B, Q, 5)
    req_src: np.ndarray  # (B, Z)
    req_pred: np.ndarray  # (B, Z)
    req_d: np.ndarray  # (B, Z)
    req_o: np.ndarray  # (B, Z)
    tables: CostTables = field(repr=False)

    def __len__(self) -> int:
        return int(self.coords.shape[0])

    def instance(self, b: int) -> Instance:
        """Instance ``b`` as an ``Instance`` (its arrays are views of the batch's, except the backlog)."""
        mine = self.backlog_owner == b
        bl = self.backlog
        backlog = Backlog(edge=bl.edge[mine], transferred=bl.transferred[mine], src=bl.src[mine],
                          pred=bl.pred[mine], d=bl.d[mine], o=bl.o[mine])
        t = self.tables
        return Instance(
            num_edges=int(self.coords.shape[1]),
            num_region=int(self.replicas.shape[1]),
            num_requests=int(self.req_src.shape[1]),
            coords=self.coords[b],
            replicas=self.replicas[b],
            coef_a=self.coef_a[b],
            coef_b=self.coef_b[b],
            mu=self.mu,
            backlog=backlog,
            workload=self.workload[b],
            req_src=self.req_src[b],
            req_pred=self.req_pred[b],
            req_d=self.req_d[b],
            req_o=self.req_o[b],
            tables=CostTables(cmp=t.cmp[b], trn=t.trn[b], res=t.res[b], src=t.src[b], workload=t.workload[b]),
        )


@dataclass(frozen=True)
class Scenario:
    """Scale and parameter ranges of the instance distribution (validated on construction)."""

    num_edges: int = 10  # N
    num_region: int = 5  # Q
    num_requests: int = 100  # Z
    coord_max: float = 1.0  # coordinates ~ U[0, coord_max]^2
    replicas: tuple[int, int] = (1, 10)  # m_j ~ U{lo..hi}
    coef_a: tuple[float, float] = (0.1, 1.0)
    coef_b: tuple[float, float] = (0.1, 1.0)
    backlog_max: int = 8  # backlog="uniform": |Q^L_j|, |Q^I_j| ~ U{0..backlog_max}
    data_size: tuple[float, float] = (0.0, 1.0)  # d, o ~ U[lo, hi] (new and backlog requests)
    mu: float = 1.0
    backlog: str = "uniform"  # "uniform" (v0) or "load" (v1: backlog time ~ U[0, backlog_load] x fluid level)
    backlog_load: float = 1.0  # backlog="load": the largest backlog compute time, in units of the fluid level L

    def __post_init__(self) -> None:
        check_in_range("num_edges (N)", self.num_edges, 1, MAX_EDGES, integer=True)
        check_in_range("num_region (Q)", self.num_region, 1, self.num_edges, integer=True)
        check_in_range("num_requests (Z)", self.num_requests, 1, MAX_REQUESTS, integer=True)
        check_in_range("coord_max", self.coord_max, 0.0, 1e6, low_inclusive=False)
        lo, hi = check_interval("replicas", self.replicas, 1, 1000)
        if not (float(lo).is_integer() and float(hi).is_integer()):
            raise ValueError(f"replicas={self.replicas!r} is invalid: expected integers 1 <= lo <= hi")
        object.__setattr__(self, "replicas", (int(lo), int(hi)))
        object.__setattr__(self, "coef_a", check_interval("coef_a", self.coef_a, 0.0, 1e6))
        object.__setattr__(self, "coef_b", check_interval("coef_b", self.coef_b, 0.0, 1e6))
        if self.coef_a[1] + self.coef_b[1] <= 0:
            raise ValueError("coef_a, coef_b: at least one upper bound must be > 0 (positive compute times)")
        check_in_range("backlog_max", self.backlog_max, 0, 10_000, integer=True)
        object.__setattr__(self, "data_size", check_interval("data_size", self.data_size, 0.0, 1e6))
        check_in_range("mu", self.mu, 0.0, 1e6)
        check_choice("backlog", self.backlog, BACKLOG_MODELS)
        check_in_range("backlog_load", self.backlog_load, 0.0, 100.0)

    @property
    def scale(self) -> tuple[int, int, int]:
        """(N, Q, Z)."""
        return (self.num_edges, self.num_region, self.num_requests)


def parse_scale(scale: Any) -> tuple[int, int, int]:
    """A preset name ("10-5-100", "tiny", ...) or an (N, Q, Z) triple -> validated (N, Q, Z)."""
    if isinstance(scale, str):
        if scale not in PRESETS:
            raise ValueError(f"scale={scale!r} is not a preset: expected one of {sorted(PRESETS)} or (N,Q,Z)")
        return PRESETS[scale]
    try:
        n, q, z = (int(v) for v in scale)
        exact = all(float(v) == int(v) for v in scale)
    except (TypeError, ValueError):
        raise ValueError(
            f"scale={scale!r} is invalid: expected (N, Q, Z) integers with 1 <= Q <= N <= {MAX_EDGES}, "
            f"1 <= Z <= {MAX_REQUESTS}, or a preset in {sorted(PRESETS)}"
        ) from None
    if not exact or not (1 <= q <= n <= MAX_EDGES and 1 <= z <= MAX_REQUESTS):
        raise ValueError(
            f"scale={tuple(scale)!r} is out of range: expected (N, Q, Z) integers with "
            f"1 <= Q <= N <= {MAX_EDGES} and 1 <= Z <= {MAX_REQUESTS}"
        )
    return (n, q, z)


def make_scenario(scale: Any = (10, 5, 100), **overrides: Any) -> Scenario:
    """Scenario at ``scale`` with any ``Scenario`` field overridden (unknown names raise ValueError)."""
    names = {f.name for f in dataclasses.fields(Scenario)} - {"num_edges", "num_region", "num_requests"}
    unknown = set(overrides) - names
    if unknown:
        raise ValueError(f"scenario_overrides has unknown keys {sorted(unknown)}; allowed: {sorted(names)}")
    n, q, z = parse_scale(scale)
    return Scenario(num_edges=n, num_region=q, num_requests=z, **overrides)


def generate(scenario: Scenario, rng: np.random.Generator) -> Instance:
    """Draw one instance (all randomness from ``rng``); workload features and cost tables precomputed."""
    return generate_batch(scenario, [rng]).instance(0)


def generate_batch(scenario: Scenario, rngs: Sequence[np.random.Generator]) -> InstanceBatch:
    """Draw ``len(rngs)`` instances, instance b from ``rngs[b]`` alone: exactly the instance (and the
    generator state afterwards) of ``generate(scenario, rngs[b])``, which is this with one generator."""
    return _generate(scenario, _draws_from(rngs))


def generate_seeded(scenario: Scenario, seeds: Sequence[int]) -> InstanceBatch:
    """Instance b drawn from ``np.random.default_rng(seeds[b])`` (what ``CoRaiSEnv.reset`` does with the
    integer it takes from ``np_random``), for throw-away generators: their state is not kept up to date."""
    return _generate(scenario, RawDraws(seeds=seeds))


def _uniform(u: np.ndarray, low: float, high: float) -> np.ndarray:
    """``rng.uniform(low, high)`` from ``rng.random()`` draws: numpy computes low + (high - low) * u in double,
    so this is bit for bit what ``uniform`` gives."""
    return low + (high - low) * u


def _generate(scenario: Scenario, draws: GeneratorDraws) -> InstanceBatch:
    """The draws of ``generate``, in its order, made for B instances at once (one stream each), and
    everything computed from them batched over the leading instance axis.

    Draw order per instance: coordinates U[0, coord_max]^2; replicas; a_j, b_j (then, backlog "load", the
    target shares u_j); backlog "uniform": the counts (Q, 2); the backlog candidates (``uniform_backlog`` /
    ``load_backlog``: per region edge for "load"); the Z new requests' source, predicted edge, d, o.
    """
    n, q, z = scenario.scale
    count = draws.count
    load = scenario.backlog == "load"
    each = np.ones(count, dtype=np.int64)
    draws.reserve(each * (2 * n + 6 * q + 3 * z + 64))
    coords = _uniform(draws.doubles(each * 2 * n), 0.0, scenario.coord_max).reshape(count, n, 2)
    repl = draws.integers(scenario.replicas[0], scenario.replicas[1] + 1, each * q).reshape(count, q).astype(np.float64)
    params_u = draws.doubles(each * (3 if load else 2) * q).reshape(count, -1)
    coef_a = _uniform(params_u[:, :q], *scenario.coef_a)
    coef_b = _uniform(params_u[:, q : 2 * q], *scenario.coef_b)
    if load:
        shares = _uniform(params_u[:, 2 * q :], 0.0, scenario.backlog_load)
        backlog, owner = load_backlog(scenario, coords, repl, coef_a, coef_b, draws, shares)
    else:
        counts = draws.integers(0, scenario.backlog_max + 1, each * 2 * q).reshape(count, q, 2)  # Q^L, Q^I
        backlog, owner = uniform_backlog(scenario, draws, counts)
    workload = workload_features(coords, repl, coef_a, coef_b, scenario.mu, backlog, owner)

    req_src = draws.integers(0, q, each * z).reshape(count, z)
    req_pred = draws.integers(0, n, each * z).reshape(count, z)
    req = _uniform(draws.doubles(each * 2 * z).reshape(count, 2 * z), *scenario.data_size)
    draws.finish()
    req_d, req_o = req[:, :z], req[:, z:]
    tables = cost_tables(coords, repl, coef_a, coef_b, scenario.mu, workload, req_src, req_pred, req_d, req_o)
    return InstanceBatch(coords=coords, replicas=repl, coef_a=coef_a, coef_b=coef_b, mu=float(scenario.mu),
                         backlog=backlog, backlog_owner=owner, workload=workload, req_src=req_src, req_pred=req_pred,
                         req_d=req_d, req_o=req_o, tables=tables)


class GeneratorDraws:
    """B streams of draws, one ``np.random.Generator`` each: ``doubles`` and ``integers`` make the same
    call on every generator (``random`` / ``integers(low, high, size)``) and return the results
    concatenated in instance order. Any bit generator; one numpy call per instance and draw."""

    def __init__(self, rngs: Sequence[np.random.Generator]) -> None:
        self.rngs = list(rngs)
        self.count = len(self.rngs)

    def reserve(self, words: np.ndarray) -> None:
        """Nothing to prepare (see ``RawDraws.reserve``)."""

    def doubles(self, counts: np.ndarray) -> np.ndarray:
        """``rng.random(counts[b])`` of every instance b, concatenated."""
        parts = [rng.random(c) for rng, c in zip(self.rngs, counts.tolist(), strict=True)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def integers(self, low: int, high: int, counts: np.ndarray) -> np.ndarray:
        """``rng.integers(low, high, size=counts[b])`` (int64) of every instance b, concatenated."""
        parts = [rng.integers(low, high, size=c) for rng, c in zip(self.rngs, counts.tolist(), strict=True)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def finish(self) -> None:
        """Nothing to synchronise: the generators drew themselves."""


class RawDraws(GeneratorDraws):
    """B streams of draws from PCG64 bit generators, for all instances in one compiled loop per draw.

    The raw 64-bit outputs come from the bit generators' ``random_raw`` (or, with ``seeds``, from a compiled
    PCG64 seeded as ``default_rng(seed)`` seeds it: no numpy objects per stream); ``doubles`` and
    ``integers`` turn them into exactly what ``Generator.random`` and ``Generator.integers`` (int64, ranges
    below 2^32) make of the same outputs: ``(x >> 11) * 2^-53``, and Lemire's bounded draw on 32-bit
    halves (the upper half kept for the next one, as PCG64's ``next_uint32`` keeps it). The tests check
    both against numpy's own draws. With ``keep_state`` (the default) ``finish`` leaves each bit generator
    where the numpy calls would have.
    """

    def __init__(
        self,
        bit_generators: Sequence[np.random.PCG64] = (),
        keep_state: bool = True,
        seeds: Sequence[int] | None = None,
    ) -> None:
        self.bit_generators = list(bit_generators)
        # with ``seeds``: the streams of default_rng(seed), seeded and run in compiled code (numpy's
        # SeedSequence and PCG64, checked against them by the tests); nothing to keep up to date
        self._pcg = None if seeds is None else _pcg64_seed(np.asarray(seeds, dtype=np.uint64))
        self.count = len(self.bit_generators) if seeds is None else len(seeds)
        self.keep_state = keep_state and seeds is None
        self._start_states = [bg.state for bg in self.bit_generators] if self.keep_state else []
        self._raw = np.zeros((self.count, 0), dtype=np.uint64)
        self._have = np.zeros(self.count, dtype=np.int64)  # raw words drawn so far per stream
        self._cursor = np.zeros((self.count, 3), dtype=np.int64)  # words used, has a kept uint32, the uint32
        for b, state in enumerate(self._start_states):
            self._cursor[b, 1:] = state["has_uint32"], state["uinteger"]

    def reserve(self, words: np.ndarray) -> None:
        """Make sure every stream b has ``words[b]`` raw outputs beyond those used (drawn generously)."""
        need = self._cursor[:, 0] + words
        short = np.flatnonzero(need > self._have)
        if not short.size:
            return
        target = need + words // 4 + 64  # a little ahead: the raw outputs are not free either
        width = int(target[short].max())
        if width > self._raw.shape[1]:
            grown = np.zeros((self.count, max(width, 2 * self._raw.shape[1])), dtype=np.uint64)
            grown[:, : self._raw.shape[1]] = self._raw
            self._raw = grown
        if self._pcg is not None:
            _pcg64_fill(self._pcg, short, self._have[short], target[short], self._raw)
        else:
            for b in short.tolist():
                lo, hi = int(self._have[b]), int(target[b])
                self._raw[b, lo:hi] = self.bit_generators[b].random_raw(hi - lo)
        self._have[short] = target[short]

    def doubles(self, counts: np.ndarray) -> np.ndarray:
        out = _raw_doubles(self._raw, self._have, self._cursor, counts)
        while out is None:  # a stream was short (nothing drawn): retry with more raw outputs
            self.reserve(counts)
            out = _raw_doubles(self._raw, self._have, self._cursor, counts)
        return out

    def integers(self, low: int, high: int, counts: np.ndarray) -> np.ndarray:
        if not 0 <= high - low - 1 < 2**32:
            raise ValueError(f"RawDraws.integers: range [{low}, {high}) is empty or not below 2^32")
        words = counts + 2  # a word per draw is plenty (two draws per word, rare rejections) ...
        out = _raw_integers(self._raw, self._have, self._cursor, low, high - low - 1, counts)
        while out is None:
            self.reserve(words)
            words = 2 * words + 64  # ... else retry from the same cursor with more
            out = _raw_integers(self._raw, self._have, self._cursor, low, high - low - 1, counts)
        return out

    def finish(self) -> None:
        """With ``keep_state``: put each bit generator where its numpy calls would have left it."""
        for b, state in enumerate(self._start_states):
            bg = self.bit_generators[b]
            bg.state = state
            bg.advance(int(self._cursor[b, 0]))  # (resets the kept uint32, set just below)
            after = bg.state
            after["has_uint32"], after["uinteger"] = int(self._cursor[b, 1]), int(self._cursor[b, 2])
            bg.state = after


def _draws_from(rngs: Sequence[np.random.Generator]) -> GeneratorDraws:
    """``RawDraws`` for PCG64 generators (numpy's default), ``GeneratorDraws`` for any other."""
    bgs = [rng.bit_generator for rng in rngs]
    if bgs and all(type(bg) is np.random.PCG64 for bg in bgs):
        return RawDraws(bgs)
    return GeneratorDraws(rngs)


@numba.njit(cache=True)
def _raw_doubles(raw: np.ndarray, have: np.ndarray, cursor: np.ndarray,
                 counts: np.ndarray) -> np.ndarray | None:  # pragma: no cover - compiled
    """``Generator.random``: (x >> 11) * 2^-53 per raw output x (PCG64's ``next_double``), all streams'
    draws concatenated. None (and nothing drawn) if a stream has too few raw outputs."""
    for b in range(counts.size):
        if cursor[b, 0] + counts[b] > have[b]:
            return None
    out = np.empty(counts.sum())
    at = 0
    for b in range(counts.size):
        pos = cursor[b, 0]
        for i in range(counts[b]):
            out[at + i] = np.float64(raw[b, pos + i] >> np.uint64(11)) * (1.0 / 9007199254740992.0)
        at += counts[b]
        cursor[b, 0] = pos + counts[b]
    return out


@numba.njit(cache=True)
def _raw_integers(raw: np.ndarray, have: np.ndarray, cursor: np.ndarray, low: int, span: int,
                  counts: np.ndarray) -> np.ndarray | None:  # pragma: no cover - compiled
    """``Generator.integers(low, low + span + 1)`` (int64, span < 2^32): numpy's buffered Lemire draw on
    PCG64's 32-bit halves, all streams' draws concatenated. None (and the cursors unchanged) if a stream
    runs out of raw outputs."""
    out = np.empty(counts.sum(), dtype=np.int64)
    rng = np.uint64(span)
    excl = rng + np.uint64(1)
    low32 = np.uint64(0xFFFFFFFF)
    before = cursor.copy()
    at = 0
    for b in range(counts.size):
        pos, kept, half = cursor[b, 0], cursor[b, 1], np.uint64(cursor[b, 2])
        for i in range(counts[b]):
            if span == 0:
                out[at + i] = low
                continue
            m = np.uint64(0)
            leftover = np.uint64(0)
            threshold = np.uint64(0)
            first = True
            while first or leftover < threshold:
                if kept:  # PCG64.next_uint32: the upper half of the previous output
                    kept = 0
                    u = half
                else:
                    if pos >= have[b]:
                        cursor[:] = before
                        return None
                    x = raw[b, pos]
                    pos += 1
                    kept = 1
                    half = x >> np.uint64(32)
                    u = x & low32
                if rng == low32:
                    m = u << np.uint64(32)
                    break
                m = u * excl
                leftover = m & low32
                if first and leftover < excl:
                    threshold = (low32 - rng) % excl
                first = False
            out[at + i] = low + np.int64(m >> np.uint64(32))
        at += counts[b]
        cursor[b, 0], cursor[b, 1], cursor[b, 2] = pos, kept, np.int64(half)
    return out


# --- numpy's default_rng(seed) in compiled code: SeedSequence(seed) -> PCG64 state, and its raw outputs ---
_M32 = np.uint64(0xFFFFFFFF)


@numba.njit(cache=True)
def _hashmix(value: np.uint64, hash_const: np.ndarray) -> np.uint64:  # pragma: no cover - compiled
    """SeedSequence's hashmix (uint32 arithmetic, in uint64 masked to 32 bits); updates ``hash_const[0]``."""
    value = (value ^ hash_const[0]) & _M32
    hash_const[0] = (hash_const[0] * np.uint64(0x931E8875)) & _M32
    value = (value * hash_const[0]) & _M32
    return value ^ (value >> np.uint64(16))


@numba.njit(cache=True)
def _mulhi64(a: np.uint64, b: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """The upper 64 bits of the 128-bit product a * b."""
    a0, a1, b0, b1 = a & _M32, a >> np.uint64(32), b & _M32, b >> np.uint64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> np.uint64(32)) + (p01 & _M32) + (p10 & _M32)
    return p11 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))


@numba.njit(cache=True)
def _pcg64_step(pcg: np.ndarray, b: int) -> None:  # pragma: no cover - compiled
    """state = state * PCG_DEFAULT_MULTIPLIER_128 + inc (mod 2^128); ``pcg[b]`` = state hi, lo, inc hi, lo."""
    mul_hi, mul_lo = np.uint64(2549297995355413924), np.uint64(4865540595714422341)
    hi, lo = pcg[b, 0], pcg[b, 1]
    new_hi = _mulhi64(lo, mul_lo) + hi * mul_lo + lo * mul_hi
    new_lo = lo * mul_lo
    low = new_lo + pcg[b, 3]
    pcg[b, 0] = new_hi + pcg[b, 2] + (np.uint64(1) if low < new_lo else np.uint64(0))
    pcg[b, 1] = low


@numba.njit(cache=True)
def _pcg64_seed(seeds: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """PCG64 states (B, 4) of ``PCG64(SeedSequence(seed))`` for non-negative seeds below 2^64."""
    pcg = np.zeros((seeds.size, 4), dtype=np.uint64)
    pool = np.zeros(4, dtype=np.uint64)
    words = np.zeros(8, dtype=np.uint64)
    hash_const = np.zeros(1, dtype=np.uint64)
    for b in range(seeds.size):
        seed = np.uint64(seeds[b])
        entropy = np.array([seed & _M32, seed >> np.uint64(32)])
        n_entropy = 2 if entropy[1] else 1
        hash_const[0] = np.uint64(0x43B0D7E5)  # SeedSequence.mix_entropy, pool size 4
        for i in range(4):
            pool[i] = _hashmix(entropy[i] if i < n_entropy else np.uint64(0), hash_const)
        for i_src in range(4):
            for i_dst in range(4):
                if i_src != i_dst:
                    y = _hashmix(pool[i_src], hash_const)
                    mixed = ((np.uint64(0xCA01F9DD) * pool[i_dst]) - (np.uint64(0x4973F715) * y)) & _M32
                    pool[i_dst] = mixed ^ (mixed >> np.uint64(16))
        h = np.uint64(0x8B51F9DD)  # SeedSequence.generate_state(4, uint64): 8 uint32 words
        for i in range(8):
            value = (pool[i % 4] ^ h) & _M32
            h = (h * np.uint64(0x58F38DED)) & _M32
            value = (value * h) & _M32
            words[i] = value ^ (value >> np.uint64(16))
        seed_hi, seed_lo = words[0] | (words[1] << np.uint64(32)), words[2] | (words[3] << np.uint64(32))
        inc_hi, inc_lo = words[4] | (words[5] << np.uint64(32)), words[6] | (words[7] << np.uint64(32))
        # pcg_setseq_128_srandom_r: state 0, inc = initseq << 1 | 1, step, state += initstate, step
        pcg[b, 2] = (inc_hi << np.uint64(1)) | (inc_lo >> np.uint64(63))
        pcg[b, 3] = (inc_lo << np.uint64(1)) | np.uint64(1)
        _pcg64_step(pcg, b)
        low = pcg[b, 1] + seed_lo
        pcg[b, 0] = pcg[b, 0] + seed_hi + (np.uint64(1) if low < seed_lo else np.uint64(0))
        pcg[b, 1] = low
        _pcg64_step(pcg, b)
    return pcg


@numba.njit(cache=True)
def _pcg64_fill(pcg: np.ndarray, streams: np.ndarray, start: np.ndarray, stop: np.ndarray,
                raw: np.ndarray) -> None:  # pragma: no cover - compiled
    """``raw[b, start[b]:stop[b]]`` = the next outputs of stream b (PCG64's XSL-RR of each new state)."""
    for i in range(streams.size):
        b = streams[i]
        for p in range(start[i], stop[i]):
            _pcg64_step(pcg, b)
            value = pcg[b, 0] ^ pcg[b, 1]
            rot = pcg[b, 0] >> np.uint64(58)
            raw[b, p] = (value >> rot) | (value << ((np.uint64(64) - rot) & np.uint64(63)))


def _candidate_sources(edge: np.ndarray, transferred: np.ndarray, offset: np.ndarray | None, q: int) -> np.ndarray:
    """Source edge of backlog requests: a transferred-in one comes from another region edge,
    (edge + 1 + offset) % q with offset ~ U{0..q-2}; a local one from its own edge."""
    if offset is None:  # q == 1: nothing to transfer from
        return edge.copy()
    return np.where(transferred, (edge + 1 + offset) % q, edge)


def _split_pairs(values: np.ndarray, sizes: np.ndarray, seg: np.ndarray, seg_start: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Draws laid out per segment as [first (k), second (k)] (k = ``sizes`` of the segment): the firsts and
    the seconds of all segments, in segment order (``seg`` of each, ``seg_start`` (S + 1,) offsets)."""
    at = seg_start[seg] + np.arange(seg.size, dtype=np.int64)  # 2 * start + position in the segment
    return values[at], values[at + sizes[seg]]


def uniform_backlog(scenario: Scenario, draws: GeneratorDraws, counts: np.ndarray) -> tuple[Backlog, np.ndarray]:
    """The "uniform" backlog model (CoRaiS-v0): |Q^L_j|, |Q^I_j| ~ U{0..backlog_max} per region edge
    (``counts`` (B, Q, 2), already drawn). Returns the backlogs of all instances in one flat Backlog (Q^L
    then Q^I, in edge order, per instance) and the instance of each request."""
    n, q, _ = scenario.scale
    sizes = counts.sum(axis=(1, 2))
    draws.reserve(4 * sizes + 16)
    offset = draws.integers(0, q - 1, sizes) if q > 1 else None
    pred = draws.integers(0, n, sizes)
    d_o = _uniform(draws.doubles(2 * sizes), *scenario.data_size)
    owner = np.repeat(np.arange(draws.count, dtype=np.int64), sizes)
    seg_start = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=seg_start[1:])
    d, o = _split_pairs(d_o, sizes, owner, seg_start)
    # per instance: Q^L in edge order, then Q^I (edge j repeated counts[b, j, column] times)
    flat = counts.transpose(0, 2, 1).reshape(-1)  # (instance, column, edge)
    kind = np.arange(flat.size, dtype=np.int64)
    edge = np.repeat(kind % q, flat)
    transferred = np.repeat((kind // q) % 2 == 1, flat)
    backlog = Backlog(
        edge=edge,
        transferred=transferred,
        src=_candidate_sources(edge, transferred, offset, q).astype(np.int64),
        pred=pred,
        d=d,
        o=o,
    )
    return backlog, owner


def fluid_level(scenario: Scenario, replicas: np.ndarray, coef_a: np.ndarray, coef_b: np.ndarray) -> Any:
    """L = Z / sum_j m_j / f_j(d_mean): the time the Q edges need for the batch if it were spread
    perfectly in proportion to their speeds (mean request size, no backlog, no transfers).
    A float for (Q,) arrays; (B,) for arrays with a leading batch axis (B, Q)."""
    d_mean = 0.5 * (scenario.data_size[0] + scenario.data_size[1])
    speed = replicas / np.maximum(coef_a * d_mean + coef_b, 1e-12)  # requests per unit time
    if speed.ndim == 1:
        return scenario.num_requests / float(speed.sum())
    return scenario.num_requests / speed.sum(axis=-1)


@numba.njit(cache=True)
def _backlog_prefixes(seg_start: np.ndarray, transferred: np.ndarray, compute: np.ndarray, trn: np.ndarray,
                      res: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The five workload features of every prefix of each segment of candidates (K, 5): per segment
    cumsums of local / transferred compute and running maxima of the transfers (sequential, as numpy's
    ``cumsum`` and ``maximum.accumulate`` of the single-edge arrays, so the same numbers)."""
    out = np.zeros((compute.size, 5))
    for s in range(seg_start.size - 1):
        loc_cmp = trn_max = in_cmp = loc_res = in_res = 0.0
        for p in range(seg_start[s], seg_start[s + 1]):
            if transferred[p]:
                in_cmp += compute[p]
                trn_max = max(trn_max, trn[p])
                in_res = max(in_res, res[p])
            else:
                loc_cmp += compute[p]
                loc_res = max(loc_res, res[p])
            out[p, 0] = loc_cmp
            out[p, 1] = trn_max
            out[p, 2] = in_cmp
            out[p, 3] = loc_res
            out[p, 4] = in_res
    return out


def load_backlog(
    scenario: Scenario,
    coords: np.ndarray,
    replicas: np.ndarray,
    coef_a: np.ndarray,
    coef_b: np.ndarray,
    draws: GeneratorDraws,
    shares: np.ndarray,
) -> tuple[Backlog, np.ndarray]:
    """The "load" backlog model (CoRaiS-v1), for B instances (edge arrays with a leading axis B).

    Each region edge j gets a target tau_j = u_j * L, u_j ~ U[0, backlog_load] (``shares``, (B, Q), already
    drawn), L = ``fluid_level`` (the batch's load per unit of the region's capacity). Candidate backlog
    requests are drawn as in v0 (Q^L or Q^I with probability 1/2, a Q^I source among the other region
    edges, predicted edge ~ U[N], d, o ~ ``data_size``) and queued while the edge's backlog-only time T_j
    (the one formula, ``dynamics.backlog_times``: compute / m_j plus pending transfers and result
    transfers) stays <= tau_j. Queues therefore grow with the edge's replicas and speed and with the batch's
    load, and no edge's backlog alone takes longer than backlog_load * L.
    Returns the backlogs of all instances in one flat Backlog (Q^L first, then Q^I, per instance) and the
    instance of each request.
    """
    n, q, _ = scenario.scale
    count = draws.count
    tau = shares * fluid_level(scenario, replicas, coef_a, coef_b)[:, None]
    d_min = max(scenario.data_size[0], 0.0)
    f_min = (coef_a * d_min + coef_b) / replicas
    k = np.minimum(tau / np.maximum(f_min, 1e-9), 100_000).astype(np.int64) + 1  # more candidates than can fit
    draws.reserve(5 * k.sum(axis=1) + 8 * q + 3 * scenario.num_requests + 64)
    parts: list[tuple[np.ndarray, ...]] = []
    for j in range(q):  # per region edge, as generate draws them: segment (j, b) holds k[b, j] candidates
        kj = k[:, j]
        u = draws.doubles(kj)
        offset = draws.integers(0, q - 1, kj) if q > 1 else None
        pred_j = draws.integers(0, n, kj)
        parts.append((u, offset, pred_j, draws.doubles(2 * kj)))
    sizes = k.T.ravel()  # segment s = j * B + b
    seg_start = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=seg_start[1:])
    total = int(seg_start[-1])
    seg = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    pos = np.arange(total, dtype=np.int64) - seg_start[seg]
    transferred = np.concatenate([p[0] for p in parts]) < 0.5
    offset = np.concatenate([p[1] for p in parts]) if q > 1 else None
    pred = np.concatenate([p[2] for p in parts])
    d, o = _split_pairs(_uniform(np.concatenate([p[3] for p in parts]), *scenario.data_size), sizes, seg, seg_start)
    edge, owner = np.divmod(seg, count)
    seg_inst = owner * q + edge  # the (instance, edge) of each candidate
    src = _candidate_sources(edge, transferred, offset, q)
    xy, base = coords.reshape(count * n, 2), owner * n  # row base + i of xy: edge i of the candidate's instance
    compute = (coef_a.reshape(-1)[seg_inst] * d + coef_b.reshape(-1)[seg_inst]) / replicas.reshape(-1)[seg_inst]
    at_edge = np.take(xy, base + edge, axis=0)
    trn = scenario.mu * d * np.linalg.norm(np.take(xy, base + src, axis=0) - at_edge, axis=1)
    res = scenario.mu * o * np.linalg.norm(at_edge - np.take(xy, base + pred, axis=0), axis=1)
    prefix = _backlog_prefixes(seg_start, transferred, compute, trn, res)
    fits_each = backlog_times(prefix) <= tau.reshape(-1)[seg_inst]  # T_j of a prefix grows with its length
    fits = np.bincount(seg[fits_each], minlength=sizes.size)
    keep = np.flatnonzero(pos < fits[seg])
    order = keep[np.argsort(owner[keep] * 2 + transferred[keep], kind="stable")]  # Q^L first, as in v0
    backlog = Backlog(
        edge=edge[order],
        transferred=transferred[order],
        src=src[order].astype(np.int64),
        pred=pred[order],
        d=d[order],
        o=o[order],
    )
    return backlog, owner[order]


def build_instance(
    coords: np.ndarray,
    replicas: np.ndarray,
    coef_a: np.ndarray,
    coef_b: np.ndarray,
    mu: float,
    backlog: Backlog,
    req_src: np.ndarray,
    req_pred: np.ndarray,
    req_d: np.ndarray,
    req_o: np.ndarray,
    workload: np.ndarray | None = None,
) -> Instance:
    """Assemble an Instance from explicit arrays (hand-made instances, characteristic tests)."""
    coords = np.asarray(coords, dtype=np.float64)
    replicas = np.asarray(replicas, dtype=np.float64)
    coef_a, coef_b = np.asarray(coef_a, dtype=np.float64), np.asarray(coef_b, dtype=np.float64)
    req_src, req_pred = np.asarray(req_src, dtype=np.int64), np.asarray(req_pred, dtype=np.int64)
    req_d, req_o = np.asarray(req_d, dtype=np.float64), np.asarray(req_o, dtype=np.float64)
    if workload is None:
        workload = workload_features(coords, replicas, coef_a, coef_b, mu, backlog)
    tables = cost_tables(coords, replicas, coef_a, coef_b, mu, workload, req_src, req_pred, req_d, req_o)
    return Instance(
        num_edges=coords.shape[0],
        num_region=replicas.shape[0],
        num_requests=req_src.shape[0],
        coords=coords,
        replicas=replicas,
        coef_a=coef_a,
        coef_b=coef_b,
        mu=float(mu),
        backlog=backlog,
        workload=workload,
        req_src=req_src,
        req_pred=req_pred,
        req_d=req_d,
        req_o=req_o,
        tables=tables,
    )


def empty_backlog() -> Backlog:
    """A backlog with no requests."""
    e = np.zeros(0, dtype=np.int64)
    return Backlog(edge=e, transferred=np.zeros(0, bool), src=e, pred=e, d=np.zeros(0), o=np.zeros(0))


def edge_features(instance: Instance | InstanceBatch) -> np.ndarray:
    """(Q, 10) float32: coordinates, a_j, b_j, m_j, the five workload features (the env's "edges");
    (B, Q, 10) for an ``InstanceBatch`` (the same numbers per instance)."""
    q = instance.replicas.shape[-1]
    return np.concatenate(
        [
            instance.coords[..., :q, :],
            instance.coef_a[..., None],
            instance.coef_b[..., None],
            instance.replicas[..., None],
            instance.workload,
        ],
        axis=-1,
    ).astype(np.float32)


def request_features(instance: Instance | InstanceBatch) -> np.ndarray:
    """(Z, 6) float32: source coordinates, d_i, predicted-edge coordinates, o_i (the env's "requests");
    (B, Z, 6) for an ``InstanceBatch``."""
    coords = instance.coords
    return np.concatenate(
        [
            gather_rows(coords, instance.req_src),
            instance.req_d[..., None],
            gather_rows(coords, instance.req_pred),
            instance.req_o[..., None],
        ],
        axis=-1,
    ).astype(np.float32)


#: The paper's characteristic tests (Table VI): five edges, Z identical requests.
CHARACTERISTICS: tuple[str, ...] = (
    "load_balancing", "workload_perception", "heterogeneity", "heterogeneity_mixed_sizes"
)


def characteristic_instance(kind: str, rng: np.random.Generator, num_requests: int = 100) -> Instance:
    """One instance of a Table-VI characteristic test (5 region edges = 5 edges, identical requests).

    - ``load_balancing``: identical edges (a = b = 0.5, m = 2) with identical backlogs (4 local requests
      each): a good dispatcher gives every edge about the same number of requests.
    - ``workload_perception``: identical edges, local backlogs of 0, 2, 4, 6, 8 requests (edges A..E):
      more backlog should get fewer new requests.
    - ``heterogeneity``: slopes a = 1.0, 0.8, 0.6, 0.4, 0.2 (A slowest, E fastest), b = 0.1, m = 2,
      backlogs whose compute times are equalised (4 requests of size 0.2 / a, all 0.6 s): faster edges
      should get more requests.
    - ``heterogeneity_mixed_sizes``: the heterogeneity system with new requests of random sizes
      d, o ~ U[0, 1] instead of identical ones. A one-shot policy that learnt to split a batch by
      request size (large requests to low-slope edges) sends identical mid-sized requests to the
      mid-slope edges; this variant asks the same question on a batch it can split.
    Every number lies inside the default generator's ranges, so a model trained on it is not asked to
    extrapolate.
    Edges sit on a circle of radius 0.25 around (0.5, 0.5); new requests have d = o = 0.5 and a
    uniformly random source and predicted edge (the only randomness, with the sizes of the mixed variant).
    """
    from envs.common.validation import check_choice

    check_choice("characteristic", kind, CHARACTERISTICS)
    check_in_range("num_requests (Z)", num_requests, 1, MAX_REQUESTS, integer=True)
    q = 5
    angles = 2 * np.pi * np.arange(q) / q
    coords = 0.5 + 0.25 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    replicas = np.full(q, 2.0)
    coef_a = np.full(q, 0.5)
    coef_b = np.full(q, 0.5)
    if kind == "load_balancing":
        counts, sizes = np.full(q, 4), np.full(q, 0.5)
    elif kind == "workload_perception":
        counts, sizes = np.array([0, 2, 4, 6, 8]), np.full(q, 0.5)
    else:
        coef_a = np.array([1.0, 0.8, 0.6, 0.4, 0.2])
        coef_b = np.full(q, 0.1)
        counts, sizes = np.full(q, 4), 0.2 / coef_a
    edge = np.repeat(np.arange(q), counts).astype(np.int64)
    backlog = Backlog(
        edge=edge,
        transferred=np.zeros(edge.size, bool),
        src=edge.copy(),
        pred=edge.copy(),
        d=sizes[edge],
        o=np.full(edge.size, 0.5),
    )
    z = int(num_requests)
    src, pred = rng.integers(0, q, size=z), rng.integers(0, q, size=z)
    if kind == "heterogeneity_mixed_sizes":
        d, o = rng.uniform(0.0, 1.0, size=z), rng.uniform(0.0, 1.0, size=z)
    else:
        d, o = np.full(z, 0.5), np.full(z, 0.5)
    return build_instance(coords, replicas, coef_a, coef_b, 1.0, backlog, src, pred, d, o)
