"""Pictures of a UEC-v0 episode (``render_mode="ansi"`` / ``"rgb_array"``), drawn from the env's own state.

The rgb_array frame is a Gantt chart of the K servers over the horizon: the reserved work EDF serves in
each slot (grey, its height the share of the slot's capacity), every retraining block accepted so far
(coloured by the task's device type; a pre-empted block hatched and marked with a red cross at its cut),
and, in a strip below, every decision taken so far (accepted arrivals by device colour, rejects as grey
crosses). A dashed line marks the pending arrival's slot. Imported by ``UECEnv.render`` only.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from envs.common.render import colours, figure_to_array, new_figure


def ansi(env: gym.Env) -> str:
    """One status line: slot, profit so far, decisions, and which servers run a retraining task."""
    st = env._state
    busy = ", ".join(f"k{k}:{'busy' if b > st.time else 'idle'}" for k, b in enumerate(st.busy_until))
    return f"t={st.time} profit={st.profit:.3f} accepted={st.accepted} rejected={st.rejected} [{busy}]"


def reserved_service(env: gym.Env) -> np.ndarray:
    """(K, T) share of each slot's capacity that EDF gives to reserved tasks, given the blocks so far.

    From the backlog the env keeps (Lindley's recursion): served(t) = Q(t) + released(t) - Q(t + 1).
    """
    inst, st = env.instance, env._state
    served = st.backlog[:-1].T + inst.reserved_releases - st.backlog[1:].T
    return np.clip(served / inst.capacity, 0.0, 1.0)


def rgb_array(env: gym.Env) -> np.ndarray:
    """The Gantt chart of the episode so far as an (H, W, 3) uint8 array (fixed size per env)."""
    inst, st = env.instance, env._state
    K, J, T = inst.num_servers, inst.num_devices, inst.horizon
    decisions = env._decisions or []
    fig = new_figure(11.0, 2.4 + 0.55 * K)
    gantt, strip = fig.subplots(2, 1, sharex=True, height_ratios=[max(K, 2), 1.2])
    device_colour = colours("tab20" if J > 10 else "tab10", J)

    share = reserved_service(env)
    slots = np.arange(T + 1)
    for k in range(K):
        y0 = k + 0.4  # the y axis runs downwards: the row's bottom edge, reserved work grows up from it
        top = np.append(share[k], share[k, -1])
        gantt.fill_between(slots, y0, y0 - 0.8 * top, step="post", color="0.72", linewidth=0)
        gantt.plot([0, T], [y0, y0], color="0.85", linewidth=0.6)

    # accepted tasks: st.blocks are (server, start, duration) in acceptance order, as the accepted decisions
    accepted = [d for d in decisions if d[2] >= 0]
    end = T
    seen_devices: set[int] = set()
    for (server, start, duration), (_, device, _, _, preempted) in zip(st.blocks, accepted):
        end = max(end, start + duration)
        gantt.broken_barh([(start, max(duration, 0.25))], (server - 0.32, 0.64), facecolors=device_colour[device],
                          edgecolors="red" if preempted else "black", linewidth=1.2 if preempted else 0.6,
                          hatch="///" if preempted else None, alpha=0.9)
        seen_devices.add(device)
        if preempted:
            gantt.plot(start + duration, server, marker="X", color="red", markersize=9, linestyle="none",
                       markeredgecolor="white")

    now = min(st.time, T)
    for ax in (gantt, strip):
        ax.axvline(now, color="black", linestyle="--", linewidth=1.0)
        ax.set_xlim(-0.5, end + 0.5)
    gantt.set_yticks(range(K), [f"server {k}" for k in range(K)])
    gantt.set_ylim(K - 0.5, -0.5)
    gantt.set_ylabel("edge server")
    gantt.grid(axis="x", alpha=0.3)
    strip.text(now, 1.0, "now ", transform=strip.get_xaxis_transform(), va="top", ha="right", fontsize=8)
    done = st.decision >= env._arrival_slots.size
    gantt.set_title(
        f"{_env_id(env)}: retraining on under-utilised edges — "
        f"{'episode end' if done else f'slot {st.time}'}, profit {st.profit:.3f}, "
        f"accepted {st.accepted}, rejected {st.rejected}, pre-empted {st.preempted}",
        fontsize=10,
    )
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor="0.72", label="reserved work (height: share of capacity)"),
               Patch(facecolor="white", edgecolor="red", hatch="///", label="retraining block, pre-empted"),
               Line2D([], [], marker="X", color="red", markeredgecolor="white", markersize=9, linestyle="none",
                      label="pre-emption (cut, no profit)")]
    handles += [Patch(facecolor=device_colour[j], edgecolor="black", linewidth=0.6,
                      label=f"retraining block, device type {j}") for j in sorted(seen_devices)]
    gantt.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)

    # the decisions so far: accepted (server row colour = device), rejected
    if decisions:
        d = np.array([(t, dev, srv) for t, dev, srv, _, _ in decisions], dtype=np.int64)
        acc = d[:, 2] >= 0
        if acc.any():
            strip.scatter(d[acc, 0], np.ones(acc.sum()), c=[device_colour[j] for j in d[acc, 1]], s=28,
                          edgecolors="black", linewidths=0.4, label="accepted (colour: device type)")
        if (~acc).any():
            strip.scatter(d[~acc, 0], np.zeros((~acc).sum()), marker="x", color="0.35", s=24, label="rejected")
    strip.set_yticks([0, 1], ["reject", "accept"])
    strip.set_ylim(-0.7, 1.7)
    strip.set_xlabel(f"slot (T = {T}; one slot = {inst.slot_seconds:g} s)")
    strip.set_ylabel("decision")
    strip.grid(axis="x", alpha=0.3)
    if decisions:
        strip.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return figure_to_array(fig)


def _env_id(env: gym.Env) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else "UEC-v0"
