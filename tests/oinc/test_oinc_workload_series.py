"""The compiled per-slot recursion of ``envs.oinc.workload.synthetic_unit_series`` equals the numpy loop it replaced."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from envs.oinc.workload import synthetic_unit_series


def numpy_reference(rng, horizon, num_devices, *, burst_prob, burst_persistence, ar_coef, noise_std):
    """The vectorised-over-devices numpy loop of the original implementation (same draws, same operations)."""
    low, high = 0.25, 0.75
    enter, leave = burst_prob, 1.0 - burst_persistence
    p_on = enter / (enter + leave) if enter + leave > 0 else 0.0
    on = rng.random(num_devices) < p_on
    burst_u = rng.random((horizon, num_devices))
    noise = rng.standard_normal((2, horizon, num_devices)) * noise_std
    x, y = np.empty((horizon, num_devices)), np.empty((horizon, num_devices))
    level_x = np.where(on, high, low) + noise[0, 0]
    level_y = np.where(on, high, low) + noise[1, 0]
    for t in range(horizon):
        on = np.where(on, burst_u[t] >= leave, burst_u[t] < enter)
        target = np.where(on, high, low)
        level_x = ar_coef * level_x + (1.0 - ar_coef) * target + noise[0, t]
        level_y = ar_coef * level_y + (1.0 - ar_coef) * target + noise[1, t]
        np.clip(level_x, 0.0, 1.0, out=level_x)
        np.clip(level_y, 0.0, 1.0, out=level_y)
        x[t], y[t] = level_x, level_y
    return x, y


@given(seed=st.integers(0, 2**32 - 1), horizon=st.integers(1, 200), devices=st.integers(1, 16),
       burst_prob=st.floats(0.0, 1.0), persistence=st.floats(0.0, 0.99), ar_coef=st.floats(0.0, 0.99),
       noise_std=st.floats(0.0, 0.5))
def test_workload__compiled_series_equals_the_numpy_loop(seed, horizon, devices, burst_prob, persistence, ar_coef,
                                                          noise_std):
    kwargs = dict(burst_prob=burst_prob, burst_persistence=persistence, ar_coef=ar_coef, noise_std=noise_std)
    got = synthetic_unit_series(np.random.default_rng(seed), horizon, devices, **kwargs)
    want = numpy_reference(np.random.default_rng(seed), horizon, devices, **kwargs)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
