"""Pictures of an OINC-v0 episode (``render_mode="ansi"`` / ``"rgb_array"``), drawn from what the env records.

The rgb_array frame shows, over the slots played so far: on top the share of the slot's tasks that met
their SLO and the number of unfinished retraining jobs; below, one row per edge with the share of the
edge given to inference (blue, the agent's allocation within f_j^t, or the whole edge when paused) and
to retraining (orange, p_j^r while a job runs), stacked; slots where the edge paused retraining for
inference are marked red. The env records these per slot only when a render mode is set. Imported by
``OINCEnv.render`` only.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from envs.common.render import figure_to_array, new_figure

INFERENCE_COLOUR = "tab:blue"
RETRAINING_COLOUR = "tab:orange"
PAUSE_COLOUR = "red"


def ansi(env: gym.Env) -> str:
    """One status line: slot, the last slot's SLO rate, jobs, and each edge's retraining share."""
    history = env._history or []
    last = history[-1] if history else None
    shares = " ".join(f"e{j}:{p:.2f}" for j, p in enumerate(env._share))
    slo = f"{last['slo_rate']:.2f}" if last else "-"
    return (f"t={env.t}/{env.scenario.horizon} slo_rate={slo} jobs_active={int(env.jobs.active().size)} "
            f"jobs_total={env.jobs.count} retraining_share=[{shares}]")


def rgb_array(env: gym.Env) -> np.ndarray:
    """Edges over time with their inference and retraining shares, as an (H, W, 3) uint8 array."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    history = env._history or []
    n_j, horizon = env.instance.num_edges, env.scenario.horizon
    row_in = min(0.42, 6.0 / n_j)
    fig = new_figure(11.0, 2.8 + row_in * n_j)
    fig.get_layout_engine().set(h_pad=0.01, hspace=0.0)
    axes = fig.subplots(n_j + 1, 1, sharex=True, height_ratios=[2.2] + [1.0] * n_j)
    top, rows = axes[0], axes[1:]
    n = len(history)
    x = np.arange(n + 1)

    def stepped(values: np.ndarray) -> np.ndarray:  # fill_between(step="post") needs the last value twice
        return np.append(values, values[-1:]) if values.size else values

    if n:
        slo = np.array([h["slo_rate"] for h in history])
        jobs = np.array([h["jobs_active"] for h in history])
        top.fill_between(x, 0, stepped(slo), step="post", color="tab:green", alpha=0.35, linewidth=0)
        top.step(x, stepped(slo), where="post", color="tab:green", linewidth=1.0)
        twin = top.twinx()
        twin.step(x, stepped(jobs.astype(float)), where="post", color="black", linewidth=1.0)
        twin.set_ylim(0, max(1, int(jobs.max())) * 1.15)
        twin.set_ylabel("jobs active", fontsize=8)
        twin.tick_params(labelsize=7)
        inference = np.array([h["inference"] for h in history])  # (n, J)
        retraining = np.array([h["retraining"] for h in history])
        paused = np.array([h["paused"] for h in history])
    top.set_ylim(0, 1.05)
    top.set_ylabel("SLO met", fontsize=8)
    top.tick_params(labelsize=7)
    summary = (f"mean SLO met {np.mean([h['slo_rate'] for h in history]):.2f}, "
               f"mean latency {np.mean([h['latency_mean_s'] for h in history]):.3f} s, " if n else "")
    fig.suptitle(f"{_env_id(env)} ({env.retraining_name} retraining): {n_j} edges over slots 0-{max(n - 1, 0)} "
                  f"of {horizon} — {summary}{env.jobs.count} retraining jobs so far", fontsize=10)

    for j, ax in enumerate(rows):
        if n:
            inf_j, ret_j = stepped(inference[:, j]), stepped(retraining[:, j])
            ax.fill_between(x, 0, inf_j, step="post", color=INFERENCE_COLOUR, alpha=0.8, linewidth=0)
            ax.fill_between(x, inf_j, inf_j + ret_j, step="post", color=RETRAINING_COLOUR, alpha=0.9, linewidth=0)
            slots = np.flatnonzero(paused[:, j])
            if slots.size:
                ax.vlines(slots + 0.5, 0.72, 1.0, color=PAUSE_COLOUR, linewidth=1.6)
        ax.set_ylim(0, 1.0)
        ax.set_yticks([])
        ax.set_ylabel(f"edge {j}", rotation=0, ha="right", va="center", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    fig.legend(handles=[Patch(facecolor="tab:green", alpha=0.5, label="share of the slot's tasks meeting the SLO"),
                        Line2D([], [], color="black", label="unfinished retraining jobs (right axis)"),
                        Patch(facecolor=INFERENCE_COLOUR, alpha=0.8, label="edge share: inference"),
                        Patch(facecolor=RETRAINING_COLOUR, alpha=0.9, label="edge share: retraining p^r (job running)"),
                        Line2D([], [], color=PAUSE_COLOUR, label="retraining paused for inference"),
                        Patch(facecolor="white", edgecolor="0.6", label="idle (a row's height = the whole edge)")],
               loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    rows[-1].set_xlim(0, horizon)
    rows[-1].set_xlabel("slot (1 s each)")
    return figure_to_array(fig)


def _env_id(env: gym.Env) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else "OINC-v0"
