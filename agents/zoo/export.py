"""Write a shipped agent (:mod:`agents.pretrained`) in rl-zoo3's folder layout, so ``rl_zoo3.enjoy`` loads it.

rl-zoo3 reads ``<folder>/<algo>/<env_id>_<exp_id>/<env_id>.zip`` (the model), ``<env_id>/config.yml`` (its
hyperparameters: normalisation, wrappers) and ``<env_id>/args.yml`` (``env_kwargs``, which override the config's)
beside it (``rl_zoo3.utils.get_model_path``, ``get_saved_hyperparams`` and ``enjoy``)::

    python -m agents.pretrained export=uec-v0-sac out=outputs/zoo-agents
    python -m agents.zoo enjoy --algo sac_d --env UEC-v0 -f outputs/zoo-agents --exp-id 1 --no-render --deterministic

The shipped ``model.zip`` files hold no pickles (they load through :func:`agents.loading.load_sb3_model`);
rl-zoo3 loads with SB3's own ``load``, which needs the pickled spaces and classes. The export therefore loads
the shipped model safely and re-saves it with SB3's standard ``save`` (spaces, policy class and schedules
pickled from this suite's own objects). ``python -m agents.zoo enjoy`` plays them through the suite's safe
loaders (:mod:`agents.zoo.enjoy`: safe YAML, pickled entries rebuilt, never unpickled); rl-zoo3's own
``python -m rl_zoo3.enjoy`` and SB3's ``load`` unpickle: use those only on exports you made. The algorithm folder is :data:`agents.zoo.ZOO_ALGO` of the agent's algo
(``sac`` -> ``sac_d``, ``dqn`` -> ``dqn_mask``), names that ``python -m agents.zoo`` adds to rl-zoo3's
``ALGOS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

#: the experiment id an export is filed under (rl-zoo3's ``--exp-id``)
EXP_ID = 1


@dataclass
class ExportConfig:
    export: str = ""  # the shipped agent's name, e.g. uec-v0-sac (python -m agents.pretrained lists them)
    out: str = "outputs/zoo-agents"  # rl-zoo3's log folder (its -f/--folder); git-ignored
    exp_id: int = EXP_ID  # rl-zoo3's --exp-id: the model lands in <out>/<algo>/<env_id>_<exp_id>/
    publish: bool = False  # true: out may be a path of the clone's checked-in files


def export_pretrained(name: str, out: Path | str, exp_id: int = EXP_ID, publish: bool = False) -> Path:
    """Write shipped agent ``name`` under rl-zoo3's log folder ``out``; returns the model file written.

    The env kwargs the agent was trained with go to ``args.yml`` (``env_kwargs``), so ``enjoy`` makes the same env
    (e.g. OINC's ``observation=extended``); the run's env wrappers go to ``config.yml``'s ``env_wrapper`` (rl-zoo3's
    dotted ``module.Class`` names), e.g. the UEC main job's ``offline.uec.features.NetScoreFeatures``.
    """
    from omegaconf import OmegaConf

    from agents import loading
    from agents.registry import get_spec
    from agents.zoo import ZOO_ALGO
    from offline.provenance import check_output_path, check_writable_folder

    if int(exp_id) < 1:
        raise ValueError(f"exp_id={exp_id} is invalid: expected an integer >= 1 (rl-zoo3's --exp-id)")
    if not str(out).strip():
        raise ValueError("out='' is invalid: expected a folder (rl-zoo3's log folder, its -f/--folder)")
    check_output_path(out, publish=publish)
    check_writable_folder("out", out)  # a file, or a folder that cannot be written: one clear error, no traceback
    folder = loading.pretrained_path(name)
    cfg = loading.load_run_config(folder)
    algo = str(cfg.algo.name)
    if algo not in ZOO_ALGO or get_spec(cfg.algo).kind != "sb3":
        raise ValueError(f"{name} was trained with algo={algo!r}, which has no rl-zoo3 name; exportable: {sorted(ZOO_ALGO)}")
    env_cfg: dict[str, Any] = OmegaConf.to_container(cfg.env, resolve=True)  # type: ignore[assignment]
    env_id, env_kwargs = str(env_cfg["id"]), dict(env_cfg.get("kwargs") or {})
    model = loading.load_run_model(folder / loading.MODEL_FILE)
    run = Path(out) / ZOO_ALGO[algo] / f"{env_id}_{int(exp_id)}"
    for folder in (run, run / env_id):
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"out={out} is invalid: {folder} exists and is not a folder")
    (run / env_id).mkdir(parents=True, exist_ok=True)
    model_file = run / f"{env_id}.zip"
    model.save(model_file)
    algo_cfg: dict[str, Any] = OmegaConf.to_container(cfg.algo, resolve=True)  # type: ignore[assignment]
    hyper = {"policy": algo_cfg.get("policy", "MlpPolicy"), "n_envs": 1, "normalize": False,
             "env_kwargs": env_kwargs, "pretrained": name}
    if env_cfg.get("wrappers"):
        hyper["env_wrapper"] = [str(w).replace(":", ".") for w in env_cfg["wrappers"]]
    (run / env_id / "config.yml").write_text(yaml.safe_dump(hyper, sort_keys=True))
    (run / env_id / "args.yml").write_text(yaml.safe_dump(
        {"algo": ZOO_ALGO[algo], "env": env_id, "env_kwargs": env_kwargs, "seed": int(cfg.seed)}, sort_keys=True))
    return model_file
