"""Teacher datasets in Minari format (Farama's offline-RL standard), for offline-RL and imitation research.

ASET labels (``algo=aset_dagger``, :class:`agents.aset.dagger.AsetLabels`) export the same way: each episode is
replayed from its seed for the env's float32 observations; ``infos`` carry ``teacher_action``, ``teacher_values``,
``candidates`` (the rollout's candidate policies), ``queries``, ``instance_seed``, ``lam`` and ``round``.

CoRaiS teacher labels (``algo=corais_pomo``, :mod:`agents.corais.pomo_train`: best-known dispatches of instances at
several scales) export one scale at a time (``scale=N-Q-Z``; the observation space depends on it): one one-step
episode per instance, reset with the instance its seed draws (``instance_seed`` in ``infos``), the action the
teacher's dispatch, the reward minus its cost.

A DAgger run (``algo=uec_dagger``) keeps every decision its teacher labelled in ``teacher_labels.npz``
(:class:`agents.uec.dagger.TeacherLabels`). :func:`export_minari` turns it into a Minari dataset: one Minari episode
per labelled episode, with the env's observations, the actions it was stepped with (the teacher's in round 0, the
student's later), rewards, and per step ``infos``: ``action_mask``, ``safe_action_mask``, ``teacher_action`` and
``teacher_values`` (the teacher's rollout value of each action it compared, NaN elsewhere), ``time``, ``device``,
``instance_seed``, ``arrival_prob`` (the instance's load when not the env's, else NaN) and ``round``. The env spec is recorded, so ``dataset.recover_environment()`` gives the env back
(episodes on other instances than the spec's are marked by ``instance_seed``; reset with
``options={"instance": ...}`` to replay them).

    python -m agents.datasets run=<run folder or teacher_labels.npz> id=edge-sched/uec-v0/rollout-preempt-v0 \\
        [data_path=<folder>]

writes under ``data_path`` (default: Minari's own, ``$MINARI_DATASETS_PATH`` or ``~/.minari/datasets``), never into
the repository; :func:`load_minari` reads it back (``minari.load_dataset`` works as well).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from agents.uec.dagger import LABELS_FILE, TeacherLabels


@contextmanager
def _datasets_path(data_path: str | Path | None) -> Iterator[None]:
    """Point Minari at ``data_path`` for the duration (its storage root is read from the environment)."""
    if data_path is None:
        yield
        return
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(Path(data_path).resolve())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = before


def episode_buffers(labels: TeacherLabels) -> list[Any]:
    """One ``minari.data_collector.EpisodeBuffer`` per labelled episode (observations: the N decisions' and the
    final one; actions, rewards, flags and infos: one per decision)."""
    from minari.data_collector import EpisodeBuffer

    buffers = []
    episodes = np.unique(labels.episode)
    for index, episode in enumerate(episodes):
        rows = np.flatnonzero(labels.episode == episode)
        n = rows.size
        terminations = [False] * n
        terminations[-1] = True
        infos = {
            "action_mask": labels.action_mask[rows], "safe_action_mask": labels.safe_mask[rows],
            "teacher_action": labels.teacher_action[rows], "teacher_values": labels.teacher_values[rows],
            "time": labels.time[rows], "device": labels.device[rows], "instance_seed": labels.instance_seed[rows],
            "arrival_prob": labels.arrival_prob[rows], "round": labels.round[rows],
        }
        # Minari stores infos at reset and after each step (n + 1): the step infos are shifted, the last repeated
        infos = {k: np.concatenate([v, v[-1:]]) for k, v in infos.items()}
        buffers.append(EpisodeBuffer(
            id=index, seed=int(labels.episode_seed[rows[0]]),
            observations=np.concatenate([labels.obs[rows], labels.final_obs[index][None]]),
            actions=labels.behaviour[rows], rewards=labels.reward[rows].tolist(), terminations=terminations,
            truncations=[False] * n, infos=infos))
    return buffers


def aset_episode_buffers(labels: Any, meta: dict[str, Any]) -> list[Any]:
    """ASET labels (:class:`agents.aset.dagger.AsetLabels`) as Minari episode buffers. The labels keep observations
    as float16; each episode is replayed from its seed with the actions it was stepped with, so the buffers hold the
    env's own float32 observations (the final one included) and rewards (checked against the labels' outcomes)."""
    import gymnasium as gym
    from minari.data_collector import EpisodeBuffer

    import envs  # noqa: F401

    buffers = []
    for index, episode in enumerate(np.unique(labels.episode)):
        rows = np.flatnonzero(labels.episode == episode)
        kwargs = {**(meta.get("env_kwargs") or {}), "instance_seed": int(labels.instance_seed[rows[0]]),
                  "lam": float(labels.lam[rows[0]])}
        env = gym.make(meta.get("env_id", "ASET-v1"), **kwargs)
        obs, _ = env.reset(seed=int(labels.episode_seed[rows[0]]))
        observations, rewards = [obs], []
        for action in labels.behaviour[rows]:
            obs, reward, terminated, truncated, _ = env.step(int(action))
            observations.append(obs)
            rewards.append(float(reward))
        if not np.allclose(rewards, labels.success[rows]):
            raise ValueError(f"episode {int(episode)} does not replay to its labelled outcomes (another env version?)")
        infos = {"teacher_action": labels.teacher_action[rows], "teacher_values": labels.teacher_values[rows],
                 "candidates": labels.candidates[rows], "queries": labels.queries[rows],
                 "instance_seed": labels.instance_seed[rows], "lam": labels.lam[rows], "round": labels.round[rows]}
        infos = {k: np.concatenate([v, v[-1:]]) for k, v in infos.items()}
        n = rows.size
        buffers.append(EpisodeBuffer(
            id=index, seed=int(labels.episode_seed[rows[0]]), observations=np.stack(observations),
            actions=labels.behaviour[rows], rewards=rewards, terminations=[False] * n,
            truncations=[False] * (n - 1) + [True], infos=infos))
    return buffers


def corais_episode_buffers(path: Path, scale: str | None) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
    """CoRaiS labels of one scale (``scale`` "N-Q-Z"; required when the file holds several) as one-step Minari episode
    buffers; returns (buffers, meta, the env kwargs). Each episode's reward is checked against the labelled cost."""
    import gymnasium as gym
    from minari.data_collector import EpisodeBuffer

    import envs  # noqa: F401
    from agents.corais.pomo import scenario_instances
    from agents.corais.pomo_train import load_labels, scale_key

    groups, meta = load_labels(path)
    keys = [scale_key(g.scale) for g in groups]
    if scale is None and len(groups) == 1:
        scale = keys[0]
    if scale not in keys:
        raise ValueError(f"scale={scale!r} is invalid for {str(path)!r}: expected one of {keys} (one dataset per scale)")
    labels = groups[keys.index(scale)]
    env_kwargs = {"scale": list(labels.scale)}
    env = gym.make(meta.get("env_id", "CoRaiS-v1"), **env_kwargs)
    buffers = []
    for index, (seed, instance, action, cost) in enumerate(zip(
            labels.seeds, scenario_instances(meta.get("env_id", "CoRaiS-v1"), labels.scale, labels.seeds),
            labels.actions, labels.cost)):
        obs, _ = env.reset(options={"instance": instance})
        final, reward, terminated, truncated, _ = env.step(action)
        if not np.isclose(-reward, cost):
            raise ValueError(f"instance seed {int(seed)} does not replay to its labelled cost (another env version?)")
        buffers.append(EpisodeBuffer(
            id=index, observations={k: np.stack([obs[k], final[k]]) for k in obs}, actions=action[None],
            rewards=[float(reward)], terminations=[bool(terminated)], truncations=[bool(truncated)],
            infos={"instance_seed": np.array([int(seed), int(seed)])}))
    env.close()
    return buffers, meta, env_kwargs


def export_minari(run: str | Path, dataset_id: str, *, data_path: str | Path | None = None,
                  description: str | None = None, author_email: str | None = None, scale: str | None = None) -> Any:
    """Write the teacher labels of ``run`` (a run folder or its ``teacher_labels.npz``) as Minari dataset
    ``dataset_id``; returns the ``minari.MinariDataset``. The env it was labelled on is also its evaluation env.
    ``scale``: which scale of CoRaiS labels ("N-Q-Z")."""
    import warnings

    import gymnasium as gym
    import minari

    import envs  # noqa: F401  (registers the ids the spec names)

    path = Path(run)
    path = path / LABELS_FILE if path.is_dir() else path
    meta = TeacherLabels.load_arrays(path)[1]
    env_id = meta.get("env_id", "UEC-v0")
    if env_id.startswith("CoRaiS"):
        buffers, meta, env_kwargs = corais_episode_buffers(path, scale)
        meta = {**meta, "env_kwargs": env_kwargs}
        code, infos = "agents/corais/pomo_train.py", "instance_seed"
    elif env_id.startswith("ASET"):
        from agents.aset.dagger import AsetLabels

        aset_labels, meta = AsetLabels.load(path)
        buffers = aset_episode_buffers(aset_labels, meta)
        code, infos = "agents/aset/dagger.py", "teacher_action, teacher_values, candidates, lam"
    else:
        labels, meta = TeacherLabels.load(path)
        buffers = episode_buffers(labels)
        code, infos = "agents/uec/dagger.py", "the masks, teacher_action and teacher_values"
    env = gym.make(env_id, **(meta.get("env_kwargs") or {}))
    with _datasets_path(data_path), warnings.catch_warnings():
        if author_email is None:  # no contact address is published with the project: say so once, not as a warning
            warnings.filterwarnings("ignore", message="`author_email` is set to None")
        return minari.create_dataset_from_buffers(
            dataset_id=dataset_id, buffer=buffers, env=env, eval_env=env, author_email=author_email,
            algorithm_name=f"{'Best-known dispatches' if env_id.startswith('CoRaiS') else 'DAgger labels'} of "
            f"{meta.get('teacher', '?')}", author="edge-sched-gym", code_permalink=code,
            description=description or (
                f"Best-known dispatches of {env_id} instances at scale {meta['env_kwargs']['scale']} found by "
                f"{meta.get('teacher', '?')}: one one-step episode per instance. infos carry {infos}."
                if env_id.startswith("CoRaiS") else
                f"Decisions of {env_id} labelled by the online rollout reference "
                f"{meta.get('teacher', '?')}: round 0 played by the teacher, later rounds by a DAgger student. "
                f"infos carry {infos}."),
            requirements=["edge-sched-gym"])


def load_minari(dataset_id: str, *, data_path: str | Path | None = None) -> Any:
    """The Minari dataset ``dataset_id`` (from ``data_path`` if given)."""
    import minari

    with _datasets_path(data_path):
        return minari.load_dataset(dataset_id)


def main(argv: list[str] | None = None) -> None:
    """``python -m agents.datasets run=<folder|npz> id=<dataset id> [data_path=<folder>] [scale=N-Q-Z]``."""
    args = dict(a.split("=", 1) for a in (sys.argv[1:] if argv is None else argv) if "=" in a)
    unknown = sorted(set(args) - {"run", "id", "data_path", "scale"})
    if unknown or "run" not in args or "id" not in args:
        raise SystemExit(f"usage: python -m agents.datasets run=<run folder|{LABELS_FILE}> id=<dataset id> "
                         f"[data_path=<folder>] [scale=N-Q-Z (CoRaiS)] (unknown keys: {unknown})")
    data_path = args.get("data_path")
    if data_path:
        from offline.provenance import check_output_path

        check_output_path(data_path, publish=False, key="data_path")
    dataset = export_minari(args["run"], args["id"], data_path=data_path, scale=args.get("scale"))
    print(f"Minari dataset {args['id']}: {dataset.total_episodes} episodes, {dataset.total_steps} steps "
          f"(minari.load_dataset({args['id']!r}){'' if not data_path else f' with MINARI_DATASETS_PATH={data_path}'})")


if __name__ == "__main__":
    main()
