"""gradmode-conformance repro: one mismatch between eager PyTorch and a backend.

Run `python repro.py`: it exits 1 while eager PyTorch and the backend differ, 0 once they agree.
"""
# What was found, as the harness saw it (text from the backend is escaped, never code):
# signature: flags.requires_grad | eager False, backend True | first call @ Function.apply module no_grad torch._C._set_grad_enabled(False) torch.set_grad_enabled(True)
#
# [flags.requires_grad] call 0 (inference_mode): return[2]: eager False, backend True
# Known issue thunderfx-grad-enabled-under-inference-mode-records-autograd: thunderfx: a function that enables grad (`with torch.enable_grad():`, `torch.set_grad_enabled(True)`) called under `torch.inference_mode()` gives outputs that require grad and a gradient to the input
#
# Found with thunderfx (gradmode-conformance 0.1.0, python 3.11.7, thunder 0.2.6, torch 2.9.1+cu128).

import contextlib
import sys

import torch
from thunder.dynamo import thunderfx

class Fn0(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p0, p1):
        ctx.save_for_backward(p0, p1)
        torch.set_grad_enabled(True)
        return p0

    @staticmethod
    def backward(ctx, grad):
        p0, p1 = ctx.saved_tensors
        return p0 * grad.sum(), p1 * grad.sum()


class Model(torch.nn.Module):
    def __init__(self, w0, w1):
        super().__init__()
        self.w0 = torch.nn.Parameter(w0)
        self.w1 = torch.nn.Parameter(w1)

    def forward(self, a, b):
        torch._C._set_grad_enabled(False)
        torch.set_grad_enabled(True)
        with torch.no_grad():
            t0 = Fn0.apply(self.w1, a)
        return self.w1, b, t0, torch.is_grad_enabled()

# Each call: the ambient grad mode, the inputs, and the cotangent for each output in backward.
CALLS = [('inference_mode',
  [([0.9678356051445007], 'float32', [1], 'cpu', False),
   ([-0.8978068828582764], 'float32', [1], 'cpu', True)],
  [([[[0.8046875]], [[0.03564453125]], [[0.70703125]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   ([0.10993208736181259], 'float32', [1], 'cpu', False),
   ([[[0.8515625]], [[-0.80859375]], [[1.7109375]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   None]),
 ('no_grad',
  [([0.10147292912006378], 'float32', [1], 'cpu', True),
   ([0.607025682926178], 'float32', [1], 'cpu', True)],
  [([[[0.5703125]], [[-0.625]], [[-0.59765625]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   ([0.6191462278366089], 'float32', [1], 'cpu', False),
   ([[[-0.1337890625]], [[-0.62890625]], [[-2.328125]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   None]),
 ('set_grad_enabled_false',
  [([-0.3738303780555725], 'float32', [1], 'cpu', True),
   ([-0.22076159715652466], 'float32', [1], 'cpu', False)],
  [([[[-1.4296875]], [[0.0052490234375]], [[-0.84765625]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   ([1.9842966794967651], 'float32', [1], 'cpu', False),
   ([[[1.3125]], [[-0.95703125]], [[-1.28125]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   None]),
 ('enable_grad_in_no_grad',
  [([-1.0396822690963745], 'float32', [1], 'cpu', True),
   ([0.6494218111038208], 'float32', [1], 'cpu', True)],
  [([[[-0.333984375]], [[0.640625]], [[-0.080078125]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   ([0.5528488159179688], 'float32', [1], 'cpu', False),
   ([[[0.75390625]], [[0.443359375]], [[0.7890625]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   None]),
 ('enable_grad_in_no_grad',
  [([0.4734850823879242], 'float32', [1], 'cpu', True),
   ([-0.5615250468254089], 'float32', [1], 'cpu', True)],
  [([[[-1.15625]], [[0.37109375]], [[0.049072265625]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   ([-0.128959521651268], 'float32', [1], 'cpu', False),
   ([[[-1.5546875]], [[-0.31640625]], [[-0.62109375]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   None]),
 ('inference_mode',
  [([1.253057837486267], 'float32', [1], 'cpu', True),
   ([1.2742154598236084], 'float32', [1], 'cpu', False)],
  [([[[0.42578125]], [[0.0693359375]], [[-0.8359375]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   ([0.4331364333629608], 'float32', [1], 'cpu', False),
   ([[[0.7578125]], [[-0.2431640625]], [[2.125]]], 'bfloat16', [3, 1, 1], 'cpu', False),
   None])]
PARAMETERS = [([[[-0.7260229587554932]], [[-0.4906193017959595]], [[0.4189383089542389]]],
  'float32',
  [3, 1, 1],
  'cpu',
  False),
 ([[[-0.765625]], [[-1.8515625]], [[-0.5390625]]], 'bfloat16', [3, 1, 1], 'cpu', False)]


def compile_with_backend(fn):
    return thunderfx(fn)


# ---- the check: run eager and the backend the same way, compare what a user can see ----

AMBIENT = {
    "grad": contextlib.nullcontext,
    "no_grad": torch.no_grad,
    "enable_grad_in_no_grad": lambda: _chain(torch.no_grad(), torch.enable_grad()),
    "set_grad_enabled_false": lambda: _chain(_SetGradEnabled(False)),
    "inference_mode": torch.inference_mode,
}


class _SetGradEnabled:
    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        torch.set_grad_enabled(self.mode)

    def __exit__(self, *exc):
        pass


@contextlib.contextmanager
def _chain(*managers):
    with contextlib.ExitStack() as stack:
        for m in managers:
            stack.enter_context(m)
        yield


def make(values, dtype, shape, device, requires_grad):
    # clone(): reshape may return a view, and a backend may treat a view input differently
    # from the fresh tensor the harness passed (thunder 0.2.6 does).
    t = torch.tensor(values, dtype=getattr(torch, dtype)).reshape(shape).clone().to(device)
    return t.requires_grad_() if requires_grad else t


def flags(x):
    if not isinstance(x, torch.Tensor):
        return repr(x)
    try:
        grad_fn = "None" if x.grad_fn is None else "set"
    except RuntimeError as e:  # eager refuses to read grad_fn of some views: that is what a user sees
        grad_fn = f"raises {type(e).__name__}"
    return (f"shape={list(x.shape)} dtype={x.dtype} requires_grad={x.requires_grad} "
            f"grad_fn={grad_fn} is_inference={x.is_inference()}")


def observe(compiled):
    """Per call: outputs, inputs after, grads after backward, grad mode after, and errors."""
    entry = Model(*[make(*p) for p in PARAMETERS])
    tensors_of_entry = list(entry.parameters())
    f = compile_with_backend(entry) if compiled else entry
    seen = []
    for mode, inputs, cotangents in CALLS:
        xs = [make(*i) for i in inputs]
        record = {"error": None}
        before = torch.is_grad_enabled()
        markers = []
        try:
            with AMBIENT[mode]():
                try:
                    out = f(*xs)
                except Exception as e:
                    record["error"] = f"call raised {type(e).__name__}: {e}".splitlines()[0]
                record["grad mode after"] = (torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        finally:
            torch._C._set_grad_enabled(before)
        if record["error"] is None:
            outs = out if isinstance(out, tuple) else (out,)
            for i, o in enumerate(outs):
                record[f"return[{i}]"] = (o.detach().clone() if isinstance(o, torch.Tensor) else o, flags(o))
            pairs = [(o, c) for o, c in zip(outs, cotangents)
                     if c is not None and isinstance(o, torch.Tensor) and o.requires_grad]
            try:
                if pairs:
                    torch.autograd.backward([o for o, _ in pairs], [make(*c) for _, c in pairs])
            except Exception as e:
                record["error"] = f"backward raised {type(e).__name__}: {e}".splitlines()[0]
        for name, t in zip(['a', 'b', 'self.w0', 'self.w1'], xs + tensors_of_entry):
            record[f"{name} after call"] = (t.detach().clone(), flags(t))
            record[f"{name}.grad"] = None if not t.is_leaf or t.grad is None else t.grad.clone()
        for t in tensors_of_entry:
            t.grad = None
        seen.append(record)
    return seen, f


def differs(a, b):
    if isinstance(a, tuple) and isinstance(b, tuple):
        return differs(a[0], b[0]) or (a[1] != b[1] and "flags")
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return "shape/dtype"
        tol = {torch.float16: dict(rtol=1e-2, atol=1e-3), torch.bfloat16: dict(rtol=8e-2, atol=1e-2)}
        try:
            torch.testing.assert_close(b, a, equal_nan=True, **tol.get(a.dtype, {}))
        except AssertionError:
            return "values"
        return False
    return (a is None) != (b is None) or (not isinstance(a, torch.Tensor) and a != b)


def errors_differ(e, b):
    """Both raising agrees (messages differ between any two implementations), unless one raised
    during the call and the other in backward, or the backend's own AssertionError stands in
    for the error eager gives the user."""
    if e is None or b is None:
        return (e is None) != (b is None)
    stage, kind = (lambda err: err.split(" raised ")[0]), (lambda err: err.split(" raised ")[1].split(":")[0])
    if (stage(e), stage(b)) == ("backward", "call"):  # the backend builds its backward at the call (declared)
        return False
    return stage(e) != stage(b) or (kind(b) == "AssertionError" and kind(e) != "AssertionError")


def shown(text):
    """What the backend said, with control characters escaped: a message must not drive the terminal."""
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


def main():
    eager, _ = observe(compiled=False)
    try:
        backend, compiled = observe(compiled=True)
    except Exception as e:  # the backend broke the run outside its calls (compiling, or state it left)
        print("MISMATCH", shown(f"the backend's run raised {type(e).__name__}: {e}".splitlines()[0]))
        print("reproduces")
        return 1
    problems = []
    for i, (e, b) in enumerate(zip(eager, backend)):
        for key in e:
            if key == "error":
                if errors_differ(e[key], b[key]):
                    problems.append(f"call {i} ({CALLS[i][0]}): eager {e[key] or 'raised nothing'}, "
                                    f"backend {b[key] or 'raised nothing'}")
            elif key in b and differs(e[key], b[key]):
                problems.append(f"call {i} ({CALLS[i][0]}): {key}: eager {e[key]!r}\n      backend {b[key]!r}")
    for p in problems:
        print("MISMATCH", shown(p))
    print("reproduces" if problems else "eager and the backend agree: fixed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
