"""Programs and schedules to and from JSON: for known_issues.toml, summary.json, replay
and worker processes. The JSON mirrors the frozen dataclasses field by field."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from conformance import program as P
from conformance.generators.schedules import CallSpec

_TYPES = {cls.__name__: cls for cls in (
    P.TensorInput, P.Call, P.Create, P.HelperCall, P.Read, P.Grad, P.Assign, P.InPlace, P.RequiresGrad,
    P.GradRegion, P.SetGradMode, P.IfGradEnabled, P.Helper, P.Program, CallSpec,
)}


class BadProgram(ValueError):
    """JSON that does not describe a Program or schedule of this harness."""


def _encode(x: Any) -> Any:
    if dataclasses.is_dataclass(x):
        d = {"type": type(x).__name__}
        for f in dataclasses.fields(x):
            if f.compare:  # labels are statistics, not part of the program
                d[f.name] = _encode(getattr(x, f.name))
        return d
    if isinstance(x, (tuple, list)):
        return [_encode(v) for v in x]
    return x


def _decode(x: Any) -> Any:
    if isinstance(x, dict):
        cls = _TYPES.get(x.get("type"))
        if cls is None:
            raise BadProgram(f"unknown node type {x.get('type')!r}")
        kwargs = {k: _decode(v) for k, v in x.items() if k != "type"}
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise BadProgram(f"bad {cls.__name__}: {exc}") from None
    if isinstance(x, list):
        return tuple(_decode(v) for v in x)
    return x


def dumps(obj: Any) -> str:
    return json.dumps(_encode(obj), separators=(",", ":"))


def loads(text: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadProgram(f"not JSON: {exc}") from None
    return _decode(data)


def encode(obj: Any) -> Any:
    return _encode(obj)


def decode(data: Any) -> Any:
    return _decode(data)
