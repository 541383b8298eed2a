"""UEC-v0: profit-maximising online scheduling of retraining tasks on under-utilised edges (RESCUE).

Modules: types (Instance, ReservedTasks, State), generator (Scenario, presets, generate_instance),
dynamics (the profit model, reserved-task feasibility, EDF), env (UECEnv, ObservationLayout).
"""

from envs.common.instance_io import export_instance, load_instance
from envs.uec.env import ObservationLayout, UECEnv
from envs.uec.generator import PRESETS, Scenario, generate_instance
from envs.uec.types import Instance, ReservedTasks, State

__all__ = ["PRESETS", "Instance", "ObservationLayout", "ReservedTasks", "Scenario", "State", "UECEnv", "export_instance", "generate_instance", "load_instance"]
