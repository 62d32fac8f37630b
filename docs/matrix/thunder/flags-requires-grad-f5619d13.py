"""gradmode-conformance repro: flags.requires_grad | eager False, backend True | later call @ module set_grad_enabled(True)

[flags.requires_grad] call 1 (inference_mode): return[1]: eager False, backend True
Known issue outputs-require-grad-spuriously: Outputs require grad (and have a grad_fn) where eager's do not: results of .detach(), of ops on inputs that do not require grad, of creation ops, and of enable_grad regions run under an ambient inference_mode

Found with thunder (gradmode-conformance 0.1.0, python 3.11.7, thunder 0.2.6, torch 2.9.1+cu128).
Run `python repro.py`: it exits 1 while eager PyTorch and the backend differ, 0 once they agree.
"""

import contextlib
import sys

import torch
import thunder

class Model(torch.nn.Module):
    def __init__(self, w0, w1):
        super().__init__()
        self.w0 = torch.nn.Parameter(w0)
        self.w1 = torch.nn.Parameter(w1)

    def forward(self, a, b, c):
        with torch.set_grad_enabled(True):
            t0 = self.w1.clone()
        return self.w0, t0

# Each call: the ambient grad mode, the inputs, and the cotangent for each output in backward.
CALLS = [('enable_grad_in_no_grad',
  [(0.6609845161437988, 'float32', [], 'cpu', True),
   (-0.8242508172988892, 'float32', [], 'cpu', False),
   ([[]], 'float32', [1, 0, 3], 'cpu', False)],
  [([[[-0.07501114159822464, 0.31923651695251465], [-1.0183618068695068, 0.056269943714141846]],
     [[0.6289516687393188, -0.13142500817775726], [0.827124297618866, -0.07716730237007141]],
     [[-0.7417236566543579, -0.7680310010910034], [-0.43369272351264954, -1.2590383291244507]]],
    'float32',
    [3, 2, 2],
    'cpu',
    False),
   ([[[1.2378835678100586, -1.3098655939102173],
      [-0.3031366765499115, -0.6535279750823975],
      [0.04258541017770767, -0.517837405204773]]],
    'float32',
    [1, 3, 2],
    'cpu',
    False)]),
 ('inference_mode',
  [(0.4205074906349182, 'float32', [], 'cpu', True),
   (-0.1802183836698532, 'float32', [], 'cpu', True),
   ([[]], 'float32', [1, 0, 3], 'cpu', False)],
  [([[[-0.8305364847183228, -0.7535833120346069], [0.11806023120880127, -0.8637881278991699]],
     [[0.08998522907495499, -0.5446319580078125], [0.7805598378181458, -0.45602333545684814]],
     [[-0.5447009801864624, -0.1979922652244568], [-0.9462919235229492, 0.4526524543762207]]],
    'float32',
    [3, 2, 2],
    'cpu',
    False),
   ([[[-0.61424320936203, 1.1069332361221313],
      [-0.6740723252296448, 0.341152548789978],
      [-0.37096908688545227, -1.290088176727295]]],
    'float32',
    [1, 3, 2],
    'cpu',
    False)]),
 ('inference_mode',
  [(-2.395155191421509, 'float32', [], 'cpu', True),
   (0.14011457562446594, 'float32', [], 'cpu', False),
   ([[]], 'float32', [1, 0, 3], 'cpu', False)],
  [([[[0.8363817930221558, 0.20233187079429626], [1.0346928834915161, 1.5568413734436035]],
     [[-0.8820146918296814, -0.9524161219596863], [-0.40440165996551514, -0.7010400891304016]],
     [[-0.2014112025499344, 1.0667253732681274], [-0.524915337562561, 0.0365622453391552]]],
    'float32',
    [3, 2, 2],
    'cpu',
    False),
   ([[[-1.0440996885299683, 0.35000282526016235],
      [-0.6134895086288452, 0.6318692564964294],
      [-0.9625837206840515, -0.6003601551055908]]],
    'float32',
    [1, 3, 2],
    'cpu',
    False)]),
 ('no_grad',
  [(-0.07542199641466141, 'float32', [], 'cpu', True),
   (0.6653516888618469, 'float32', [], 'cpu', False),
   ([[]], 'float32', [1, 0, 3], 'cpu', False)],
  [([[[0.3047299087047577, 0.04136466607451439], [1.613550066947937, -0.9741439819335938]],
     [[0.07195530086755753, -1.0217785835266113], [0.5165835022926331, 0.45242902636528015]],
     [[0.26813194155693054, 0.8987350463867188], [0.26219677925109863, 0.27829158306121826]]],
    'float32',
    [3, 2, 2],
    'cpu',
    False),
   ([[[-0.5412667393684387, -0.41215771436691284],
      [0.0605798177421093, 0.8876768350601196],
      [-0.8605074882507324, 0.8654543161392212]]],
    'float32',
    [1, 3, 2],
    'cpu',
    False)]),
 ('no_grad',
  [(-0.13163985311985016, 'float32', [], 'cpu', True),
   (-1.7323106527328491, 'float32', [], 'cpu', True),
   ([[]], 'float32', [1, 0, 3], 'cpu', False)],
  [([[[0.16072528064250946, 1.1355291604995728], [-0.31524547934532166, 0.8661015629768372]],
     [[-0.6026754379272461, -0.2947668433189392], [0.2589932084083557, 1.7849465608596802]],
     [[0.8065633177757263, 0.2902882993221283], [-1.0391877889633179, -1.000757098197937]]],
    'float32',
    [3, 2, 2],
    'cpu',
    False),
   ([[[-0.8960905075073242, -0.839178204536438],
      [0.07768552005290985, 1.2151306867599487],
      [0.7790418267250061, 0.4660753011703491]]],
    'float32',
    [1, 3, 2],
    'cpu',
    False)]),
 ('grad',
  [(-1.6542320251464844, 'float32', [], 'cpu', True),
   (-0.6487294435501099, 'float32', [], 'cpu', False),
   ([[]], 'float32', [1, 0, 3], 'cpu', True)],
  [([[[-0.6017438769340515, 1.030329704284668], [-0.8028165102005005, 1.3770272731781006]],
     [[-2.2876391410827637, -1.8791804313659668], [-0.43070071935653687, 0.7102070450782776]],
     [[1.286818504333496, 2.176271915435791], [0.17485924065113068, -1.068913459777832]]],
    'float32',
    [3, 2, 2],
    'cpu',
    False),
   ([[[-0.8498210906982422, -0.14232413470745087],
      [-0.7340423464775085, 1.1638246774673462],
      [1.575376272201538, 0.4084695875644684]]],
    'float32',
    [1, 3, 2],
    'cpu',
    False)])]
PARAMETERS = [([[[-0.3636752963066101, 0.07768003642559052], [-1.0771435499191284, -0.1804119050502777]],
   [[0.2156810462474823, 1.2411648035049438], [0.6547634601593018, 0.8564152121543884]],
   [[-0.13810624182224274, 0.17315001785755157], [-0.9822017550468445, 1.2384313344955444]]],
  'float32',
  [3, 2, 2],
  'cpu',
  False),
 ([[[1.2373298406600952, -0.7556403279304504],
    [-0.672544538974762, 0.8804828524589539],
    [-1.1805979013442993, 0.11422966420650482]]],
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
    t = torch.tensor(values, dtype=getattr(torch, dtype)).reshape(shape).to(device)
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
        for name, t in zip(['a', 'b', 'c', 'self.w0', 'self.w1'], xs + tensors_of_entry):
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


def main():
    eager, _ = observe(compiled=False)
    backend, compiled = observe(compiled=True)
    problems = []
    for i, (e, b) in enumerate(zip(eager, backend)):
        for key in e:
            if key == "error":  # both raising agrees: messages differ between any two implementations
                if (e[key] is None) != (b[key] is None):
                    problems.append(f"call {i} ({CALLS[i][0]}): eager {e[key] or 'raised nothing'}, "
                                    f"backend {b[key] or 'raised nothing'}")
            elif key in b and differs(e[key], b[key]):
                problems.append(f"call {i} ({CALLS[i][0]}): {key}: eager {e[key]!r}\n      backend {b[key]!r}")
    for p in problems:
        print("MISMATCH", p)
    print("reproduces" if problems else "eager and the backend agree: fixed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
