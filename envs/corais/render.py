"""Pictures of a CoRaiS episode (``render_mode="ansi"`` / ``"rgb_array"``): one batch dispatch.

The rgb_array frame has two panels. Left, a map of the service subsystem: the Q region edges (squares,
one colour each) with the number of new requests arising at each, the other edges (grey dots: where
clients may be when results return); after the step, arrows from each source edge to the edge that
executes its requests (width: how many), and each edge's label gains the requests it executes. Right,
each region edge's finish time T_j: its backlog alone (grey) and with the dispatched requests (colour),
the batch's response time R = max_j T_j as a dashed line, the edge that sets it outlined in red.
Before the step only the instance is drawn. Imported by ``CoRaiSEnv.render`` only.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from envs.common.render import colours, figure_to_array, new_figure
from envs.corais.dynamics import backlog_times


def ansi(env: gym.Env) -> str:
    """The batch, and after the step the requests and finish time of every region edge."""
    inst = env.instance
    n, q, z = inst.scale
    head = f"{env.env_id} scale N={n} Q={q} Z={z}: "
    if env._last_dispatch is None:
        arising = np.bincount(inst.req_src, minlength=q)
        return head + "pending dispatch; requests arising per edge " + " ".join(
            f"e{j}:{c}" for j, c in enumerate(arising))
    action, times = env._last_dispatch
    counts = np.bincount(action, minlength=q)
    edges = " ".join(f"e{j}:{c}req,T={t:.3f}" for j, (c, t) in enumerate(zip(counts, times)))
    return head + f"R={times.max():.3f} (edge {int(times.argmax())}); {edges}"


def rgb_array(env: gym.Env) -> np.ndarray:
    """The dispatch map and the edges' finish times as an (H, W, 3) uint8 array."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    inst = env.instance
    n, q, z = inst.scale
    coords = inst.coords
    edge_colour = colours("tab10" if q <= 10 else "tab20", q)
    fig = new_figure(11.0, 5.0)
    geo, bars = fig.subplots(1, 2, width_ratios=[1.15, 1.0])
    dispatched = env._last_dispatch is not None
    arising = np.bincount(inst.req_src, minlength=q)

    # --- map -----------------------------------------------------------------------------------
    if n > q:
        geo.scatter(coords[q:, 0], coords[q:, 1], s=18, color="0.6", zorder=2)
    if dispatched:
        action, times = env._last_dispatch
        executed = np.bincount(action, minlength=q)
        pairs = np.zeros((q, q), dtype=np.int64)
        np.add.at(pairs, (inst.req_src, action), 1)
        widest = max(int(pairs.max()), 1)
        for src in range(q):
            for dst in range(q):
                count = int(pairs[src, dst])
                if count == 0 or src == dst:
                    continue
                geo.annotate("", xy=coords[dst], xytext=coords[src], zorder=3,
                             arrowprops={"arrowstyle": "-|>", "color": edge_colour[dst], "alpha": 0.85,
                                         "linewidth": 0.8 + 4.0 * count / widest, "shrinkA": 9, "shrinkB": 9,
                                         "connectionstyle": "arc3,rad=0.15", "mutation_scale": 12})
    else:
        executed = None
    size = 60 + 340 * arising / max(int(arising.max()), 1)
    geo.scatter(coords[:q, 0], coords[:q, 1], s=size, marker="s", color=edge_colour, edgecolors="black",
                linewidths=0.8, zorder=4)
    for j in range(q):
        label = f"e{j}: {arising[j]} arise" + (f", {executed[j]} run" if executed is not None else "")
        geo.annotate(label, coords[j], xytext=(7, 7), textcoords="offset points", fontsize=8, zorder=5,
                     bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.75, "linewidth": 0})
    lo, hi = coords.min(axis=0), coords.max(axis=0)
    pad = 0.12 * max(float((hi - lo).max()), 1e-9)
    geo.set_xlim(lo[0] - pad, hi[0] + pad)
    geo.set_ylim(lo[1] - pad, hi[1] + pad)
    geo.set_aspect("equal", adjustable="box")
    geo.set_xlabel("x")
    geo.set_ylabel("y")
    geo.set_title("edges and the dispatch (arrow: source -> executing edge, width: requests)"
                  if dispatched else "edges and the new requests (not dispatched yet)", fontsize=9)
    handles = [Line2D([], [], marker="s", color="white", markerfacecolor="0.8", markeredgecolor="black",
                      markersize=9, label="region edge (size: requests arising)")]
    if n > q:
        handles.append(Line2D([], [], marker="o", color="white", markerfacecolor="0.6", markersize=6,
                              label="other edge (client at completion)"))
    geo.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2, fontsize=8, frameon=False)

    # --- finish times ----------------------------------------------------------------------------
    base = backlog_times(inst.workload)
    y = np.arange(q)
    if dispatched:
        bars.barh(y, times, color=edge_colour, edgecolor="black", linewidth=0.6, height=0.7, zorder=2)
        worst = int(times.argmax())
        bars.barh([worst], [times[worst]], color="none", edgecolor="red", linewidth=2.0, height=0.7, zorder=4)
        bars.axvline(times.max(), color="red", linestyle="--", linewidth=1.0, zorder=5)
        for j in range(q):
            bars.text(times[j], j, f" {executed[j]} req", va="center", fontsize=8, zorder=6)
        title = f"finish time per edge: R = max T_j = {times.max():.3f} (edge {worst})"
        right = max(float(times.max()), float(base.max()))
    else:
        title = "finish time per edge: backlog only (no dispatch yet)"
        right = float(base.max())
    bars.barh(y, base, color="0.55", height=0.7 * (0.55 if dispatched else 1.0), zorder=3)
    bars.set_xlim(0, max(right, 1e-9) * 1.18)
    bars.set_yticks(y, [f"edge {j} (m={int(inst.replicas[j])})" for j in range(q)], fontsize=8)
    bars.set_ylim(q - 0.5, -0.5)
    bars.set_xlabel("time until the edge has finished everything (T_j)")
    bars.set_title(title, fontsize=9)
    bars.grid(axis="x", alpha=0.3)
    legend = [Patch(facecolor="0.55", label="backlog alone")]
    if dispatched:
        legend += [Patch(facecolor="white", edgecolor="black", label="with the dispatched requests"),
                   Line2D([], [], color="red", linestyle="--", label="response time R")]
    bars.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=3, fontsize=8, frameon=False)
    fig.suptitle(f"{env.env_id}: dispatch of Z = {z} requests to Q = {q} region edges (N = {n} edges)",
                 fontsize=10)
    return figure_to_array(fig)
