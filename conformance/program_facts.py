"""Facts of a program's structure that a signature's set of constructs cannot tell: whether an
update ran where grad was off, or after a region's exit, or through an alias. A known issue
names the facts every program of it has (known_issues.toml `needs`), so that one signature
shown by two bugs goes to the right one."""

from __future__ import annotations

from conformance.ops import ALIASES
from conformance.program import (Assign, Call, GradRegion, HelperCall, IfGradEnabled, InPlace, Program, SetGradMode,
                                 statements_in)


def _statements(program: Program):
    """The statements of the function and of the helpers it calls, nested ones included."""
    return statements_in(program.body + tuple(t for h in program.helpers for t in h.body))


def updates_while_grad_off(program: Program) -> bool:
    """Whether the function updates a tensor in place where grad is off: in a no_grad,
    set_grad_enabled(False) or inference_mode region (or a `@torch.no_grad()` helper), or
    after a plain grad-off call before it; or where it leaves the caller's mode as it is, in
    a function that turns grad on elsewhere (`with torch.enable_grad(): t0 = op(w)` and then
    `t0.sub_(b)`, called under no_grad). A signature lists constructs as a set: `inplace
    torch.set_grad_enabled(False)` is also `b.sub_(a)` before the call, an update with grad on."""
    helpers = {h.name: h for h in program.helpers}
    enables = any(h.decorator == "enable_grad" for h in program.helpers) or any(
        _mode_of(s) == "on" for s in _statements(program))

    def walk(block, mode: str) -> tuple[str, bool]:
        """(the mode after the block, whether it updates where grad is off); mode is "on",
        "off", or "caller" (as the caller left it)."""
        found = False
        for s in block:
            if isinstance(s, GradRegion):  # its exit restores the mode it was entered in
                found |= walk(s.body, _mode_of(s))[1]
            elif isinstance(s, SetGradMode):
                mode = _mode_of(s)
            elif isinstance(s, IfGradEnabled):
                (then, a), (orelse, b) = walk(s.then, mode), walk(s.orelse, mode)
                found |= a or b
                mode = then if then == orelse else "caller"
            elif isinstance(s, InPlace):
                found |= mode == "off" or (mode == "caller" and enables)
            elif isinstance(s, Assign) and isinstance(s.value, HelperCall) and s.value.helper in helpers:
                helper = helpers[s.value.helper]
                found |= walk(helper.body, "on" if helper.decorator == "enable_grad" else "off")[1]
        return mode, found

    return walk(program.body, "caller")[1]


def _mode_of(s) -> str | None:
    """The grad mode a region or a plain call sets ("on" or "off"); None for other statements."""
    if isinstance(s, GradRegion):
        return "on" if s.kind == "enable_grad" or (s.kind == "set_grad_enabled" and s.enabled) else "off"
    if isinstance(s, SetGradMode):
        return "on" if s.enabled else "off"
    return None


def multiplies_a_computed_value_in_place(program: Program) -> bool:
    """Whether the function (or a helper) calls `t.mul_(x)` on a value it computed (bound by
    an assignment), not on an input or a parameter: its signature, `gradients.value | ... @
    inplace`, is also that of an input's update losing its graph."""
    statements = list(_statements(program))
    computed = {s.target for s in statements if isinstance(s, Assign)}
    return any(isinstance(s, InPlace) and s.method == "mul_" and s.target in computed for s in statements)


def updates_through_an_alias(program: Program) -> bool:
    """Whether the function (or a helper) updates in place a value bound to an alias op's
    result (`t1 = t0.unsqueeze(0)`, then `t1.add_(b)`): such an update is also its base's,
    and its signature, `outputs.value | ... @ inplace`, is that of empty inputs' aliasing."""
    statements = list(_statements(program))
    aliases = {s.target for s in statements if isinstance(s, Assign) and isinstance(s.value, Call)
               and s.value.op in ALIASES}
    return any(isinstance(s, InPlace) and s.target in aliases for s in statements)


def has_a_size_zero_input(program: Program) -> bool:
    """Whether an input or a parameter has a size-0 dim: thunder takes two such tensors for
    aliases, whose signatures (`outputs.value | ... @ inplace module`) other bugs share."""
    return any(0 in t.shape for t in program.inputs + program.parameters)


def enters_a_region_where_the_function_set_the_mode(program: Program) -> bool:
    """Whether a grad-mode region or a decorated helper is entered where the function, not the
    caller, set the mode: inside another region or helper, or after a plain
    `torch.set_grad_enabled(b)`. Its exit must restore the mode the function set; a backend
    that restores the caller's mode there (or reads the caller's with
    `torch.is_grad_enabled()`) shows it only in such programs."""
    helpers = {h.name: h for h in program.helpers}

    def walk(block, mode: str) -> tuple[str, bool]:
        found = False
        for s in block:
            if isinstance(s, GradRegion):
                found |= mode != "caller" or walk(s.body, _mode_of(s))[1]
            elif isinstance(s, SetGradMode):
                mode = _mode_of(s)
            elif isinstance(s, IfGradEnabled):
                (then, a), (orelse, b) = walk(s.then, mode), walk(s.orelse, mode)
                found |= a or b
                mode = then if then == orelse else "caller"
            elif isinstance(s, Assign) and isinstance(s.value, HelperCall) and s.value.helper in helpers:
                helper = helpers[s.value.helper]  # decorated: its exit restores the mode it was called in
                found |= mode != "caller" or walk(helper.body, "on" if helper.decorator == "enable_grad" else "off")[1]
        return mode, found

    return walk(program.body, "caller")[1]


# The facts known_issues.toml may name (`needs`), by the name it uses.
FACTS = {"an update while grad is off": updates_while_grad_off,
         "a region entered where the function set the mode": enters_a_region_where_the_function_set_the_mode,
         "a computed value multiplied in place": multiplies_a_computed_value_in_place,
         "an update through an alias": updates_through_an_alias,
         "a size-0 input": has_a_size_zero_input}
