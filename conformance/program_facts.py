"""Facts of a program that a signature's set of constructs cannot tell: where grad was off when
an update or a view ran, whether a region was entered in a mode the function had changed,
whether an update went through an alias. A known issue names the facts every program of it has
(known_issues.toml `needs`), so that one symptom shown by two bugs goes to the right one, and a
new bug with a known bug's symptom is not taken for it.

Grad-mode facts follow eager PyTorch through the program for the ambient mode of the call that
differed: which branch `torch.is_grad_enabled()` takes, what each region's exit restores. Where
the ambient mode is not known, a fact holds if it holds under one of AMBIENT_MODES.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterator

from conformance.grad_mode import AMBIENT_GRAD_ENABLED, AMBIENT_MODES
from conformance.ops import ALIASES, AUTOCAST_OPS, VIEWS
from conformance.program import (GRAD_ENABLED, Assign, Call, Create, GradRegion, HelperCall, IfGradEnabled, InPlace,
                                 Program, RequiresGrad, SetGradMode, statements_in)

# Ops whose result is a view of their input, which eager gives requires_grad where the input has
# it even under no_grad (a copy made there does not require grad).


@dataclass(frozen=True)
class Mode:
    grad: bool  # torch.is_grad_enabled()
    inference: bool = False
    # The outermost enabled autocast region in effect (its id; 0: autocast off): its cache of cast
    # leaves lives until that region exits.
    autocast: int = 0


@dataclass(frozen=True)
class Step:
    """A statement as eager runs it: the mode in effect, and the caller's (the ambient mode)."""

    statement: object
    mode: Mode
    caller: Mode


def run_order(program: Program, ambient: str) -> Iterator[Step]:
    """The statements eager runs, in order, with the mode each runs in: regions and decorated
    helpers restore on exit the mode they were entered in; a plain call sets it until changed;
    `if torch.is_grad_enabled()` takes the branch the mode gives. The function's end is a Step
    whose statement is None."""
    caller = Mode(AMBIENT_GRAD_ENABLED[ambient], ambient == "inference_mode")
    helpers = {h.name: h for h in program.helpers}

    def walk(block, mode: Mode):
        for s in block:
            yield Step(s, mode, caller)
            if isinstance(s, GradRegion) and s.kind == "autocast":
                inside = replace(mode, autocast=(mode.autocast or id(s)) if s.enabled else 0)
                end = yield from walk(s.body, inside)
                mode = replace(end, autocast=mode.autocast)  # autocast restores its own state, not grad mode
            elif isinstance(s, GradRegion):
                yield from walk(s.body, _entered(s, mode))
            elif isinstance(s, SetGradMode):
                mode = replace(mode, grad=s.enabled)
            elif isinstance(s, IfGradEnabled):
                mode = yield from walk(s.then if mode.grad else s.orelse, mode)
            elif isinstance(s, Assign) and isinstance(s.value, HelperCall) and s.value.helper in helpers:
                helper = helpers[s.value.helper]
                if helper.is_function:  # a forward runs with grad off
                    yield from walk(helper.body, replace(mode, grad=False))
                else:  # as the region it is (`@torch.no_grad()` is `with torch.no_grad():` around the body)
                    mode = yield from walk((helper.region(helper.body),), mode)
        return mode

    end = yield from walk(program.body, caller)
    yield Step(None, end, caller)


def _entered(region: GradRegion, mode: Mode) -> Mode:
    if region.kind == "inference_mode":
        return replace(mode, grad=False, inference=True)
    return replace(mode, grad=region.kind == "enable_grad" or (region.kind == "set_grad_enabled" and region.enabled))


def _under_some_ambient(fact: Callable[[Program, str], bool]) -> Callable[[Program, str | None], bool]:
    def holds(program: Program, ambient: str | None = None) -> bool:
        return any(fact(program, a) for a in ([ambient] if ambient else AMBIENT_MODES))

    holds.__doc__, holds.__name__ = fact.__doc__, fact.__name__
    return holds


@_under_some_ambient
def updates_while_grad_off(program: Program, ambient: str) -> bool:
    """Whether eager updates a tensor in place where grad is off."""
    return any(isinstance(s.statement, InPlace) and not s.mode.grad for s in run_order(program, ambient))


@_under_some_ambient
def updates_while_grad_on(program: Program, ambient: str) -> bool:
    """Whether eager updates a tensor in place where grad is on."""
    return any(isinstance(s.statement, InPlace) and s.mode.grad for s in run_order(program, ambient))


@_under_some_ambient
def makes_a_view_while_grad_off(program: Program, ambient: str) -> bool:
    """Whether eager makes a view (reshape, transpose, a slice, unsqueeze, one of chunk's,
    split's or unbind's) where grad is off."""
    return any(isinstance(s.statement, Assign) and isinstance(s.statement.value, Call)
               and s.statement.value.op in VIEWS and not s.mode.grad for s in run_order(program, ambient))


@_under_some_ambient
def grad_is_on_somewhere(program: Program, ambient: str) -> bool:
    """Whether grad is on at the call or at some statement eager runs."""
    return any(s.mode.grad for s in run_order(program, ambient))


@_under_some_ambient
def makes_a_value_in_inference_mode(program: Program, ambient: str) -> bool:
    """Whether eager computes or updates a value in inference mode (an inference_mode region, or
    any statement under the caller's inference_mode): nothing is recorded there, even where grad
    is on, and a view of a normal tensor made there has no grad_fn (torch.inference_mode docs)."""
    return any(isinstance(s.statement, (Assign, InPlace)) and s.mode.inference for s in run_order(program, ambient))


def grad_is_off_throughout(program: Program, ambient: str | None = None) -> bool:
    """Whether grad is off at the call and at every statement eager runs (under the ambient
    mode given, or under one of them)."""
    return any(not grad_is_on_somewhere(program, a) for a in ([ambient] if ambient else AMBIENT_MODES))


@_under_some_ambient
def reads_or_restores_a_mode_the_function_changed(program: Program, ambient: str) -> bool:
    """Whether the function enters a region or a decorated helper, branches on
    `torch.is_grad_enabled()`, or returns it, where the mode differs from the caller's: the
    exit must restore, and the read must give, the mode the function set, not the caller's."""
    for s in run_order(program, ambient):
        reads = isinstance(s.statement, (GradRegion, IfGradEnabled)) or (
            isinstance(s.statement, Assign) and isinstance(s.statement.value, HelperCall)) or (
            s.statement is None and GRAD_ENABLED in program.returns)
        if reads and s.mode.grad != s.caller.grad:
            return True
    return False


def _statements(program: Program):
    """The statements of the function and of the helpers it calls, nested ones included."""
    return statements_in(program.body + tuple(t for h in program.helpers for t in h.body))


def multiplies_a_computed_value_in_place(program: Program, ambient: str | None = None) -> bool:
    """Whether the function (or a helper) calls `t.mul_(x)` on a value it computed (bound by
    an assignment), not on an input or a parameter: its signature, `gradients.value | ... @
    inplace`, is also that of an input's update losing its graph."""
    statements = list(_statements(program))
    computed = {s.target for s in statements if isinstance(s, Assign)}
    return any(isinstance(s, InPlace) and s.method == "mul_" and s.target in computed for s in statements)


def updates_through_an_alias(program: Program, ambient: str | None = None) -> bool:
    """Whether the function (or a helper) updates in place a value bound to an alias op's
    result (`t1 = t0.unsqueeze(0)`, then `t1.add_(b)`): such an update is also its base's,
    and its signature, `outputs.value | ... @ inplace`, is that of empty inputs' aliasing."""
    statements = list(_statements(program))
    aliases = {s.target for s in statements if isinstance(s, Assign) and isinstance(s.value, Call)
               and s.value.op in ALIASES}
    return any(isinstance(s, InPlace) and s.target in aliases for s in statements)


def has_a_size_zero_input(program: Program, ambient: str | None = None) -> bool:
    """Whether an input or a parameter has a size-0 dim: thunder takes two such tensors for
    aliases, whose signatures (`outputs.value | ... @ inplace module`) other bugs share."""
    return any(0 in t.shape for t in program.inputs + program.parameters)


def makes_an_empty_arange(program: Program, ambient: str | None = None) -> bool:
    """Whether the function (or a helper) calls `torch.arange(0.0)`."""
    return any(isinstance(s, Assign) and isinstance(s.value, Create) and s.value.op == "arange"
               and s.value.shape == (0,) for s in _statements(program))


def a_function_returns_its_input(program: Program, ambient: str | None = None) -> bool:
    """Whether a torch.autograd.Function's forward returns one of its inputs as it is."""
    return any(h.is_function and h.result in h.params for h in program.helpers)


@_under_some_ambient
def applies_a_function_returning_its_input_with_grad_off(program: Program, ambient: str) -> bool:
    """Whether eager applies a torch.autograd.Function whose forward returns an input as it is
    where grad is off (nothing is recorded: its result is a new view that does not require grad)."""
    returning = {h.name for h in program.helpers if h.is_function and h.result in h.params}
    return any(isinstance(s.statement, Assign) and isinstance(s.statement.value, HelperCall)
               and s.statement.value.helper in returning and not s.mode.grad for s in run_order(program, ambient))


def gives_a_function_one_tensor_twice(program: Program, ambient: str | None = None) -> bool:
    """Whether a torch.autograd.Function is called with one variable for two arguments."""
    functions = program.functions
    return any(isinstance(s, Assign) and isinstance(s.value, HelperCall) and s.value.helper in functions
               and len(set(s.value.args)) < len(s.value.args) for s in statements_in(program.body))


def sets_grad_mode_in_a_forward(program: Program, ambient: str | None = None) -> bool:
    """Whether a torch.autograd.Function's forward calls torch.set_grad_enabled (or
    torch._C._set_grad_enabled) outside a region: eager restores the caller's mode when the
    forward returns."""
    return any(h.is_function and any(isinstance(s, SetGradMode) for s in h.body) for h in program.helpers)


def updates_a_zero_dim_double_input(program: Program, ambient: str | None = None) -> bool:
    """Whether the function updates in place a 0-d float64 input or parameter (torch.compile
    drops such an update), itself or through a value that is it: a view or `detach` of it, or
    what a decorated helper returns when it returns the parameter it was given it as; or a
    decorated helper given it updates its parameter."""
    names = {t.name for t in program.inputs if t.shape == () and t.dtype == "float64"}
    names |= {f"self.{t.name}" for t in program.parameters if t.shape == () and t.dtype == "float64"}
    helpers = {h.name: h for h in program.helpers if not h.is_function}
    for s in statements_in(program.body):
        if isinstance(s, InPlace) and s.target in names:
            return True
        if isinstance(s, Assign) and isinstance(s.value, HelperCall) and s.value.helper in helpers:
            helper = helpers[s.value.helper]  # a decorated helper that updates its parameter updates the input
            given = {p for p, a in zip(helper.params, s.value.args) if a in names}
            if any(isinstance(t, InPlace) and t.target in given for t in statements_in(helper.body)):
                return True
        if isinstance(s, Assign) and _same_tensor_as(s.value, helpers) in names:
            names.add(s.target)
    return False


def _same_tensor_as(value, helpers: dict) -> str | None:
    """The variable a value is (storage and all), where it is one: a view or `detach` of it, or
    a decorated helper's result that is the parameter given it."""
    if isinstance(value, Call) and value.op in VIEWS | {"detach"}:
        return value.args[0]
    if isinstance(value, HelperCall) and value.helper in helpers:
        helper = helpers[value.helper]
        if helper.result in helper.params:
            return value.args[helper.params.index(helper.result)]
    return None


@_under_some_ambient
def casts_a_leaf_for_autocast_without_grad_then_with_grad(program: Program, ambient: str) -> bool:
    """Whether, within one autocast region, a product reads an input or parameter while grad is
    off and again while it is on: eager's autocast caches the first cast, which has no history
    (pytorch/pytorch#112583; fixed after torch 2.9), so the second product does not require grad."""
    leaves = {t.name for t in program.inputs} | {f"self.{t.name}" for t in program.parameters}
    cast_without_grad = set()
    for s in run_order(program, ambient):
        value = getattr(s.statement, "value", None)
        if not (isinstance(value, Call) and value.op in AUTOCAST_OPS and s.mode.autocast):
            continue
        for leaf in set(value.args) & leaves:
            if not s.mode.grad:
                cast_without_grad.add((s.mode.autocast, leaf))
            elif (s.mode.autocast, leaf) in cast_without_grad:
                return True
    return False


def updates_a_zero_dim_double_after_a_graph_break(program: Program, ambient: str | None = None) -> bool:
    """Whether a 0-d float64 value is updated in place after a `requires_grad_()` call, where
    Dynamo breaks the graph: the value is then an input of the graph that resumes."""
    from conformance.ops import Meta, infer

    env = {t.name: Meta(t.shape, t.dtype, t.device) for t in program.inputs}
    broken = False
    for s in statements_in(program.body):
        if isinstance(s, RequiresGrad):
            broken = True
        elif isinstance(s, Assign) and isinstance(s.value, Call) and all(a in env for a in s.value.args):
            if (meta := infer(s.value.op, tuple(env[a] for a in s.value.args))) is not None:
                env[s.target] = meta
        elif broken and isinstance(s, InPlace) and s.target in env:
            if env[s.target].shape == () and env[s.target].dtype == "float64":
                return True
    return False


# The facts known_issues.toml may name (`needs`), by the name it uses: fact(program, ambient).
FACTS = {"an update while grad is off": updates_while_grad_off,
         "an update while grad is on": updates_while_grad_on,
         "a view made while grad is off": makes_a_view_while_grad_off,
         "grad on somewhere in the call": grad_is_on_somewhere,
         "grad off throughout the call": grad_is_off_throughout,
         "a value made in inference mode": makes_a_value_in_inference_mode,
         "grad mode read or restored where the function changed it": reads_or_restores_a_mode_the_function_changed,
         "a computed value multiplied in place": multiplies_a_computed_value_in_place,
         "an update through an alias": updates_through_an_alias,
         "a size-0 input": has_a_size_zero_input,
         "an empty torch.arange": makes_an_empty_arange,
         "a Function that returns its input": a_function_returns_its_input,
         "a Function that returns its input, applied with grad off": applies_a_function_returning_its_input_with_grad_off,
         "a Function given one tensor twice": gives_a_function_one_tensor_twice,
         "a plain grad-mode call in a Function's forward": sets_grad_mode_in_a_forward,
         "an update of a 0-d float64 input": updates_a_zero_dim_double_input,
         "an update of a 0-d float64 value after a graph break": updates_a_zero_dim_double_after_a_graph_break,
         "a leaf cast for autocast without grad, then with grad": casts_a_leaf_for_autocast_without_grad_then_with_grad}
