"""Gymnasium environments for edge-computing schedulers (the ``edge-sched-gym`` distribution).

Importing this package registers the environment ids of :data:`envs.problems.PROBLEMS`, so that either
``import envs; gym.make("UEC-v0")`` or ``gym.make("envs:UEC-v0")`` works from any directory once the
project is installed.

| id          | problem                                                             | paper  |
|-------------|---------------------------------------------------------------------|--------|
| UEC-v0      | profit-maximising online retraining on under-utilised edge capacity | RESCUE |
| OINC-v0     | joint inference scheduling and retraining across edges              | OINC   |
| ASET-v0     | picking one of seven static stream-scheduling policies per time window | ASET   |
| ASET-v1     | ASET-v0 with per-replica queues and capacity calibrated to lambda = 100 | ASET   |
| CoRaiS-v0   | dispatching a batch of requests to cooperating heterogeneous edges  | CoRaiS |
| CoRaiS-v1   | CoRaiS-v0 with backlogs scaled to replicas and load (non-trivial optima) | CoRaiS |

The top-level names ``envs``, ``offline`` and ``agents`` are generic; a different package named
``envs`` (there is one on the public index) is told apart by :data:`SUITE`, which ``offline`` checks
on import.
"""

from __future__ import annotations

from envs.problems import PROBLEMS, Problem, get_problem, register_problem

#: Marker that this ``envs`` is edge-sched-gym's (see :func:`require_suite`).
SUITE = "edge-sched-gym"

register_problem(Problem(
    env_id="UEC-v0",
    entry_point="envs.uec.env:UECEnv",
    vector_entry_point="envs.uec.vector:UECVectorEnv",
    config="uec-v0",
    policies="offline.uec",
    evaluation="offline.uec.evaluation:HOOK",
    episode_bound="offline.uec.evaluation:LPBound",
    presets="envs.uec.generator:PRESETS",
    ladder="offline.uec.ladder:SPEC",
))
register_problem(Problem(
    env_id="OINC-v0",
    entry_point="envs.oinc.env:OINCEnv",
    vector_entry_point="envs.oinc.vector:OINCVectorEnv",
    config="oinc-v0",
    policies="offline.oinc",
    evaluation="offline.oinc.evaluation:HOOK",
    presets="envs.oinc.generator:PRESETS",
    ladder="offline.oinc.ladder:SPEC",
))
register_problem(Problem(
    env_id="ASET-v0",
    entry_point="envs.aset.env:ASETEnv",
    vector_entry_point="envs.aset.vector:ASETVectorEnv",
    config="aset-v0",
    policies="offline.aset",
    evaluation="offline.aset.evaluation:HOOK",
    presets="envs.aset.generator:TOPOLOGIES",
))
register_problem(Problem(
    env_id="ASET-v1",
    entry_point="envs.aset.env:ASETEnvV1",
    vector_entry_point="envs.aset.vector:ASETVectorEnvV1",
    config="aset-v1",
    policies="offline.aset",
    evaluation="offline.aset.evaluation:HOOK_V1",
    presets="envs.aset.generator:TOPOLOGIES",
    ladder="offline.aset.ladder:SPEC",
))
register_problem(Problem(
    env_id="CoRaiS-v0",
    entry_point="envs.corais.env:CoRaiSEnv",
    vector_entry_point="envs.corais.vector:CoRaiSVectorEnv",
    config="corais-v0",
    policies="offline.corais",
    evaluation="offline.corais.evaluation:HOOK",
    presets="envs.corais.generator:PRESETS",
))
register_problem(Problem(
    env_id="CoRaiS-v1",
    entry_point="envs.corais.env:CoRaiSEnvV1",
    vector_entry_point="envs.corais.vector:CoRaiSVectorEnvV1",
    config="corais-v1",
    policies="offline.corais",
    evaluation="offline.corais.evaluation:HOOK_V1",
    presets="envs.corais.generator:PRESETS",
    ladder="offline.corais.ladder:SPEC",
))

#: The suite's env ids, derived from the problem registry.
ENV_IDS: tuple[str, ...] = tuple(PROBLEMS)


__all__ = ["ENV_IDS", "PROBLEMS", "SUITE", "Problem", "get_problem", "register_problem"]
