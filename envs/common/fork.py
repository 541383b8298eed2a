"""The shared part of every env's ``fork(rng)``: a deep copy of the present episode that shares the instance.

``fork`` (ASET, OINC) gives online policies a simulator of the present state whose unrevealed randomness each env
then redraws from the policy's ``rng`` (``offline.protocol``: non-anticipation). This module only copies.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

import numpy as np

EnvT = TypeVar("EnvT")


def present_copy(env: EnvT, rng: Any, *, started: bool) -> tuple[EnvT, int]:
    """(a deep copy of ``env`` sharing its immutable ``instance``, without render history or render mode; a seed
    drawn from ``rng`` for the copy's ``np_random`` and instance streams, which the copy gets: later episodes'
    draws are unrevealed too). ``started``: the env has a running episode, else RuntimeError; ``rng`` must be a
    ``numpy.random.Generator``, else ValueError."""
    if not started:
        raise RuntimeError("fork() needs a running episode: call reset() first")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng={rng!r} is invalid: expected a numpy.random.Generator")
    history, env._history = env._history, None
    try:
        twin = copy.deepcopy(env, {id(env.instance): env.instance})
    finally:
        env._history = history
    twin.render_mode = None
    seed = int(rng.integers(0, 2**63 - 1))
    twin._np_random, twin._instance_rng = np.random.default_rng(seed), np.random.default_rng([seed, 1])
    return twin, seed
