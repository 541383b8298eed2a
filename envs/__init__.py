"""Gymnasium environments for edge-computing schedulers.

Importing this package registers the environment ids, so that either of
``import envs; gym.make("UEC-v0")`` or ``gym.make("envs:UEC-v0")`` works.

| id          | problem                                                             | paper  |
|-------------|---------------------------------------------------------------------|--------|
| UEC-v0      | profit-maximising online retraining on under-utilised edge capacity | RESCUE |
| OINC-v0     | joint inference scheduling and retraining across edges              | OINC   |
| ASET-v0     | picking one of seven stream-scheduling policies per time window     | ASET   |
| CoRaiS-v0   | dispatching a batch of requests to cooperating heterogeneous edges  | CoRaiS |
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

#: Registered id -> entry point. One sub-package per problem (see the design's "house").
ENTRY_POINTS: dict[str, str] = {
    "UEC-v0": "envs.uec.env:UECEnv",
    "OINC-v0": "envs.oinc.env:OINCEnv",
    "ASET-v0": "envs.aset.env:ASETEnv",
    "CoRaiS-v0": "envs.corais.env:CoRaiSEnv",
}

ENV_IDS: tuple[str, ...] = tuple(ENTRY_POINTS)

for _env_id, _entry_point in ENTRY_POINTS.items():
    if _env_id not in registry:
        register(id=_env_id, entry_point=_entry_point)

__all__ = ["ENTRY_POINTS", "ENV_IDS"]
