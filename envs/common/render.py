"""What the envs' ``render()`` share: the render modes, their check, and matplotlib figures as arrays.

Every env of the suite accepts ``render_mode`` in ``{None, "ansi", "rgb_array"}`` (Gymnasium semantics):
``"ansi"`` makes ``render()`` return a str, ``"rgb_array"`` an (H, W, 3) uint8 array of fixed size, drawn
with matplotlib on the Agg canvas (no pyplot state, no display needed). The drawing code of each problem
lives in ``envs/<problem>/render.py`` and is imported only when a frame is drawn, so an env that does not
render never imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: The render modes every env of the suite supports (``metadata["render_modes"]``).
RENDER_MODES: tuple[str, ...] = ("ansi", "rgb_array")
#: Frames per second for video wrappers (``metadata["render_fps"]``): one frame per env step.
RENDER_FPS = 4
#: Pixels per inch of every picture (a figure of w x h inches gives a (100 h, 100 w, 3) array).
DPI = 100


def check_render_mode(render_mode: Any, modes: Sequence[str] = RENDER_MODES) -> str | None:
    """``render_mode`` if it is None or one of ``modes``; else ValueError naming the allowed ones."""
    if render_mode is None or (isinstance(render_mode, str) and render_mode in modes):
        return render_mode
    raise ValueError(f"render_mode={render_mode!r} is invalid: expected None or one of {list(modes)}")


def new_figure(width_in: float, height_in: float) -> Any:
    """A matplotlib Figure of fixed size on an Agg canvas (frames of one env all have the same shape)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_to_array(fig: Any) -> np.ndarray:
    """Draw ``fig`` and return its pixels as a fresh (H, W, 3) uint8 array."""
    fig.canvas.draw()
    return np.array(np.asarray(fig.canvas.buffer_rgba())[..., :3], dtype=np.uint8, copy=True)


def colours(name: str, n: int) -> list[tuple[float, float, float, float]]:
    """``n`` distinct colours of a qualitative matplotlib colormap (cycled when ``n`` exceeds it)."""
    from matplotlib import colormaps

    cmap = colormaps[name]
    size = getattr(cmap, "N", 10)
    return [cmap(i % size) for i in range(n)]


def render_not_set_warning(env_name: str) -> None:
    """Gymnasium's advisory when ``render()`` is called on an env built without a render mode."""
    from gymnasium import logger

    logger.warn(
        f"You are calling render() on {env_name} without a render mode; build it with "
        f"render_mode in {list(RENDER_MODES)}, e.g. gym.make(id, render_mode='rgb_array')."
    )


def render_frame(env: Any, *, started: bool, module: str) -> str | np.ndarray | None:
    """What every env's ``render()`` does: None with Gymnasium's warning without a render mode, RuntimeError
    before the first reset (``started`` False), else ``module.ansi(env)`` or ``module.rgb_array(env)`` (the
    problem's drawing module, imported only now, so an env that never renders never imports matplotlib)."""
    import importlib

    if env.render_mode is None:
        render_not_set_warning(type(env).__name__)
        return None
    if not started:
        raise RuntimeError("call reset() before render()")
    drawing = importlib.import_module(module)
    return drawing.ansi(env) if env.render_mode == "ansi" else drawing.rgb_array(env)
