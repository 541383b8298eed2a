"""Shared pytest set-up: a clear stop when the test requirements are missing, and hypothesis profiles.

The project is installed (``pip install -r requirements.txt`` ends with ``-e .``); train.py and evaluate.py,
which tests import as modules, are found through pytest's ``pythonpath = ["."]`` (pyproject.toml).
"""

from __future__ import annotations

import importlib.util
import os

import pytest

#: Modules the test suite imports beyond the library's own dependencies (requirements.txt, or the ``dev`` extra).
TEST_REQUIREMENTS = ("hypothesis",)



def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


_missing = [name for name in TEST_REQUIREMENTS if not _installed(name)]
if _missing:
    # a conftest that fails to import gives a long traceback; say what to install instead
    pytest.exit(f"the tests need {', '.join(_missing)}: pip install -r requirements.txt (a clone) or "
                "pip install 'edge-sched-gym[dev]'", returncode=4)

from hypothesis import HealthCheck, settings  # noqa: E402  (after the check above)

settings.register_profile(
    "default", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("thorough", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def restore_torch():
    """Undo what rl-zoo3 and agents.zoo change process-wide (torch's thread count, distribution argument checks)."""
    import torch

    threads, validate = torch.get_num_threads(), torch.distributions.Distribution._validate_args
    yield
    torch.set_num_threads(threads)
    torch.distributions.Distribution.set_default_validate_args(validate)
