"""Fast fake backends for the harness's own tests, each with one fault: a bug that hides a second
one, two that get eager's errors wrong, a bug fresh draws almost never show, a bug only a one-op
program shows, two that only the sweep's motifs show, a hostile one whose text must never run,
and one that breaks its process every way it can."""

import os
import signal
import time
from contextlib import ExitStack
from unittest.mock import patch

import torch

from conformance.backends.faulty import PerturbsOutputs, _Wrapping


def _each(out, f):
    """f applied to each of a function's outputs (one, or a tuple)."""
    return tuple(map(f, out)) if isinstance(out, tuple) else f(out)


class HidesABug(_Wrapping):
    """Two bugs, and the first one's mismatch comes before the second one's wherever both
    show: outputs are off by one in functions that call `.detach()` (an outputs mismatch);
    outputs lose requires_grad in functions that modify a tensor in place (a flags one)."""

    fault = "perturbs outputs after detach, detaches them after an in-place op"

    def call(self, fn, args, compiled):
        out = fn(*args)
        names = set((fn.__code__ if hasattr(fn, "__code__") else fn.forward.__code__).co_names)
        def one(x):
            if isinstance(x, torch.Tensor):
                x = x + 1 if "detach" in names and x.is_floating_point() else x
                x = x.detach() if names & {"add_", "mul_", "sub_", "copy_"} else x
            return x

        return _each(out, one)


class OneClassTwoBugs(PerturbsOutputs):
    """Two bugs with one class of mismatch (outputs.value): floating outputs off by 0.5 in
    functions that change the grad mode (a region or a plain call), and in functions that change
    a shape (reshape, transpose, unsqueeze, flip). Where one settles the class, the other hides
    behind it but for a second look."""

    fault = "floating outputs off by 0.5 after a grad-mode change, or after a shape op"
    GRAD_MODE = {"no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "_set_grad_enabled"}
    SHAPE_OPS = {"reshape", "transpose", "unsqueeze", "flip"}

    def call(self, fn, args, compiled):
        names = set((fn.__code__ if hasattr(fn, "__code__") else fn.forward.__code__).co_names)
        if names & (self.GRAD_MODE | self.SHAPE_OPS):
            return PerturbsOutputs.call(self, fn, args, compiled)
        return fn(*args)


class MasksErrors(_Wrapping):
    """An error the program raises comes out as the backend's own AssertionError."""

    fault = "raises AssertionError instead of the program's error"

    def call(self, fn, args, compiled):
        try:
            return fn(*args)
        except Exception as exc:
            raise AssertionError("internal invariant") from exc


class FailsToCompile(_Wrapping):
    """compile() raises: the run breaks before any call, as a compiler crash does."""

    fault = "compile raises"

    def compile(self, fn):
        raise RuntimeError("the compiler gave up")


class RareBug(PerturbsOutputs):
    """Floating outputs off by 0.5 in functions that call torch.hypot, torch.atan2, cumsum,
    flip and torch.erf: a bug that a short night's own draws do not make, but a baseline may
    hold. (A 15 s night made the first three, and then four, once inputs could fit the
    tensors drawn before them.)"""

    fault = "floating outputs off by 0.5 after hypot, atan2, cumsum, flip and erf"
    RARE = {"hypot", "atan2", "cumsum", "flip", "erf"}

    def call(self, fn, args, compiled):
        names = set((fn.__code__ if hasattr(fn, "__code__") else fn.forward.__code__).co_names)
        return super().call(fn, args, compiled) if self.RARE <= names else fn(*args)


class OneOpBug(PerturbsOutputs):
    """Floating outputs off by 0.5 in a function that does nothing but torch.relu of an input
    holding a NaN: a bug of one op at one value, which the sweep of one-op programs meets in
    seconds and a short night's random programs do not."""

    fault = "floating outputs off by 0.5 for torch.relu alone of a NaN"

    def call(self, fn, args, compiled):
        names = set((fn.__code__ if hasattr(fn, "__code__") else fn.forward.__code__).co_names)
        nan = any(isinstance(a, torch.Tensor) and a.is_floating_point() and bool(a.isnan().any()) for a in args)
        return super().call(fn, args, compiled) if names == {"torch", "relu"} and nan else fn(*args)


class CumsumKeepsGradUnderNoGrad(_Wrapping):
    """A tagging fault of one op: cumsum's outputs keep grad under `torch.no_grad()` (as a
    compiler that forgot to tag one symbol's outputs); every other op's are right. Only a
    program with cumsum inside a no_grad region shows it."""

    fault = "cumsum's outputs under no_grad keep grad"

    def call(self, fn, args, compiled):
        cumsum = torch.Tensor.cumsum

        def keeps_grad(self, *a, **k):
            with torch.enable_grad():
                return cumsum(self, *a, **k)

        with patch.object(torch.Tensor, "cumsum", keeps_grad):
            return fn(*args)


cumsum_keeps_grad_under_no_grad = CumsumKeepsGradUnderNoGrad


class MaximumDifferentiatesConstants(_Wrapping):
    """A VJP fault of one op: `torch.maximum(x, y)` with x made under no_grad (a constant) and y
    requiring grad differentiates x as well, as if x were `2 * y` still connected to y (the
    reader probe's `t0 = a * 2`): the tag of a constant is lost in maximum's VJP alone."""

    fault = "torch.maximum differentiates a no-grad argument"

    def call(self, fn, args, compiled):
        maximum = torch.maximum

        def leaky(x, y, *a, **k):
            if not x.requires_grad and y.requires_grad:
                x = x + 2 * (y - y.detach())
            return maximum(x, y, *a, **k)

        with patch.object(torch, "maximum", leaky):
            return fn(*args)


maximum_differentiates_constants = MaximumDifferentiatesConstants


class PromotesToDouble(_Wrapping):
    """thunder's promotion bug in general: outputs are float64 wherever a float64 input
    requires grad (zero-dim or not), so `u(a) + b` with a 0-d float64 b is float64."""

    fault = "outputs float64 beside a float64 input that requires grad"

    def call(self, fn, args, compiled):
        out = fn(*args)
        if not any(isinstance(a, torch.Tensor) and a.dtype == torch.float64 and a.requires_grad for a in args):
            return out
        double = lambda x: x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x  # noqa: E731
        return _each(out, double)


class ViewsCopy(_Wrapping):
    """Views are copies: an update through `t0.unsqueeze(0)`, `t0.reshape(-1)`,
    `t0.transpose(0, 1)` or `t0[:1]` misses its base (thunder's lost update, in general)."""

    fault = "views are copies"
    views = ("unsqueeze", "reshape", "transpose", "__getitem__")

    def call(self, fn, args, compiled):
        def copying(name):
            view = getattr(torch.Tensor, name)
            return lambda self, *a, **k: view(self, *a, **k).clone()

        with ExitStack() as patches:
            for name in self.views:
                patches.enter_context(patch.object(torch.Tensor, name, copying(name)))
            return fn(*args)


class _FailsInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("deferred until backward")


class DefersErrors(_Wrapping):
    """An error the program raises during the call is raised by backward instead."""

    fault = "raises the program's error in backward"

    def call(self, fn, args, compiled):
        try:
            return fn(*args)
        except Exception:
            return _FailsInBackward.apply(torch.zeros((), requires_grad=True))


hides_a_bug = HidesABug
one_class_two_bugs = OneClassTwoBugs
masks_errors = MasksErrors
fails_to_compile = FailsToCompile
defers_errors = DefersErrors
rare_bug = RareBug
one_op_bug = OneOpBug
promotes_to_double = PromotesToDouble
views_copy = ViewsCopy


# Everything a hostile or broken backend can put in what the harness writes down: quotes,
# triple quotes, backslashes, newlines, NUL, ESC sequences, markup, a coding cookie, 1 MB.
HOSTILE = ('""" + __import__("os").system("touch pwned") + """ \'\'\' \\ \\x00 \x00 \x1b[31mred\x1b[0m '
           '\r\n# -*- coding: utf-7 -*-\n</pre></script><script>document.title="pwned"</script>'
           '<img src=x onerror="document.title=\'pwned\'"> \u2028 \x85 ')


class Hostile(_Wrapping):
    """Raises a message built to escape whatever file it is written into, under no_grad; its
    name and versions are hostile too."""

    fault = HOSTILE

    def call(self, fn, args, compiled):
        if not torch.is_grad_enabled():
            raise RuntimeError(HOSTILE + "x" * 1_000_000)
        return fn(*args)

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__, HOSTILE: HOSTILE}
hostile = Hostile


# A backend that breaks the process its worker runs in, or hangs, each time another way: a night must
# report each example and go on. It breaks at the 6th call with grad off in a process (so each
# incarnation of a worker runs a few examples first) and perturbs outputs otherwise (so a night
# has other findings). Which break comes next is counted in the file $BREAKS_COUNTER, since
# each incarnation is a fresh process; after the last one it only perturbs outputs.
BREAKS = ("segfault", "os._exit(0)", "output flood", "memory", "block in C", "sleep")


class BreaksEveryWay(_Wrapping):
    fault = "breaks its process under no_grad, each time another way"
    grad_off_calls = 0

    def call(self, fn, args, compiled):
        if not torch.is_grad_enabled():
            BreaksEveryWay.grad_off_calls += 1
            if BreaksEveryWay.grad_off_calls >= 6:
                self.brk()
        return PerturbsOutputs.call(self, fn, args, compiled)

    def brk(self):
        from pathlib import Path

        counter = Path(os.environ["BREAKS_COUNTER"])
        n = int(counter.read_text()) if counter.exists() else 0
        if n >= len(BREAKS):
            return
        counter.write_text(str(n + 1))
        if BREAKS[n] in ("output flood", "memory", "block in C"):
            # Stuck in C from here on: an alarm that came while it allocated or wrote would
            # otherwise stop it as a plain hang, sooner or later as the machine is loaded.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        if BREAKS[n] == "segfault":
            import ctypes

            ctypes.string_at(0)
        elif BREAKS[n] == "os._exit(0)":
            os._exit(0)
        elif BREAKS[n] == "output flood":  # past the supervisor's 64 MB, then held in C, as the memory
            for _ in range(65):
                os.write(2, b"x" * 2**20)
            _block_in_c()
        elif BREAKS[n] == "memory":  # 2.5 GB written, then held in a C call: the supervisor sees it
            held = b"x" * (5 * 2**29)  # however late it looks
            _block_in_c()
            del held
        elif BREAKS[n] == "block in C":
            _block_in_c()
        else:  # a plain hang, which SIGALRM stops in the worker
            time.sleep(60)


def _block_in_c():
    """2^31 rounds of C that never return to the interpreter, nor to SIGALRM."""
    import hashlib

    hashlib.pbkdf2_hmac("sha256", b"x", b"y", 2**31 - 1)


breaks_every_way = BreaksEveryWay


class KillsRedis(PerturbsOutputs):
    """Floating outputs off by 0.5, and on its KILL_AT-th call it kills the Redis server whose
    pid is in $CONFORMANCE_TEST_REDIS_PID: the night's database goes away mid-night, at the
    same example on any machine, while Hypothesis shrinks the first failure. That failure keeps
    showing, so each smaller example Hypothesis finds is saved, and the first save after the
    kill meets a database that is gone. (Raising errors of new kinds after the kill instead,
    every candidate of that shrink stopped failing and nothing was saved: draw-dependent.)"""

    KILL_AT = 12
    calls = 0

    def call(self, fn, args, compiled):
        KillsRedis.calls += 1
        if KillsRedis.calls == self.KILL_AT:
            os.kill(int(os.environ["CONFORMANCE_TEST_REDIS_PID"]), signal.SIGKILL)
        return PerturbsOutputs.call(self, fn, args, compiled)


kills_redis = KillsRedis


class DropsInplaceMethods(_Wrapping):
    """The one-tensor in-place methods (`x.relu_()`, `buf.zero_()`, ops.INPLACE_UNARY) do
    nothing, and `masked_fill` fills nothing: a backend that loses those updates."""

    fault = "one-tensor in-place methods and masked_fill are no-ops"
    METHODS = ("sin_", "relu_", "clamp_", "zero_", "fill_")

    def call(self, fn, args, compiled):
        with ExitStack() as stack:
            for m in self.METHODS:
                stack.enter_context(patch.object(torch.Tensor, m, lambda self, *a, **k: self))
            stack.enter_context(patch.object(torch.Tensor, "masked_fill", lambda self, mask, value: self * 1))
            return fn(*args)


drops_inplace_methods = DropsInplaceMethods


class SegfaultsUnderNoGrad(PerturbsOutputs):
    """Kills its process (a segfault) at a call made with grad disabled, as a compiler crash does."""

    fault = "segfaults under no_grad"

    def call(self, fn, args, compiled):
        if not torch.is_grad_enabled():
            import ctypes

            ctypes.string_at(0)
        return PerturbsOutputs.call(self, fn, args, compiled)


segfaults_under_no_grad = SegfaultsUnderNoGrad


class RemovesDeadCodeMasksErrors(MasksErrors):
    """Declares that it may skip dead code, and gets every error of live code wrong."""

    from conformance.backends.base import Declaration

    declarations = frozenset({Declaration.DEAD_CODE_REMOVED})
removes_dead_code_masks_errors = RemovesDeadCodeMasksErrors


class _FactoriesRaise(torch.overrides.TorchFunctionMode):
    # As the real breakage first shows: the next example's torch.randn raises.
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("zeros", "ones", "randn", "empty", "tensor"):
            raise RuntimeError("state INTERNAL ASSERT FAILED (planted): PythonDispatcherTLS was not set")
        return func(*args, **(kwargs or {}))


class BreaksTorchUnderInferenceMode(_Wrapping):
    """A call under inference mode leaves every later op of the thread raising, eager's too, as
    torch.compile does after failing on a view made in inference mode (pytorch/pytorch#169477):
    a mode entered on the thread's stack and never left. Once a night (a file, BREAKS_COUNTER,
    remembers it across the worker's processes), so that the rest of the night runs."""

    fault = "torch broken after a call under inference_mode"

    def call(self, fn, args, compiled):
        from pathlib import Path

        out = fn(*args)
        done = Path(os.environ["BREAKS_COUNTER"])
        if torch.is_inference_mode_enabled() and not done.exists():
            done.write_text("broken")
            _FactoriesRaise().__enter__()
        return out


breaks_torch_under_inference_mode = BreaksTorchUnderInferenceMode
