"""The CoRaiS attention dispatcher: model.py (network), policy.py (greedy / sampling decoding), trainer.py (REINFORCE).

Importing this package registers the shipped dispatcher (``pretrained/model.pt``) for ``CoRaiS-v0``
under ``corais_greedy`` and ``corais_<K>`` (best of K sampled dispatches); ``run_dir=`` loads another
trained run instead (``agents.loading.resolve_policy``).
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


def _register(name: str, samples: int | None) -> None:
    @register_learned_policy(ENV_ID, name)
    def factory(env: Any, run_dir: str | Path | None = None, **kwargs: Any) -> Any:
        from agents.corais.policy import load_corais_policy

        return load_corais_policy(run_dir, env, samples=samples, **kwargs)


for _name, _samples in DECODINGS.items():
    _register(_name, _samples)
