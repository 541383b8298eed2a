"""Instance files: write an env's Instance dataclass to a human-editable YAML/JSON file and read it back, validated.

Users run the suite on their own system's parameters by exporting an instance
(``env.unwrapped.export_instance("my.yaml")``), editing it, and handing it back
(``gym.make("UEC-v0", instance_file="my.yaml")`` or ``reset(options={"instance": load_instance("UEC-v0", path)})``).

File layout (``format: 1``)::

    format: 1
    env_id: UEC-v0
    instance:
      capacity: {dtype: float64, shape: [4, 200], data: [[...], ...]}   # every array: dtype, shape, nested lists
      alpha_max: 0.95                                                     # scalars and strings as plain values
      reserved:                                                           # a nested record: its own fields
        server: {dtype: int64, shape: [18], data: [...]}

Each env module (the entry point of the problem record, ``envs/<p>/env.py``) holds ``INSTANCE_SCHEMA``
(:class:`InstanceSchema`): the dataclass, the dtype of each array field, the fields recomputed from others (never written) and the builder that assembles and
validates the Instance with the same rules as a generated one. Files are read with ``yaml.safe_load`` only (a
``!!python/...`` tag is refused, a file never runs code); every problem raises ValueError naming the field.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

#: Version of the file layout; a file of another version is refused.
FORMAT = 1
#: File name endings read and written (``.json``: JSON, the others: YAML).
SUFFIXES = (".yaml", ".yml", ".json")
_TOP_KEYS = ("format", "env_id", "instance")


@dataclass(frozen=True)
class InstanceSchema:
    """How one problem's Instance is written to and read from a file.

    Attributes:
        cls: the Instance dataclass.
        dtypes: dtype name of each array field (``"int64"``, ``"bool"``); an array field not listed is float64.
            A nested record's fields are named ``"<field>.<sub>"``.
        nested: field name -> dataclass of a nested record (written as a mapping of its fields).
        derived: fields never written: ``build`` recomputes them from the others.
        optional: fields a file may leave out (``build`` recomputes them); fields with a default are optional too.
        build: decoded fields (nested records already built) -> the validated Instance.
    """

    cls: type
    build: Callable[[dict[str, Any]], Any]
    dtypes: Mapping[str, str] = field(default_factory=dict)
    nested: Mapping[str, type] = field(default_factory=dict)
    derived: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


def schema_for(env_id: str) -> InstanceSchema:
    """The :class:`InstanceSchema` of ``env_id``: ``INSTANCE_SCHEMA`` of its entry point's module (the env module, which
    imports the problem's types, generator and dynamics, so a builder needs no import circle)."""
    from envs.problems import check_env_id, get_problem

    check_env_id(env_id, "env_id")
    module_name = get_problem(env_id).entry_point.partition(":")[0]
    schema = getattr(importlib.import_module(module_name), "INSTANCE_SCHEMA", None)
    if not isinstance(schema, InstanceSchema):
        raise ValueError(f"env_id={env_id!r} has no instance file schema ({module_name}.INSTANCE_SCHEMA)")
    return schema


# --------------------------------------------------------------------------------------------- writing
def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return {"dtype": str(value.dtype), "shape": list(value.shape), "data": value.tolist()}
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    return value


def instance_document(instance: Any, env_id: str) -> dict[str, Any]:
    """The file content of ``instance`` as a plain dict (lists, numbers, strings; no numpy)."""
    schema = schema_for(env_id)
    if not isinstance(instance, schema.cls):
        raise ValueError(f"instance={type(instance).__name__} is invalid for env_id={env_id!r}: expected a "
                         f"{schema.cls.__module__}.{schema.cls.__name__}")
    body: dict[str, Any] = {}
    for f in dataclasses.fields(schema.cls):
        if f.name in schema.derived:
            continue
        value = getattr(instance, f.name)
        if f.name in schema.nested:
            body[f.name] = {s.name: _encode(getattr(value, s.name)) for s in dataclasses.fields(schema.nested[f.name])}
        else:
            body[f.name] = _encode(value)
    return {"format": FORMAT, "env_id": env_id, "instance": body}


def _check_suffix(path: Path) -> None:
    if path.suffix.lower() not in SUFFIXES:
        raise ValueError(f"path={str(path)!r} is invalid: expected a file name ending in one of {list(SUFFIXES)}")


def export_instance(instance: Any, env_id: str, path: str | Path) -> Path:
    """Write ``instance`` of ``env_id`` to ``path`` (YAML, or JSON for ``.json``) and return the path.

    Checks the name and the parent folder before writing; overwrites an existing file at ``path``.
    """
    path = Path(path)
    _check_suffix(path)
    if not path.parent.is_dir():
        raise ValueError(f"path={str(path)!r} is invalid: its folder {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise ValueError(f"path={str(path)!r} is invalid: it is a folder, expected a file name")
    doc = instance_document(instance, env_id)
    if path.suffix.lower() == ".json":
        text = json.dumps(doc, indent=1) + "\n"
    else:
        text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------- reading
def _kind(annotation: Any) -> str:
    text = str(annotation)
    if "ndarray" in text:
        return "array|None" if "None" in text else "array"
    if text.startswith("tuple[str"):
        return "str-tuple"
    if text.startswith("tuple[float"):
        return "float-pair" if text == "tuple[float, float]" else "float-tuple"
    if text in ("float", "int", "str", "bool"):
        return text
    return "other"


def _decode_array(name: str, spec: Any, dtype: str) -> np.ndarray:
    if not isinstance(spec, Mapping) or set(spec) != {"dtype", "shape", "data"}:
        raise ValueError(f"field {name} is invalid: expected a mapping {{dtype: {dtype}, shape: [...], data: [...]}}, "
                         f"got {str(spec)[:80]!r}")
    if spec["dtype"] != dtype:
        raise ValueError(f"field {name}.dtype={spec['dtype']!r} is invalid: expected {dtype!r}")
    shape = spec["shape"]
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                              for s in shape):
        raise ValueError(f"field {name}.shape={shape!r} is invalid: expected a list of non-negative integers")
    try:
        arr = np.asarray(spec["data"])
    except ValueError:
        raise ValueError(f"field {name}.data is invalid: expected nested lists of shape {shape} (rows differ "
                         "in length)") from None
    if arr.size == 0 and math.prod(shape) == 0:
        arr = arr.reshape(shape)
    if arr.shape != tuple(shape):
        raise ValueError(f"field {name}.data has shape {list(arr.shape)}: expected shape {shape} (its 'shape' entry)")
    kind = arr.dtype.kind
    if arr.size == 0:
        return arr.astype(dtype)
    if dtype == "bool":
        if kind != "b":
            raise ValueError(f"field {name}.data is invalid: expected true/false values (dtype bool)")
        return arr.astype(bool)
    if dtype.startswith("int"):
        if kind not in "iu":
            raise ValueError(f"field {name}.data is invalid: expected integers (dtype {dtype})")
        return arr.astype(dtype)
    if kind not in "iuf":
        raise ValueError(f"field {name}.data is invalid: expected numbers (dtype {dtype})")
    arr = arr.astype(dtype)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"field {name}.data is invalid: expected finite numbers (no .nan or .inf)")
    return arr


def _decode_scalar(name: str, value: Any, kind: str) -> Any:
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"field {name}={value!r} is invalid: expected a string")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"field {name}={value!r} is invalid: expected an integer")
        return value
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"field {name}={value!r} is invalid: expected a finite number")
        return float(value)
    if kind == "str-tuple":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"field {name}={value!r} is invalid: expected a list of strings")
        return tuple(value)
    if kind in ("float-pair", "float-tuple"):
        if not isinstance(value, list) or (kind == "float-pair" and len(value) != 2):
            raise ValueError(f"field {name}={value!r} is invalid: expected a list of "
                             f"{'two numbers [lo, hi]' if kind == 'float-pair' else 'numbers'}")
        return tuple(_decode_scalar(f"{name}[{i}]", v, "float") for i, v in enumerate(value))
    raise ValueError(f"field {name} has an annotation the instance file reader does not handle ({kind})")


def _decode_fields(cls: type, body: Any, schema: InstanceSchema, prefix: str) -> dict[str, Any]:
    where = prefix.rstrip(".") or "instance"
    if not isinstance(body, Mapping):
        raise ValueError(f"field {where} is invalid: expected a mapping of {cls.__name__}'s fields")
    fields = [f for f in dataclasses.fields(cls) if prefix or f.name not in schema.derived]
    names = [f.name for f in fields]
    unknown = sorted(str(k) for k in body if k not in names)
    if unknown:
        raise ValueError(f"unknown field(s) {[prefix + k for k in unknown]} in {where}: valid fields are {names}")
    out: dict[str, Any] = {}
    for f in fields:
        name = prefix + f.name
        if f.name not in body:
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if has_default or (not prefix and f.name in schema.optional):
                continue
            required = [prefix + f.name for f in fields if f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING and (prefix or f.name not in schema.optional)]
            raise ValueError(f"missing field {name} in the instance file: required fields are {required}")
        value = body[f.name]
        if not prefix and f.name in schema.nested:
            sub = schema.nested[f.name]
            out[f.name] = sub(**_decode_fields(sub, value, schema, f"{f.name}."))
            continue
        kind = _kind(f.type)
        if kind == "array|None" and value is None:
            out[f.name] = None
        elif kind.startswith("array"):
            out[f.name] = _decode_array(name, value, schema.dtypes.get(name, "float64"))
        else:
            out[f.name] = _decode_scalar(name, value, kind)
    return out


def instance_from_document(doc: Any, env_id: str, source: str = "instance document") -> Any:
    """The validated Instance of ``env_id`` that ``doc`` (a parsed file) describes; ValueError naming the field."""
    schema = schema_for(env_id)
    if not isinstance(doc, Mapping):
        raise ValueError(f"{source} is invalid: expected a mapping with keys {list(_TOP_KEYS)}")
    unknown = sorted(str(k) for k in doc if k not in _TOP_KEYS)
    missing = [k for k in _TOP_KEYS if k not in doc]
    if unknown or missing:
        raise ValueError(f"{source} is invalid: unknown keys {unknown}, missing keys {missing}; expected exactly "
                         f"{list(_TOP_KEYS)}")
    if doc["format"] != FORMAT:
        raise ValueError(f"{source}: format={doc['format']!r} is invalid: expected {FORMAT}")
    if doc["env_id"] != env_id:
        raise ValueError(f"{source}: env_id={doc['env_id']!r} is invalid: this file is loaded for {env_id!r} "
                         f"(an instance of one env id is not valid for another)")
    try:
        return schema.build(_decode_fields(schema.cls, doc["instance"], schema, ""))
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None


def read_document(path: str | Path) -> Any:
    """The parsed content of an instance file (``yaml.safe_load`` / ``json.load``); ValueError if unreadable."""
    path = Path(path)
    _check_suffix(path)
    if not path.is_file():
        raise ValueError(f"instance_file={str(path)!r} is invalid: expected an existing instance file")
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"instance_file={str(path)!r} is not a valid {'JSON' if path.suffix == '.json' else 'YAML'} "
                         f"instance file (plain YAML only: no '!!python' tags): {first}") from None


def load_instance(env_id: str, path: str | Path) -> Any:
    """The validated Instance of ``env_id`` stored at ``path`` (for ``reset(options={"instance": ...})``)."""
    return instance_from_document(read_document(path), env_id, source=f"instance_file={str(path)!r}")


def env_id_of(env: Any, default: str) -> str:
    """The registered id of ``env`` (its spec when made by ``gym.make``, else ``default``)."""
    spec = getattr(env, "spec", None)
    env_id = getattr(spec, "id", None)
    return env_id.rpartition(":")[2] if isinstance(env_id, str) else default


def check_array(name: str, value: Any, shape: tuple[int | None, ...], *, positive: bool = False,
                nonnegative: bool = False, low: float | None = None, high: float | None = None) -> np.ndarray:
    """``value`` as an array of ``shape`` (None: any size) within the bounds; ValueError naming field ``name``.

    The builders of ``INSTANCE_SCHEMA`` call it for the checks their generator's draws satisfy by construction.
    """
    arr = np.asarray(value)
    if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
        expected = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"field {name} has shape {arr.shape}: expected shape {expected}")
    if arr.size:
        lo, hi = arr.min().item(), arr.max().item()
        if positive and lo <= 0:
            raise ValueError(f"field {name} has an entry {lo!r} <= 0: expected values > 0")
        if nonnegative and lo < 0:
            raise ValueError(f"field {name} has a negative entry {lo!r}: expected values >= 0")
        if low is not None and lo < low:
            raise ValueError(f"field {name} has an entry {lo!r} < {low}: expected values in [{low}, {high}]")
        if high is not None and hi > high:
            raise ValueError(f"field {name} has an entry {hi!r} > {high}: expected values in [{low}, {high}]")
    return arr
