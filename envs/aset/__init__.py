"""ASET-v0 / ASET-v1: per-window choice among seven static stream-scheduling policies (Castellano et al.).

Modules: types (Instance, State, policy names), generator (Scenario, topologies, build_instance),
policies (the seven static worker-choice rules), dynamics (the stream simulator), env (ASETEnv,
ASETEnvV1).
"""

from envs.aset.env import ASETEnv, ASETEnvV1
from envs.aset.generator import TOPOLOGIES, V1_DEFAULTS, Scenario, build_instance
from envs.aset.types import POLICY_NAMES, Instance, State
from envs.common.instance_io import export_instance, load_instance

__all__ = ["POLICY_NAMES", "TOPOLOGIES", "V1_DEFAULTS", "ASETEnv", "ASETEnvV1", "Instance", "Scenario", "State", "build_instance", "export_instance", "load_instance"]
