"""Bad input, table-driven: every case must raise the expected exception whose message names the parameter
(envs), or exit with status 2 and a one-line ``error:`` naming the key, without a traceback and without
leaving an output folder (train.py, evaluate.py).

The tables: every Scenario field of the four envs against values of the wrong type or far out of range;
each env's constructor arguments; reset seeds and options; actions of the wrong type; train.py's and
evaluate.py's keys. Values that a field legitimately accepts are listed in ``ACCEPTS`` with the reason.
"""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hydra import compose, initialize_config_dir

import envs  # noqa: F401  (registers the ids)
from envs.aset.generator import Scenario as ASETScenario
from envs.corais.generator import Scenario as CoRaiSScenario
from envs.oinc.generator import Scenario as OINCScenario
from envs.uec.generator import Scenario as UECScenario

ROOT = Path(__file__).resolve().parents[1]
CONF = str(ROOT / "edge_sched_gym" / "conf")

#: Small valid constructor kwargs per env (the cases change one thing at a time).
SMALL: dict[str, dict[str, Any]] = {
    "UEC-v0": {"scenario": "tiny"},
    "OINC-v0": {"scenario": "tiny"},
    "ASET-v0": {"horizon": 3},
    "ASET-v1": {"horizon": 3},
    "CoRaiS-v0": {"scale": "tiny"},
    "CoRaiS-v1": {"scale": "tiny"},
}
SCENARIOS = {"UEC-v0": UECScenario, "OINC-v0": OINCScenario, "ASET-v0": ASETScenario, "ASET-v1": ASETScenario,
             "CoRaiS-v0": CoRaiSScenario,
             "CoRaiS-v1": CoRaiSScenario}
BAD_FIELD_VALUES: tuple[Any, ...] = ("x", -1e12, None, [1.0, 2.0, 3.0, 4.0, 5.0])
#: (env, field) -> values the field accepts, with the reason.
ACCEPTS: dict[tuple[str, str], tuple[Any, ...]] = {
    ("UEC-v0", "name"): BAD_FIELD_VALUES,  # a free-text label of the scenario
    ("OINC-v0", "trace_path"): (None,),  # None = the built-in bursty surrogate workload
    ("ASET-v0", "name"): BAD_FIELD_VALUES,
    ("ASET-v0", "fps_choices"): ([1.0, 2.0, 3.0, 4.0, 5.0],),  # five frame rates in (0, 240] are a valid choice
    ("ASET-v1", "name"): BAD_FIELD_VALUES,
    ("ASET-v1", "fps_choices"): ([1.0, 2.0, 3.0, 4.0, 5.0],),
    ("CoRaiS-v0", "name"): BAD_FIELD_VALUES,
    ("CoRaiS-v1", "name"): BAD_FIELD_VALUES,
}


def _scenario_cases() -> list[Any]:
    cases = []
    for env_id, scenario in SCENARIOS.items():
        for field in dataclasses.fields(scenario):
            accepted = ACCEPTS.get((env_id, field.name), ())
            for value in BAD_FIELD_VALUES:
                if any(value is a or value == a for a in accepted):
                    continue
                cases.append(pytest.param(env_id, field.name, value, id=f"{env_id}-{field.name}-{value!r}"[:80]))
    return cases


@pytest.mark.parametrize(("env_id", "field", "value"), _scenario_cases())
def test_bad_input__scenario_field(env_id: str, field: str, value: Any):
    with pytest.raises(ValueError, match=field):
        gym.make(env_id, **{**SMALL[env_id], "scenario_overrides": {field: value}}).reset(seed=0)


#: env id -> (constructor argument, bad value).
CONSTRUCTOR_CASES: dict[str, list[tuple[str, Any]]] = {
    "UEC-v0": [("scenario", "nope"), ("scenario", 3), ("instance_seed", -1), ("instance_seed", 1.5),
               ("instance_seed", "0"), ("resample_instance", "false"), ("resample_instance", "yes"),
               ("reserved_priority", "maybe"), ("reserved_priority", None), ("render_mode", "no-such-mode"),
               ("scenario_overrides", {"no_such_field": 1})],
    "OINC-v0": [("scenario", "nope"), ("retraining", "nope"), ("retraining", None), ("psi", -1.0), ("psi", "x"),
                ("retraining_share", 1.5), ("retraining_share", 0.0), ("retraining_share", "half"),
                ("observation", "nope"), ("instance_seed", -1), ("instance_seed", "0"), ("resample_instance", "false"),
                ("drain_max_slots", -5), ("render_mode", "no-such-mode"), ("scenario_overrides", {"no_such_field": 1})],
    "ASET-v0": [("topology", "nope"), ("topology", 3), ("lam", -1.0), ("lam", 0.0), ("lam", "x"), ("lam", 1e9),
                ("instance_seed", -1), ("instance_seed", "0"), ("resample_instance", "false"), ("horizon", 0),
                ("horizon", 2.5), ("theta", 1.5), ("theta", -0.1), ("obs_layout", "3d"), ("render_mode", "no-such-mode"),
                ("scenario_overrides", {"no_such_field": 1})],
    "ASET-v1": [("topology", "nope"), ("lam", 0.0), ("instance_seed", -1), ("horizon", 0), ("theta", 1.5),
                ("obs_layout", "3d"), ("scenario_overrides", {"no_such_field": 1})],
    "CoRaiS-v0": [("scale", "nope"), ("scale", (0, 1, 2)), ("scale", (3, 5, 10)), ("scale", "x-y-z"), ("instance_seed", -1),
                  ("instance_seed", "0"), ("flat_observation", "false"), ("characteristic", "nope"),
                  ("scenario_overrides", {"no_such_field": 1})],
    "CoRaiS-v1": [("scale", "nope"), ("scale", (3, 5, 10)), ("instance_seed", -1), ("flat_observation", "false"),
                  ("characteristic", "nope"), ("scenario_overrides", {"no_such_field": 1})],
}


@pytest.mark.filterwarnings("ignore:.*render_mode='human'.*:UserWarning")  # gym.make's own advisory, then ours
@pytest.mark.parametrize(
    ("env_id", "argument", "value"),
    [pytest.param(e, a, v, id=f"{e}-{a}-{v!r}") for e, cases in CONSTRUCTOR_CASES.items() for a, v in cases],
)
def test_bad_input__constructor_argument(env_id: str, argument: str, value: Any):
    name = "no_such_field" if argument == "scenario_overrides" else argument
    with pytest.raises(ValueError, match=name):
        gym.make(env_id, **{**SMALL[env_id], argument: value}).reset(seed=0)


RESET_CASES: list[tuple[dict[str, Any], str]] = [
    ({"seed": -1}, "seed"),
    ({"options": {"instanse": None}}, "instanse"),
    ({"options": {"instance": "x"}}, "instance"),
    ({"options": {"instance": 3}}, "instance"),
    ({"options": {"resample": True, "typo": 1}}, "typo"),
]


@pytest.mark.parametrize("env_id", list(SMALL))
@pytest.mark.parametrize(("kwargs", "name"), RESET_CASES, ids=[n + "-" + repr(k)[:30] for k, n in RESET_CASES])
def test_bad_input__reset(env_id: str, kwargs: dict[str, Any], name: str):
    env = gym.make(env_id, **SMALL[env_id])
    with pytest.raises(ValueError, match=name):
        env.reset(**kwargs)


def _bad_actions(env: gym.Env) -> list[Any]:
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        return ["1", 1.5, 2.0, -1, int(space.n), np.array([0, 1]), None, [0]]
    shape = space.shape
    return ["1", 1.5, None, np.zeros((*shape[:-1], shape[-1] + 1), dtype=np.int64),
            np.full(shape, -1, dtype=np.int64), np.zeros(shape, dtype=np.float64) + 0.5]


ACTION_CASES = [(env_id, i) for env_id in SMALL for i in range(len(_bad_actions(gym.make(env_id, **SMALL[env_id]))))]


@pytest.mark.parametrize(("env_id", "index"), ACTION_CASES)
def test_bad_input__action(env_id: str, index: int):
    env = gym.make(env_id, **SMALL[env_id]).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(_bad_actions(env)[index])


@pytest.mark.parametrize("env_id", list(SMALL))
def test_bad_input__step_before_reset_and_after_the_end(env_id: str):
    env = gym.make(env_id, **SMALL[env_id]).unwrapped
    with pytest.raises(RuntimeError, match="reset"):
        env.step(env.action_space.sample())
    env.reset(seed=0)
    done = False
    while not done:
        mask = getattr(env, "action_masks", None)
        action = env.action_space.sample(mask=mask().astype(np.int8)) if (
            mask is not None and isinstance(env.action_space, gym.spaces.Discrete)) else env.action_space.sample()
        _, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    with pytest.raises(RuntimeError, match="reset"):
        env.step(env.action_space.sample())


# ------------------------------------------------------------------------------------------------ train.py
TRAIN_CASES: list[tuple[str, str]] = [
    ("steps=-1", "steps"), ("seed=-1", "seed"), ("n_envs=0", "n_envs"), ("threads=0", "threads"),
    ("checkpoint_freq=0", "checkpoint_freq"), ("eval.episodes=0", "eval.episodes"), ("eval.freq=-1", "eval.freq"),
    ("eval.seed=-1", "eval.seed"), ("algo.gamma=1.5", "gamma"), ("algo.gamma=0", "gamma"), ("algo.tau=2.0", "tau"),
    ("algo.tau=0", "tau"), ("algo.batch_size=0", "batch_size"), ("algo.buffer_size=0", "buffer_size"),
    ("algo.learning_rate=0", "learning_rate"), ("algo.learning_rate=-1e-3", "learning_rate"),
    ("algo.learning_starts=-1", "learning_starts"), ("algo.train_freq=0", "train_freq"),
    ("algo.gradient_steps=0", "gradient_steps"), ("algo.target_entropy_ratio=1.5", "target_entropy_ratio"),
    ("algo.target_entropy_ratio=0", "target_entropy_ratio"), ("algo.batch_size=200000", "batch_size"),
    ("algo.ent_coef_init=0", "ent_coef_init"), ("algo.update_ratio=0", "update_ratio"),
    ("algo.policy_kwargs.net_arch=huge", "net_arch"), ("+algo.policy_kwargs.head=agents.nowhere:Head", "head"),
    ("env.wrappers=[offline.uec.features:LPFeatures] vec_env=native", "vec_env"),
    # issue 26: one seed range for every seed key, unknown env kwargs and added keys named before any folder
    ("seed=4294967296", "seed"), ("seed=9223372036854775808", "seed"), ("eval.seed=18446744073709551616", "eval.seed"),
    ("+env.kwargs.foo=1", "foo"), ("+env.kwargs.reserved_priorty=preempt", "reserved_priorty"),
    ("+quickk=1", "quickk"), ("+eval.foo=1", "foo"),
    # issue 26, second round of probes: an empty out= (it wrote the run into the working directory), a class key
    # naming a function (a raw AttributeError at model build), a misspelt reference (silently replaced)
    ("out=''", "out"), ("+algo.policy_kwargs.features_extractor_class=os:getcwd", "features_extractor_class"),
    ("+algo.policy_kwargs.activation_fn=agents.nowhere:Relu", "activation_fn"), ("env.reference_policy=rescu", "reference_policy"),
    ("+env.kwargs.render_mode=1", "render_mode"),
    # issue 37: size keys have an upper bound, checked before anything is allocated (n_envs=10**20 took 9.5 GB)
    ("n_envs=100000000000000000000", "n_envs"), ("n_envs=5000", "n_envs"), ("steps=10000000000000", "steps"),
    ("algo.buffer_size=1000000000000", "buffer_size"), ("algo.batch_size=100000000000", "batch_size"),
    ("eval.episodes=10000000", "episodes"),
]
DQN_CASES: list[tuple[str, str]] = [
    ("algo.exploration_fraction=1.5", "exploration_fraction"), ("algo.exploration_final_eps=-0.1", "exploration_final_eps"),
    ("algo.exploration_initial_eps=2", "exploration_initial_eps"), ("algo.target_update_interval=0", "target_update_interval"),
    ("algo.batch_size=0", "batch_size"), ("algo.gamma=1.5", "gamma"), ("algo.max_grad_norm=-1", "max_grad_norm"),
    ("algo.update_ratio=0.01", "update_ratio"),
]
TRAIN_FIT_CASES: list[tuple[list[str], str]] = [
    (["env=oinc-v0", "algo=dqn"], "algo"), (["env=corais-v0", "algo=sac"], "algo"),
    (["env=uec-v0", "algo=corais"], "algo"), (["env=oinc-v0", "algo=corais_uec"], "algo"),
]


def _train_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("config", overrides=overrides)


@pytest.mark.parametrize(("override", "key"), TRAIN_CASES)
def test_bad_input__train_sac_key(override: str, key: str, tmp_path: Path):
    from edge_sched_gym import train

    parts = override.split()
    with pytest.raises(ValueError, match=key.split(".")[-1]):
        train.run(_train_cfg(["env=uec-v0", "algo=sac", f"out={tmp_path / 'runs'}", *parts]), overrides=parts)
    assert not (tmp_path / "runs").exists(), "no run folder after a validation error"


@pytest.mark.parametrize(("override", "key"), DQN_CASES)
def test_bad_input__train_dqn_key(override: str, key: str, tmp_path: Path):
    from edge_sched_gym import train

    with pytest.raises(ValueError, match=key):
        train.run(_train_cfg(["env=uec-v0", "algo=dqn", f"out={tmp_path / 'runs'}", override]), overrides=[override])
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("overrides", "key"), TRAIN_FIT_CASES)
def test_bad_input__train_algo_that_does_not_fit_the_env(overrides: list[str], key: str, tmp_path: Path):
    from edge_sched_gym import train

    with pytest.raises(ValueError, match=key):
        train.run(_train_cfg([*overrides, f"out={tmp_path / 'runs'}"]), overrides=overrides)
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------------------------- evaluate.py
EVALUATE_CASES: list[tuple[list[str], str]] = [
    (["instances=0"], "instances"), (["episodes=0"], "episodes"), (["seed=-1"], "seed"), (["instances=-3"], "instances"),
    (["policies=[nope]"], "nope"), (["policies=[]"], "policies"), (["env=oinc-v0", "policies=[nope+aret]"], "nope"),
    (["env=oinc-v0", "policies=[greedy+nope]"], "nope"), (["env=corais-v0", "policies=[corais_2k]"], "corais_2k"),
    (["env=aset-v0", "policies=[fastest]"], "fastest"), (["+evaluation_kwargs.no_such_option=1"], "no_such_option"),
    (["env=corais-v0", "+evaluation_kwargs.reference=nope"], "reference"),
    # issue 26: unknown keys (added ones too), env kwargs and seeds, before anything is written
    (["+quickk=1"], "quickk"), (["+env.kwargs.foo=1"], "foo"), (["env=oinc-v0", "+env.kwargs.reserved_priority=x"],
                                                                  "reserved_priority"),
    (["seed=4294967296"], "seed"), (["seed=18446744073709551616"], "seed"), (["+env.typo=1"], "typo"),
    (["experiment=papers", "+quickk=1"], "quickk"), (["experiment=papers", "instances=3"], "instances"),
    (["experiment=papers", "publish=maybe"], "publish"), (["experiment=ladder", "+ladder_env=[UEC-v0]"], "ladder_env"),
    (["experiment=rescue_fig7", "publish=maybe"], "publish"),
    # second round of probes: errors found once the output folder existed now leave no folder
    (["+env.kwargs.render_mode=1"], "render_mode"), (["env.kwargs.scenario=tiny", "policies=[rescue]",
                                                       "instances=1", "episodes=1", "sweeps=[{name: a}]"], "parameter"),
    (["env.kwargs.scenario=tiny", "+evaluation_kwargs.policy_kwargs={rescue: {foo: 1}}", "policies=[rescue]",
      "instances=1", "episodes=1"], "foo"),
    # issue 37: render is a bool (render=maybe was taken as true); instances and episodes have an upper bound
    (["render=maybe"], "render"), (["render=1"], "render"), (["instances=10000000"], "instances"),
    (["episodes=100000000000000000000"], "episodes"),
]


def _evaluate_cfg(overrides: list[str]):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("evaluate", overrides=["progress=false", *overrides])


@pytest.mark.parametrize(("overrides", "key"), EVALUATE_CASES)
def test_bad_input__evaluate_key(overrides: list[str], key: str, tmp_path: Path):
    from edge_sched_gym import evaluate

    out = tmp_path / "out"
    with pytest.raises(ValueError, match=key):
        evaluate.run(_evaluate_cfg([*overrides, f"out={out}"]))
    assert not out.exists(), "no output folder after a validation error"


# ------------------------------------------------------------------------------------- the command lines
#: (script, arguments, what the one ``error:`` line must contain: the key, or the whole message)
CLI_CASES: list[tuple[str, list[str], str]] = [
    ("train.py", ["algo.gamma=1.5"], "gamma"),
    ("train.py", ["seed=-1"], "seed"),
    ("train.py", ["out=/proc/edge_sched_gym_not_writable"], "out"),
    ("evaluate.py", ["instances=0"], "instances"),
    ("evaluate.py", ["out=/proc/edge_sched_gym_not_writable"], "out"),
    ("train.py", ["resume="], "error: resume= is empty"),
    ("train.py", ["seed=9223372036854775808"], "error: seed=9223372036854775808 is invalid"),
    ("train.py", ["+env.kwargs.foo=1"], "foo"),
    ("train.py", ["env=uec-v0", "algo=sac", "+env.kwargs.foo=1"], "error: env.kwargs.foo is not an argument of UEC-v0"),
    ("evaluate.py", ["+quickk=1"], "quickk"),
    ("evaluate.py", ["experiment=papers", "quick=true", "+quickk=1"], "error: quickk is not a key of evaluate.py"),
    ("evaluate.py", ["+env.kwargs.foo=1"], "error: env.kwargs.foo is not an argument of UEC-v0"),
    ("evaluate.py", ["seed=18446744073709551616"], "error: seed=18446744073709551616 is invalid"),
    # issue 37: keys under hydra. that Hydra does not define were silently accepted
    ("train.py", ["+hydra.foo=1"], "hydra.foo"), ("evaluate.py", ["+hydra.foo=1"], "hydra.foo"),
    ("train.py", ["+hydra.job.bar=1"], "hydra.job.bar"), ("evaluate.py", ["render=maybe"], "render"),
    ("train.py", ["n_envs=100000000000000000000"], "n_envs"),
]


@pytest.fixture(scope="module")
def cli_results(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[subprocess.CompletedProcess, Path]]:
    """Every ``CLI_CASES`` command run once, two at a time (each is ~3 s of interpreter start-up and imports), each
    in its own empty folder with ``out=`` inside it unless the case gives one: case index -> (result, folder)."""
    from concurrent.futures import ThreadPoolExecutor

    def run(case: int) -> tuple[subprocess.CompletedProcess, Path]:
        script, args, _ = CLI_CASES[case]
        folder = tmp_path_factory.mktemp(f"cli{case}")
        out = [] if any(a.startswith("out=") for a in args) else [f"out={folder / 'out'}"]
        return subprocess.run([sys.executable, str(ROOT / script), *args, *out, "progress=false"], cwd=folder,
                              capture_output=True, text=True, timeout=180), folder

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(enumerate(pool.map(run, range(len(CLI_CASES)))))


@pytest.mark.parametrize("case", range(len(CLI_CASES)), ids=[f"{s}-{' '.join(a)}" for s, a, _ in CLI_CASES])
def test_bad_input__command_line_exits_2_with_one_error_line_naming_the_key(case: int, cli_results):
    """Exit status 2, an ``error:`` line naming the key (or the case's whole message), no traceback, and neither
    an output folder nor a run folder left behind."""
    result, folder = cli_results[case]
    expected = CLI_CASES[case][2]
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr and expected in result.stderr, result.stderr[-2000:]
    assert not (folder / "out").exists() and not (folder / "runs").exists()


@pytest.mark.parametrize("overrides", [[], ["hydra.job.chdir=false"], ["+hydra.job.env_set.X=1"],
                                       ["hydra.run.dir=/tmp/x"], ["hydra.verbose=true"]])
def test_bad_input__hydra_keys_that_hydra_defines_are_accepted(overrides: list[str]):
    from edge_sched_gym.train import check_hydra_keys

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose("evaluate", overrides=overrides, return_hydra_config=True)
    check_hydra_keys(cfg.hydra)  # no error


@pytest.mark.parametrize(("override", "key"), [("+hydra.foo=1", "hydra.foo"), ("+hydra.job.bar=1", "hydra.job.bar"),
                                               ("+hydra.run.where=1", "hydra.run.where")])
def test_bad_input__hydra_keys_that_hydra_does_not_define_are_refused(override: str, key: str):
    from edge_sched_gym.train import check_hydra_keys

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose("evaluate", overrides=[override], return_hydra_config=True)
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        check_hydra_keys(cfg.hydra)


# ------------------------------------------------------------------------------------------- interrupts
def test_bad_input__evaluate_interrupted_says_what_was_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Ctrl-C during the evaluation: an EvaluationInterrupted (a KeyboardInterrupt) naming the files written so far,
    and the folder kept."""
    from edge_sched_gym import evaluate

    def interrupted(cfg: Any, out_dir: Path) -> list[dict]:
        (out_dir / "partial.csv").write_text("policy\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate, "evaluate_once", interrupted)
    out = tmp_path / "out"
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(evaluate.EvaluationInterrupted) as stop:
        evaluate.run(_evaluate_cfg(["env.kwargs.scenario=tiny", "policies=[random]", "instances=1", "episodes=1",
                                    f"out={out}"]))
    assert stop.value.out_dir == out and stop.value.written == ["config.yaml", "partial.csv"]
    assert "config.yaml" in str(stop.value) and "partial.csv" in str(stop.value)
    assert (out / "config.yaml").exists()
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers, "handlers restored"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_bad_input__evaluate_command_line_interrupted_exits_promptly_with_one_line(sig: int, tmp_path: Path):
    """A signal during a long evaluation: exit status 130, one line naming what was written, no traceback."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(ROOT / "evaluate.py"), "env=uec-v0", "instances=1000",
                             "episodes=1000", f"out={out}", "progress=false"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # as from a terminal: a test run started in the background (`pytest &`) inherits an
                            # ignored SIGINT, which Python (and so evaluate.py) rightly keeps ignoring
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for _ in range(1200):  # the folder exists once validation passed and the evaluation started
            if (out / "config.yaml").exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()[-2000:] if proc.stderr else ""
        time.sleep(0.5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    assert "interrupted" in err and "config.yaml" in err
