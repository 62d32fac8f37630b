"""The fork server the workers are forked from: a fresh interpreter that imports torch, the engine
and the backend's compiler, and does nothing else. No state of the parent is shared, and a
restarted or recycled worker is up in a fraction of a second instead of 3-5 s of imports.

Started first thing by `fuzz` (`start`), its imports run beside the parent's own instead of after
them: a night's first example comes about 3 s sooner (the first catch counts).
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing import forkserver

# torch._dynamo too: the generator's shape inference runs ops on meta tensors, and the first one
# whose decomposition is wrapped by torch._prims_common's out_wrapper imports it (2-3 s, two
# thirds of a short incarnation's time), in every worker and after every recycle otherwise.
ENGINE = ("torch", "torch._dynamo", "hypothesis", "conformance.check", "conformance.engine")
# What a built-in backend imports when it is made (none of them starts a thread at import, so
# forking after it is safe). A backend of the user's (`package.module:factory`) is not imported
# here: its module's import-time side effects stay in the worker that uses it.
COMPILERS = {"thunder": ("thunder",), "thunderfx": ("thunder", "thunder.dynamo"), "torch.compile": ()}


def preloaded(backend_spec: str) -> list[str]:
    """The modules the fork server imports for a night of this backend."""
    return list(ENGINE + COMPILERS.get(backend_spec.split("[")[0].strip(), ()))


def context(backend_spec: str):
    """The multiprocessing context the supervisor starts its workers with."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(preloaded(backend_spec))
    return ctx


def start(backend_spec: str) -> None:
    """Start the fork server now (a no-op when it runs). A module it cannot import is skipped by
    multiprocessing: the worker's own import then says what is wrong."""
    context(backend_spec)
    forkserver.ensure_running()
