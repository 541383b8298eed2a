"""rl-baselines3-zoo (rl-zoo3) support: shipped hyperparameter files and the suite's algorithms in rl-zoo3's ALGOS.

rl-zoo3 trains on any registered id; ``--gym-packages envs`` imports the package that registers them and
``--conf-file`` points at one of the files shipped here (:func:`hyperparams_file`), keyed by env id::

    python -m rl_zoo3.train --algo ppo --env OINC-v0 --gym-packages envs agents.zoo \\
        --conf-file $(python -c "import agents.zoo as z; print(z.hyperparams_file('ppo'))")
    python -m agents.zoo train --algo ppo --env OINC-v0        # the same: fills in both
    python -m agents.zoo enjoy --algo sac_d --env UEC-v0 -f outputs/zoo-agents --exp-id 1 --no-render --deterministic

``enjoy`` goes through the suite's safe loaders (:mod:`agents.zoo.enjoy`), never rl-zoo3's own (which reads
``args.yml`` / ``config.yml`` with an unsafe YAML loader and the model with SB3's pickle-reading ``load``); a folder
holding anything else than plain data and allow-listed classes is refused. ``train`` checks before rl-zoo3 runs
(:func:`check_train_inputs`): ``--env`` must be a registry id, the ``--conf-file`` is read with ``yaml.safe_load``
and every string rl-zoo3 would ``eval`` (``policy_kwargs``, ...) may hold only literals, ``dict(...)`` and
allow-listed classes (:func:`check_expression`). Bad option values (``-n -5``) and rl-zoo3's own errors print one
``error:`` line and exit 2.

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


#: hyperparameter keys whose string value rl-zoo3 ``eval``s (exp_manager: ``policy_kwargs``, ``normalize``, ...)
EVAL_KEYS: tuple[str, ...] = ("policy_kwargs", "replay_buffer_class", "replay_buffer_kwargs", "normalize",
                              "monitor_kwargs")
#: hyperparameter keys whose names rl-zoo3 imports (``"module.Class"``, a list of them, or ``{name: kwargs}``)
IMPORT_KEYS: tuple[str, ...] = ("env_wrapper", "vec_env_wrapper", "callback")
#: options whose ``key:value`` arguments rl-zoo3 ``eval``s while parsing them (its ``StoreDict``)
EVAL_OPTIONS: tuple[str, ...] = ("-params", "--hyperparams", "--env-kwargs", "--eval-env-kwargs")


def _names_a_class(key: str | None) -> bool:
    return key is not None and (key in ("head", "activation_fn") or key.endswith(("_class", "_fn")))


def check_expression(text: str, where: str, namespace: dict[str, Any] | None = None) -> None:
    """ValueError naming ``where`` unless ``text`` (a string rl-zoo3 would ``eval``) holds only literals,
    ``dict(...)`` calls with keyword arguments and dotted names of allow-listed classes (:mod:`envs.allowlist`),
    e.g. ``"dict(net_arch=[64], activation_fn=nn.ReLU)"``. ``namespace`` is where rl-zoo3 evaluates it (default
    ``rl_zoo3.exp_manager``'s globals): a dotted name's first part must be a module there (``nn`` is ``torch.nn``).
    String values of ``head``, ``activation_fn``, ``*_class`` and ``*_fn`` keys must be allow-listed too. Parsed
    with :mod:`ast`, never evaluated or imported."""
    import ast
    import types

    from envs.allowlist import check_allowed

    if namespace is None:
        import rl_zoo3.exp_manager

        namespace = vars(rl_zoo3.exp_manager)

    def refuse(why: str) -> None:
        raise ValueError(f"{where}={text!r} is refused ({why}): rl-zoo3 would eval it, so only literals, dict(...) "
                         "with keyword arguments and dotted names of allow-listed classes (e.g. nn.ReLU; "
                         "envs.allowlist) are accepted")

    def visit(node: ast.AST, key: str | None) -> None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str) and _names_a_class(key):
                check_allowed(node.value, f"{where}: {key}")
            return
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for element in node.elts:
                visit(element, key)
            return
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if not (isinstance(k, ast.Constant) and isinstance(k.value, (str, int, float))):
                    refuse("a dict key that is not a literal")
                visit(v, k.value if isinstance(k.value, str) else None)  # type: ignore[union-attr]
            return
        if (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd))
                and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float))):
            return
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id == "dict") or node.args:
                refuse(f"a call of {ast.unparse(node.func)!r}; only dict(key=value, ...) is accepted")
            for keyword in node.keywords:
                if keyword.arg is None:
                    refuse("a **mapping inside dict(...)")
                visit(keyword.value, keyword.arg)
            return
        if isinstance(node, ast.Attribute):
            parts: list[str] = []
            inner: ast.AST = node
            while isinstance(inner, ast.Attribute):
                parts.insert(0, inner.attr)
                inner = inner.value
            if not isinstance(inner, ast.Name):
                refuse(f"{ast.unparse(node)!r} is not a dotted name")
            module = namespace.get(inner.id)  # type: ignore[union-attr]
            if not isinstance(module, types.ModuleType):
                refuse(f"{inner.id!r} is not a module where rl-zoo3 evaluates it")  # type: ignore[union-attr]
            check_allowed(".".join([module.__name__, *parts]), f"{where}: {ast.unparse(node)}")
            return
        refuse(f"{type(node).__name__} {ast.unparse(node)!r} is not accepted")

    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"{where}={text!r} is invalid: not a Python expression ({err.msg})") from None
    visit(tree.body, None)


def read_conf_file(path: str | Path) -> dict[str, Any]:
    """An rl-zoo3 ``--conf-file`` read with ``yaml.safe_load`` (a ``!!python/...`` tag is refused, never run) and
    checked as :func:`check_conf` does; ValueError naming ``--conf-file`` otherwise. rl-zoo3 would ``exec`` a
    ``.py`` file and import any other name as a module, so only ``.yml`` / ``.yaml`` files are accepted."""
    import yaml

    path = Path(path)
    if path.suffix not in (".yml", ".yaml"):
        raise ValueError(f"--conf-file={str(path)!r} is invalid: expected a .yml or .yaml file (rl-zoo3 would run a "
                         ".py file or import a module of that name)")
    if not path.is_file():
        raise ValueError(f"--conf-file={str(path)!r} is invalid: no such file")
    try:
        conf = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        first = str(err).strip().splitlines()[0]
        raise ValueError(f"--conf-file={str(path)!r} is refused: not plain YAML data ({first}); python/ tags are "
                         "never loaded") from None
    if not isinstance(conf, dict):
        raise ValueError(f"--conf-file={str(path)!r} is invalid: expected a mapping of env id -> hyperparameters")
    check_conf(conf, f"--conf-file {path.name}")
    return conf


def check_conf(conf: dict[str, Any], where: str) -> None:
    """ValueError unless every entry's evaluated strings (:data:`EVAL_KEYS`) pass :func:`check_expression` and
    every name rl-zoo3 imports (:data:`IMPORT_KEYS`) is allow-listed."""
    from envs.allowlist import check_allowed

    for env_id, settings in conf.items():
        if not isinstance(settings, dict):
            continue
        for key in EVAL_KEYS:
            if isinstance(settings.get(key), str):
                check_expression(settings[key], f"{where}: {env_id}.{key}")
        for key in IMPORT_KEYS:
            value = settings.get(key)
            for entry in value if isinstance(value, list) else [] if value is None else [value]:
                for name in entry if isinstance(entry, dict) else [entry]:
                    check_allowed(name, f"{where}: {env_id}.{key}")


def _every_option(argv: list[str], *names: str) -> list[str]:
    """Every value given to ``names`` (``--name value`` or ``--name=value``), in order."""
    values: list[str] = []
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                values.append(argv[i + 1])
            elif arg.startswith(name + "="):
                values.append(arg.split("=", 1)[1])
    return values


def _option_values(argv: list[str], *names: str) -> list[str]:
    """The arguments after each of ``names`` up to the next option (rl-zoo3's ``nargs="+"`` options)."""
    values: list[str] = []
    for i, arg in enumerate(argv):
        if arg.partition("=")[0] in names and "=" in arg:
            values.append(arg.partition("=")[2])
        elif arg in names:
            for value in argv[i + 1:]:
                if value.startswith("-") and not value[1:2].isdigit():
                    break
                values.append(value)
    return values


def check_train_inputs(argv: list[str]) -> None:
    """Before rl-zoo3 runs: ``--env`` must be a problem registry id (an id ``module:UEC-v0`` would import
    ``module``), the ``--conf-file`` is read safely (:func:`read_conf_file`) and the ``key:value`` arguments rl-zoo3
    ``eval``s (:data:`EVAL_OPTIONS`) pass :func:`check_expression`. ValueError naming the option otherwise."""
    from envs.problems import check_env_id

    if not argv or argv[0] not in ("train", "enjoy"):
        return
    checked = ("--env", "--conf-file", "-conf", "--trained-agent", *EVAL_OPTIONS)
    if argv[0] == "train" and _every_option(argv, "-i", "--trained-agent"):
        raise ValueError("-i/--trained-agent is refused: rl-zoo3 loads that zip with SB3's own load, which unpickles "
                         "its entries (code could run); continue a run of ours with python train.py resume=<run "
                         "folder>, or load a model through agents.loading.load_sb3_model")
    for arg in argv[1:]:
        option = arg.partition("=")[0]
        if (len(option) >= 2 and option != "--" and option.startswith("-") and not option[1:2].isdigit()
                and option not in checked and any(name.startswith(option) for name in checked)):
            full = [name for name in checked if name.startswith(option)]
            raise ValueError(f"{option} is refused: give the option in full ({full}); rl-zoo3 would read an "
                             "abbreviation past the suite's checks")
    for env_id in _every_option(argv, "--env") or [None]:  # argparse keeps the last of repeated options
        check_env_id(env_id, "--env")
    if argv[0] == "train":
        for conf in _every_option(argv, "--conf-file", "-conf"):
            read_conf_file(conf)
    import rl_zoo3.utils

    for name in EVAL_OPTIONS:
        for item in _option_values(argv, name):
            key, _, value = item.partition(":")
            check_expression(value, f"{name} {key}", vars(rl_zoo3.utils))


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
        check_train_inputs(args)
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
