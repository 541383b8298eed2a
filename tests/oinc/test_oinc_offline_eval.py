"""evaluate.py accepts OINC's Table II names (not registry names) and rejects unknown ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from edge_sched_gym import evaluate

CONF_DIR = Path(__file__).resolve().parents[2] / "edge_sched_gym" / "conf"


def settings(*overrides: str) -> dict:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return evaluate.resolve_settings(compose(config_name="evaluate", overrides=["env=oinc-v0", *overrides]))


def test_oinc_evaluate__default_policies_are_the_seven_table2_pairs():
    policies = settings()["policies"]
    assert policies[1:] == ["ekya", "kalmia", "greedy_aret", "liu_aret", "ainf_dedas", "ainf_zhang"]
    assert policies[0].startswith("oinc=") and policies[0].endswith("oinc-v0-sacd")  # the shipped SAC-D plays A_inf


def test_oinc_evaluate__pair_syntax_is_accepted_and_unknown_names_list_the_forms():
    assert settings("policies=[greedy+kalmia,liu]")["policies"] == ["greedy+kalmia", "liu"]
    with pytest.raises(ValueError, match=r"policy='bogus' is not known for OINC-v0: expected one of \['oinc'"):
        settings("policies=[bogus]")
