"""The one explicit path to an episode's future: for clairvoyant bounds, clairvoyant references and tests.

An env draws its exogenous randomness at reset (UEC-v0: arrival slots, devices, one uniform per arrival for its
duration; OINC-v0: the workload series, drift uniforms and job draws). Online policies never see it: they get an
``offline.protocol.PolicyView`` that does not forward it. Code that needs the realised future to compute a
hindsight bound or to play a clairvoyant reference calls :func:`episode_draws` on the env itself; a policy doing so
must declare ``clairvoyant = True`` (offline/protocol.py), which places it on the ladder's clairvoyant rung.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym


def episode_draws(env: gym.Env) -> Any:
    """The current episode's realised exogenous randomness of ``env`` (copies; after ``reset``).

    UEC-v0: ``(arrival slots (N,), devices (N,), durations (N, L))``; OINC-v0: an ``EpisodeDraws``. Raises
    TypeError for an env without pre-drawn randomness (ASET and CoRaiS draw as they go, or have no future) and for
    a policy's view, which never holds the future."""
    base = env.unwrapped
    draws = getattr(type(base), "_episode_draws", None)
    if draws is None:
        raise TypeError(f"{type(base).__name__} has no pre-drawn episode randomness (episode_draws is for UEC-v0 and "
                        "OINC-v0 envs, not a policy's view)")
    return draws(base)
