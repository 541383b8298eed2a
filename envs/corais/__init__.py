"""CoRaiS-v0 / CoRaiS-v1: batch dispatch of requests to cooperating heterogeneous edges (Hu et al., IEEE
IoT-J 2024). v1 differs only in its default instance distribution (backlogs scaled to replicas and load).

Modules: types (Instance, Backlog, CostTables), generator (Scenario, presets, generate), dynamics (the
cost model, batched in numpy and torch), env (CoRaiSEnv, CoRaiSEnvV1).
"""

from envs.common.instance_io import export_instance, load_instance
from envs.corais.env import CoRaiSEnv, CoRaiSEnvV1
from envs.corais.generator import PRESETS, Scenario, generate
from envs.corais.types import Instance

__all__ = ["PRESETS", "CoRaiSEnv", "CoRaiSEnvV1", "Instance", "Scenario", "export_instance", "generate", "load_instance"]
