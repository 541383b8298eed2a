"""CoRaiS-v0: batch dispatch of requests to cooperating heterogeneous edges (Hu et al., IEEE IoT-J 2024).

Modules: types (Instance, Backlog, CostTables), generator (Scenario, presets, generate), dynamics (the
cost model, batched in numpy and torch), env (CoRaiSEnv).
"""

from envs.corais.env import CoRaiSEnv
from envs.corais.generator import PRESETS, Scenario, generate
from envs.corais.types import Instance

__all__ = ["PRESETS", "CoRaiSEnv", "Instance", "Scenario", "generate"]
