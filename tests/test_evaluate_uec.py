"""evaluate.py (contracts 3 and 4) on UEC-v0: composition, bounds, outputs, sweeps and bad input."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from edge_sched_gym import evaluate
from envs.uec.generator import PRESETS

CONF = str(Path(__file__).resolve().parents[1] / "edge_sched_gym" / "conf")


def config(*overrides: str):
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("evaluate", overrides=["progress=false", *overrides])


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_evaluate__uec_default_preset_stays_below_the_lp_bound(tmp_path, capsys):
    out = evaluate.run(config("env=uec-v0", "instances=1", "episodes=4", f"out={tmp_path}"))
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path)
    rows = read_csv(out / "summary.csv")
    assert [r["policy"] for r in rows] == ["rescue", "rescue_fallback", "pickconfigs", "srs", "sumita", "cvs", "random"]
    for row in rows:
        assert float(row["profit_mean"]) <= float(row["lp_bound"])
        assert float(row["competitive_ratio"]) == pytest.approx(float(row["profit_mean"]) / float(row["lp_bound"]))
        assert float(row["reserved_met"]) == 1.0 and float(row["invalid_actions"]) == 0.0
        assert float(row["decision_us"]) > 0
        if row["policy"] not in ("rescue", "rescue_fallback"):  # the baselines' safe check: never pre-empted
            assert float(row["preemptions"]) == 0.0
    assert float(rows[0]["value_ratio"]) == pytest.approx(float(rows[0]["value_bound"]) / float(rows[0]["lp_bound"]))
    assert float(rows[0]["vs_rescue"]) == pytest.approx(1.0)
    assert float(rows[0]["value_bound"]) >= 0.5 * float(rows[0]["lp_bound"])  # Theorem 1 on this instance
    assert max(float(r["vs_best_baseline"]) for r in rows[2:]) == pytest.approx(1.0)
    for name in ("uec_profit.png", "uec_over_time.png", "uec_episodes.csv", "uec_over_time.csv", "config.yaml"):
        assert (out / name).is_file()
    assert len(read_csv(out / "uec_episodes.csv")) == 7 * 4


def test_evaluate__rescue_is_half_competitive_without_reserved_tasks(tmp_path):
    cfg = config(
        "env=uec-v0",
        "policies=[rescue]",
        "instances=1",
        "episodes=20",
        "+env.kwargs.scenario_overrides.num_reserved=0",
        f"out={tmp_path}",
    )
    (row,) = read_csv(evaluate.run(cfg) / "summary.csv")
    assert float(row["competitive_ratio"]) >= 0.5


def test_evaluate__same_seeds_give_the_same_table(tmp_path):
    args = ("env=uec-v0", "env.kwargs.scenario=tiny", "instances=2", "episodes=3", "seed=4")
    first = read_csv(evaluate.run(config(*args, f"out={tmp_path / 'a'}")) / "summary.csv")
    second = read_csv(evaluate.run(config(*args, f"out={tmp_path / 'b'}")) / "summary.csv")
    keep = ("policy", "profit_mean", "lp_bound", "uec_utilisation", "accepted")
    assert [{k: r[k] for k in keep} for r in first] == [{k: r[k] for k in keep} for r in second]


def test_evaluate__default_out_folder_is_under_the_git_ignored_outputs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = config("env=uec-v0", "env.kwargs.scenario=tiny", "policies=[random]", "instances=1", "episodes=1")
    out = evaluate.run(cfg)
    assert out.parent == Path("outputs") and out.name.startswith("uec-v0__")
    assert not (tmp_path / "results").exists()
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(out)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("policies=[rescue,nonsense]", r"nonsense.*valid policies: \['cvs', (.*, )?'pickconfigs'"),
        ("instances=0", "instances=0 is invalid"),
        ("episodes=-2", "episodes=-2 is invalid"),
        ("seed=-1", "seed=-1 is invalid"),
        ("instances=two", "instances='two' is invalid"),
    ],
)
def test_evaluate__bad_input_fails_at_once_naming_the_choices(tmp_path, override, message):
    with pytest.raises(ValueError, match=message):
        evaluate.run(config("env=uec-v0", override, f"out={tmp_path}"))
    assert not any(tmp_path.iterdir())  # nothing was run


def test_evaluate__unknown_env_lists_the_choices():
    with pytest.raises(Exception, match="uec-v0"):
        config("env=nonsense")


def test_evaluate__sweep_writes_csv_and_png_per_contract_4(tmp_path):
    cfg = config("env=uec-v0", "env.kwargs.scenario=tiny", "policies=[rescue,pickconfigs]", "instances=1", "episodes=2")
    cfg.out = str(tmp_path)
    cfg.sweeps = [
        {"name": "servers", "parameter": "env.kwargs.scenario_overrides.num_servers", "values": [1, 2],
         "metrics": ["profit_mean", "competitive_ratio"]},
        {"name": "family", "parameter": "env.kwargs.scenario_overrides.duration_family", "values": ["normal", "uniform"],
         "overrides": {"env.kwargs.scenario_overrides.mean_arrival_prob": 0.3}},
    ]
    evaluate.run(cfg)
    rows = read_csv(tmp_path / "servers.csv")
    assert next(iter(rows[0])) == "num_servers"
    assert [(r["num_servers"], r["policy"]) for r in rows] == [
        ("1", "rescue"), ("1", "pickconfigs"), ("2", "rescue"), ("2", "pickconfigs")
    ]
    assert (tmp_path / "servers.png").is_file() and (tmp_path / "family.png").is_file()
    assert (tmp_path / "servers" / "2" / "summary.csv").is_file()
    assert len(read_csv(tmp_path / "summary.csv")) == 8
    assert (tmp_path / "family" / "uniform" / "uec_profit.png").is_file()


def test_evaluate__swept_parameter_that_is_also_a_result_column_keeps_both(tmp_path):
    """OINC's equal-share sweep: the swept retraining_share and the measured one are distinct columns
    (Dedas gives exactly the share it is set to, so the two must agree row by row)."""
    cfg = config("experiment=oinc_equal_share", "env.kwargs.scenario=tiny", "policies=[liu+dedas]", "instances=1",
                 "episodes=1")
    cfg.out = str(tmp_path)
    cfg.sweeps[0]["values"] = [0.5, 0.7]
    evaluate.run(cfg)
    rows = read_csv(tmp_path / "oinc_equal_share.csv")
    assert [float(r["swept_retraining_share"]) for r in rows] == [0.5, 0.7]
    assert [float(r["retraining_share"]) for r in rows] == pytest.approx([0.5, 0.7])


@pytest.mark.parametrize("name", ["rescue_fig6", "rescue_fig7", "rescue_fig8", "rescue_fig9"])
def test_evaluate__rescue_experiments_compose_with_valid_sweeps(name):
    cfg = config(f"experiment={name}")
    assert cfg.env.id == "UEC-v0" and cfg.sweeps
    evaluate.resolve_settings(cfg)
    for sweep in cfg.sweeps:
        assert sweep.parameter.startswith("env.kwargs.scenario_overrides.")
        fixed = {k.split(".")[-1]: v for k, v in (sweep.get("overrides") or {}).items()}
        for value in OmegaConf.to_container(sweep["values"]):
            PRESETS["paper"].replace(**{**fixed, sweep.parameter.split(".")[-1]: value})  # raises if invalid


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = Path(__file__).resolve().parents[1] / "evaluate.py"
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_evaluate__command_line_prints_the_folder_last_and_fails_cleanly(tmp_path):
    done = run_cli("env=uec-v0", "env.kwargs.scenario=tiny", "policies=[random]", "instances=1", "episodes=1",
                   "progress=false", f"out={tmp_path / 'ok'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(tmp_path / "ok")
    assert (tmp_path / "ok" / "summary.csv").is_file()
    bad = run_cli("env=uec-v0", "policies=[bogus]", cwd=tmp_path)
    assert bad.returncode == 2 and "valid policies" in bad.stderr


def _sac_run(tmp_path: Path) -> Path:
    """A UEC-v0 SAC run folder as train.py writes it, with an (untrained) checkpoint."""
    import gymnasium as gym

    from agents.masking import infer_mask_dim
    from agents.sac import DiscreteSAC
    from edge_sched_gym import train
    from envs.problems import wrap

    run_dir = tmp_path / "runs" / "uec-v0__sac__0__x"
    with initialize_config_dir(config_dir=str(train.CONF_DIR), version_base="1.3"):
        prepared = train.prepare(compose("config", overrides=["env=uec-v0", "algo=sac", "steps=100"]))
    (run_dir / "checkpoints").mkdir(parents=True)
    OmegaConf.save(prepared.cfg, run_dir / "config.yaml")
    env = wrap(gym.make("UEC-v0"), prepared.env["wrappers"])  # the main job's NetScoreFeatures
    model = DiscreteSAC("MlpPolicy", env, mask_dim=infer_mask_dim(env), seed=0, device="cpu",
                        policy_kwargs={"net_arch": [16]})
    model.save(run_dir / "checkpoints" / "model_0_steps.zip")
    return run_dir


def test_evaluate__checkpoint_zip_is_a_policy_and_a_run_of_another_env_is_refused(tmp_path):
    run_dir = _sac_run(tmp_path)
    checkpoint = run_dir / "checkpoints" / "model_0_steps.zip"
    evaluate.run(config("env=uec-v0", f"policies=[{checkpoint}]", "instances=1", "episodes=1", f"out={tmp_path / 'ok'}"))
    rows = read_csv(tmp_path / "ok" / "summary.csv")
    assert [r["policy"] for r in rows] == [str(checkpoint)] and float(rows[0]["profit_mean"]) >= 0
    with pytest.raises(ValueError, match=rf"{run_dir} was trained on UEC-v0, not on OINC-v0"):
        evaluate.run(config("env=oinc-v0", f"policies=[{run_dir}]", f"out={tmp_path / 'bad'}"))
    with pytest.raises(ValueError, match=r"model_0_steps.zip was trained on UEC-v0, not on CoRaiS-v0"):
        evaluate.run(config("env=corais-v0", f"policies=[{checkpoint}]", f"out={tmp_path / 'bad'}"))
    with pytest.raises(ValueError, match="out=/proc/x is not writable"):
        evaluate.run(config("env=uec-v0", "policies=[random]", "out=/proc/x"))
    assert not (tmp_path / "bad").exists()
