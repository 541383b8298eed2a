"""Wireless uplink model shared by UEC-v0 and OINC-v0: path loss, channel gain, noise and Shannon rate.

Both papers use r = B·log2(1 + p·g/N) with the 3GPP pico-cell path loss
PL(dB) = 140.7 + 36.7·log10(d_km) + 4 (OINC; RESCUE cites it) and a noise figure of "-40 dBm".
Read physically (g = 10^(-PL/10), N = -40 dBm) the SNR is about -60 dB and the rate a few bit/s, so
two readings are offered (see docs/modelling_choices.md):

* ``"physical"``: g = 10^(-PL/10), thermal noise -174 dBm/Hz over the band. 1.6-15 Mbps at 3 MHz
  over 0.15-0.45 km with 100 mW. UEC-v0's default.
* ``"paper"``: the paper-literal reading, the path-loss *number* used as a linear gain and -40 dBm as
  the absolute noise power (SNR ≈ 80 dB). The only reading consistent with OINC's reported 0.25 s
  mean inference latency; OINC-v0's default.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.common.validation import check_choice


@dataclass(frozen=True)
class ChannelModel:
    """How gain and noise are read from the papers' numbers.

    Attributes:
        gain: ``"path_loss"`` (g = 10^(-PL/10)) or ``"literal"`` (g = PL in dB used as a linear number).
        noise_dbm_per_hz: noise spectral density; used when ``noise_dbm`` is None.
        noise_dbm: absolute noise power over the band, or None to integrate ``noise_dbm_per_hz``.
    """

    gain: str = "path_loss"
    noise_dbm_per_hz: float = -174.0
    noise_dbm: float | None = None

    def __post_init__(self) -> None:
        check_choice("gain", self.gain, ("path_loss", "literal"))


CHANNEL_PRESETS: dict[str, ChannelModel] = {
    "physical": ChannelModel(gain="path_loss", noise_dbm_per_hz=-174.0, noise_dbm=None),
    "paper": ChannelModel(gain="literal", noise_dbm=-40.0),
}


def channel_model(preset: str | ChannelModel) -> ChannelModel:
    """Resolve a preset name (``"physical"`` or ``"paper"``) or pass a ChannelModel through."""
    if isinstance(preset, ChannelModel):
        return preset
    return CHANNEL_PRESETS[check_choice("channel", preset, CHANNEL_PRESETS)]


def path_loss_db(distance_km: np.ndarray | float) -> np.ndarray:
    """3GPP TR 36.814 pico-cell path loss PL(dB) = 140.7 + 36.7·log10(d_km) + 4 (as in OINC)."""
    return 140.7 + 36.7 * np.log10(np.asarray(distance_km, dtype=float)) + 4.0


def channel_gain(distance_km: np.ndarray | float, model: ChannelModel) -> np.ndarray:
    """Linear channel gain g for the given distances under ``model``."""
    pl = path_loss_db(distance_km)
    return pl if model.gain == "literal" else 10.0 ** (-pl / 10.0)


def noise_power_w(bandwidth_hz: np.ndarray | float, model: ChannelModel) -> np.ndarray:
    """Noise power in watts over ``bandwidth_hz`` under ``model``."""
    if model.noise_dbm is not None:
        return np.broadcast_to(10.0 ** ((model.noise_dbm - 30.0) / 10.0), np.shape(bandwidth_hz)).astype(float)
    return 10.0 ** ((model.noise_dbm_per_hz - 30.0) / 10.0) * np.asarray(bandwidth_hz, dtype=float)


def shannon_rate_bps(
    bandwidth_hz: np.ndarray | float,
    tx_power_w: np.ndarray | float,
    distance_km: np.ndarray | float,
    model: ChannelModel,
) -> np.ndarray:
    """Achievable rate B·log2(1 + p·g/N) in bit/s (broadcasts over its arguments)."""
    snr = np.asarray(tx_power_w, dtype=float) * channel_gain(distance_km, model) / noise_power_w(bandwidth_hz, model)
    return np.asarray(bandwidth_hz, dtype=float) * np.log2(1.0 + snr)
