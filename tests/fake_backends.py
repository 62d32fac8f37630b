"""Fast fake backends for the fuzz job's tests: one that hangs, one that kills its process,
one with two bugs that show the same symptom."""

import os
import time

import torch

from conformance.backends.faulty import _Wrapping


class Hangs(_Wrapping):
    fault = "every call sleeps"

    def call(self, fn, args, compiled):
        time.sleep(30)
        return fn(*args)


class Crashes(_Wrapping):
    fault = "every call kills the process"

    def call(self, fn, args, compiled):
        os._exit(3)


class TwoBugsOneSymptom(_Wrapping):
    """Outputs lose requires_grad in functions that use `torch.enable_grad`, and in those
    that modify a tensor in place: two bugs, one class of mismatch."""

    fault = "detaches outputs after enable_grad or an in-place op"

    def call(self, fn, args, compiled):
        out = fn(*args)
        code = fn.__code__ if hasattr(fn, "__code__") else fn.forward.__code__
        names = set(code.co_names)
        if names & {"enable_grad", "add_", "mul_", "sub_", "copy_"}:
            detach = lambda x: x.detach() if isinstance(x, torch.Tensor) else x  # noqa: E731
            out = tuple(map(detach, out)) if isinstance(out, tuple) else detach(out)
        return out


hangs = Hangs
crashes = Crashes
two_bugs_one_symptom = TwoBugsOneSymptom
