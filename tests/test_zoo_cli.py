"""``python -m agents.zoo`` (issue 37): ``enjoy`` plays an rl-zoo3 folder through the suite's safe loaders and refuses
crafted ones (a ``!!python/object/apply`` tag in args.yml / config.yml, a pickled entry in the model zip, a class
outside the allow-list, an env id with a module part) with nothing executed; bad option values and rl-zoo3's own
errors are one ``error:`` line; ``sac_d`` trains; a missing module is named as it is."""

from __future__ import annotations

import base64
import builtins
import io
import json
import pickle
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

pytest.importorskip("rl_zoo3", reason="rl-zoo3 is not installed (pip install rl_zoo3, or the dev extra)")

import agents.zoo as zoo
from agents.loading import UnsafeFileError
from agents.zoo.enjoy import load_zoo_model


class _Payload:
    """Unpickling (or constructing through a python/ YAML tag) this writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


#: rl-zoo3 sets torch's thread count and agents.zoo turns distribution checks off: undone after each test
pytestmark = pytest.mark.usefixtures("restore_torch")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """``python -m agents.pretrained export=uec-v0-sac`` once: an rl-zoo3 folder this suite wrote."""
    from agents.zoo.export import export_pretrained

    out = tmp_path_factory.mktemp("zoo") / "agents"
    export_pretrained("uec-v0-sac", out)
    return out


def _copy(exported: Path, tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "agents"
    shutil.copytree(exported, folder)
    return folder, folder / "sac_d" / "UEC-v0_1"


def _main(monkeypatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["agents.zoo", *args])
    zoo.main()


def test_zoo_cli__enjoy_plays_an_export_through_the_safe_loader(exported, tmp_path, monkeypatch, capsys):
    from agents.sac import DiscreteSAC

    model, env = load_zoo_model(exported, "sac_d", "UEC-v0", 1)
    assert isinstance(model, DiscreteSAC) and model.observation_space == env.observation_space
    monkeypatch.chdir(tmp_path)
    _main(monkeypatch, "enjoy", "--algo", "sac_d", "--env", "UEC-v0", "-f", str(exported), "--exp-id", "1",
          "--no-render", "--deterministic", "-n", "200")
    out = capsys.readouterr().out
    assert "safely" in out and "Mean reward" in out


@pytest.mark.parametrize("name", ["args.yml", "config.yml"])
def test_zoo_cli__a_python_tag_in_the_yaml_files_is_refused_and_never_run(name, exported, tmp_path, monkeypatch,
                                                                          capsys):
    folder, run = _copy(exported, tmp_path)
    marker = tmp_path / "marker.txt"
    (run / "UEC-v0" / name).write_text(f"env_kwargs: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(UnsafeFileError, match=rf"refusing .*{name}: it does not parse as plain YAML"):
        load_zoo_model(folder, "sac_d", "UEC-v0", 1)
    with pytest.raises(SystemExit) as stop:
        _main(monkeypatch, "enjoy", "--algo", "sac_d", "--env", "UEC-v0", "-f", str(folder), "--exp-id", "1")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: refusing") and "Traceback" not in err
    assert not marker.exists()
    assert yaml.unsafe_load(f"x: !!python/object/apply:os.system ['touch {marker}']") and marker.exists()  # real


def test_zoo_cli__a_pickled_entry_in_the_model_zip_is_refused_and_never_run(exported, tmp_path):
    folder, run = _copy(exported, tmp_path)
    marker = tmp_path / "marker.txt"
    zip_file = run / "UEC-v0.zip"
    out = io.BytesIO()
    with zipfile.ZipFile(zip_file) as archive, zipfile.ZipFile(out, "w") as target:
        for item in archive.infolist():
            payload = archive.read(item.filename)
            if item.filename == "data":
                data = json.loads(payload)
                data["evil"] = {":type:": "<class 'object'>",
                                ":serialized:": base64.b64encode(pickle.dumps(_Payload(marker))).decode()}
                payload = json.dumps(data).encode()
            target.writestr(item.filename, payload)
    zip_file.write_bytes(out.getvalue())
    with pytest.raises(UnsafeFileError, match="'evil' is a pickled object"):
        load_zoo_model(folder, "sac_d", "UEC-v0", 1)
    assert not marker.exists()


@pytest.mark.parametrize(("file", "content", "message"), [
    ("config.yml", {"env_wrapper": ["os.system"]}, "env_wrapper entry='os.system' is not on the allow-list"),
    ("config.yml", {"normalize": True}, "VecNormalize statistics file is a pickle"),
    ("config.yml", {"vec_env_wrapper": "x.Y"}, "vec_env_wrapper"),
    ("config.yml", {"surprise": 1}, r"\['surprise'\] are not keys"),
    ("args.yml", {"env": "CartPole-v1"}, "differs from --env"),
])
def test_zoo_cli__unknown_keys_and_classes_outside_the_allow_list_are_refused(file, content, message, exported,
                                                                               tmp_path):
    folder, run = _copy(exported, tmp_path)
    path = run / "UEC-v0" / file
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **content}))
    with pytest.raises(UnsafeFileError, match=message):
        load_zoo_model(folder, "sac_d", "UEC-v0", 1)


def test_zoo_cli__rl_zoo3s_own_ordered_dict_files_are_read_as_data(exported, tmp_path):
    from collections import OrderedDict

    folder, run = _copy(exported, tmp_path)
    path = run / "UEC-v0" / "args.yml"
    path.write_text(yaml.dump(OrderedDict(yaml.safe_load(path.read_text()))))  # as rl-zoo3's train writes it
    assert "python/object/apply:collections.OrderedDict" in path.read_text()
    load_zoo_model(folder, "sac_d", "UEC-v0", 1)


def test_zoo_cli__an_env_id_with_a_module_part_is_refused_before_gym_make(exported, tmp_path, monkeypatch):
    marker = tmp_path / "marker.txt"
    (tmp_path / "planted.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"--env='planted:UEC-v0' is not an env id of the problem registry"):
        load_zoo_model(exported, "sac_d", "planted:UEC-v0", 1)
    assert not marker.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["train", "--algo", "ppo", "--env", "UEC-v0", "-n", "-5"], "--n-timesteps='-5' is invalid: expected an integer >= 1"),
    (["train", "--algo", "ppo", "--env", "UEC-v0", "-n", "0"], "--n-timesteps='0' is invalid"),
    (["train", "--algo", "ppo", "--env", "UEC-v0", "--n-timesteps=x"], "--n-timesteps='x' is invalid"),
    (["train", "--algo", "ppo", "--env", "UEC-v0", "--seed", "-1"], "--seed='-1' is invalid"),
    (["train", "--algo", "nope", "--env", "UEC-v0"], r"--algo='nope' is invalid: rl-zoo3 knows \[.*'sac_d'"),
    (["enjoy", "--algo", "sac_d", "--env", "UEC-v0", "-n", "-1"], "--n-timesteps='-1' is invalid"),
])
def test_zoo_cli__bad_values_are_one_error_line_before_anything_runs(args, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        _main(monkeypatch, *args, "-f", "logs")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    import re

    assert re.search(message, err), err
    assert not (tmp_path / "logs").exists()


def test_zoo_cli__rl_zoo3s_own_errors_are_one_line(tmp_path, monkeypatch, capsys):
    conf = tmp_path / "conf.yml"
    conf.write_text("CartPole-v1: {policy: MlpPolicy}\n")  # no entry for UEC-v0: rl-zoo3 raises
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        _main(monkeypatch, "train", "--algo", "ppo", "--env", "UEC-v0", "--conf-file", str(conf), "-n", "10",
              "-f", "logs")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: ") and "Traceback" not in err


def test_zoo_cli__a_missing_module_is_named_not_reported_as_rl_zoo3(monkeypatch, capsys):
    real_import = builtins.__import__

    def failing(name, *args, **kwargs):
        if name == "rl_zoo3.cli":
            raise ModuleNotFoundError("No module named 'requests'", name="requests")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing)
    with pytest.raises(SystemExit, match=r"cannot be imported: No module named 'requests' \(pip install requests\)"):
        zoo.main(["train", "--algo", "ppo", "--env", "UEC-v0"])

    def absent(name, *args, **kwargs):
        if name == "rl_zoo3.cli":
            raise ModuleNotFoundError("No module named 'rl_zoo3'", name="rl_zoo3")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", absent)
    with pytest.raises(SystemExit, match="rl-zoo3 is not installed"):
        zoo.main(["train"])


def test_zoo_cli__requests_is_declared_where_rl_zoo3_is():
    import tomllib

    root = Path(__file__).resolve().parents[1]
    dev = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert any(d.startswith("requests") for d in dev)
    assert any(line.startswith("requests") for line in (root / "requirements.txt").read_text().splitlines())


def test_zoo_cli__sac_d_trains_on_uec_with_its_head(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _main(monkeypatch, "train", "--algo", "sac_d", "--env", "UEC-v0", "-n", "200", "-f", "logs", "--seed", "0",
          "--eval-freq", "-1", "--verbose", "0", "-params", "learning_starts:50")
    model = tmp_path / "logs" / "sac_d" / "UEC-v0_1" / "UEC-v0.zip"
    assert model.is_file()
    loaded, _ = load_zoo_model(tmp_path / "logs", "sac_d", "UEC-v0", 1)  # rl-zoo3's own folder, read safely
    assert type(loaded.policy.actor.logits_net).__name__ == "UECActionScorer"


def _train_error(monkeypatch, capsys, tmp_path, *args: str) -> str:
    """The one ``error:`` line of ``python -m agents.zoo train ...`` run in ``tmp_path`` (exit status 2)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        _main(monkeypatch, "train", "--algo", "ppo", *args, "-n", "10", "-f", "logs")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: ") and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "logs").exists()  # refused before rl-zoo3 made its log folder
    return err


def test_zoo_cli__train_refuses_a_conf_file_with_a_python_tag(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "X"
    conf = tmp_path / "conf.yml"
    conf.write_text(f"UEC-v0:\n  policy: MlpPolicy\n  n_timesteps: !!python/object/apply:os.system "
                    f"['touch {marker}']\n")
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "--conf-file", str(conf))
    assert "--conf-file='" in err and "python/ tags are never loaded" in err
    assert not marker.exists()


@pytest.mark.parametrize("policy_kwargs", [
    "dict(activation_fn=__import__('os').system('touch X'))",
    "dict(net_arch=[64], activation_fn=os.system)",
    "dict(head='os:system')",
    "dict(**{'a': 1})",
    "[x for x in (1,)]",
])
def test_zoo_cli__train_refuses_policy_kwargs_that_would_run_code(policy_kwargs, tmp_path, monkeypatch, capsys):
    conf = tmp_path / "conf.yml"
    conf.write_text(yaml.safe_dump({"UEC-v0": {"policy": "MlpPolicy", "n_timesteps": 10,
                                               "policy_kwargs": policy_kwargs}}))
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "--conf-file", str(conf))
    assert "UEC-v0.policy_kwargs" in err and ("refused" in err or "not on the allow-list" in err), err
    assert not (tmp_path / "X").exists()


def test_zoo_cli__train_refuses_code_in_other_evaluated_keys_and_options(tmp_path, monkeypatch, capsys):
    conf = tmp_path / "conf.yml"
    conf.write_text(yaml.safe_dump({"UEC-v0": {"policy": "MlpPolicy", "n_timesteps": 10,
                                               "normalize": "__import__('os').system('touch X')"}}))
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "--conf-file", str(conf))
    assert "UEC-v0.normalize" in err
    conf.write_text(yaml.safe_dump({"UEC-v0": {"policy": "MlpPolicy", "env_wrapper": ["os.system"]}}))
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "--conf-file", str(conf))
    assert "UEC-v0.env_wrapper='os.system' is not on the allow-list" in err
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "-params",
                       "policy_kwargs:__import__('os').system('touch X')")
    assert "-params policy_kwargs=" in err and "refused" in err
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "--hyper",
                       "policy_kwargs:__import__('os').system('touch X')")
    assert "--hyper is refused: give the option in full" in err
    assert not (tmp_path / "X").exists()


@pytest.mark.parametrize("name", ["conf.py", "conf"])
def test_zoo_cli__train_refuses_a_conf_file_rl_zoo3_would_run_or_import(name, tmp_path, monkeypatch, capsys):
    marker = tmp_path / "X"
    (tmp_path / name).write_text(f"open({str(marker)!r}, 'w').write('pwned')\nhyperparams = {{}}\n")
    (tmp_path / "conf.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\nhyperparams = {{}}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "--conf-file", name)
    assert "expected a .yml or .yaml file" in err
    shipped = str(zoo.hyperparams_file("ppo"))
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "--conf-file", shipped, "-conf", name)
    assert "expected a .yml or .yaml file" in err
    assert not marker.exists()


def test_zoo_cli__train_refuses_an_env_id_outside_the_registry(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "X"
    (tmp_path / "mymod.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "mymod:UEC-v0")
    assert "--env='mymod:UEC-v0' is not an env id of the problem registry" in err
    assert not marker.exists()
    err = _train_error(monkeypatch, capsys, tmp_path, "--env", "UEC-v0", "--env=mymod:UEC-v0")  # argparse: the last
    assert "--env='mymod:UEC-v0' is not an env id" in err
    err = _train_error(monkeypatch, capsys, tmp_path)  # rl-zoo3's default would be CartPole-v1
    assert "--env=None is not an env id" in err
    assert not marker.exists()


def test_zoo_cli__allow_listed_policy_kwargs_and_the_shipped_files_pass():
    for text in ["dict(net_arch=[64, 64], activation_fn=nn.ReLU, ortho_init=False, log_std_init=-2.0)",
                 "dict(optimizer_class=th.optim.Adam, head='agents.uec.sac_head:UECActionScorer')",
                 "dict(norm_obs=True, norm_reward=False)"]:
        zoo.check_expression(text, "policy_kwargs")
    with pytest.raises(ValueError, match="not on the allow-list"):
        zoo.check_expression("dict(activation_fn=nn.Module)", "policy_kwargs")
    for path in sorted(zoo.HYPERPARAMS_DIR.glob("*.yml")):
        assert zoo.read_conf_file(path)


@pytest.mark.parametrize("option", ["-i", "--trained-agent", "--trained"])
def test_zoo_train__refuses_a_trained_agent_zip(option, tmp_path):
    """rl-zoo3 would load it with SB3's pickle-reading load: refused before anything runs (an abbreviation too)."""
    from agents.zoo import check_train_inputs

    with pytest.raises(ValueError, match="trained-agent"):
        check_train_inputs(["train", "--algo", "ppo", "--env", "UEC-v0", option, str(tmp_path / "model.zip")])
