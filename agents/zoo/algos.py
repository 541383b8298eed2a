"""The suite's algorithms as rl-zoo3 builds them (``ALGOS[name](policy, env, **hyperparams)``)."""

from __future__ import annotations

from typing import Any

from agents.sac import DiscreteSAC


class ZooDiscreteSAC(DiscreteSAC):
    """:class:`agents.sac.DiscreteSAC` for rl-zoo3 (``--algo sac_d``): a ``policy_kwargs.head`` whose class sizes
    itself from the env (``kwargs_for_env``, e.g. UEC's per-action scorer) gets its ``head_kwargs`` from the
    training env, as train.py does; rl-zoo3 passes the hyperparameter file's kwargs only."""

    def __init__(self, policy: Any, env: Any, *args: Any, policy_kwargs: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        policy_kwargs = dict(policy_kwargs or {})
        if policy_kwargs.get("head") is not None and env is not None and not isinstance(env, str):
            from agents.registry import resolve_policy_kwargs

            single = env.envs[0] if hasattr(env, "envs") else None  # a DummyVecEnv (rl-zoo3's default)
            if single is None:
                raise ValueError("sac_d with policy_kwargs.head needs rl-zoo3's default vector env (--vec-env dummy)")
            policy_kwargs = resolve_policy_kwargs(policy_kwargs, single)
        super().__init__(policy, env, *args, policy_kwargs=policy_kwargs, **kwargs)
