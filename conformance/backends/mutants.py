"""thunder with one of the four parts of its grad-mode support broken on purpose (see
DESIGN.md): the mutation self-test (`python -m conformance selfcheck`) proves the harness
tells each apart from thunder itself. Each patch is active only while the mutant's own
compiled function runs, and is undone afterwards.

SPECs: conformance.backends.mutants:<name> for each name in MUTANTS.
"""

from __future__ import annotations

import contextlib
from typing import Callable

from conformance.backends.thunder import ThunderBackend


class _Mutant(ThunderBackend):
    part = ""

    def __init__(self):
        super().__init__()
        # thunder with one fault: thunder's known issues hold for it (known_issues: a backend's
        # family is its name before the options)
        self.name = f"thunder[mutant={self.part}]"

    def patched(self):  # pragma: no cover - each mutant overrides it
        raise NotImplementedError

    def compile(self, fn: Callable) -> Callable:
        jfn = super().compile(fn)
        mutant = self

        def call(*args, **kwargs):
            with mutant.patched():
                return jfn(*args, **kwargs)

        call.jfn = jfn
        return call

    def cache_stats(self, compiled):
        return super().cache_stats(compiled.jfn)

    def trace_facts(self, compiled):
        return super().trace_facts(compiled.jfn)


@contextlib.contextmanager
def _setattr(obj, name, value):
    old = getattr(obj, name)
    object.__setattr__(obj, name, value)
    try:
        yield
    finally:
        object.__setattr__(obj, name, old)


class MarkerIgnored(_Mutant):
    """1. The marker for torch._C._set_grad_enabled no longer updates the traced grad mode."""

    part = "marker ignored"

    def patched(self):
        import thunder.torch as ltorch

        return _setattr(ltorch._set_grad_enabled_with_warning, "meta", lambda enabled: None)


class OutputsNotTagged(_Mutant):
    """2. Symbols called with grad off no longer tag their outputs DETACHED_AUTOGRAD_GRAPH."""

    part = "outputs under no_grad not tagged"

    def patched(self):
        import thunder.core.symbol as symbol

        return _setattr(symbol, "get_compile_data", lambda: None)


class VjpIgnoresTag(_Mutant):
    """3. The VJP transform no longer treats tagged symbols as constants."""

    part = "VJP ignores the tag"

    def patched(self):
        return vjp_constants_patched(lambda symbol, untagged: untagged)


def vjp_constants_patched(rule: Callable) -> contextlib.ExitStack:
    """thunder's is_constant_for_vjp replaced: `rule(symbol, untagged)` decides, where
    `untagged` is thunder's own answer without the DETACHED_AUTOGRAD_GRAPH tag."""
    import thunder.core.transforms as transforms
    import thunder.transforms.autodiff as autodiff
    from thunder.core.proxies import FloatProxy

    def is_constant_for_vjp(symbol) -> bool:
        args_non_diff = not any(isinstance(a, FloatProxy) or transforms._is_differentiable(a)
                                for a in symbol.flat_args)
        return rule(symbol, args_non_diff or symbol.are_all_args_constant
                    or symbol.sym.id in transforms.nondifferentiable_vjp_symbols)

    # The forward-backward split imports the function by name, so patch both places.
    stack = contextlib.ExitStack()
    stack.enter_context(_setattr(transforms, "is_constant_for_vjp", is_constant_for_vjp))
    stack.enter_context(_setattr(autodiff, "is_constant_for_vjp", is_constant_for_vjp))
    return stack


class CacheIgnoresGradMode(_Mutant):
    """4. The ambient grad mode is dropped from the cache info the prologue checks."""

    part = "ambient grad mode dropped from the cache check"

    def patched(self):
        import thunder

        original = thunder._get_cache_info

        class WithoutGradMode(dict):
            def __setitem__(self, key, value):
                if key != "is_grad_enabled":
                    super().__setitem__(key, value)

        def get_cache_info():
            info = original()
            return info if isinstance(info, WithoutGradMode) else _swap(info)

        def _swap(info):
            # The context holds one dict per call; re-point its contents at our subclass.
            wrapped = WithoutGradMode(info)
            thunder._cache_info_ctx.set(wrapped)
            return wrapped

        return _setattr(thunder, "_get_cache_info", get_cache_info)


MUTANTS = {
    "marker_ignored": MarkerIgnored,
    "outputs_not_tagged": OutputsNotTagged,
    "vjp_ignores_tag": VjpIgnoresTag,
    "cache_ignores_grad_mode": CacheIgnoresGradMode,
}
for _name, _cls in MUTANTS.items():
    globals()[_name] = _cls
