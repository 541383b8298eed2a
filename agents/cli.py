"""``key=value`` command lines for the suite's scripts (the benchmarks, ``python -m agents.corais.trainer``).

Hydra's override style without Hydra's run machinery: ``OmegaConf.from_cli()`` merged onto a dataclass
schema, so an unknown key, a wrong type or a missing mandatory value fails with one clear line
(``error: ...``, exit status 2) and ``-h`` / ``--help`` prints the usage and every key with its default::

    python -m benchmarks.oinc_throughput seconds=2 retraining=kalmia
    python -m agents.corais.trainer run_dir=runs/corais_cpu seed=7 algo.max_minutes=13.5

Values parse as YAML (``2e-4`` is a float, ``[10,5,100]`` a list, ``null`` None); nested keys use dots.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

T = TypeVar("T")


def usage(schema: type, doc: str | None = None) -> str:
    """The script's docstring followed by every key of ``schema`` with its default (as YAML)."""
    defaults = OmegaConf.to_yaml(OmegaConf.structured(schema)).rstrip()
    return f"{(doc or '').strip()}\n\nkeys (key=value, defaults shown):\n" + "\n".join(
        f"  {line}" for line in defaults.splitlines()
    )


def parse_cli(schema: type[T], argv: Sequence[str] | None = None) -> T:
    """``argv`` (default ``sys.argv[1:]``) as ``key=value`` overrides of ``schema``'s defaults.

    Returns a ``schema`` instance; raises ValueError naming the bad key and the valid keys.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    valid = sorted(getattr(schema, "__dataclass_fields__", {}))
    bad = [a for a in args if "=" not in a or a.startswith(("-", "+", "~"))]
    if bad:
        raise ValueError(f"argument {bad[0]!r} is not of the form key=value; valid keys: {valid}")
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(schema), OmegaConf.from_cli(args))
        return OmegaConf.to_object(cfg)  # type: ignore[return-value]
    except yaml.YAMLError as err:
        raise ValueError(f"a value does not parse as YAML ({str(err).splitlines()[0]}); quote list entries that "
                         f"hold brackets, e.g. 'extra=[\"a=[1,2]\"]'; valid keys: {valid}") from None
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None)
        where = f"{key}: " if key else ""
        raise ValueError(f"{where}{str(err.msg).splitlines()[0]}; valid keys: {valid}") from None


def run_cli(main: Callable[[T], Any], schema: type[T], doc: str | None, argv: Sequence[str] | None = None) -> Any:
    """Parse the command line into ``schema`` and call ``main(cfg)``; bad input exits 2 with ``error: ...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(usage(schema, doc))
        sys.exit(0)
    try:
        cfg = parse_cli(schema, args)
    except ValueError as err:
        print(f"error: {err}\n(-h lists the keys)", file=sys.stderr)
        sys.exit(2)
    return main(cfg)


def merge_schema(schema: type[T], cfg: dict[str, Any], algo: str) -> dict[str, Any]:
    """``cfg`` (an algo config; a ``defaults`` list is ignored) merged over the dataclass ``schema``'s defaults as
    a plain dict; unknown keys and wrong types raise ValueError naming ``algo``, the key and the valid keys."""
    from omegaconf.errors import ConfigKeyError

    cfg = {k: v for k, v in cfg.items() if k != "defaults"}  # an edge_sched_gym/conf/algo YAML read as plain YAML
    try:
        return OmegaConf.to_container(OmegaConf.merge(OmegaConf.structured(schema), cfg), resolve=True)  # type: ignore[return-value]
    except OmegaConfBaseException as err:
        what = "unknown key" if isinstance(err, ConfigKeyError) else "invalid value"
        raise ValueError(f"algo={algo}: {what} at algo.{err.full_key} ({str(err.msg).splitlines()[0]}); valid keys: "
                         f"{sorted(schema.__dataclass_fields__)}") from None
