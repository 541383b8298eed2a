"""CoRaiS decoding as Policies (offline.protocol): greedy (argmax per request) and sampling(K) (best of K).

``load_corais_policy(run_dir, env, samples=None)`` loads a trained model from a run folder (its
``model.pt``, or ``checkpoint=`` another file in it) or, with ``run_dir=None``, the checkpoint shipped in
``agents/corais/pretrained/``. Sampling(K) scores its K decisions with the one cost model and therefore
reads ``env.unwrapped.instance``; greedy uses the observation only.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from agents.corais.model import EDGE_FEATURES, REQUEST_FEATURES, CoRaiSNet, ModelConfig
from envs.corais.dynamics import dispatch_cost

PRETRAINED_DIR = Path(__file__).resolve().parent / "pretrained"
MODEL_FILE = "model.pt"


def plain(value: Any, name: str = "value") -> Any:
    """``value`` as what ``torch.load(weights_only=True)`` reads back: tensors, None, bool, int, float,
    str, and lists / tuples / dicts (scalar keys; OrderedDicts stay ordered) of them. numpy scalars become Python numbers, numpy arrays
    tensors and paths strings; anything else raises ValueError naming ``name``."""
    if isinstance(value, np.generic):  # before int/float: np.float64 is a float subclass yet pickles as numpy
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):  # e.g. optimiser / RNG states (int keys) and state dicts (OrderedDict)
        items = [(plain(k, f"{name} key"), plain(v, f"{name}[{k!r}]")) for k, v in value.items()]
        bad = [k for k, _ in items if not (k is None or isinstance(k, (bool, int, float, str)))]
        if bad:
            raise ValueError(f"{name} has key(s) {bad!r}: expected str, int, float, bool or None keys")
        if isinstance(value, OrderedDict):
            out = OrderedDict(items)
            if isinstance(getattr(value, "_metadata", None), dict):  # what nn.Module.state_dict() attaches
                out._metadata = plain(value._metadata, f"{name}._metadata")  # type: ignore[attr-defined]
            return out
        return dict(items)
    if isinstance(value, (list, tuple)):
        items = [plain(v, f"{name}[{i}]") for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise ValueError(
        f"{name}={value!r} ({type(value).__name__}) cannot be saved in a weights-only model file: expected "
        "tensors, None, bool, int, float, str, numpy scalars/arrays, paths, or lists/tuples/dicts of them"
    )


def save_model(path: Path, model: CoRaiSNet, **extra: Any) -> Path:
    """Save the model config (a plain dict), the weights and any metadata in one file.

    The file holds only tensors and plain containers / numbers / strings (``plain``), so
    :func:`load_model` reads it with ``torch.load(..., weights_only=True)``, which never runs code from
    the file. ``extra`` values that cannot be stored that way raise ValueError naming the key.
    """
    reserved = sorted({"model_config", "state_dict"} & set(extra))
    if reserved:
        raise ValueError(f"save_model extra key(s) {reserved} are reserved: use other names")
    blob = {
        "model_config": plain(model.cfg.to_dict(), "model_config"),
        "state_dict": model.state_dict(),
        **{key: plain(value, key) for key, value in extra.items()},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(blob, path)
    return path


def load_model(path: Path, device: str = "cpu") -> tuple[CoRaiSNet, dict[str, Any]]:
    """Load a model saved by ``save_model``; returns it in eval mode with the saved metadata.

    The file is read with ``torch.load(..., weights_only=True)``: a file that needs anything beyond
    tensors and plain values to unpickle (e.g. crafted to run code) is refused with ValueError.
    """
    from agents.loading import load_config_model

    model, blob = load_config_model(path, device, "CoRaiS model file", lambda cfg: CoRaiSNet(ModelConfig(**cfg)))
    return model, {k: v for k, v in blob.items() if k != "state_dict"}


class CoRaiSPolicy:
    """The trained dispatcher: greedy (``samples=None``), best of ``samples`` sampled decisions, or, with
    ``search_time`` seconds, the learned dispatcher inside our iterated local search.

    With ``search_time``: the search starts from the better of the network's greedy dispatch and
    ``list_greedy``, and its kicks move requests to edges drawn from the network's probabilities
    (``offline.corais.search.iterated_local_search(kick_probs=...)``) until ``search_time`` seconds after
    the decision began (the forward pass included). Parameters: tuned.yaml's, as the ``ils_*`` rungs.

    ``threads`` sets torch's intra-op threads for the process (default 1: a greedy decision at
    (10, 5, 100) takes ~1 ms on one core, but hundreds of ms when two threads spin on a loaded machine).

    ``search_iterations`` (instead of, or with, ``search_time``): the same search stopped after that many kicks,
    deterministic given the policy seed (the load-independent twin of a timed search, e.g. ``corais_ils_it18``).
    """

    def __init__(
        self, model: CoRaiSNet, samples: int | None = None, device: str = "cpu", threads: int | None = 1,
        search_time: float | None = None, search_iterations: int | None = None,
    ) -> None:
        if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
            raise ValueError(f"samples={samples!r} is invalid: expected None (greedy) or an integer >= 1")
        if search_time is not None and (samples is not None or not search_time > 0):
            raise ValueError(f"search_time={search_time!r} is invalid with samples={samples!r}: expected "
                             "seconds > 0 with samples=None (the search replaces sampling)")
        if search_iterations is not None and (samples is not None or isinstance(search_iterations, bool)
                                              or not isinstance(search_iterations, int) or search_iterations < 1):
            raise ValueError(f"search_iterations={search_iterations!r} is invalid with samples={samples!r}: expected "
                             "an integer >= 1 (kicks) with samples=None")
        self.model = model.eval()
        self.samples = samples
        self.search_time = None if search_time is None else float(search_time)
        self.search_iterations = search_iterations
        self.device = device
        if search_iterations is not None and search_time is None:
            self.name = f"corais_ils_it{search_iterations}"
        elif search_time is not None:
            self.name = f"corais_ils_{round(search_time * 1000)}ms"
        else:
            self.name = "corais_greedy" if samples is None else ("corais_1k" if samples == 1000 else f"corais_{samples}")
        self._env: gym.Env | None = None
        self._gen = torch.Generator(device="cpu")
        self.last_result: Any = None
        if threads:  # process-wide: one thread is fastest for this small model (more spin-wait when busy)
            torch.set_num_threads(int(threads))

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._env = env
        self._gen.manual_seed(int(seed) if seed is not None else int(np.random.SeedSequence().entropy % 2**63))

    @torch.inference_mode()
    def log_probs(self, obs: dict[str, np.ndarray]) -> torch.Tensor:
        """(Z, Q) log-probabilities of the dispatch for one observation (flat or not)."""
        edges = torch.as_tensor(np.asarray(obs["edges"]).reshape(1, -1, EDGE_FEATURES), device=self.device)
        reqs = torch.as_tensor(np.asarray(obs["requests"]).reshape(1, -1, REQUEST_FEATURES), device=self.device)
        return self.model(edges, reqs)[0]

    def _instance(self) -> Any:
        if self._env is None:
            raise RuntimeError("CoRaiSPolicy.reset(env) must be called before sampled or searched decisions")
        return self._env.unwrapped.instance

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        begin = time.perf_counter()
        logp = self.log_probs(obs)
        if self.search_time is not None or self.search_iterations is not None:
            return self._search(logp, begin)
        if self.samples is None:
            return logp.argmax(dim=-1).cpu().numpy().astype(np.int64)
        probs = logp.exp().cpu()
        instance = self._instance()
        chunk = max(1, 2_000_000 // probs.shape[0])  # bound the memory of large scales (Z up to 15k)
        best_cost, best = np.inf, None
        for start in range(0, self.samples, chunk):
            k = min(chunk, self.samples - start)
            acts = torch.multinomial(probs, k, replacement=True, generator=self._gen).T.numpy()
            costs = dispatch_cost(instance, acts)
            i = int(np.argmin(costs))
            if costs[i] < best_cost:
                best_cost, best = float(costs[i]), acts[i].astype(np.int64)
        assert best is not None
        return best

    def _search(self, logp: torch.Tensor, begin: float) -> np.ndarray:
        """The learned dispatcher inside the ILS (class docstring), within ``search_time`` of ``begin``."""
        from offline.corais.policies import ILS_PARAMS
        from offline.corais.search import iterated_local_search

        instance = self._instance()
        probs = logp.exp().cpu().numpy().astype(np.float64)
        start = search_start(instance, probs)
        seed = int(torch.randint(2**31 - 1, (1,), generator=self._gen))
        left = None if self.search_time is None else max(self.search_time - (time.perf_counter() - begin), 1e-4)
        self.last_result = iterated_local_search(instance, time_limit=left, max_iterations=self.search_iterations,
                                                 seed=seed, start=start, kick_probs=probs, **ILS_PARAMS)
        return self.last_result.action


def search_start(instance: Any, probs: np.ndarray) -> np.ndarray:
    """Where ``corais_ils_*`` starts its search: the network's greedy dispatch (argmax of ``probs``, (Z, Q)) when
    it costs less than ``list_greedy``'s, else ``list_greedy``'s."""
    from offline.corais.greedy import list_greedy

    greedy = np.asarray(probs).argmax(axis=1).astype(np.int64)
    listed = list_greedy(instance)
    return greedy if float(dispatch_cost(instance, greedy)) < float(dispatch_cost(instance, listed)) else listed


def load_corais_policy(
    run_dir: str | Path | None,
    env: gym.Env,
    samples: int | None = None,
    checkpoint: str = MODEL_FILE,
    device: str = "cpu",
    threads: int | None = 1,
    search_time: float | None = None,
    search_iterations: int | None = None,
) -> CoRaiSPolicy:
    """A CoRaiSPolicy from ``run_dir/checkpoint`` (or the shipped pretrained model when run_dir is None)."""
    folder = PRETRAINED_DIR if run_dir is None else Path(run_dir)
    path = folder / checkpoint
    if not path.is_file():
        raise ValueError(
            f"run_dir={str(folder)!r} has no {checkpoint!r}: expected a CoRaiS training run folder "
            f"(agents/corais/trainer.py) or None for the shipped model in {PRETRAINED_DIR}"
        )
    model, _ = load_model(path, device=device)
    return CoRaiSPolicy(model, samples=samples, device=device, threads=threads, search_time=search_time,
                        search_iterations=search_iterations)
