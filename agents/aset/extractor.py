"""Convolution-over-time feature extractor for ASET-v0's (features x sub-windows) state, for SB3's DQN.

Accepts the env's default flat observation (reshaped to (features, ``time_steps``) row-major) or the
2-D layout (``obs_layout="2d"``).

The paper's DQN "consists of a stacking of convolutional layers that extracts temporal correlations
from the state tensor" (Section IV-A). Two modes:

* ``conv="2d"`` (the paper's architecture, edge_sched_gym/conf/experiment/dqn_aset_paper.yaml): the state is a
  one-channel image (features x time); three 4x4 convolutions (16/32/64 channels, 'same' padding),
  each followed by ReLU and a max-pool over time only (1x2), then adaptive average pooling and a
  linear layer to ``features_dim`` = 256; SB3's Q head then maps 256 -> 7 (``net_arch=[256]``).
* ``conv="1d"`` (CPU-sized default, edge_sched_gym/conf/env/aset-v0.yaml): every feature row is an input channel of 1-D convolutions over
  the 20 sub-windows (kernel 4), so the cost does not grow with the image area; max-pool over time,
  then a linear layer to ``features_dim``.

Use through ``policy_kwargs``::

    DQN("MlpPolicy", env, policy_kwargs={
        "features_extractor_class": TimeConvExtractor,
        "features_extractor_kwargs": {"conv": "1d", "channels": [64, 64], "features_dim": 128}})
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from envs.common.validation import check_choice, check_in_range


def _same_pad(kernel: int) -> tuple[int, int]:
    """(left, right) zero padding that keeps the length for any kernel size, odd or even."""
    left = (kernel - 1) // 2
    return left, kernel - 1 - left


class TimeConvExtractor(BaseFeaturesExtractor):
    """Stacked convolutions over the time axis of a (features, time) Box observation."""

    def __init__(
        self,
        observation_space: gym.spaces.Box,
        features_dim: int = 128,
        conv: str = "1d",
        channels: Sequence[int] = (64, 64),
        kernel: int = 4,
        pooled: Sequence[int] = (4, 2),
        time_steps: int = 20,
    ) -> None:
        check_choice("conv", conv, ["1d", "2d"])
        check_in_range("features_dim", features_dim, 1, 1_000_000, integer=True)
        check_in_range("kernel", kernel, 1, 64, integer=True)
        check_in_range("time_steps", time_steps, 1, 100_000, integer=True)
        shape = observation_space.shape
        if len(shape) == 1 and shape[0] % time_steps == 0:
            shape = (shape[0] // time_steps, time_steps)
        if len(shape) != 2:
            raise ValueError(
                f"observation_space.shape={observation_space.shape} is invalid: expected (features, time) or "
                f"a flat vector whose length is a multiple of time_steps={time_steps}"
            )
        super().__init__(observation_space, features_dim)
        self.state_shape: tuple[int, int] = (int(shape[0]), int(shape[1]))
        n_features, n_time = self.state_shape
        layers: list[nn.Module] = []
        if conv == "1d":
            in_ch = n_features
            for out_ch in channels:
                layers += [nn.ConstantPad1d(_same_pad(kernel), 0.0), nn.Conv1d(in_ch, out_ch, kernel), nn.ReLU()]
                if n_time >= 2:
                    layers.append(nn.MaxPool1d(2))
                    n_time //= 2
                in_ch = out_ch
            layers.append(nn.Flatten())
        else:
            in_ch = 1
            for out_ch in channels:
                pad = _same_pad(kernel)
                layers += [nn.ZeroPad2d((*pad, *pad)), nn.Conv2d(in_ch, out_ch, kernel), nn.ReLU()]
                if n_time >= 2:
                    layers.append(nn.MaxPool2d((1, 2)))
                    n_time //= 2
                in_ch = out_ch
            layers += [nn.AdaptiveAvgPool2d(tuple(pooled)), nn.Flatten()]
        self.conv_mode = conv
        self.cnn = nn.Sequential(*layers)
        with torch.no_grad():
            sample = torch.as_tensor(observation_space.sample()[None]).float()
            n_flat = self.cnn(self._shape(sample)).shape[1]
        self.linear = nn.Sequential(nn.Linear(n_flat, features_dim), nn.ReLU())

    def _shape(self, observations: torch.Tensor) -> torch.Tensor:
        """(B, F*K) or (B, F, K) -> (B, F, K) for 1-D convolutions, (B, 1, F, K) for 2-D ones."""
        x = observations.reshape(observations.shape[0], *self.state_shape)
        return x if self.conv_mode == "1d" else x.unsqueeze(1)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.linear(self.cnn(self._shape(observations)))
