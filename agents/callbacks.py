"""Training callbacks: periodic evaluation on fixed seeds next to a reference policy, and stop signals
(SIGINT, SIGTERM, SIGHUP) that end training with a checkpoint.

The upper bound behind ``env/competitive_ratio`` comes from the problem registry
(``Problem.episode_bound``, e.g. ``offline.uec.evaluation:LPBound``), not from this module.

Evaluation runs the learner as a :class:`offline.protocol.Policy` through ``run_episode`` on the same
episode seeds every time (common random numbers), so the curve ``eval/mean_reward`` moves only because the
policy changed. The reference policy (RESCUE on UEC-v0, or the env's configured one) is evaluated once on
the same seeds and logged at every evaluation as ``reference/…`` so TensorBoard shows the gap.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import CSVOutputFormat, Logger, configure, make_output_format

from offline.protocol import Policy, run_episode

log = logging.getLogger("train")

#: final-info keys that are never logged as metrics (masks, arrays, bookkeeping).
_SKIP_INFO_KEYS = {"action_mask", "TimeLimit.truncated", "episode", "terminal_observation"}

#: final-info keys holding an upper bound on the episode's profit (the ratio reward / bound is logged
#: as env/competitive_ratio when present).
BOUND_KEYS = ("lp_bound", "opt_lp", "lp_upper_bound", "upper_bound")


def scalar_metrics(info: dict[str, Any]) -> dict[str, float]:
    """The finite numeric scalars of an (episode-final) info dict."""
    out: dict[str, float] = {}
    for key, value in info.items():
        if key in _SKIP_INFO_KEYS or key.startswith("_"):
            continue
        if isinstance(value, (bool, int, float, np.number, np.bool_)) or (
            isinstance(value, np.ndarray) and value.size == 1
        ):
            number = float(np.asarray(value).reshape(-1)[0])
            if math.isfinite(number):
                out[key] = number
    return out


def evaluate(
    env: gym.Env,
    policy: Policy,
    seeds: list[int],
    bound: Callable[[gym.Env], float | None] | None = None,
) -> dict[str, float]:
    """Mean return and mean final-info metrics of ``policy`` over one episode per seed.

    ``env/competitive_ratio`` = return / upper bound, with the bound from the final info (BOUND_KEYS)
    or from ``bound(env)``.
    """
    returns: list[float] = []
    metrics: dict[str, list[float]] = {}
    for seed in seeds:
        result = run_episode(env, policy, seed=seed)
        returns.append(result.total_reward)
        episode_metrics = scalar_metrics(result.final_info)
        upper = next((episode_metrics[k] for k in BOUND_KEYS if k in episode_metrics), None)
        if upper is None and bound is not None:
            upper = bound(env)
        if upper is not None and upper > 0:
            episode_metrics["competitive_ratio"] = result.total_reward / upper
        for key, value in episode_metrics.items():
            metrics.setdefault(key, []).append(value)
    summary = {"mean_reward": float(np.mean(returns)), "std_reward": float(np.std(returns))}
    summary.update({f"env/{k}": float(np.mean(v)) for k, v in metrics.items() if len(v) == len(seeds)})
    return summary


def best_policy(
    env: gym.Env,
    env_id: str,
    names: list[str],
    seeds: list[int],
    bound: Callable[[gym.Env], float | None] | None = None,
) -> tuple[str | None, dict[str, float] | None]:
    """The policy of ``names`` with the highest mean return on ``seeds`` and its summary (:func:`evaluate`).

    A reference line made of several candidates is the strongest of them on the very seeds the learner is
    evaluated on (e.g. UEC's best faithful baseline). Policies that fail are skipped with a warning;
    (None, None) when none runs.
    """
    from offline.registry import make_policy

    best: tuple[str | None, dict[str, float] | None] = (None, None)
    for name in names:
        try:
            summary = evaluate(env, make_policy(env_id, name, env), seeds, bound)
        except Exception as err:  # a reference is a nicety: never stop training for it
            log.warning("policy %r failed on %s (%s); skipped", name, env_id, err)
            continue
        if best[1] is None or summary["mean_reward"] > best[1]["mean_reward"]:
            best = (name, summary)
    return best


class PeriodicEvalCallback(BaseCallback):
    """Every ``eval_freq`` env steps: evaluate the learner on fixed seeds, log it next to the reference.

    Logged keys: ``eval/mean_reward``, ``eval/std_reward``, ``env/<metric>`` (the env's final-info
    scalars, e.g. UEC's profit and competitive ratio), ``reference/mean_reward``,
    ``reference/env/<metric>`` and ``eval/ratio_to_reference``. Rows also go to ``eval.csv``.
    """

    def __init__(
        self,
        make_eval_env: Callable[[], gym.Env] | gym.Env,
        make_policy: Callable[[Any], Policy],
        seeds: list[int],
        eval_freq: int,
        csv_path: Path,
        reference: dict[str, float] | None = None,
        reference_name: str | None = None,
        bound: Callable[[gym.Env], float | None] | None = None,
    ) -> None:
        super().__init__()
        self.make_eval_env = make_eval_env if callable(make_eval_env) else (lambda: make_eval_env)
        self._env = None if callable(make_eval_env) else make_eval_env
        self.make_policy = make_policy
        self.seeds = list(seeds)
        self.eval_freq = int(eval_freq)
        self.csv_path = csv_path
        self.reference = reference
        self.reference_name = reference_name
        self.bound = bound
        self._next_eval = 0
        self._env: gym.Env | None = None
        self.last: dict[str, float] = {}

    def _on_training_start(self) -> None:
        if self._env is None:
            self._env = self.make_eval_env()
        self._next_eval = self.num_timesteps  # evaluate the untrained policy first
        if self.reference is not None:
            add_reference_layout(self.logger)

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next_eval:
            self.run_evaluation()
            self._next_eval = self.num_timesteps + self.eval_freq
        return True

    def _on_training_end(self) -> None:
        if not self.last or self.last.get("step") != self.num_timesteps:
            self.run_evaluation()
        if self._env is not None:
            self._env.close()

    def run_evaluation(self) -> dict[str, float]:
        assert self._env is not None
        summary = evaluate(self._env, self.make_policy(self.model), self.seeds, self.bound)
        for key, value in summary.items():
            self.logger.record(key if key.startswith("env/") else f"eval/{key}", value)
        row: dict[str, float] = {"step": float(self.num_timesteps), **summary}
        if self.reference is not None:
            for key, value in self.reference.items():
                self.logger.record(f"reference/{key}", value)
            ref = self.reference["mean_reward"]
            if ref != 0:
                ratio = summary["mean_reward"] / ref
                self.logger.record("eval/ratio_to_reference", ratio)
                row["ratio_to_reference"] = ratio
            row["reference_mean_reward"] = ref
        self.logger.dump(self.num_timesteps)
        self._append_csv(row)
        self.last = row
        ref_text = (
            f", {self.reference_name} {self.reference['mean_reward']:.4g}" if self.reference is not None else ""
        )
        log.info("step %d: eval mean reward %.4g%s", self.num_timesteps, summary["mean_reward"], ref_text)
        return summary

    def _append_csv(self, row: dict[str, float]) -> None:
        new = not self.csv_path.exists()
        with self.csv_path.open("a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(row), extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)


#: TensorBoard's custom-scalars layout: the learner's evaluation and the reference on one chart per quantity.
REFERENCE_LAYOUT: dict[str, dict[str, list]] = {
    "learning curve vs reference": {
        "mean reward": ["Multiline", ["eval/mean_reward", "reference/mean_reward"]],
        "ratio to reference": ["Multiline", ["eval/ratio_to_reference"]],
    },
}


def add_reference_layout(logger: Any) -> bool:
    """Write :data:`REFERENCE_LAYOUT` to the run's TensorBoard events (SB3's TensorBoard output), so the
    reference is drawn on the learning curve itself; False when the logger writes no TensorBoard events."""
    from stable_baselines3.common.logger import TensorBoardOutputFormat

    written = False
    for output in getattr(logger, "output_formats", []):
        if isinstance(output, TensorBoardOutputFormat):
            output.writer.add_custom_scalars(REFERENCE_LAYOUT)
            output.writer.flush()
            written = True
    return written


#: the signals that end training gracefully, and the conventional exit status of each (128 + number).
STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def exit_code(signum: int) -> int:
    """The shell's exit status for a process ended by ``signum``: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP)."""
    return 128 + int(signum)


class TrainingInterrupted(Exception):
    """Raised after a trainer stopped on a signal and saved what it needs to resume."""

    def __init__(self, signum: int, saved: Path | str) -> None:
        self.signum = int(signum)
        self.saved = Path(saved)
        self.exit_code = exit_code(signum)
        super().__init__(f"{signal.Signals(self.signum).name}: stopped and saved {self.saved}")


class GracefulInterrupt:
    """Turns the first SIGINT, SIGTERM or SIGHUP into a request to stop at the next env step.

    A second signal aborts (KeyboardInterrupt). Use as a context manager around the training loop and poll
    ``requested`` (:class:`StopOnInterrupt` does it for SB3); ``signum`` tells which signal came. Until the loop
    polls ``requested`` the first time (envs and model still being built: nothing to save yet, and a build of many
    envs can take minutes), a signal aborts at once instead of waiting for a step.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._polled = False

    @property
    def requested(self) -> bool:
        self._polled = True  # the training loop is running: from now on a signal waits for the step to end
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (130 for SIGINT); 0 while no signal came."""
        return exit_code(self.signum) if self.signum is not None else 0

    def _handler(self, signum: int, frame: Any) -> None:
        if self.signum is not None or not self._polled:
            if not self._polled:
                log.warning("%s received before training started: aborting (nothing trained yet)",
                            signal.Signals(signum).name)
            raise KeyboardInterrupt
        self.signum = signum
        log.warning("%s received: stopping after this step and saving a checkpoint (send it again to abort)",
                    signal.Signals(signum).name)

    def __enter__(self) -> GracefulInterrupt:
        for signum in STOP_SIGNALS:
            try:
                self._previous[signum] = signal.signal(signum, self._handler)
            except ValueError:  # not in the main thread: leave the signals alone
                break
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()


class StopOnInterrupt(BaseCallback):
    """Ends ``learn`` cleanly once :class:`GracefulInterrupt` saw a stop signal."""

    def __init__(self, interrupt: GracefulInterrupt) -> None:
        super().__init__()
        self.interrupt = interrupt

    def _on_step(self) -> bool:
        return not self.interrupt.requested


class ContinuedCSVOutputFormat(CSVOutputFormat):
    """SB3's CSV writer that appends to an existing ``progress.csv`` (a resumed run) instead of truncating it."""

    def __init__(self, filename: str) -> None:
        path = Path(filename)
        if not path.is_file() or path.stat().st_size == 0:
            super().__init__(filename)
            return
        self.file = path.open("r+")
        header = self.file.readline().rstrip("\n")
        self.keys = header.split(",") if header else []
        self.separator = ","
        self.quotechar = '"'
        self.file.seek(0, io.SEEK_END)


def drop_rows_after(path: Path, step: int, columns: tuple[str, ...] = ("step", "time/total_timesteps")) -> int:
    """Move the rows of a run's CSV log (``eval.csv``, ``progress.csv``) whose step is past ``step`` into
    ``<name>.superseded.csv`` beside it, so that a resumed run logs each step once; returns how many moved.

    The step column is the first of ``columns`` in the header; a file without one is left alone."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        rows = list(reader)
    column = next((header.index(c) for c in columns if header and c in header), None)
    if column is None:
        return 0

    def past(row: list[str]) -> bool:
        try:
            return float(row[column]) > step
        except (IndexError, ValueError):
            return False

    keep, moved = [r for r in rows if not past(r)], [r for r in rows if past(r)]
    if not moved:
        return 0
    aside = path.with_name(f"{path.stem}.superseded.csv")
    new_aside = not aside.exists()
    with aside.open("a", newline="") as handle:
        writer = csv.writer(handle)
        if new_aside:
            writer.writerow(header)
        writer.writerows(moved)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(keep)
    os.replace(tmp, path)
    return len(moved)


class SafeCheckpointCallback(BaseCallback):
    """Every ``save_freq`` calls save ``<save_path>/model_<steps>_steps.zip`` in the safe format (no pickles,
    :func:`agents.loading.save_sb3_model`) and, for off-policy algorithms, the replay buffer as arrays
    (``model_replay_buffer_<steps>_steps.npz``) first: a checkpoint exists only once its buffer is complete.
    Every file written must resolve inside ``root`` (default: ``save_path``'s parent, the run folder)."""

    def __init__(self, save_freq: int, save_path: Path, save_replay_buffer: bool = False,
                 root: Path | None = None) -> None:
        super().__init__()
        self.save_freq = int(save_freq)
        self.save_path = Path(save_path)
        self.save_replay_buffer = save_replay_buffer
        self.root = Path(root) if root is not None else self.save_path.parent

    def _on_step(self) -> bool:
        if self.n_calls % self.save_freq == 0:
            save_checkpoint(self.model, self.save_path / f"model_{self.num_timesteps}_steps.zip",
                            self.save_replay_buffer, root=self.root)
        return True


def save_checkpoint(model: Any, path: Path, with_buffer: bool, root: Path | None = None) -> list[Path]:
    """Save the replay buffer (if ``with_buffer``) then the model of a checkpoint; returns the files written.
    With ``root`` (the run folder), a target that resolves outside it (a symbolic link) is refused first."""
    from agents.loading import check_inside, replay_buffer_file, save_replay_buffer, save_sb3_model

    path.parent.mkdir(parents=True, exist_ok=True)
    targets = [path, replay_buffer_file(path)] if with_buffer else [path]
    if root is not None:
        for target in (path.parent, *targets, *(t.with_name(t.name + ".tmp") for t in targets)):
            check_inside(root, target)
    written = []
    if with_buffer and getattr(model, "replay_buffer", None) is not None:
        written.append(save_replay_buffer(model.replay_buffer, replay_buffer_file(path)))
    written.append(save_sb3_model(model, path))
    return written


def configure_logger(folder: Path, resume: bool = False) -> Logger:
    """SB3 logger writing TensorBoard events and ``progress.csv`` into ``folder``.

    With ``resume`` the CSV is continued and a new events file joins the existing ones in the same folder,
    so TensorBoard shows one curve per tag across the interruption.
    """
    if not resume:
        return configure(str(folder), ["tensorboard", "csv"])
    formats = [make_output_format("tensorboard", str(folder)), ContinuedCSVOutputFormat(str(folder / "progress.csv"))]
    return Logger(folder=str(folder), output_formats=formats)


# --------------------------------------------------------------------------------------------------
# Resumable checkpoints of the custom (torch) trainers
# --------------------------------------------------------------------------------------------------

_TRAINER_CHECKPOINT = re.compile(r"^model_(interrupted_)?(\d+)\.pt$")


def latest_trainer_checkpoint(run_dir: Path) -> tuple[Path, int] | None:
    """The newest ``checkpoints/model[_interrupted]_<step>.pt`` of a custom trainer's run (the interrupt
    checkpoint wins a tie) and its step; None when there is none."""
    found = []
    for path in (Path(run_dir) / "checkpoints").glob("model_*.pt"):
        match = _TRAINER_CHECKPOINT.match(path.name)
        if match:
            found.append((int(match.group(2)), bool(match.group(1)), path))
    if not found:
        return None
    step, _, path = max(found)
    return path, step


def rng_states(rng: np.random.Generator, generator: Any = None) -> dict[str, Any]:
    """numpy's and torch's random states as tensors and plain containers (``torch.load(weights_only=True)``)."""
    import torch

    states: dict[str, Any] = {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state()}
    if generator is not None:
        states["generator"] = generator.get_state()
    return states


def restore_rng_states(states: dict[str, Any], rng: np.random.Generator, generator: Any = None) -> None:
    """Put back what :func:`rng_states` saved."""
    import torch

    rng.bit_generator.state = states["numpy"]
    torch.set_rng_state(states["torch"])
    if generator is not None and "generator" in states:
        generator.set_state(states["generator"])
