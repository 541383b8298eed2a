"""The learning curve and the reference share one TensorBoard chart (a custom-scalars layout, issue 28 F7)."""

from __future__ import annotations

from stable_baselines3.common.logger import configure
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agents.callbacks import REFERENCE_LAYOUT, add_reference_layout


def test_tensorboard_layout__puts_the_reference_on_the_learning_curve(tmp_path):
    logger = configure(str(tmp_path), ["tensorboard"])
    assert add_reference_layout(logger)
    logger.record("eval/mean_reward", 1.0)
    logger.record("reference/mean_reward", 2.0)
    logger.dump(0)
    logger.close()
    events = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    events.Reload()
    layout = events.Tensors("custom_scalars__config__")[0].tensor_proto.string_val[0].decode(errors="ignore")
    chart = REFERENCE_LAYOUT["learning curve vs reference"]["mean reward"][1]
    assert all(tag in layout for tag in chart)


def test_tensorboard_layout__no_tensorboard_output_no_layout(tmp_path):
    assert not add_reference_layout(configure(str(tmp_path), ["csv"]))
