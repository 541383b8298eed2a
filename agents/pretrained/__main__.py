"""``python -m agents.pretrained name=<name> run=<run_dir> [command=...] [note=...]``: ship a finished run."""

from __future__ import annotations

import sys

from agents.cli import run_cli
from agents.pretrained import ShipConfig, ship


def main(cfg: ShipConfig) -> None:
    try:
        print(ship(cfg))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    run_cli(main, ShipConfig, ship.__doc__ or "")
