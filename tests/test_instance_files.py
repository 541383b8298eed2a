"""Instance files (issue 37, item 2): every registered env exports its instance and plays one read back.

Round trips for every env id of the problem registry, hand edits that change the env, and bad files that must
raise ValueError naming the field (``envs.common.instance_io``).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import envs  # noqa: F401  (registers the suite's problems)
from envs.common.instance_io import export_instance, instance_document, load_instance
from envs.problems import PROBLEMS

# the old ids (ASET-v0, CoRaiS-v0) are exported and read back too: Gymnasium's note that a -v1 exists is expected
pytestmark = pytest.mark.filterwarnings("ignore:.*is out of date.*:DeprecationWarning")

ENV_IDS = list(PROBLEMS)
STEPS = 40


def _same(a: Any, b: Any) -> bool:
    """Exact equality of two instances: every field, nested records, array dtypes and shapes included."""
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    return type(a) is type(b) and a == b


def _rewards(env: gym.Env, seed: int = 7, options: dict | None = None) -> list[float]:
    """Rewards of one (capped) episode under seeded random actions."""
    env.reset(seed=seed, options=options)
    env.action_space.seed(seed)
    rewards = []
    for _ in range(STEPS):
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        rewards.append(float(reward))
        if terminated or truncated:
            break
    return rewards


def _edit(src: Path, dst: Path, change) -> Path:
    """A hand edit: read the file as plain YAML, change it, write it back."""
    doc = yaml.safe_load(src.read_text())
    change(doc["instance"])
    dst.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None))
    return dst


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    """One exported YAML file per env id (the instance of ``instance_seed=0``)."""
    folder = tmp_path_factory.mktemp("instances")
    out = {}
    for env_id in ENV_IDS:
        env = gym.make(env_id, instance_seed=0)
        env.reset(seed=0)
        out[env_id] = Path(env.unwrapped.export_instance(str(folder / f"{env_id}.yaml")))
    return out


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_round_trip_reproduces_instance_and_episode(env_id: str, exported: dict[str, Path]) -> None:
    generated = gym.make(env_id, instance_seed=0)
    reference = _rewards(generated)
    loaded = load_instance(env_id, exported[env_id])
    assert _same(generated.unwrapped.instance, loaded)
    from_file = gym.make(env_id, instance_file=str(exported[env_id]))
    assert _rewards(from_file) == reference
    assert _same(from_file.unwrapped.instance, loaded)
    pinned = gym.make(env_id, instance_seed=1)  # another instance, replaced by the loaded one at reset
    assert _rewards(pinned, options={"instance": loaded}) == reference
    assert any(r != 0 for r in reference)  # the episode is not a trivial one


@pytest.mark.parametrize("env_id", ["UEC-v0", "CoRaiS-v1"])
def test_json_round_trip(env_id: str, tmp_path: Path) -> None:
    env = gym.make(env_id, instance_seed=0)
    env.reset(seed=0)
    path = export_instance(env.unwrapped.instance, env_id, tmp_path / "inst.json")
    assert path.read_text().lstrip().startswith("{")
    assert _same(load_instance(env_id, path), env.unwrapped.instance)


def test_uec_edited_weights_scale_profit(exported: dict[str, Path], tmp_path: Path) -> None:
    def double(inst: dict) -> None:
        inst["weight"]["data"] = [2 * w for w in inst["weight"]["data"]]

    edited = _edit(exported["UEC-v0"], tmp_path / "uec.yaml", double)
    base, doubled = gym.make("UEC-v0", instance_file=str(exported["UEC-v0"])), gym.make("UEC-v0",
                                                                                          instance_file=str(edited))
    np.testing.assert_array_equal(doubled.unwrapped.instance.weight, 2 * base.unwrapped.instance.weight)
    a, b = np.array(_rewards(base)), np.array(_rewards(doubled))
    assert a.any()
    np.testing.assert_allclose(b, 2 * a, rtol=1e-12)


def test_corais_edited_replicas_recompute_cost_tables(exported: dict[str, Path], tmp_path: Path) -> None:
    def more_replicas(inst: dict) -> None:
        inst["replicas"]["data"] = [2 * m for m in inst["replicas"]["data"]]

    edited = _edit(exported["CoRaiS-v1"], tmp_path / "corais.yaml", more_replicas)
    base = load_instance("CoRaiS-v1", exported["CoRaiS-v1"])
    env = gym.make("CoRaiS-v1", instance_file=str(edited))
    env.reset(seed=0)
    inst = env.unwrapped.instance
    np.testing.assert_array_equal(inst.replicas, 2 * base.replicas)
    np.testing.assert_allclose(inst.tables.cmp, base.tables.cmp / 2, rtol=1e-12)  # f_j(d) / m_j


def test_aset_edited_delays_recompute_worker_tables(exported: dict[str, Path], tmp_path: Path) -> None:
    def slower(inst: dict) -> None:
        inst["delay_ms"]["data"] = [[d + 5.0 for d in row] for row in inst["delay_ms"]["data"]]

    edited = _edit(exported["ASET-v1"], tmp_path / "aset.yaml", slower)
    base, inst = load_instance("ASET-v1", exported["ASET-v1"]), load_instance("ASET-v1", edited)
    np.testing.assert_allclose(inst.rtt_ms_sw, base.rtt_ms_sw + 10.0)
    env_base, env_edit = gym.make("ASET-v1", instance_file=str(exported["ASET-v1"])), gym.make(
        "ASET-v1", instance_file=str(edited))
    assert _rewards(env_base) != _rewards(env_edit)


def test_oinc_edited_cpu_changes_latency(exported: dict[str, Path], tmp_path: Path) -> None:
    def slow_cpus(inst: dict) -> None:
        inst["cpu_hz"]["data"] = [c / 4 for c in inst["cpu_hz"]["data"]]

    edited = _edit(exported["OINC-v0"], tmp_path / "oinc.yaml", slow_cpus)
    base, slow = (gym.make("OINC-v0", instance_file=str(p)) for p in (exported["OINC-v0"], edited))
    a, b = sum(_rewards(base)), sum(_rewards(slow))
    assert b < a  # rewards are negative latencies: slower edges, higher latency


def test_oinc_trace_instance_round_trips_with_its_horizon(tmp_path: Path) -> None:
    """OINC's trace CSV is drawn into the instance; its file then pins the trace and the horizon T."""
    rng = np.random.default_rng(0)
    rows = ["device,time,data_mb,megacycles"] + [
        f"d{i},{t},{rng.uniform(0.8, 1.6):.4f},{rng.uniform(100, 200):.2f}" for i in range(4) for t in range(10)]
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    overrides = {"num_devices": 3, "num_edges": 2, "horizon": 12, "workload": "trace",
                 "trace_path": str(tmp_path / "trace.csv")}
    env = gym.make("OINC-v0", scenario_overrides=overrides)
    path = env.unwrapped.export_instance(str(tmp_path / "trace.yaml"))
    from_file = gym.make("OINC-v0", instance_file=path)
    assert from_file.unwrapped.scenario.horizon == 12
    assert from_file.unwrapped.instance.trace_cycles.shape == (12, 3)
    assert _same(from_file.unwrapped.instance, env.unwrapped.instance)
    assert _rewards(from_file) == _rewards(env)


def _bad(exported: dict[str, Path], tmp_path: Path, env_id: str, change) -> Path:
    return _edit(exported[env_id], tmp_path / "bad.yaml", change)


@pytest.mark.parametrize(
    ("env_id", "change", "field"),
    [
        ("UEC-v0", lambda i: i.pop("alpha0"), "alpha0"),
        ("UEC-v0", lambda i: i.update(extra=1), "extra"),
        ("UEC-v0", lambda i: i["base_capacity"].update(shape=[3], data=i["base_capacity"]["data"][:3]),
         "base_capacity"),
        ("UEC-v0", lambda i: i["weight"].update(shape=[2]), "weight"),
        ("UEC-v0", lambda i: i["sla"].update(data=[-1] * len(i["sla"]["data"])), "sla"),
        ("UEC-v0", lambda i: i["sla"].update(data=[0.5] * len(i["sla"]["data"])), "sla"),
        ("UEC-v0", lambda i: i["capacity"]["data"][0].__setitem__(0, -2.0), "capacity"),
        ("UEC-v0", lambda i: i["reserved"]["server"].update(dtype="float64"), "reserved.server"),
        ("UEC-v0", lambda i: i.update(alpha_max="high"), "alpha_max"),
        ("OINC-v0", lambda i: i["cpu_hz"]["data"].__setitem__(0, -1.0), "cpu_hz"),
        ("OINC-v0", lambda i: i["slo_s"]["data"].__setitem__(0, float("nan")), "slo_s"),
        ("OINC-v0", lambda i: i.pop("full_rate_bps"), "full_rate_bps"),
        ("ASET-v1", lambda i: i["worker_cluster"]["data"].__setitem__(0, 999), "worker_cluster"),
        ("ASET-v1", lambda i: i["app_probs"]["data"][0].__setitem__(0, 5.0), "app_probs"),
        ("ASET-v1", lambda i: i.update(queueing="fifo"), "queueing"),
        ("ASET-v1", lambda i: i.update(net_key_sw=[[1.0]]), "net_key_sw"),  # derived: not a file field
        ("CoRaiS-v1", lambda i: i["req_d"]["data"].__setitem__(0, -3.0), "req_d"),
        ("CoRaiS-v1", lambda i: i["backlog"].pop("pred"), "backlog.pred"),
        ("CoRaiS-v1", lambda i: i["req_src"]["data"].__setitem__(0, 77), "req_src"),
    ],
)
def test_bad_file_names_the_field(env_id: str, change, field: str, exported: dict[str, Path], tmp_path: Path) -> None:
    path = _bad(exported, tmp_path, env_id, change)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        load_instance(env_id, path)
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        gym.make(env_id, instance_file=str(path))


def test_python_tag_is_refused_and_never_runs(exported: dict[str, Path], tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = exported["UEC-v0"].read_text().replace(
        "name: ", f"name: !!python/object/apply:os.system ['touch {marker}']\n_x: ", 1)
    path = tmp_path / "tagged.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match="instance_file"):
        load_instance("UEC-v0", path)
    assert not marker.exists()


def test_wrong_env_id_is_refused(exported: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="env_id='UEC-v0'"):
        load_instance("OINC-v0", exported["UEC-v0"])
    with pytest.raises(ValueError, match="env_id='ASET-v0'"):  # v0 and v1 instances differ in their queueing
        gym.make("ASET-v1", instance_file=str(exported["ASET-v0"]))
    with pytest.raises(ValueError, match="env_id"):
        load_instance("NoSuch-v0", exported["UEC-v0"])


def test_bad_paths_and_arguments(exported: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="instance_file"):
        gym.make("UEC-v0", instance_file=str(tmp_path / "missing.yaml"))
    env = gym.make("UEC-v0")
    with pytest.raises(ValueError, match="path"):
        env.unwrapped.export_instance(str(tmp_path / "inst.txt"))
    with pytest.raises(ValueError, match="folder"):
        env.unwrapped.export_instance(str(tmp_path / "no" / "inst.yaml"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="resample_instance"):
        gym.make("OINC-v0", instance_file=str(exported["OINC-v0"]), resample_instance=True)
    with pytest.raises(ValueError, match="scale"):
        gym.make("CoRaiS-v1", instance_file=str(exported["CoRaiS-v1"]), scale=(8, 4, 50))
    with pytest.raises(ValueError, match="scenario_overrides"):
        gym.make("UEC-v0", instance_file=str(exported["UEC-v0"]), scenario_overrides={"num_servers": 2})


def test_instance_file_is_an_accepted_env_kwarg() -> None:
    """evaluate.py and train.py pass ``env.kwargs`` through this check (``+env.kwargs.instance_file=...``)."""
    from agents.registry import check_env_kwargs

    for env_id in ENV_IDS:
        check_env_kwargs(env_id, {"instance_file": "my.yaml"})


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1e6, allow_subnormal=True), min_size=14, max_size=14))
def test_any_float_survives_the_file_exactly(weights: list[float]) -> None:
    """Floats are written at full precision: any weight vector reads back bit for bit."""
    env = gym.make("UEC-v0", scenario="paper")
    inst = env.unwrapped.instance
    assert inst.num_devices == len(weights)
    edited = dataclasses.replace(inst, weight=np.array(weights))
    with tempfile.TemporaryDirectory() as folder:
        back = load_instance("UEC-v0", export_instance(edited, "UEC-v0", Path(folder) / "w.yaml"))
    np.testing.assert_array_equal(back.weight, edited.weight)
    assert instance_document(back, "UEC-v0") == instance_document(edited, "UEC-v0")
