"""ASET-v0: per-window choice among seven static stream-scheduling policies (Castellano et al.)."""

from envs.aset.generator import TOPOLOGIES, Scenario, build_instance
from envs.aset.types import POLICY_NAMES, Instance, State

__all__ = ["POLICY_NAMES", "TOPOLOGIES", "Instance", "Scenario", "State", "build_instance"]
