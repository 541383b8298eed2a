"""Ship a finished run, or export a shipped agent for rl-zoo3:

    python -m agents.pretrained name=<name> run=<run_dir> [command=...] [note=...]
    python -m agents.pretrained export=<name> [out=outputs/zoo-agents] [exp_id=1]   # rl-zoo3's layout (agents.zoo.export)
"""

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


def export_main(cfg) -> None:
    from agents.zoo.export import export_pretrained

    try:
        print(export_pretrained(cfg.export, cfg.out, cfg.exp_id, publish=cfg.publish))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    if any(arg.startswith("export=") for arg in sys.argv[1:]):
        from agents.zoo.export import ExportConfig, export_pretrained

        run_cli(export_main, ExportConfig, export_pretrained.__doc__ or "")
    else:
        run_cli(main, ShipConfig, ship.__doc__ or "")
