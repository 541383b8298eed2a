"""The one allow-list of classes a file may name (safe to run, issue 37).

A run folder's ``config.yaml``, a model zip's ``data``, an rl-zoo3 ``args.yml`` / ``config.yml`` and a shipped
agent's config name classes as strings: ``env.wrappers`` / ``env.algo_wrappers``, and ``algo.policy_kwargs``'
``head``, ``activation_fn``, ``*_class`` and ``*_fn`` entries. Importing the module such a string names would run
that module's code (``runs/x/payload.py`` as ``runs.x.payload:W``), so every command checks the name against
:data:`ALLOWED` (exact ``module.Class`` names) or :data:`ALLOWED_MODULES` (modules whose public classes are all
accepted) **before** anything is imported (:func:`check_allowed`), and only then imports it
(:func:`import_allowed`).

The list holds plain strings only, so this module imports nothing from ``offline`` or ``agents``. A user's own
class is accepted after an explicit call from code, before the command runs::

    from envs.allowlist import allow
    allow("mypackage.wrappers:MyWrapper")        # or "mypackage.wrappers.MyWrapper"
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["ALLOWED", "ALLOWED_MODULES", "NotAllowedError", "allow", "check_allowed", "import_allowed", "normalise"]

_TORCH_ACTIVATIONS = ("ReLU", "Tanh", "ELU", "LeakyReLU", "GELU", "SiLU", "Sigmoid", "Identity")
_TORCH_OPTIMIZERS = (("adam", "Adam"), ("adamw", "AdamW"), ("rmsprop", "RMSprop"), ("sgd", "SGD"))

#: Exact ``module.Class`` names a file may name (the suite's own wrappers, feature extractors and heads, SB3's
#: extractors, torch's activations and optimisers under both their public and their defining module's names).
ALLOWED: set[str] = {
    # env.wrappers / env.algo_wrappers
    "offline.uec.features.LPFeatures",
    "offline.uec.features.NetScoreFeatures",
    # algo.policy_kwargs: features_extractor_class, head
    "agents.aset.extractor.TimeConvExtractor",
    "agents.uec.sac_head.UECActionScorer",
    "stable_baselines3.common.torch_layers.FlattenExtractor",
    "stable_baselines3.common.torch_layers.CombinedExtractor",
    "stable_baselines3.common.torch_layers.NatureCNN",
    # algo.policy_kwargs: activation_fn, optimizer_class
    *(f"torch.nn.{n}" for n in _TORCH_ACTIVATIONS),
    *(f"torch.nn.modules.activation.{n}" for n in _TORCH_ACTIVATIONS if n != "Identity"),
    "torch.nn.modules.linear.Identity",
    *(f"torch.optim.{n}" for _, n in _TORCH_OPTIMIZERS),
    *(f"torch.optim.{m}.{n}" for m, n in _TORCH_OPTIMIZERS),
}

#: Modules (and their sub-modules) whose public classes a file may name: Gymnasium's own wrappers.
ALLOWED_MODULES: set[str] = {"gymnasium.wrappers"}

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_CLASS_REPR = re.compile(r"^<class '([A-Za-z_][\w.]*)'>$")


class NotAllowedError(ValueError):
    """A file or config names a class outside the allow-list: refused before anything is imported."""


def normalise(name: Any) -> str:
    """``module.Class`` of ``"module:Class"``, ``"module.Class"``, ``"<class 'module.Class'>"`` or a class."""
    if isinstance(name, type):
        return f"{name.__module__}.{name.__qualname__}"
    text = str(name).strip()
    match = _CLASS_REPR.match(text)
    return (match.group(1) if match else text).replace(":", ".")


def _module_allowed(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in ALLOWED_MODULES)


def check_allowed(name: Any, where: str, error: type[Exception] = NotAllowedError) -> tuple[str, str]:
    """(module, attribute) of ``name`` when the allow-list accepts it; raises ``error`` naming ``where`` (the key
    that held it, e.g. ``config.yaml: env.wrappers entry``) otherwise. Imports nothing."""
    path = normalise(name)
    module, _, attr = path.rpartition(".")
    if (_NAME.match(path) and module and not attr.startswith("_")
            and (path in ALLOWED or _module_allowed(module))):
        return module, attr
    shown = sorted(n for n in ALLOWED if not n.startswith(("torch.nn.modules.", "torch.optim.")) or n.count(".") == 2)
    raise error(f"{where}={str(name)!r} is not on the allow-list of classes a file may name, so it is not "
                f"imported; allowed: {shown} and the classes of {sorted(ALLOWED_MODULES)} (envs.allowlist.ALLOWED; "
                "extend it from code with envs.allowlist.allow('module:Class'))")


def import_allowed(name: Any, where: str, error: type[Exception] = NotAllowedError) -> Any:
    """The object ``name`` names, imported only after :func:`check_allowed` accepted it (a class passed in is
    checked the same way and returned)."""
    module, attr = check_allowed(name, where, error)
    if isinstance(name, type):
        return name
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise error(f"{where}={str(name)!r} cannot be imported ({err})") from None


def allow(*names: str) -> None:
    """Accept ``names`` (``"module:Class"`` or ``"module.Class"``) from now on in this process: the documented
    way to train or load with a class of one's own (docs/modelling_choices.md, "Safe to run")."""
    for name in names:
        path = normalise(name)
        if not _NAME.match(path) or "." not in path:
            raise ValueError(f"allow({name!r}) is invalid: expected 'module:Class' or 'module.Class'")
        ALLOWED.add(path)
