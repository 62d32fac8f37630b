"""The program strategy: inputs, an optional nn.Module, a body, returns and a seed."""

from __future__ import annotations

import itertools
from dataclasses import replace

from hypothesis import strategies as st

from conformance.generators.inputs import devices, parameters, tensor_inputs
from conformance.generators.scope import Names, Scope, is_temporary
from conformance.generators.statements import STATEMENT_KINDS, blocks, inplace_updates
from conformance.ops import ALIASES, FAMILIES, OPS, Meta
from conformance.program import (GRAD_ENABLED, REGION_KINDS, Assign, Call, GradRegion, IfGradEnabled, InPlace, Program,
                                 SetGradMode, reads, statements_in)

INPUT_NAMES = "abcd"


@st.composite
def swarm(draw, kinds: tuple[str, ...], label: str, always: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The kinds one program may use: each is switched off with probability 1/2.

    Swarm testing (Groce et al., ISSTA 2012; Hypothesis's stateful tests do the same with
    their rules): a bug that only shows where no other construct gets in first is found
    far sooner when some programs leave whole kinds out. Here `requires_grad_()` and
    `torch.ones(..., requires_grad=True)` make thunder raise before anything else can
    differ; with every kind in every program, the bugs behind them were hit once a night.
    Every kind stays reachable: a draw that leaves nothing but `always` keeps them all, and
    "off" shrinks to "on", towards the plain generator.
    """
    on = tuple(k for k in kinds if k in always or not draw(st.booleans(), label=f"{label}.off.{k}"))
    return on if any(k not in always for k in on) else kinds


@st.composite
def programs(
    draw,
    regions: tuple[str, ...] = REGION_KINDS,
    statements: tuple[str, ...] = STATEMENT_KINDS,
    modules: bool | str = True,
    max_depth: int = 3,
    max_statements: int = 4,
    device: str | None = None,
    families: tuple[str, ...] = tuple(FAMILIES),
) -> Program:
    """Well-typed programs using the given region kinds and statement kinds.

    modules: False (plain functions), True (sometimes an nn.Module) or "always".
    device: the device of creations and parameters; inputs draw theirs (mixed when CUDA exists).
    families: the op families (ops.FAMILIES) a program may draw from, before swarm testing.
    """
    device = device or draw(devices(), label="device")
    statements = draw(swarm(statements, "statements", always=("op",)))
    regions = draw(swarm(regions, "regions"))
    families = draw(swarm(families, "ops"))
    ops = tuple(op for op in OPS if any(op in FAMILIES[f] for f in families))
    n_inputs = draw(st.integers(1, 3), label="inputs")
    inputs = ()
    for name in INPUT_NAMES[:n_inputs]:
        inputs += (draw(tensor_inputs(name, earlier=inputs), label=f"input.{name}"),)
    params = ()
    if modules == "always" or (modules and draw(st.booleans(), label="module")):
        params = module_tensors(draw, device, inputs)
    env = {i.name: Meta.of(i) for i in inputs}
    env.update({f"self.{p.name}": Meta.of(p) for p in params})
    differentiable = frozenset(f"self.{p.name}" if p in params else p.name for p in inputs + params if p.requires_grad)
    scope = Scope(env, Names(), [], device, ops=ops, differentiable=differentiable)
    body = draw(blocks(scope, max_depth, regions, statements, max_size=max_statements))
    body += running_update(draw, scope, params)
    # Variables in the order they were made (inputs first), so that deleting a statement
    # after the returned variable while shrinking leaves the return pointing at it.
    returns = tuple(draw(st.lists(st.sampled_from(scope.variables()), min_size=1, max_size=3), label="returns"))
    # A function most often returns what it computed last; "no" shrinks to the plain draw.
    latest = scope.latest()
    if latest is not None and latest not in returns and draw(st.booleans(), label="returns.latest"):
        returns += (latest,)
    # A function that updates a tensor in place often returns it, and an update through an
    # alias (a view, a detach(), `a.double()` of a float64 `a`) is one of its base too: thunder
    # loses such an update of an input that requires grad where the input itself is returned
    # (reading it with an op, or the view, shows the new value). In a census of 6,000 programs
    # (seeds 1-2), 18 updated while grad was off an alias made while it was on of a tensor that
    # requires grad, and 2 of them returned that tensor. "No" shrinks to the plain draw.
    # Only what is bound here: a name bound in one branch of an `if` is unbound where the
    # backend takes the other (night 50's UnboundLocalError, in thunder alone).
    written = tuple(v for v in updated(body) if v in scope.env)
    if written and draw(st.booleans(), label="returns.updated"):
        returns += written  # duplicates go below, with dict.fromkeys
    # A value made on one side of a grad-mode boundary and read on the other (crossings) shows
    # what a backend tagged it with only where what was computed from it leaves the function.
    # Of 51 programs (of 3,000, seed 1) that made a view of a tensor that requires grad while
    # grad was off, run through thunder, none showed no-grad-view-requires-grad-dropped: most
    # returned something else (`return c`). With this draw, 2 of 89. Run through thunder
    # (seed 3, 900 s, with the matmul and arange draws of statements.py), 4 of 4,666 programs
    # showed that issue first before, 7 of 4,308 after. "No" shrinks to the plain draw.
    across = tuple(v for v in crossed(body) if v in scope.env)
    if across and draw(st.booleans(), label="returns.crossed"):
        returns += across
    # Every value the body computed is seen: "yes" also returns the temporaries that nothing
    # reads. A bug in what a region tags shows only where its value leaves the function (a
    # view made under no_grad, an op under enable_grad while grad is off). In a census of
    # 3,000 programs, 5 of the 6 that made such a view showed no mismatch, and the ones
    # looked at had computed the view and dropped it. "No" shrinks to the plain draw.
    if draw(st.booleans(), label="returns.unread"):
        read = set(reads(body))
        returns += tuple(v for v in scope.variables() if is_temporary(v) and v not in read and v not in returns)
    # A read of autograd state (`t0.requires_grad`) is seen where it is returned or branched on.
    if scope.flags and draw(st.booleans(), label="returns.reads"):
        returns += tuple(scope.flags)
    if draw(st.booleans(), label="return_is_grad_enabled"):
        returns += (GRAD_ENABLED,)
    seed = draw(st.integers(0, 2**16), label="seed")
    return Program(inputs, body, tuple(dict.fromkeys(returns)), tuple(scope.helpers), params, seed)


def module_tensors(draw, device: str, inputs: tuple) -> tuple:
    """One or two parameters, and half the time a buffer (BatchNorm's running statistics): a
    tensor of the module that does not require grad, updated in place under no_grad
    (running_update). "No" shrinks to none."""
    params = ()
    for i in range(draw(st.integers(1, 2), label="parameters")):
        params += (draw(parameters(f"w{i}", device, earlier=inputs + params)),)
    if draw(st.booleans(), label="buffer"):
        buffer = draw(parameters(f"w{len(params)}", device, earlier=inputs + params))
        params += (replace(buffer, requires_grad=False),)
    return params


def running_update(draw, scope: Scope, params: tuple) -> tuple:
    """`with torch.no_grad(): self.w1.mul_(t2)`, an update of a buffer by what the forward
    computed, as BatchNorm updates its running statistics; the buffer persists from call to
    call, so a compiled module must write it back every call. Half the modules with a buffer;
    "no" shrinks to none."""
    buffers = [f"self.{p.name}" for p in params if not p.requires_grad]
    if not buffers or not draw(st.booleans(), label="buffer.update"):
        return ()
    update = draw(inplace_updates(scope, target=draw(st.sampled_from(buffers), label="buffer.updated")))
    return (GradRegion("no_grad", (update,)),) if update is not None else ()


# The ops an update reaches the base through (ops.ALIASES), and flip, which copies: a base
# of a flip is returned as updated too, a value more (kept: the draws nights were measured on).
UPDATES_REACH = ALIASES | {"flip"}


def updated(body) -> tuple[str, ...]:
    """The variables the body updates in place, each followed by the bases of the aliases it
    was made as (`t0 = a.reshape(-1); t0.add_(b)` updates t0 and a)."""
    base = {s.target: s.value.args[0] for s in statements_in(body)
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in UPDATES_REACH}
    written: dict[str, None] = {}
    for s in statements_in(body):
        if isinstance(s, InPlace):
            v = s.target
            while v is not None and v not in written:
                written[v] = None
                v = base.get(v)
    return tuple(written)


def crossed(body) -> tuple[str, ...]:
    """The values an op computed from a temporary made under another grad mode than its own:
    `with torch.no_grad(): t0 = a.reshape(-1)` then `t1 = t0 * 2` gives t1, and so does
    `t0 = a * 2` then `with torch.enable_grad(): t1 = t0.sum()`. A mode is where a statement
    stands: in which region, after which plain set_grad_enabled call (the mode they set is
    not known here, only that it may differ)."""
    made: dict[str, int] = {}
    found: dict[str, None] = {}
    fresh = itertools.count(1)

    def walk(block, mode: int) -> int:
        for s in block:
            if isinstance(s, GradRegion):
                walk(s.body, next(fresh))
            elif isinstance(s, SetGradMode):
                mode = next(fresh)
            elif isinstance(s, IfGradEnabled):
                mode = max(walk(s.then, mode), walk(s.orelse, mode))
            elif isinstance(s, Assign):
                args = getattr(s.value, "args", ())
                if any(made.get(a, mode) != mode for a in args if is_temporary(a)):
                    found[s.target] = None
                made[s.target] = mode
        return mode

    walk(body, 0)
    return tuple(found)
