"""Pictures of an ASET episode (``render_mode="ansi"`` / ``"rgb_array"``), drawn from what the env records.

The rgb_array frame has three panels over the decision windows played so far: the fractions of the
window's queries that succeeded, failed (latency bound missed) and were rejected (no feasible worker),
stacked, with the termination threshold theta; the static policy chosen for each window (with how often
each was chosen); and the offered load (queries/s bound to workers over their total capacity) with the
number of live bound streams. The env records these per window only when a render mode is set.
Imported by ``ASETEnv.render`` only.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from envs.aset.types import POLICY_NAMES
from envs.common.render import colours, figure_to_array, new_figure


def ansi(env: gym.Env) -> str:
    """One status line: window, last policy and its outcome, live streams."""
    history = env._history or []
    head = f"window={env.state.window}/{env.horizon} live_streams={len(env.state.streams)}"
    if not history:
        return head + " policy=- success=-"
    h = history[-1]
    return (f"{head} policy={POLICY_NAMES[h['policy']]} success={h['success']:.3f} failed={h['failed']:.3f} "
            f"rejected={h['rejected']:.3f} load={h['load']:.2f} mean_success={np.mean([x['success'] for x in history]):.3f}")


def rgb_array(env: gym.Env) -> np.ndarray:
    """Per window: outcome fractions, policy chosen, load; an (H, W, 3) uint8 array."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    history = env._history or []
    n = len(history)
    fig = new_figure(11.0, 6.4)
    outcome, choice, load_ax = fig.subplots(3, 1, sharex=True, height_ratios=[2.0, 1.6, 1.2])
    x = np.arange(n + 1)
    policy_colour = colours("tab10", len(POLICY_NAMES))

    def stepped(values: np.ndarray) -> np.ndarray:
        return np.append(values, values[-1:]) if values.size else values

    counts = np.zeros(len(POLICY_NAMES), dtype=np.int64)
    if n:
        success = np.array([h["success"] for h in history])
        failed = np.array([h["failed"] for h in history])
        rejected = np.array([h["rejected"] for h in history])
        s, f, r = stepped(success), stepped(failed), stepped(rejected)
        outcome.fill_between(x, 0, s, step="post", color="tab:green", alpha=0.8, linewidth=0)
        outcome.fill_between(x, s, s + f, step="post", color="tab:orange", alpha=0.85, linewidth=0)
        outcome.fill_between(x, s + f, s + f + r, step="post", color="tab:red", alpha=0.85, linewidth=0)
        policy = np.array([h["policy"] for h in history])
        counts = np.bincount(policy, minlength=len(POLICY_NAMES))
        choice.scatter(np.arange(n) + 0.5, policy, c=[policy_colour[p] for p in policy], marker="s",
                       s=max(4.0, min(40.0, 3000.0 / max(n, 1))), linewidths=0)
        load = np.array([h["load"] for h in history])
        streams = np.array([h["streams"] for h in history])
        load_ax.step(x, stepped(load), where="post", color="tab:purple", linewidth=1.2)
        twin = load_ax.twinx()
        twin.step(x, stepped(streams), where="post", color="0.4", linewidth=1.0, linestyle="--")
        twin.set_ylim(0, max(1.0, float(streams.max())) * 1.15)
        twin.set_ylabel("live streams", fontsize=8)
        twin.tick_params(labelsize=7)
        load_ax.set_ylim(0, max(1.05, float(load.max()) * 1.1))
    else:
        load_ax.set_ylim(0, 1.05)
    outcome.axhline(env.theta, color="black", linestyle="--", linewidth=1.0)
    outcome.set_ylim(0, 1.02)
    outcome.set_ylabel("share of queries")
    outcome.legend(handles=[Patch(facecolor="tab:green", label="succeeded"),
                            Patch(facecolor="tab:orange", label="failed (latency bound missed)"),
                            Patch(facecolor="tab:red", label="rejected (no feasible worker)"),
                            outcome.get_lines()[-1]],
                   labels=["succeeded", "failed (latency bound missed)", "rejected (no feasible worker)",
                           f"theta = {env.theta:g} (episode ends below)"],
                   loc="upper left", bbox_to_anchor=(1.07, 1.0), fontsize=8, frameon=False)
    choice.set_yticks(range(len(POLICY_NAMES)),
                      [f"{name} ({c})" for name, c in zip(POLICY_NAMES, counts)], fontsize=8)
    choice.set_ylim(len(POLICY_NAMES) - 0.5, -0.5)
    choice.set_ylabel("policy (windows)")
    choice.grid(axis="y", alpha=0.3)
    load_ax.axhline(1.0, color="0.6", linewidth=0.8, linestyle=":")
    load_ax.set_ylabel("load / capacity", fontsize=9)
    load_ax.set_xlim(0, env.horizon)
    load_ax.set_xlabel(f"decision window ({env.instance.window_s:g} s each)")
    load_ax.legend(handles=[Line2D([], [], color="tab:purple", linewidth=1.2),
                            Line2D([], [], color="0.4", linewidth=1.0, linestyle="--")],
                   labels=["offered load / total capacity", "live bound streams (right axis)"],
                   loc="upper left", bbox_to_anchor=(1.07, 1.0), fontsize=8, frameon=False)
    mean = f"mean success {np.mean([h['success'] for h in history]):.3f}" if n else "no window played yet"
    topology = env.topology if isinstance(env.topology, str) else "custom topology"
    spec = getattr(env, "spec", None)
    outcome.set_title(f"{spec.id if spec is not None else env.env_id} ({topology}, lambda = {env.scenario.lam:g}/min): "
                      f"{n} of {env.horizon} windows — {mean}", fontsize=10)
    return figure_to_array(fig)
