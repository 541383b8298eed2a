"""ASET-v0: per-window choice among seven static stream-scheduling policies (Castellano et al.).

Modules: types (Instance, State, policy names), generator (Scenario, topologies, build_instance),
policies (the seven static worker-choice rules), dynamics (the stream simulator), env (ASETEnv).
"""

from envs.aset.env import ASETEnv
from envs.aset.generator import TOPOLOGIES, Scenario, build_instance
from envs.aset.types import POLICY_NAMES, Instance, State

__all__ = ["POLICY_NAMES", "TOPOLOGIES", "ASETEnv", "Instance", "Scenario", "State", "build_instance"]
