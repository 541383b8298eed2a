"""Config composition (Hydra compose API) for every env x algo pair that exists, and bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import OmegaConf

from agents.registry import ALGOS, check_action_space, get_spec, validate_algo_config
from edge_sched_gym import train

ROOT = Path(__file__).resolve().parents[2]
ENVS = train.available_choices("env")
ALGO_NAMES = train.available_choices("algo")


def compose_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        return compose("config", overrides=overrides)


@pytest.mark.parametrize("algo", ALGO_NAMES)
@pytest.mark.parametrize("env", ENVS)
def test_train__every_env_algo_pair_composes_and_validates(env: str, algo: str):
    cfg = compose_cfg([f"env={env}", f"algo={algo}"])
    spec = get_spec(cfg.algo)
    prepared = train.prepare(cfg)
    assert prepared.env["name"] == env and prepared.spec.name == cfg.algo.name
    # env algo_overrides are merged into the algo config
    overrides = (OmegaConf.to_container(cfg.env, resolve=False).get("algo_overrides") or {}).get(cfg.algo.name) or {}
    for key, value in overrides.items():
        if not isinstance(value, dict):
            assert prepared.algo[key] == value
    if spec.kind == "sb3" and "default_steps" not in overrides:
        assert prepared.steps == ALGOS[spec.name].schema_class().default_steps == cfg.algo.default_steps


@pytest.mark.parametrize("algo", [a for a in ALGO_NAMES if a in ("sac", "dqn")])
@pytest.mark.parametrize("env", ENVS)
def test_train__learner_fits_env_or_fails_naming_the_algos_that_fit(env: str, algo: str):
    prepared = train.prepare(compose_cfg([f"env={env}", f"algo={algo}"]))
    try:
        env_obj = train.make_env(prepared.env)
    except ValueError as err:  # an env still being written by its engineer
        pytest.skip(f"{env} cannot be built yet: {err}")
    env_obj.close()
    fits = isinstance(env_obj.action_space, ALGOS[algo].action_spaces) and not isinstance(
        env_obj.observation_space, gym.spaces.Dict)  # an MlpPolicy cannot read a Dict observation
    if fits:
        train.check_fit(prepared)[0].close()
    else:
        with pytest.raises(ValueError, match="algos that fit"):
            train.check_fit(prepared)


def test_train__command_line_algo_overrides_beat_env_algo_overrides():
    cfg = compose_cfg(["env=oinc-v0", "algo=sac", "algo.batch_size=7"])
    prepared = train.prepare(cfg, overrides=["env=oinc-v0", "algo=sac", "algo.batch_size=7"])
    assert prepared.algo["batch_size"] == 7
    assert prepared.algo["tau"] == cfg.env.algo_overrides.sac.tau  # env override still applied
    assert prepared.steps == prepared.algo["default_steps"]
    assert train.prepare(compose_cfg(["steps=123"])).steps == 123


def test_train__algo_wrappers_join_env_wrappers_for_that_algo_only():
    """The UEC main job's NetScoreFeatures applies to SAC only, after any env.wrappers, and the prepared config
    (what a run saves and a resume reloads) lists it once with algo_wrappers emptied."""
    sac = train.prepare(compose_cfg(["env=uec-v0", "algo=sac", "env.wrappers=[offline.uec.features:LPFeatures]"]))
    assert sac.env["wrappers"] == ["offline.uec.features:LPFeatures", "offline.uec.features:NetScoreFeatures"]
    assert sac.env["algo_wrappers"] == {}
    assert train.prepare(sac.cfg).env["wrappers"] == sac.env["wrappers"]  # a resume does not add it twice
    assert train.prepare(compose_cfg(["env=uec-v0", "algo=dqn"])).env["wrappers"] == []


def test_train__unknown_env_or_algo_lists_the_valid_choices():
    with pytest.raises(MissingConfigException, match="Available options") as err:
        compose_cfg(["algo=nope"])
    assert all(name in str(err.value) for name in ("sac", "dqn"))
    with pytest.raises(MissingConfigException, match="uec-v0"):
        compose_cfg(["env=nope-v9"])
    with pytest.raises(MissingConfigException, match="oinc_sac_paper"):
        compose_cfg(["+experiment=nope"])
    with pytest.raises(ValueError, match=r"valid algos: \[.*'sac'"):
        get_spec({"name": "nope"})


def test_train__hydra_rejects_unknown_keys_and_wrong_types_with_the_schemas():
    with pytest.raises(ConfigCompositionException, match="stepz"):
        compose_cfg(["stepz=3"])
    with pytest.raises(ConfigCompositionException, match="lerning_rate") as err:
        compose_cfg(["algo=sac", "algo.lerning_rate=1e-3"])
    assert "SACConfig" in str(err.value.__cause__)
    with pytest.raises(ConfigCompositionException) as err:
        compose_cfg(["steps=abc"])
    assert "could not be converted to Integer" in str(err.value.__cause__)
    with pytest.raises(ConfigCompositionException) as err:
        compose_cfg(["device=tpu"])
    assert "expected one of [auto, cpu, cuda]" in str(err.value.__cause__)
    with pytest.raises(ConfigCompositionException) as err:
        compose_cfg(["algo=corais", "algo.model.embd=3"])
    assert "ModelConfig" in str(err.value.__cause__)
    with pytest.raises(ConfigCompositionException, match=r"algo\.batch_size"):
        compose_cfg(["algo=dqn", "algo.batch_size=big"])
    # the plain-dict path (a run folder's config, a hand-built cfg) checks the same schemas
    with pytest.raises(ValueError, match=r"valid keys: \[.*'learning_rate'"):
        validate_algo_config({"name": "sac", "lerning_rate": 1e-3})
    with pytest.raises(ValueError, match=r"invalid configuration at algo\.batch_size"):
        validate_algo_config({"name": "dqn", "batch_size": "big"})
    compose_cfg(["env=uec-v0", "algo=dqn", "steps=300", "algo.batch_size=8"])  # fine
    compose_cfg(["+experiment=oinc_sac_paper", "seed=1"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("algo.gamma=1.5", r"algo.gamma=1.5 is invalid: expected a number in \(0, 1\]"),
        ("algo.tau=0", r"algo.tau=0.0 is invalid: expected a number in \(0, 1\]"),
        ("algo.batch_size=0", "algo.batch_size=0 is invalid: expected an integer in \\[1, "),
        ("algo.batch_size=200000", "expected 1 <= batch_size <= algo.buffer_size=100000"),
        ("algo.learning_rate=-1e-3", "algo.learning_rate=-0.001 is invalid: expected a finite number > 0"),
        ("algo.learning_rate=inf", "algo.learning_rate=inf is invalid"),
        ("algo.ent_coef=hot", "algo.ent_coef='hot' is invalid: expected 'auto'"),
        ("steps=-1", "steps=-1 is invalid: expected an integer in \\[0, "),
        ("seed=-3", r"seed=-3 is invalid: expected an integer in \[0, 2\*\*32 - 1\]"),
        ("n_envs=0", "n_envs=0 is invalid: expected an integer in \\[1, 4_096\\]"),
        ("eval.episodes=0", "eval.episodes=0 is invalid: expected an integer in \\[1, "),
    ],
)
def test_train__out_of_range_values_name_the_key_and_the_allowed_values(override: str, message: str):
    with pytest.raises(ValueError, match=message):
        train.prepare(compose_cfg(["env=uec-v0", "algo=sac", override]), overrides=[override])


def test_train__custom_trainer_ranges_are_checked_before_the_run():
    with pytest.raises(ValueError, match="samples"):
        train.prepare(compose_cfg(["env=uec-v0", "algo=corais_uec", "algo.samples=1"]))
    with pytest.raises(ValueError, match="baseline"):
        train.prepare(compose_cfg(["env=corais-v0", "algo=corais", "algo.baseline=rollout"]))
    with pytest.raises(ValueError, match=r"algo\.lr=0\.0 is invalid"):
        train.prepare(compose_cfg(["env=corais-v0", "algo=corais", "algo.lr=0"]))


def test_train__action_space_mismatch_names_the_algos_that_fit():
    from gymnasium import spaces

    with pytest.raises(ValueError, match=r"algo=dqn does not fit X-v0.*algos that fit X-v0: \[.*'sac'"):
        check_action_space(ALGOS["dqn"], spaces.MultiDiscrete([3, 4]), "X-v0", has_masks_method=False)
    check_action_space(ALGOS["sac"], spaces.MultiDiscrete([3, 4]), "X-v0", has_masks_method=False)
    with pytest.raises(ValueError, match="action_masks"):
        check_action_space(ALGOS["ppo_mask"], spaces.Discrete(3), "X-v0", has_masks_method=False)


def _train_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=180)


def test_train__command_line_unknown_choice_fails_with_hydras_list_of_options():
    result = _train_py("algo=nope")
    assert result.returncode != 0
    assert "Could not find 'algo/nope'" in result.stderr and "sac" in result.stderr
    assert "Traceback" not in result.stderr


def test_train__command_line_cfg_job_and_help_print_the_config():
    result = _train_py("--cfg", "job", "env=oinc-v0", "algo=dqn", "seed=3")
    assert result.returncode == 0, result.stderr
    cfg = OmegaConf.create(result.stdout)
    assert cfg.env.id == "OINC-v0" and cfg.algo.name == "dqn" and cfg.seed == 3
    assert cfg.algo.gamma == 0.99 and cfg.eval.episodes == 10  # the schemas' defaults
    help_text = _train_py("--help")
    assert help_text.returncode == 0, help_text.stderr
    assert "== Configuration groups ==" in help_text.stdout and "corais_uec" in help_text.stdout


def test_train__command_line_out_of_range_value_exits_2_before_any_run_folder(tmp_path):
    # algo.gamma and n_envs on the command line: tests/test_bad_input.py (test_bad_input__command_line_exits_2_...)
    for override, key in (("algo.batch_size=0", "algo.batch_size"),):
        result = _train_py("env=uec-v0", "algo=sac", override, f"out={tmp_path}", "progress=false")
        assert result.returncode == 2, result.stderr
        assert f"error: {key}=" in result.stderr and "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())  # no run folder


@pytest.mark.slow  # 14 s; tests/test_submitit.py runs a two-seed sweep through a launcher in the default suite
def test_train__joblib_multirun_leaves_one_run_folder_per_seed(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    result = _train_py("-m", "seed=0,1", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "env=uec-v0",
                       "algo=sac", "steps=200", "algo.learning_starts=50", "algo.batch_size=16",
                       "eval.episodes=1", "eval.freq=0", "eval.reference=false", "eval.bound=false",
                       "checkpoint_freq=1000", "progress=false", f"out={tmp_path}")
    assert result.returncode == 0, result.stdout + result.stderr
    runs = sorted(p.name.split("__")[2] for p in tmp_path.glob("uec-v0__sac__*") if p.is_dir())
    assert runs == ["0", "1"]
    for run_dir in tmp_path.glob("uec-v0__sac__*"):
        assert (run_dir / "model.zip").is_file() and (run_dir / "config.yaml").is_file()


def test_train__parallel_jobs_never_share_a_run_folder(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        dirs = list(pool.map(lambda _: train.make_run_dir(str(tmp_path), "uec-v0", "sac", 0), range(8)))
    assert len(set(dirs)) == 8 and all(d.is_dir() for d in dirs)


def test_train__experiment_preset_sets_env_algo_overrides():
    if "oinc_sac_paper" not in train.available_choices("experiment"):
        pytest.skip("the OINC paper preset is not in edge_sched_gym/conf/experiment/")
    prepared = train.prepare(compose_cfg(["+experiment=oinc_sac_paper"]))
    assert prepared.env["id"] == "OINC-v0" and prepared.spec.name == "sac"
    assert prepared.algo["policy_kwargs"]["net_arch"] == [1024, 512] and prepared.steps == 1_000_000


def test_cli__key_value_command_lines_check_keys_types_and_ranges(capsys):
    from agents.cli import parse_cli
    from benchmarks.corais_cost import Options as CostOptions
    from benchmarks.oinc_throughput import main as oinc_main

    assert parse_cli(CostOptions, ["scale=[10,5,20]", "latency=true"]).scale == [10, 5, 20]
    for argv, message in ((["seconds=-1"], "seconds=-1.0 is invalid"), (["second=1"], "Key 'second' not in"),
                          (["--seconds", "1"], "not of the form key=value"), (["seconds=abc"], "Float")):
        with pytest.raises(SystemExit) as exit_info:
            oinc_main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        oinc_main(["--help"])
    assert exit_info.value.code == 0 and "seconds: 5.0" in capsys.readouterr().out
