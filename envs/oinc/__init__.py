"""OINC-v0: joint inference and retraining scheduling on multiple edges (Zeng et al., IWQoS 2024).

Modules: types (Instance, EpisodeDraws, Jobs), generator (Scenario, presets, sweeps), workload (bursty
surrogate and trace CSV loader), dynamics (the model's formulas), retraining (the retraining
controllers), env (OINCEnv).
"""

from envs.common.instance_io import export_instance, load_instance
from envs.oinc.env import OINCEnv
from envs.oinc.generator import PRESETS, Scenario
from envs.oinc.types import Instance

__all__ = ["PRESETS", "Instance", "OINCEnv", "Scenario", "export_instance", "load_instance"]
