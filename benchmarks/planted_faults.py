"""Faults planted in thunder's grad-mode machinery to measure the engine on bugs it was not
tuned to. Nothing under conformance/ imports this module or knows these faults: they were
written after the engine, and the engine is judged on how soon a night catches each one
(benchmarks/first_catch.py). Each is a backend SPEC: benchmarks.planted_faults:<name>.

They differ from conformance.backends.mutants (the four parts broken outright, which the
selfcheck proves the oracles tell apart): each breaks a part halfway, as a regression would.
They use nothing of the harness but _Mutant and _setattr, so that the engine of an older
checkout (benchmarks/first_catch.py --engine) runs them too.
"""

from __future__ import annotations

import contextlib

import torch

from conformance.backends.mutants import _Mutant, _setattr


class MarkerNeverReenables(_Mutant):
    """The marker honours set_grad_enabled(False) but not (True): enable_grad inside no_grad,
    and the end of a no_grad region, leave the traced grad mode off."""

    part = "marker never re-enables grad"

    def patched(self):
        import thunder.torch as ltorch
        from thunder.core.compile_data import get_compile_data

        def meta(enabled):
            cd = get_compile_data()
            cd.is_grad_enabled = cd.is_grad_enabled and bool(enabled)

        return _setattr(ltorch._set_grad_enabled_with_warning, "meta", meta)


class WriteBackSkipped(_Mutant):
    """The grad mode the function leaves is not written back to PyTorch after a call."""

    part = "grad mode not written back"

    def compile(self, fn):
        call = super().compile(fn)

        def without_write_back(*args, **kwargs):
            before = torch.is_grad_enabled()
            out = call(*args, **kwargs)
            torch.set_grad_enabled(before)
            return out

        without_write_back.jfn = call.jfn
        return without_write_back

    def patched(self):
        return contextlib.nullcontext()


class VjpReadsInputTags(_Mutant):
    """The VJP treats a symbol as constant when an input, not an output, carries the tag:
    a value made under no_grad cuts the gradient of everything computed from it."""

    part = "VJP reads the tag on inputs"

    def patched(self):
        import thunder.core.transforms as transforms
        import thunder.transforms.autodiff as autodiff
        from thunder.core.proxies import FloatProxy, ProxyTag, TensorProxy

        def is_constant_for_vjp(symbol) -> bool:
            args_non_diff = not any(isinstance(a, FloatProxy) or transforms._is_differentiable(a)
                                    for a in symbol.flat_args)
            tagged_input = any(ProxyTag.DETACHED_AUTOGRAD_GRAPH in a.tags for a in symbol.flat_args
                               if isinstance(a, TensorProxy))
            return (args_non_diff or symbol.are_all_args_constant
                    or symbol.sym.id in transforms.nondifferentiable_vjp_symbols or tagged_input)

        stack = contextlib.ExitStack()
        stack.enter_context(_setattr(transforms, "is_constant_for_vjp", is_constant_for_vjp))
        stack.enter_context(_setattr(autodiff, "is_constant_for_vjp", is_constant_for_vjp))
        return stack


class AmbientReadAsOn(_Mutant):
    """thunder reads the ambient grad mode as on, whatever it is: in the trace and the cache."""

    part = "ambient grad mode read as on"

    def patched(self):
        import thunder

        class Torch:
            def __getattr__(self, name):
                return getattr(torch, name)

            @staticmethod
            def is_grad_enabled():
                return True

        return _setattr(thunder, "pytorch", Torch())


class ViewsNotTagged(_Mutant):
    """Symbols called with grad off tag their outputs, except shape ops (reshape, unsqueeze,
    transpose, slicing...): a view made under no_grad stays differentiable."""

    part = "views under no_grad not tagged"
    VIEWS = ("reshape", "unsqueeze", "transpose", "getitem", "flatten", "view", "expand", "squeeze", "permute")

    def patched(self):
        import sys

        import thunder.core.symbol as symbol

        original = symbol.tree_map

        def tree_map(fn, tree, *rest):
            caller = sys._getframe(1).f_locals.get("self")
            if fn.__name__ == "tag_tensorproxy_output_as_detached" and getattr(caller, "name", "") in self.VIEWS:
                return tree
            return original(fn, tree, *rest)

        return _setattr(symbol, "tree_map", tree_map)


class ReductionsNotTagged(ViewsNotTagged):
    """Symbols called with grad off tag their outputs, except reductions (sum, mean, amax...):
    a sum taken under no_grad stays differentiable."""

    part = "reductions under no_grad not tagged"
    VIEWS = ("sum", "mean", "amax", "amin", "prod", "var", "std", "var_mean", "logsumexp", "cumsum")


class CacheChecksGradOnly(_Mutant):
    """The prologue checks the ambient grad mode of an entry compiled with grad on, but an entry
    compiled with grad off is taken whatever the mode: its constants then serve a call with grad."""

    part = "cache check of grad-off entries dropped"

    def patched(self):
        import thunder

        original = thunder._get_cache_info

        class WithoutGradOff(dict):
            def __setitem__(self, key, value):
                if not (key == "is_grad_enabled" and not value):
                    super().__setitem__(key, value)

        def get_cache_info():
            info = original()
            if isinstance(info, WithoutGradOff):
                return info
            wrapped = WithoutGradOff(info)
            thunder._cache_info_ctx.set(wrapped)
            return wrapped

        return _setattr(thunder, "_get_cache_info", get_cache_info)


class OnlyFirstOutputTagged(_Mutant):
    """Symbols called with grad off tag only their first output: the second value of var_mean,
    of max with a dim, of sort or of a split stays differentiable. (Written after the sweep's
    grad-mode boundary motif, to measure it on a fault it was not written for.)"""

    part = "only the first output tagged"

    def patched(self):
        import thunder.core.symbol as symbol

        original = symbol.tree_map

        def tree_map(fn, tree, *rest):
            if fn.__name__ == "tag_tensorproxy_output_as_detached" and isinstance(tree, (tuple, list)) and len(tree) > 1:
                return type(tree)([original(fn, tree[0], *rest), *tree[1:]])
            return original(fn, tree, *rest)

        return _setattr(symbol, "tree_map", tree_map)


class DoublesNotTagged(_Mutant):
    """Symbols called with grad off tag their float32 outputs but not their float64 ones. (Written
    after the sweep's grad-mode boundary motif, as the fault above.)"""

    part = "float64 outputs under no_grad not tagged"

    def patched(self):
        import thunder.core.symbol as symbol
        from thunder.core import dtypes

        original = symbol.tree_map

        def tree_map(fn, tree, *rest):
            if fn.__name__ == "tag_tensorproxy_output_as_detached":
                def tag(x):
                    return x if getattr(x, "dtype", None) == dtypes.float64 else fn(x)

                tag.__name__ = fn.__name__
                return original(tag, tree, *rest)
            return original(fn, tree, *rest)

        return _setattr(symbol, "tree_map", tree_map)


marker_never_reenables = MarkerNeverReenables
write_back_skipped = WriteBackSkipped
vjp_reads_input_tags = VjpReadsInputTags
ambient_read_as_on = AmbientReadAsOn
views_not_tagged = ViewsNotTagged
cache_checks_grad_only = CacheChecksGradOnly
reductions_not_tagged = ReductionsNotTagged
only_first_output_tagged = OnlyFirstOutputTagged
doubles_not_tagged = DoublesNotTagged
FAULTS = ("marker_never_reenables", "write_back_skipped", "vjp_reads_input_tags", "ambient_read_as_on",
          "views_not_tagged", "cache_checks_grad_only", "reductions_not_tagged", "only_first_output_tagged",
          "doubles_not_tagged")
