"""Episode pictures: play one episode of a policy with ``render_mode="rgb_array"`` and save the last frame.

    from offline.render import save_episode_picture
    save_episode_picture("UEC-v0", {"scenario": "paper"}, "rescue", seed=0, path="outputs/uec_rescue.png")

What each env draws is described in ``envs/<problem>/render.py`` (UEC: a Gantt chart of the servers;
OINC: the edges' inference and retraining shares over time; ASET: policy, outcome and load per window;
CoRaiS: the dispatch map and each edge's finish time). evaluate.py's ``render=true`` calls this once per
policy, with its own resolver so that run folders and ``pretrained:`` names work too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from envs.problems import get_problem, make
from offline.protocol import Policy, run_episode
from offline.provenance import default_output, require_clone

#: ``resolve(env_id, name, env, **kwargs) -> Policy``, e.g. :func:`offline.registry.make_policy`.
Resolver = Callable[..., Policy]


def episode_frame(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None,
    policy: Policy | str,
    seed: int,
    *,
    resolve: Resolver | None = None,
    policy_kwargs: Mapping[str, Any] | None = None,
    wrappers: Sequence[str] = (),
) -> tuple[np.ndarray, dict[str, Any]]:
    """The last rgb_array frame of one episode of ``policy`` on ``env_id`` reset with ``seed``, and the
    episode's final info. ``policy`` is a Policy or a name that ``resolve`` (default: the non-learning
    registry, :func:`offline.registry.make_policy`) turns into one; ``wrappers`` as in env configs."""
    get_problem(env_id)  # a clear error for an unknown id
    kwargs = dict(env_kwargs or {})
    if kwargs.get("render_mode") not in (None, "rgb_array"):
        raise ValueError(f"env_kwargs['render_mode']={kwargs['render_mode']!r} is invalid here: the picture needs 'rgb_array'")
    kwargs["render_mode"] = "rgb_array"
    env = make(env_id, kwargs, wrappers)
    try:
        if isinstance(policy, str):
            if resolve is None:
                from offline.registry import make_policy as resolve
            policy = resolve(env_id, policy, env, **dict(policy_kwargs or {}))
        result = run_episode(env, policy, seed=int(seed))
        frame = env.render()
    finally:
        env.close()
    if not isinstance(frame, np.ndarray) or frame.ndim != 3 or frame.shape[2] != 3:
        raise RuntimeError(f"{env_id} rendered {type(frame).__name__}, expected an (H, W, 3) uint8 array")
    return frame, result.final_info


def save_episode_picture(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None,
    policy: Policy | str,
    seed: int,
    path: Path | str,
    *,
    resolve: Resolver | None = None,
    policy_kwargs: Mapping[str, Any] | None = None,
    wrappers: Sequence[str] = (),
) -> Path:
    """Play one episode of ``policy`` on ``env_id`` (``env_kwargs``, reset with ``seed``) with
    ``render_mode="rgb_array"`` and save its last frame as a PNG at ``path`` (folders are created);
    returns the path. See :func:`episode_frame` for ``policy``, ``resolve`` and ``wrappers``."""
    from matplotlib.image import imsave

    frame, _ = episode_frame(env_id, env_kwargs, policy, seed, resolve=resolve, policy_kwargs=policy_kwargs,
                             wrappers=wrappers)
    path = Path(path)
    if path.suffix.lower() != ".png":
        raise ValueError(f"path={str(path)!r} is invalid: expected a .png file")
    path.parent.mkdir(parents=True, exist_ok=True)
    imsave(path, frame, format="png")
    return path


#: The docs' env pictures: (env id, env kwargs, policy, file name), one episode each with reset seed 0.
DOCS_PICTURES: tuple[tuple[str, dict[str, Any], str, str], ...] = (
    ("UEC-v0", {}, "lp_bid_price", "render_uec.png"),
    ("OINC-v0", {}, "liu", "render_oinc.png"),
    ("ASET-v1", {"topology": "full-edge", "lam": 60.0, "theta": 0.0, "horizon": 60}, "threshold_switch",
     "render_aset.png"),
    ("CoRaiS-v1", {}, "list_greedy_ls", "render_corais.png"),
)


def main(argv: list[str] | None = None) -> int:
    """``python -m offline.render [out=outputs/pictures] [publish=true]``: the docs' env pictures
    (``DOCS_PICTURES``) into ``out``, or into ``docs/img/`` with ``publish=true``."""
    import sys

    from offline.provenance import check_output_path, check_writable_folder, parse_bool, parse_key_values

    try:
        args = parse_key_values(list(sys.argv[1:] if argv is None else argv),
                                {"out": "output folder (default outputs/pictures)", "publish": "true: docs/img/"})
        publish = parse_bool("publish", args.get("publish", "false"))
        out = require_clone() / "docs" / "img" if publish else Path(args.get("out") or default_output("pictures"))
        check_output_path(out, publish=publish)  # docs/img/ only with publish=true
        check_writable_folder("out", out)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for env_id, kwargs, policy, name in DOCS_PICTURES:
        print(f"{'published' if publish else 'wrote'}: {save_episode_picture(env_id, kwargs, policy, 0, out / name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
