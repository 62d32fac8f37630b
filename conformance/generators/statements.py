"""Strategies for statements: op calls, creations, grad-mode regions, plain grad-mode
calls, in-place updates, requires_grad_, reads of autograd state, branches on grad mode or on
a read, decorated helpers and torch.autograd.Functions.

Every strategy takes the Scope it draws in, so programs are well typed by construction:
an op is only drawn with arguments eager accepts (checked on meta tensors by ops.infer).
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.generators.inputs import RELATIONS, related_shapes, shapes
from conformance.generators.scope import Scope, is_temporary
from conformance.ops import (AUTOCAST_OPS, CREATION, FAMILIES, INPLACE, INPLACE_UNARY, OPS, UNARY, VIEWS, Meta, infer,
                             inplace_applies, inplace_unary_applies)
from conformance.program import (
    FLOAT_DTYPES,
    FUNCTION,
    HELPER_DECORATORS,
    SET_GRAD_APIS,
    Assign,
    Call,
    Create,
    Grad,
    GradRegion,
    Helper,
    HelperCall,
    READS,
    READS_OF_NOTHING,
    MODULE_READS,
    IfGradEnabled,
    InPlace,
    Read,
    RequiresGrad,
    SetGradMode,
)

# Simplest first: Hypothesis shrinks a sampled_from towards its first element.
# Nested blocks stay short: every statement costs compile time in each shrink step, and
# the discrepancies found so far need at most two statements per block.
NESTED_MAX = 2
# `torch.ones(..., requires_grad=True)` is a kind of its own, not a coin flip of "create":
# so that swarm testing can leave it out of a program while keeping plain creations (thunder
# rejects the keyword before anything else of the program runs).
STATEMENT_KINDS = ("op", "create", "create_requires_grad", "region", "set_grad", "inplace", "requires_grad_", "if",
                   "helper", "crossing", "read", "grad")
# What a "helper" statement calls: a decorated function, or a torch.autograd.Function (a third of
# them: as a kind of its own, Functions were in half the programs, and a 10-minute thunder night
# met 29 of the guard's known issues instead of 31). A quarter of the Functions mark their output
# non-differentiable, which thunder 0.2.6 rejects as a whole: rarely, so that it hides little.
HELPER_KINDS = HELPER_DECORATORS + (FUNCTION,)


def _candidates(op: str, scope: Scope) -> list[tuple[str, ...]]:
    names = scope.variables()
    if OPS[op].arity == 1:
        return [(v,) for v in names if infer(op, (scope.env[v],))]
    return [(v, w) for v in names for w in names if infer(op, (scope.env[v], scope.env[w]))]


def chained(draw, scope: Scope, candidates: list[tuple[str, ...]], label: str) -> list[tuple[str, ...]]:
    """Half the time, only the candidates that read the temporary made last.

    So that programs compute chains, as people write them (a view, then an op on it inside
    a region, then return that), rather than ops side by side on the inputs, most of whose
    results nothing reads: a bug in how a tag or a grad mode flows from one op to the next
    needs the next op. "No" shrinks to every candidate."""
    latest = scope.latest()
    reading = [c for c in candidates if latest in c]
    if reading and draw(st.booleans(), label=f"{label}.chain"):
        return reading
    return candidates


@st.composite
def op_calls(draw, scope: Scope, reading: tuple[str, ...] = (), ops: tuple[str, ...] = ()) -> Assign:
    """`t = <op>(...)`: one of `ops` (by default the program's), reading one of `reading` if given."""
    op = draw(st.sampled_from(ops or scope.ops), label="op")
    candidates = _candidates(op, scope)
    if reading:
        candidates = [c for c in candidates if set(c) & set(reading)]
    if not candidates:  # e.g. matmul with no compatible pair: `x * 2` applies to anything
        op, candidates = "mul_scalar", [(v,) for v in (reading or scope.variables())]
    if not reading:
        candidates = chained(draw, scope, candidates, op)
    args = draw(st.sampled_from(candidates), label=f"{op}.args")
    target = scope.names.temp()
    scope.env[target] = infer(op, tuple(scope.env[a] for a in args))
    if op in FAMILIES["view"] or op in VIEWS:
        scope.views.add(target)
    return Assign(target, Call(op, args))


@st.composite
def creations(draw, scope: Scope, requires_grad: bool = False) -> Assign:
    op = draw(st.sampled_from(CREATION), label="creation")
    # Like an input, a made tensor may fit one in scope (a bias for an output, a weight for an
    # input); torch.arange's 1-d shapes are drawn fresh.
    how = "fresh" if op == "arange" else draw(st.sampled_from(RELATIONS), label="creation.relation")
    if how == "fresh":
        shape = draw(shapes(max_dims=1 if op == "arange" else 3), label="creation.shape")
    else:
        base = scope.env[draw(st.sampled_from(scope.variables()), label="creation.base")]
        shape = draw(related_shapes(how, base.shape, "creation.shape"))
    if op == "arange" and not shape:
        shape = (1,)
    value = Create(op, shape, scope.device, requires_grad)
    target = scope.names.temp()
    scope.env[target] = Meta(shape, "float32", scope.device)
    return Assign(target, value)


@st.composite
def regions(draw, scope: Scope, depth: int, kinds: tuple[str, ...], allowed: tuple[str, ...]) -> GradRegion:
    kind = draw(st.sampled_from(kinds), label="region")
    enabled = kind == "set_grad_enabled" and draw(st.booleans(), label="set_grad_enabled.mode")
    enabled = enabled or (kind == "autocast" and draw(st.booleans(), label="autocast.enabled"))
    # What autocast changes is the dtype of a product (most ops run in their input's dtype):
    # an enabled region opens with one, which the rest of its body may read.
    first = (draw(op_calls(scope, ops=AUTOCAST_OPS)),) if kind == "autocast" and enabled else ()
    body = draw(blocks(scope, depth - 1, kinds, allowed, max_size=NESTED_MAX))
    return _region(kind, first + body, enabled, scope)


def _region(kind: str, body: tuple, enabled: bool, scope: Scope) -> GradRegion:
    # An autocast region casts on the program's device; the grad-mode ones have no device.
    return GradRegion(kind, body, enabled, scope.device if kind == "autocast" else "cpu")


def set_grad_modes() -> st.SearchStrategy[SetGradMode]:
    return st.builds(SetGradMode, st.sampled_from(SET_GRAD_APIS), st.booleans())


@st.composite
def inplace_updates(draw, scope: Scope, target: str | None = None) -> InPlace | None:
    """`t.<method>(a)`, of `target` if given; None where no pair applies.

    Where no target is given and the program made a view, half the updates are of a view: an
    update through a view is autograd's view-and-in-place case (the view's grad_fn rebased on
    its base's new history), where a backend that functionalizes in-place ops has the most to
    get right. Drawn among all targets, few updates are: in a census of 6,000 programs (seeds
    1-2), 15 updated a view of a value they computed, and none a view of a 0-d one, thunder's
    inplace-on-view-of-zero-dim-backward-zeros-typeerror (night 53 found it once, from a
    5-statement program); with this draw, 36 and 13 (seeds 3-4: 19 and 11). "No" shrinks to
    every target."""
    method = draw(st.sampled_from(INPLACE + tuple(INPLACE_UNARY)), label="inplace")
    names = scope.variables()

    def pairs_of(targets):
        if method in INPLACE_UNARY:  # a method of the target alone
            return [(t, None) for t in targets if inplace_unary_applies(method, scope.env[t])]
        return [(t, a) for t in targets for a in names if inplace_applies(method, scope.env[t], scope.env[a])]

    views = [v for v in names if v in scope.views]
    if not target and views and draw(st.booleans(), label="inplace.view"):
        pairs = pairs_of(views) or pairs_of(names)
    else:
        pairs = pairs_of([target] if target else names)
    if not pairs:
        return None
    target, arg = draw(st.sampled_from(chained(draw, scope, pairs, method)), label=f"{method}.args")
    return InPlace(target, method, arg)


def read_after(draw, scope: Scope, update, target: str) -> tuple:
    """`update`, and half the time an op that reads `target`, the tensor it updated in place.

    An update shows only where the updated tensor is read after it: its new value, and what
    autograd recorded for it (an input updated by a tensor that requires grad loses its graph
    in thunder: inplace-from-grad-tensor-loses-autograd). An update through an alias shows in
    its base, and thunder's lost one only where the base itself is returned: that is the
    returns' draw (programs.updated). `update` is the InPlace statement, or the region that
    holds it; "no" shrinks to the update alone."""
    if draw(st.booleans(), label="inplace.read"):
        return update, draw(op_calls(scope, reading=(target,)))
    return (update,)


@st.composite
def requires_grads(draw, scope: Scope) -> RequiresGrad | None:
    floats = [v for v in scope.variables() if scope.env[v].is_float]
    if not floats:
        return None
    return RequiresGrad(draw(st.sampled_from(floats), label="requires_grad_.target"))


@st.composite
def autograd_reads(draw, scope: Scope) -> Assign:
    """`t = a.requires_grad`, `t.is_leaf`, `t.grad_fn is None`, `t.is_inference()`,
    `torch.is_inference_mode_enabled()` or, in a module's forward, `self.training` and
    `self.w0.grad is None`: what code around grad mode asks of autograd (and of the module), and
    a backend traces as a constant or a proxy's attribute. The bool is returned or branched on
    (programs.returns, branches). Most often of the value made last, where a region's tag or a
    grad mode shows."""
    # In a module's forward, a third of the reads are of `self.training` and a third of a
    # parameter's `.grad is None`: drawn alike among all reads, a read of the training flag met
    # a call in eval mode in 2% of the module programs with reads; a quarter each, a 300-s
    # thunder night drew 14 and 3 of them in 2,889 examples.
    forward = not scope.in_helper and any(v.startswith("self.") for v in scope.env)
    weights = sorted(v for v in scope.differentiable if v.startswith("self.")) if forward else []
    module_read = draw(st.integers(0, 2), label="read.module") if forward else 0
    of = ""
    if module_read == 2:
        attr = "training"
    elif module_read == 1 and weights:
        attr, of = "grad_is_none", draw(st.sampled_from(weights), label="read.weight")
    else:
        attr = draw(st.sampled_from(tuple(r for r in READS if r not in MODULE_READS)), label="read")
    if attr not in READS_OF_NOTHING and not of:
        latest = scope.latest()
        names = [latest] if latest and draw(st.booleans(), label="read.latest") else scope.variables()
        of = draw(st.sampled_from(names), label="read.of")
    target = scope.names.temp()
    scope.flags.append(target)
    return Assign(target, Read(attr, of))


@st.composite
def branches(draw, scope: Scope, depth: int, kinds, allowed) -> IfGradEnabled:
    # Both branches end with `target = <op>(v)` on one outer variable, with the same
    # result Meta, so the code after the `if` is well typed whichever branch ran. The
    # condition is grad mode or a read made before (the first shrinks to grad mode).
    condition = draw(st.sampled_from(("",) + tuple(scope.flags)), label="if.condition")
    source = draw(st.sampled_from(scope.variables()), label="if.source")
    meta = scope.env[source]
    results = {name: infer(name, (meta,)) for name, _ in UNARY}
    first = draw(st.sampled_from([n for n, m in results.items() if m is not None]), label="if.then_op")
    second = draw(st.sampled_from([n for n, m in results.items() if m == results[first]]), label="if.else_op")
    target = scope.names.temp()
    then = draw(blocks(scope.child(), depth - 1, kinds, allowed, max_size=2))
    orelse = draw(blocks(scope.child(), depth - 1, kinds, allowed, max_size=2))
    scope.env[target] = results[first]
    return IfGradEnabled(
        then + (Assign(target, Call(first, (source,))),),
        orelse + (Assign(target, Call(second, (source,))),),
        condition,
    )


@st.composite
def helper_calls(draw, scope: Scope, depth: int, kinds, allowed) -> Assign:
    """`t = helper0(a)`, a decorated helper, or `t = Fn0.apply(a)`, a torch.autograd.Function
    whose forward is the body, drawn among the float tensors (a decorated helper where there
    are none)."""
    names = scope.variables()
    decorator = draw(st.sampled_from(HELPER_KINDS), label="helper.decorator")
    function = decorator == FUNCTION and any(scope.env[v].dtype in FLOAT_DTYPES for v in names)
    if decorator == FUNCTION and not function:
        decorator = HELPER_DECORATORS[0]
    if function:
        names = [v for v in names if scope.env[v].dtype in FLOAT_DTYPES]
        # A forward that updates its input in place must say so (ctx.mark_dirty), or autograd's
        # answer is undefined: no update in a forward, so that eager's answer is the reference.
        # Nor a gradient: grad is off in a forward, so `torch.autograd.grad` there only raises.
        allowed = tuple(k for k in allowed if k not in ("inplace", "requires_grad_", "crossing", "grad"))
    n_args = draw(st.integers(1, min(2, len(names))), label="helper.arity")
    args = tuple(draw(st.sampled_from(names), label=f"helper.arg{i}") for i in range(n_args))
    params = tuple(f"p{i}" for i in range(n_args))
    inner = Scope({p: scope.env[a] for p, a in zip(params, args)}, scope.names, scope.helpers, scope.device, True,
                  ops=scope.ops)
    # As an enabled autocast region does (regions), an autocast helper's body opens with a product.
    first = (draw(op_calls(inner, ops=AUTOCAST_OPS)),) if decorator == "autocast" else ()
    body = first + draw(blocks(inner, depth - 1, kinds, allowed, max_size=NESTED_MAX))
    # A forward runs with grad off; half of them change it in a region. Drawn as helper bodies
    # are, 6 of 145 forwards did (a census of 300 programs); with this draw 59 of 104 (600
    # programs of ops, regions, plain calls and helpers). "No" shrinks to the plain body.
    if function and kinds and depth > 1 and draw(st.booleans(), label="function.region"):
        body = (draw(regions(inner, depth - 1, kinds, allowed)),) + body
    result = draw(st.sampled_from(inner.variables()), label="helper.result")
    if function:
        marked = draw(st.booleans(), label="function.marks") and draw(st.booleans(), label="function.marks2")
        helper = Helper(scope.names.function(), FUNCTION, params, body, result, non_differentiable=marked)
    else:
        helper = Helper(scope.names.helper(), decorator, params, body, result,
                        device=scope.device if decorator == "autocast" else "cpu")
    scope.helpers.append(helper)
    target = scope.names.temp()
    scope.env[target] = inner.env[result]
    return Assign(target, HelperCall(helper.name, args))


@st.composite
def crossings(draw, scope: Scope, kinds: tuple[str, ...], updates: bool = False) -> tuple:
    """A value made on one side of a grad-mode boundary and read on the other.

    This is where thunder's four parts meet (the marker, the tags of values made while
    grad is off, the VJP that holds them constant, the cache check of the ambient mode),
    and random statements rarely make it: in a census of 3,000 programs, 96 made a view of
    an input that requires grad while grad was off, 6 read it while grad was on, and none
    returned what they computed from it. So the value made here reads an input or a
    parameter (where requires_grad lives), the next op reads that value, and the next op
    is the value the function returns when it returns what it made last. Half the values
    made are views, whatever ops the program draws from: autograd treats a view made while
    grad is off in a way of its own (a leaf that still requires grad; in-place updates of
    it raise), and views are 6 of the 41 ops.
      outward: `with <region>: t0 = op(a)` then `t1 = op(t0)`
      inward:  `t0 = op(a)` then `with <region>: t1 = op(t0)`
    Where the program updates in place, half the time the value is updated on the other
    side instead of read (`with torch.no_grad(): t0.add_(b)`): an update through a view,
    or through `a.double()` of a float64 `a` (`a` itself), writes to the input, and autograd
    allows it only while grad is off. In a census of 6,000 programs (seeds 1-2), 2 updated
    in place while grad was off a view or copy made while it was on of an input that
    requires grad; 17 with this draw. Half the updates are read after (read_after).
    """
    kind = draw(st.sampled_from(kinds), label="crossing.region")
    enabled = kind in ("set_grad_enabled", "autocast") and draw(st.booleans(), label="crossing.mode")
    inward = draw(st.booleans(), label="crossing.inward")
    leaves = tuple(v for v in scope.variables() if not is_temporary(v))
    views = FAMILIES["view"] if draw(st.booleans(), label="crossing.view") else ()
    made = draw(op_calls(scope, reading=leaves, ops=views))
    used = None
    if updates and draw(st.booleans(), label="crossing.update"):
        used = draw(inplace_updates(scope, target=made.target))
    if used is None:
        used = draw(op_calls(scope, reading=(made.target,)))
    if inward:
        crossing = (made, _region(kind, (used,), enabled, scope))
    else:
        crossing = (_region(kind, (made,), enabled, scope), used)
    if isinstance(used, InPlace):
        crossing = crossing[:-1] + read_after(draw, scope, crossing[-1], used.target)
    return crossing


@st.composite
def statements(draw, scope: Scope, depth: int, kinds: tuple[str, ...], allowed: tuple[str, ...]):
    kind = draw(st.sampled_from(allowed), label="statement")
    nested = depth > 0
    if kind in ("create", "create_requires_grad"):
        made = draw(creations(scope, requires_grad=kind == "create_requires_grad"))
        # A tensor a program creates is there to be read, and a bug in how a backend
        # makes it shows only in the op that reads it (`torch.arange(0.0)[:1]`). Half the
        # creations are read by the op right after them; "no" shrinks to the plain one.
        # In a census of 12,000 programs (seeds 1-4), 0 sliced an empty arange before, 12 after.
        if draw(st.booleans(), label="create.read"):
            return made, draw(op_calls(scope, reading=(made.target,), ops=reading_ops(draw, made.value)))
        return made
    if kind == "region" and nested and kinds:
        return draw(regions(scope, depth, kinds, allowed))
    if kind == "set_grad":
        return draw(set_grad_modes(), label="set_grad")
    if kind == "inplace":
        stmt = draw(inplace_updates(scope))
        if stmt is not None:
            return read_after(draw, scope, stmt, stmt.target)
    if kind == "requires_grad_":
        stmt = draw(requires_grads(scope))
        if stmt is not None:
            return stmt
    if kind == "if" and nested:
        return draw(branches(scope, depth, kinds, allowed))
    if kind == "read":
        return draw(autograd_reads(scope))
    if kind == "helper" and nested and not scope.in_helper:
        return draw(helper_calls(scope, depth, kinds, allowed))
    if kind == "crossing" and nested and kinds:
        return draw(crossings(scope, kinds, updates="inplace" in allowed))
    if kind == "grad":
        made = draw(gradients(scope, nested))
        if made is not None:
            return made
    made = draw(op_calls(scope, ops=matmuls(draw, scope)))
    # A reduction's result combined by a binary op with another value, `x - x.mean()` or
    # `y * x.sum()`, as losses and norms are written: autograd then sums the broadcast's
    # cotangent back to the reduction's shape before the reduction's own backward, a step a
    # backend can skip. Random statements rarely make it: in a census of 12,000 programs
    # (seeds 1-4), 1 summed an input that requires grad while grad was on and returned a
    # binary op of the sum; 14 with this draw. Only the binary ops the program draws from
    # (swarm testing); "no" shrinks to the reduction alone.
    if made.value.op not in FAMILIES["reduction"]:
        return made
    binary = tuple(op for op in scope.ops if op in FAMILIES["binary"] and op != "matmul")  # matmul: no 0-d
    if binary and draw(st.booleans(), label="reduction.combine"):
        return made, draw(op_calls(scope, reading=(made.target,), ops=binary))
    return made


@st.composite
def gradients(draw, scope: Scope, nested: bool) -> tuple | None:
    """`t1 = op(a)` then `t2 = torch.autograd.grad(t1.sum(), a)[0]`: a gradient taken inside the
    function, of an input or a parameter (one that requires grad, where there is one), through an op that
    reads it, in `with torch.enable_grad():` (where regions may nest), as code that
    differentiates where its caller may be in no_grad writes it. Half with `create_graph=True`, whose gradient the
    harness's backward differentiates again. None where no float input or parameter exists."""
    leaves = [v for v in scope.variables() if not is_temporary(v) and scope.env[v].is_float]
    if not leaves:
        return None
    # Of one that requires grad where there is one: of another, eager raises (both sides, most often).
    leaves = [v for v in leaves if v in scope.differentiable] or leaves
    wrt = draw(st.sampled_from(leaves), label="grad.of")
    made = draw(op_calls(scope, reading=(wrt,)))
    target = scope.names.temp()
    scope.env[target] = scope.env[wrt]
    taken = Assign(target, Grad((made.target, wrt), draw(st.booleans(), label="grad.create_graph")))
    if nested:  # the shrinker drops the region where the call's own grad mode shows the bug
        return (_region("enable_grad", (made, taken), False, scope),)
    return made, taken


def reading_ops(draw, made: Create) -> tuple[str, ...]:
    """The ops the op that reads a creation draws from: () for the program's, or the views.

    An arange is most often indexed or reshaped (`torch.arange(n)[:k]`, `.unsqueeze(0)`), and
    only a view shows how a backend traced its shape: every pointwise op and reduction of
    `torch.arange(0.0)` agrees in thunder, while a slice, a reshape or an unsqueeze fails
    (arange-empty-slice-index-error). So half the reads of an arange are views, whatever ops
    the program draws from: in a census of 6,000 programs (seeds 1-2), 4 read an empty arange
    by a view or a matmul, and 22 with this draw. "No" shrinks to the program's ops."""
    if made.op == "arange" and draw(st.booleans(), label="create.read_view"):
        return FAMILIES["view"]
    return ()


def matmuls(draw, scope: Scope) -> tuple[str, ...]:
    """("matmul",) a quarter of the time where the program draws from it and two tensors in
    scope fit it; () (the program's ops) otherwise.

    Inputs are drawn to fit a matmul (inputs.RELATIONS), but drawn uniformly among some 40
    ops, matmul is rarely the op: in a census of 6,000 programs (seeds 1-2), 51 had one and
    3 multiplied a 3-d tensor by a 2-d one, the linear layer `x @ w` of a batch, where
    thunder divides by zero for a size-0 dim (matmul-size-zero-batch-zero-division); 289 and
    22 with this draw. Run through thunder (seed 3, 900 s, with the arange draw and
    programs.crossed), that issue showed in 0 of 4,666 programs before, 7 of 4,308 after
    (and dtype-check-fails in 6 and 36, cause not looked into). 0 shrinks to the plain
    draw."""
    if "matmul" not in scope.ops or not _candidates("matmul", scope):
        return ()
    return ("matmul",) if draw(st.integers(0, 3), label="op.matmul") == 3 else ()


def blocks(scope: Scope, depth: int, kinds, allowed, max_size: int = 4, min_size: int = 1):
    # A list rather than a count and then that many statements: the shrinker can delete any
    # statement of a list (with its "one more?" choice), but of a count only the last ones.
    # The elements draw in order, each in the scope the ones before it left.
    # A crossing is two statements that the shrinker deletes together (or turns into one op).
    return st.lists(statements(scope, depth, kinds, allowed), min_size=min_size, max_size=max_size).map(
        lambda drawn: tuple(s for d in drawn for s in (d if isinstance(d, tuple) else (d,))))
