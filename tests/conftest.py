"""Shared pytest set-up: hypothesis profiles.

The project is installed (``pip install -r requirements.txt`` ends with ``-e .``); train.py and evaluate.py,
which tests import as modules, are found through pytest's ``pythonpath = ["."]`` (pyproject.toml).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("thorough", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
