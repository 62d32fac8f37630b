"""gradmode-conformance repro: one mismatch between eager PyTorch and a backend.

Run `python repro.py`: it exits 1 while eager PyTorch and the backend differ, 0 once they agree.
"""
# What was found, as the harness saw it (text from the backend is escaped, never code):
# signature: exceptions.raised at another stage | RuntimeError during backward: element N of tensors does not require grad and does not have / TypeError during call: arange(…) got an unexpected keyword argument '…'
#
# [exceptions.raised at another stage] call 0 (no_grad): call: eager RuntimeError during backward: RuntimeError: element 1 of tensors does not require grad and does not have a grad_fn, backend TypeError during call: TypeError: arange() got an unexpected keyword argument 'requires_grad'
# Known issue more-permissive-than-eager: thunder runs programs that eager rejects: dtype-cast errors of in-place ops, ops not implemented for a dtype, backward through tensors modified in place, views modified in no_grad
#
# Found with thunder (gradmode-conformance 0.1.0, python 3.11.7, thunder 0.2.6, torch 2.9.1+cu128).

import contextlib
import sys

import torch
import thunder

class Model(torch.nn.Module):
    def __init__(self, w0):
        super().__init__()
        self.w0 = torch.nn.Parameter(w0)

    def forward(self, a, b, c):
        t0 = self.w0.transpose(0, 1)
        t1 = torch.arange(1.0, requires_grad=True)
        t2 = t1.reshape(-1)
        return self.w0, t2, torch.is_grad_enabled()

# Each call: the ambient grad mode, the inputs, and the cotangent for each output in backward.
CALLS = [('no_grad',
  [(-1.2409051656723022, 'float32', [], 'cpu', False),
   (-0.4965932369232178, 'float32', [], 'cpu', False),
   ([3, -2, 2], 'int64', [3], 'cpu', False)],
  [([[[0.5563967823982239, -0.9593141674995422],
      [-1.4524874687194824, 0.8686419129371643],
      [-0.4512510299682617, 0.13977032899856567]]],
    'float32',
    [1, 3, 2],
    'cpu',
    False),
   ([0.5705286860466003], 'float32', [1], 'cpu', False),
   None]),
 ('enable_grad_in_no_grad',
  [(-0.12240608036518097, 'float32', [], 'cpu', False),
   (-1.624069333076477, 'float32', [], 'cpu', True),
   ([1, 1, -3], 'int64', [3], 'cpu', False)],
  [([[[0.2944600284099579, 0.5395805835723877],
      [-0.2824643850326538, 1.3738449811935425],
      [1.2175973653793335, 0.1787852793931961]]],
    'float32',
    [1, 3, 2],
    'cpu',
    False),
   ([1.0289610624313354], 'float32', [1], 'cpu', False),
   None])]
PARAMETERS = [([[[0.39315715432167053, 0.3902122974395752],
    [-0.8004727363586426, -1.8807669878005981],
    [-0.808657705783844, 0.18678466975688934]]],
  'float32',
  [1, 3, 2],
  'cpu',
  False)]


def compile_with_backend(fn):
    return thunder.jit(fn)


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
        for name, t in zip(['a', 'b', 'c', 'self.w0'], xs + tensors_of_entry):
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
