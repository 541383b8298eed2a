"""rl-baselines3-zoo (rl-zoo3) support: shipped hyperparameter files and the suite's algorithms in rl-zoo3's ALGOS.

rl-zoo3 trains on any registered id; ``--gym-packages envs`` imports the package that registers them and
``--conf-file`` points at one of the files shipped here (:func:`hyperparams_file`), keyed by env id::

    python -m rl_zoo3.train --algo ppo --env OINC-v0 --gym-packages envs agents.zoo \\
        --conf-file $(python -c "import agents.zoo as z; print(z.hyperparams_file('ppo'))")
    python -m agents.zoo train --algo ppo --env OINC-v0        # the same: fills in both
    python -m agents.zoo enjoy --algo sac_d --env UEC-v0 -f outputs/zoo-agents --exp-id 1 --no-render --deterministic

``enjoy`` goes through the suite's safe loaders (:mod:`agents.zoo.enjoy`), never rl-zoo3's own (which reads
``args.yml`` / ``config.yml`` with an unsafe YAML loader and the model with SB3's pickle-reading ``load``); a folder
holding anything else than plain data and allow-listed classes is refused. Bad option values (``-n -5``) and
rl-zoo3's own errors print one ``error:`` line and exit 2.

Files (``agents/zoo/hyperparams/<algo>.yml``): ``ppo`` for every id (``MultiInputPolicy`` for CoRaiS' Dict
observation), ``dqn`` for the Discrete ids (UEC, ASET), and, through ``python -m agents.zoo`` (which adds
:data:`EXTRA_ALGOS` to rl-zoo3's ``ALGOS`` before parsing its arguments), ``ppo_mask`` (sb3-contrib's
MaskablePPO: masks from ``env.action_masks()``) for UEC and ASET. Sizes run on two CPU cores
(benchmarks in tests/test_rl_zoo3.py's docstring).

Importing this module (``--gym-packages agents.zoo``) registers the ids (it imports ``envs``) and turns off
``torch.distributions`` argument validation: SB3 builds one ``Categorical`` per action head at every step, and with
OINC's 120 heads and CoRaiS' 100 the validation took half of PPO's time. Nothing else changes.

Shipped agents (:mod:`agents.pretrained`) export to rl-zoo3's folder layout with
``python -m agents.pretrained export=<name> out=<folder>`` (:func:`export_pretrained`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import envs  # noqa: F401  (registers the ids, as --gym-packages expects)
from agents.ppo import fast_distributions

#: the folder of the shipped rl-zoo3 hyperparameter files, one ``<algo>.yml`` per algorithm
HYPERPARAMS_DIR = Path(__file__).resolve().parent / "hyperparams"

#: the suite's algorithms under the names rl-zoo3 sees through ``python -m agents.zoo`` ("module:Class").
#: ``sac_d`` is the discrete SAC the shipped ``*-sac*`` agents were trained with; rl-zoo3's own ``sac`` is SB3's
#: continuous SAC and cannot load them.
EXTRA_ALGOS: dict[str, str] = {
    "ppo_mask": "sb3_contrib:MaskablePPO",
    "sac_d": "agents.zoo.algos:ZooDiscreteSAC",
    "dqn_mask": "agents.dqn:MaskedDQN",
}

#: the rl-zoo3 algorithm name an exported shipped agent is filed under (keyed by agents.registry's algo name)
ZOO_ALGO: dict[str, str] = {"sac": "sac_d", "dqn": "dqn_mask", "ppo_mask": "ppo_mask"}


fast_distributions()


def hyperparams_file(algo: str) -> Path:
    """The shipped rl-zoo3 hyperparameter file of ``algo``; ValueError listing those shipped."""
    path = HYPERPARAMS_DIR / f"{algo}.yml"
    if not path.is_file():
        shipped = sorted(p.stem for p in HYPERPARAMS_DIR.glob("*.yml"))
        raise ValueError(f"algo={algo!r} has no shipped rl-zoo3 hyperparameter file; shipped: {shipped}")
    return path


def hyperparams(algo: str) -> dict[str, Any]:
    """The shipped hyperparameters of ``algo``, env id -> rl-zoo3 settings."""
    import yaml

    return yaml.safe_load(hyperparams_file(algo).read_text())


def register_algos() -> dict[str, Any]:
    """Add :data:`EXTRA_ALGOS` to rl-zoo3's ``ALGOS`` (idempotent; needs rl-zoo3 installed) and return it."""
    from rl_zoo3 import ALGOS

    from envs.problems import load_attr

    for name, target in EXTRA_ALGOS.items():
        ALGOS.setdefault(name, load_attr(target))
    return ALGOS


def _option(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def complete_argv(argv: list[str]) -> list[str]:
    """rl-zoo3 arguments with ``--gym-packages agents.zoo``, ``--num-threads 1`` and, for ``train`` without
    ``--conf-file``, the shipped file of ``--algo`` filled in (each only when not given)."""
    argv = list(argv)
    if argv and argv[0] in ("train", "enjoy") and _option(argv, "--gym-packages") is None:
        argv += ["--gym-packages", "agents.zoo"]
    if argv and argv[0] in ("train", "enjoy") and _option(argv, "--num-threads", "-nt") is None:
        argv += ["--num-threads", "1"]  # small networks on a few cores: one torch thread is fastest (OINC: 36 -> 500 steps/s)
    if argv and argv[0] == "train" and _option(argv, "--conf-file", "-conf") is None:
        algo = _option(argv, "--algo") or "ppo"
        if (HYPERPARAMS_DIR / f"{algo}.yml").is_file():
            argv += ["--conf-file", str(hyperparams_file(algo))]
    return argv


#: ``train`` / ``enjoy`` options that take a count (``-n 0`` or ``-n -5`` would silently train rl-zoo3's default)
_COUNTS: tuple[tuple[tuple[str, ...], int], ...] = ((("-n", "--n-timesteps"), 1), (("--n-envs",), 1),
                                                    (("--exp-id",), 0), (("--seed",), 0))


def check_argv(argv: list[str]) -> None:
    """ValueError naming the option for a bad value rl-zoo3 would accept silently (``-n -5`` trains 200k steps),
    and for an algorithm rl-zoo3 does not know (listing those it does), before anything runs."""
    if not argv or argv[0] not in ("train", "enjoy"):
        return
    for names, minimum in _COUNTS:
        value = _option(argv, *names)
        if value is None:
            continue
        try:
            number = int(value)
        except ValueError:
            number = minimum - 1
        if number < minimum or (names[0] == "--seed" and number >= 2**32):
            upper = " and < 2**32" if names[0] == "--seed" else ""
            raise ValueError(f"{names[-1]}={value!r} is invalid: expected an integer >= {minimum}{upper}")
    algo = _option(argv, "--algo")
    if algo is not None:
        algos = register_algos()
        if algo not in algos:
            raise ValueError(f"--algo={algo!r} is invalid: rl-zoo3 knows {sorted(algos)} (the suite adds "
                             f"{sorted(EXTRA_ALGOS)})")


def _import_zoo() -> Any:
    """rl-zoo3's CLI entry; SystemExit with the real cause when it (or a module it needs) is missing."""
    try:
        from rl_zoo3.cli import main as zoo_main
    except ImportError as err:
        missing = (err.name or "").split(".")[0]
        if missing == "rl_zoo3" or (not missing and "rl_zoo3" in str(err)):
            raise SystemExit("error: rl-zoo3 is not installed: pip install rl_zoo3 (or the project's dev extra)") \
                from None
        raise SystemExit(f"error: rl-zoo3 is installed but cannot be imported: {err} (pip install "
                         f"{missing or 'the missing module'})") from None
    return zoo_main


def main(argv: list[str] | None = None) -> None:
    """``python -m agents.zoo <train|enjoy|plot_train|...> [rl-zoo3 arguments]``: rl-zoo3's CLI with
    :data:`EXTRA_ALGOS` registered and :func:`complete_argv`'s defaults. ``enjoy`` plays through the suite's safe
    loaders (:mod:`agents.zoo.enjoy`), never rl-zoo3's own (unsafe YAML, SB3's pickle-reading load). Bad input and
    rl-zoo3's own errors print one ``error:`` line (exit status 2)."""
    import sys

    zoo_main = _import_zoo()
    args = complete_argv(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.exit("usage: python -m agents.zoo <train|enjoy|plot_train|plot_from_file|all_plots> [rl-zoo3 arguments]")
    try:
        register_algos()
        check_argv(args)
        if args[0] == "enjoy":
            from agents.zoo.enjoy import enjoy

            enjoy(args[1:])
            return
        sys.argv = [sys.argv[0], *args]
        zoo_main()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as err:  # rl-zoo3 reports bad input with asserts, KeyErrors, ...: one line, not a traceback
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        print(f"error: {first or type(err).__name__}" + ("" if isinstance(err, ValueError) else
                                                          f" ({type(err).__name__} in rl-zoo3)"), file=sys.stderr)
        sys.exit(2)
