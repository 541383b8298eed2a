"""The CoRaiS attention dispatcher: model.py (network), policy.py (greedy / sampling decoding), trainer.py (REINFORCE).

Importing this package registers the shipped dispatchers under ``corais_greedy`` and ``corais_<K>`` (best
of K sampled dispatches): ``pretrained/model.pt`` for ``CoRaiS-v0`` and, when shipped,
``pretrained/model_v1.pt`` (trained on CoRaiS-v1 at (10, 5, 100)) for ``CoRaiS-v1``, or the per-scale
``model_v1_<N>-<Q>-<Z>.pt`` where one was trained at the env's scale (``shipped_checkpoint``); ``run_dir=``
loads another trained run instead (``agents.loading.resolve_policy``). ``corais_ils_100ms`` is the same
network inside our iterated local search, 100 ms per decision (``CoRaiSPolicy(search_time=...)``), and
``corais_ils_it18`` the same search stopped after 18 kicks (``search_iterations``; load-independent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.loading import register_learned_policy

ENV_ID = "CoRaiS-v0"
#: Registered name -> sampled decisions (None = greedy).
DECODINGS: dict[str, int | None] = {
    "corais_greedy": None, "corais_10": 10, "corais_100": 100, "corais_500": 500, "corais_1k": 1000,
}
#: Registered name -> seconds per decision of the learned dispatcher inside our ILS (``CoRaiSPolicy``).
SEARCHES: dict[str, float] = {"corais_ils_100ms": 0.1}
#: Registered name -> kicks of the same search with a fixed budget (load-independent twin of ``corais_ils_100ms``,
#: the kick budget of ``offline.corais.policies``' ``ils_it18``).
SEARCH_ITERATIONS: dict[str, int] = {"corais_ils_it18": 18}


#: Shipped weights per env id (in agents/corais/pretrained/).
SHIPPED: dict[str, str] = {"CoRaiS-v0": "model.pt", "CoRaiS-v1": "model_v1.pt"}
PRETRAINED = Path(__file__).resolve().parent / "pretrained"


def shipped_checkpoint(env_id: str, scale: tuple[int, int, int], folder: Path = PRETRAINED) -> str:
    """The shipped weights for ``env_id`` at ``scale``: CoRaiS-v1 has one model per trained scale
    (``model_v1_<N>-<Q>-<Z>.pt``, as the paper's Table III) and ``model_v1.pt`` ((10, 5, 100)) elsewhere."""
    if env_id != "CoRaiS-v1":
        return SHIPPED[env_id]
    per_scale = f"model_v1_{scale[0]}-{scale[1]}-{scale[2]}.pt"
    return per_scale if (folder / per_scale).is_file() else SHIPPED[env_id]


def _register(env_id: str, name: str, samples: int | None, search_time: float | None = None,
              search_iterations: int | None = None) -> None:
    @register_learned_policy(env_id, name)
    def factory(env: Any, run_dir: str | Path | None = None, **kwargs: Any) -> Any:
        from agents.corais.policy import load_corais_policy

        if run_dir is None:
            kwargs.setdefault("checkpoint", shipped_checkpoint(env_id, tuple(env.unwrapped.scenario.scale)))
        kwargs.setdefault("search_time", search_time)
        if search_iterations is not None:
            kwargs.setdefault("search_iterations", search_iterations)
        return load_corais_policy(run_dir, env, samples=samples, **kwargs)


for _env_id, _file in SHIPPED.items():
    if _env_id == ENV_ID or (PRETRAINED / _file).is_file():
        for _name, _samples in DECODINGS.items():
            _register(_env_id, _name, _samples)
        for _name, _seconds in SEARCHES.items():
            _register(_env_id, _name, None, _seconds)
        for _name, _kicks in SEARCH_ITERATIONS.items():
            _register(_env_id, _name, None, None, _kicks)
