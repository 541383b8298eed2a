"""Model files are loaded with torch.load(weights_only=True): files the project writes load, the shipped
model loads unchanged, and a crafted pickle that would run code is refused before it runs anything."""

from __future__ import annotations

import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs  # noqa: F401
from agents.corais.model import CoRaiSNet, ModelConfig
from agents.corais.policy import MODEL_FILE, PRETRAINED_DIR, CoRaiSPolicy, load_model, save_model


class _Payload:
    """Unpickling this runs ``exec`` of code that writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


def _small_model(seed: int = 0) -> CoRaiSNet:
    torch.manual_seed(seed)
    return CoRaiSNet(ModelConfig(embed_dim=16, edge_layers=1, request_layers=1, heads=2, ff_hidden=32)).eval()


def _greedy_dispatch(model: CoRaiSNet, seed: int = 0) -> np.ndarray:
    env = gym.make("CoRaiS-v0")
    obs, info = env.reset(seed=seed)
    return CoRaiSPolicy(model, threads=None).act(obs, info)


def test_safe_loading__the_shipped_model_loads_weights_only_and_dispatches_as_before(tmp_path):
    path = PRETRAINED_DIR / MODEL_FILE
    blob = torch.load(path, map_location="cpu", weights_only=True)  # raises if the file needs unpickling code
    assert isinstance(blob["model_config"], dict)
    model, meta = load_model(path)
    assert meta["model_config"] == blob["model_config"]
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, blob["state_dict"][name]), name
    # re-saving through save_model keeps identical weights and the same greedy dispatch on fixed instances
    again, _ = load_model(save_model(tmp_path / "model.pt", model, **{k: v for k, v in meta.items() if k != "model_config"}))
    for seed in (0, 1):
        np.testing.assert_array_equal(_greedy_dispatch(again, seed), _greedy_dispatch(model, seed))


def test_safe_loading__save_model_round_trip_keeps_weights_and_plain_metadata(tmp_path):
    model = _small_model()
    path = save_model(tmp_path / "m.pt", model, batches=3, steps=np.int64(96), greedy_gap=np.float64(1.25),
                      history=[1.0, 2.0], folder=tmp_path, curve=np.arange(3.0))
    blob = torch.load(path, weights_only=True)
    assert type(blob["steps"]) is int and type(blob["greedy_gap"]) is float and blob["folder"] == str(tmp_path)
    assert torch.equal(blob["curve"], torch.arange(3.0, dtype=torch.float64))
    loaded, meta = load_model(path)
    assert meta["batches"] == 3 and meta["history"] == [1.0, 2.0] and meta["model_config"] == model.cfg.to_dict()
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name]), name


def test_safe_loading__training_state_with_optimiser_and_rng_states_round_trips(tmp_path):
    model = _small_model()
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.rand(2, 3, 10), torch.rand(2, 4, 6)).sum().backward()
    optimiser.step()
    rng = np.random.default_rng(5)
    state = {"optimizer": optimiser.state_dict(), "rng": {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state()},
             "batch": 7, "window": (1, 2)}
    _, meta = load_model(save_model(tmp_path / "ckpt.pt", model, trainer_state=state))
    saved = meta["trainer_state"]
    assert saved["batch"] == 7 and saved["window"] == (1, 2) and saved["rng"]["numpy"] == rng.bit_generator.state
    assert torch.equal(saved["rng"]["torch"], state["rng"]["torch"])
    twin = torch.optim.Adam(_small_model(1).parameters(), lr=1e-3)
    twin.load_state_dict(saved["optimizer"])
    for a, b in zip(twin.state_dict()["state"].values(), optimiser.state_dict()["state"].values()):
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_safe_loading__save_model_rejects_metadata_that_would_need_pickle(tmp_path):
    with pytest.raises(ValueError, match=r"notes\['when'\]=.*cannot be saved in a weights-only model file"):
        save_model(tmp_path / "m.pt", _small_model(), notes={"when": object()})
    with pytest.raises(ValueError, match="reserved"):
        save_model(tmp_path / "m.pt", _small_model(), state_dict={})
    assert not (tmp_path / "m.pt").exists()


@pytest.mark.parametrize("where", ["whole file", "inside a metadata key"])
def test_safe_loading__a_crafted_pickle_is_refused_without_running_its_code(tmp_path, where):
    marker = tmp_path / "marker.txt"
    path = tmp_path / "model.pt"
    payload = _Payload(marker)
    if where == "whole file":
        torch.save(payload, path)
    else:  # a genuine model file with a payload hidden in its metadata
        model = _small_model()
        torch.save({"model_config": model.cfg.to_dict(), "state_dict": model.state_dict(), "meta": payload}, path)
    with pytest.raises(ValueError, match=r"refusing to load .*not a weights-only .*model file"):
        load_model(path)
    assert not marker.exists()
    # the payload is real: an unrestricted unpickler runs it
    torch.load(path, weights_only=False)
    assert marker.read_text() == "pwned"


def test_safe_loading__a_plain_pickle_file_is_refused_too(tmp_path):
    marker = tmp_path / "marker.txt"
    path = tmp_path / "model.pt"
    path.write_bytes(pickle.dumps(_Payload(marker), protocol=2))  # legacy (non-zip) format
    with pytest.raises(ValueError, match="refusing to load"):
        load_model(path)
    assert not marker.exists()
