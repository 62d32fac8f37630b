"""gradmode-conformance repro: one mismatch between eager PyTorch and a backend.

Run `python repro.py`: it exits 1 while eager PyTorch and the backend differ, 0 once they agree.
"""
# What was found, as the harness saw it (text from the backend is escaped, never code):
# signature: exceptions.backend raised during call | no exception / RuntimeError during call: Inference tensors cannot be saved for backward. Please do not us
#
# [exceptions.backend raised during call] call 1 (inference_mode): call: eager no exception, backend RuntimeError during call: RuntimeError: Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.
# Known issue compile-grad-enabled-under-inference-mode-records-autograd: A function that enables grad (`with torch.enable_grad():`, `torch.set_grad_enabled(True)`) called under `torch.inference_mode()` gives outputs that require grad under torch.compile, or raises 'Inference tensors cannot be saved for backward'
#
# Found with torch.compile (gradmode-conformance 0.1.0, python 3.11.7, torch 2.9.1+cu128).

import contextlib
import sys

import torch


@torch.enable_grad()
def helper0(p0):
    p0.requires_grad_()
    t0 = p0.max(-1).values
    return t0


@torch.enable_grad()
def helper1(p0):
    t2 = p0.sum(-1)
    t3 = p0 - t2
    return t3


def fn(a, b):
    t1 = helper0(a)
    t4 = helper1(a)
    return a, t4, t1, torch.is_grad_enabled()

# Each call: the ambient grad mode, the inputs, and the cotangent for each output in backward.
CALLS = [('enable_grad_in_no_grad',
  [(-0.1007746234536171, 'float64', [], 'cpu', True),
   ([[[0.8223694562911987, 1.9264131784439087, -0.13766838610172272],
      [0.03622119501233101, 0.5352079272270203, 0.15165822207927704],
      [-0.8682097792625427, -0.8963467478752136, 0.17705537378787994]],
     [[0.3969610631465912, 2.1871297359466553, -0.6790148019790649],
      [0.4358814060688019, -0.4056302607059479, -0.5322953462600708],
      [-1.2676725387573242, -0.24196654558181763, -1.9287794828414917]]],
    'float32',
    [2, 3, 3],
    'cpu',
    False)],
  [(0.7914888262748718, 'float64', [], 'cpu', False),
   (0.4359225630760193, 'float64', [], 'cpu', False),
   (-1.264115333557129, 'float64', [], 'cpu', False),
   None]),
 ('inference_mode',
  [(0.03481091558933258, 'float64', [], 'cpu', True),
   ([[[-0.2737167477607727, 0.6560592651367188, 0.5819690823554993],
      [1.720015048980713, -0.7874389290809631, -0.5321159362792969],
      [-1.340956211090088, -0.6869173049926758, -1.882580280303955]],
     [[-0.5267870426177979, -0.37743380665779114, 1.288409948348999],
      [0.023356197401881218, 0.8754456639289856, 0.9195285439491272],
      [-0.12070824205875397, -0.9880807399749756, -1.7062487602233887]]],
    'float32',
    [2, 3, 3],
    'cpu',
    True)],
  [(1.4434142112731934, 'float64', [], 'cpu', False),
   (-1.4297797679901123, 'float64', [], 'cpu', False),
   (0.7149814367294312, 'float64', [], 'cpu', False),
   None]),
 ('inference_mode',
  [(1.4982044696807861, 'float64', [], 'cpu', True),
   ([[[-0.5299134254455566, 0.8816531300544739, 0.5589674711227417],
      [-1.1912777423858643, 0.9261099696159363, 1.0593761205673218],
      [1.2426735162734985, 1.148715615272522, 0.723926842212677]],
     [[-0.05183950066566467, -0.3195791244506836, 0.7443642616271973],
      [-0.4163734018802643, 1.742480754852295, -1.2422128915786743],
      [0.02746029570698738, 0.5476587414741516, 0.6907103657722473]]],
    'float32',
    [2, 3, 3],
    'cpu',
    False)],
  [(0.22056755423545837, 'float64', [], 'cpu', False),
   (1.0248056650161743, 'float64', [], 'cpu', False),
   (0.3175249397754669, 'float64', [], 'cpu', False),
   None])]


def compile_with_backend(fn):
    return torch.compile(fn, backend='aot_eager')


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
    entry = fn
    tensors_of_entry = []
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
        for name, t in zip(['a', 'b'], xs + tensors_of_entry):
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
