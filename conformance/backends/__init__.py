"""Backends under test, by SPEC: a built-in name, with options, or `package.module:factory`.

SPEC grammar:
    eager | thunder | thunderfx | torch.compile   a built-in backend
    thunder[cache=symbolic values]             a built-in with options (comma separated)
    thunder[executors=torch+python]            a list option, items joined by '+'
    package.module:factory                     factory() returns a backend object
"""

from __future__ import annotations

import importlib
import re

from conformance.backends.base import CACHE_COUNTERS, TRACES, Backend, BackendUnavailable, Declaration

BUILTIN = ("eager", "thunder", "thunderfx", "torch.compile")
_SPEC = re.compile(r"^(?P<name>[A-Za-z_][\w.]*)(\[(?P<opts>[^\]]*)\])?$")


def _options(text: str | None) -> dict:
    opts: dict = {}
    for item in filter(None, (text or "").split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise BackendUnavailable(f"backend option {item!r} is not of the form key=value")
        opts[key.strip()] = tuple(value.split("+")) if key.strip() == "executors" else value.strip()
    return opts


def get(spec: str) -> Backend:
    """The backend a SPEC names; raises BackendUnavailable with a one-line reason."""
    if ":" in spec and "[" not in spec:
        return _from_factory(spec)
    m = _SPEC.match(spec.strip())
    if not m or m["name"] not in BUILTIN:
        raise BackendUnavailable(
            f"unknown backend {spec!r}; use one of {', '.join(BUILTIN)}, with options as "
            "thunder[cache=symbolic values], or package.module:factory"
        )
    opts = _options(m["opts"])
    try:
        if m["name"] == "eager":
            from conformance.backends.eager import EagerBackend

            return EagerBackend(**opts)
        if m["name"] == "thunder":
            from conformance.backends.thunder import ThunderBackend

            return ThunderBackend(**opts)
        if m["name"] == "thunderfx":
            from conformance.backends.thunderfx import ThunderFXBackend

            return ThunderFXBackend(**opts)
        from conformance.backends.torch_compile import TorchCompileBackend

        return TorchCompileBackend(**opts)
    except TypeError as exc:
        raise BackendUnavailable(f"bad options for backend {m['name']!r}: {exc}") from None


def _from_factory(spec: str) -> Backend:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise BackendUnavailable(f"cannot import backend module {module_name!r}: {type(exc).__name__}: {exc}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise BackendUnavailable(f"{module_name!r} has no callable {attr!r} to make the backend")
    backend = factory()
    for needed in ("name", "compile"):
        if not hasattr(backend, needed):
            raise BackendUnavailable(f"{spec!r} returned {type(backend).__name__}, which has no {needed!r}")
    for optional, default in (("capabilities", frozenset()), ("declarations", frozenset()), ("cache_stats", None),
                              ("trace_facts", None), ("recompile_policy", None), ("versions", None)):
        if not hasattr(backend, optional):
            if optional in ("capabilities", "declarations", "recompile_policy"):
                setattr(backend, optional, default)
            else:
                setattr(backend, optional, lambda *a, **k: None)
    return backend


__all__ = ["get", "Backend", "BackendUnavailable", "Declaration", "BUILTIN", "CACHE_COUNTERS", "TRACES"]
