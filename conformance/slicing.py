"""The part of a program a mismatch can come from: a backward slice of the program (Weiser,
"Program Slicing", ICSE 1981) from the value that differs.

A random program computes much that its mismatch does not read: an output that differs in its
`requires_grad` depends on the statements that made it and what updated it in place, not on
a region three statements away that fed another output. The night asks whether a hit of a
settled class has what some recorded repro of the class has (night.settled); asked of the whole
program, that is true of most random programs that hold many constructs, and a second bug
behind the class is never looked at. Asked of the slice, it is true where the differing value
could come from the recorded bug.

The slice over-approximates, as it must to be safe: every view, `detach` and helper call
aliases its result with its arguments (an update through one writes the other); a plain
`set_grad_enabled` call is kept where anything kept follows it; an exception, a grad-mode, a
recompile or a trace mismatch keeps the whole program, and a gradient keeps what any return
depends on.
"""

from __future__ import annotations

from dataclasses import replace

from conformance.ops import VIEWS
from conformance.oracles.mismatch import Mismatch
from conformance.program import (Assign, Call, Grad, GradRegion, HelperCall, IfGradEnabled, InPlace, Program, Read,
                                 RequiresGrad, SetGradMode, Statement, statements_in, without_uncalled_helpers)

# What the slice of each oracle starts from: the differing leaf, or every return.
_LEAF_ORACLES = ("flags", "outputs")
_RETURN_ORACLES = ("gradients",)


def relevant(program: Program, m: Mismatch) -> Program:
    """`program` without the statements the value `m` compares cannot depend on."""
    roots = _roots(program, m)
    if roots is None:
        return program
    aliases = _aliases(program.body)
    needed = set().union(*(aliases.get(r, {r}) for r in roots)) if roots else set()
    return without_uncalled_helpers(replace(program, body=_slice(program.body, needed, aliases)))


def live(program: Program) -> Program:
    """`program` without its dead statements: those whose values nothing a user observes reads
    (returns, inputs and parameters, updated in place through any alias), in the function and
    in each helper it still calls (there: its result and its parameters). What a backend that
    declares DEAD_CODE_REMOVED may skip; every grad-mode change stays, as grad mode after the
    call is observed."""
    roots = {r for r in program.returns if r.isidentifier()}
    roots |= {i.name for i in program.inputs} | {f"self.{p.name}" for p in program.parameters}
    called = without_uncalled_helpers(replace(program, body=_live_block(program.body, roots)))
    return replace(called, helpers=tuple(replace(h, body=_live_block(h.body, {h.result, *h.params}))
                                         for h in called.helpers))


def dead_code_reference(program: Program, ambients: tuple[str, ...]) -> Program:
    """What eager must run to be the reference of a backend that removes dead code
    (DEAD_CODE_REMOVED), called under `ambients`: the live part of the branches it takes."""
    return live(taken(program, ambients))


def taken(program: Program, ambients: tuple[str, ...]) -> Program:
    """`program` with each `if torch.is_grad_enabled():` that eager takes the same way in every
    call (`ambients`: the calls' ambient modes) replaced by the branch it takes. Dynamo
    specializes a function on grad mode: a value read only in the branch not taken is dead in
    what it compiles, so it is not kept alive for `live` by that branch either."""
    from conformance.program_facts import run_order

    if any(isinstance(s, IfGradEnabled) and s.condition
           for block in (program.body, *(h.body for h in program.helpers)) for s in statements_in(block)):
        return program  # run_order follows grad mode, not a Read's value: which way those go is unknown here
    ways: dict[int, set[bool]] = {}
    for ambient in set(ambients):
        for step in run_order(program, ambient):
            if isinstance(step.statement, IfGradEnabled) and not step.statement.condition:
                ways.setdefault(id(step.statement), set()).add(step.mode.grad)

    def block(statements: tuple[Statement, ...]) -> tuple[Statement, ...]:
        out: list[Statement] = []
        for s in statements:
            if isinstance(s, IfGradEnabled) and len(ways.get(id(s), ())) == 1:
                out += block(s.then if ways[id(s)] == {True} else s.orelse)
            elif isinstance(s, IfGradEnabled):
                out.append(replace(s, then=block(s.then), orelse=block(s.orelse)))
            elif isinstance(s, GradRegion):
                out.append(replace(s, body=block(s.body)))
            else:
                out.append(s)
        return tuple(out)

    return replace(program, body=block(program.body), helpers=tuple(replace(h, body=block(h.body))
                                                                     for h in program.helpers))


def _live_block(block: tuple[Statement, ...], roots: set[str]) -> tuple[Statement, ...]:
    aliases = _aliases(block)
    needed = set().union(*(aliases.get(r, {r}) for r in roots))
    return _slice(block, needed, aliases, keep_modes=True)


def _roots(program: Program, m: Mismatch) -> set[str] | None:
    """The names the compared value is read from; None: it may depend on anything."""
    names = {r for r in program.returns if r.isidentifier()}
    if m.oracle in _RETURN_ORACLES:
        return names
    if m.oracle not in _LEAF_ORACLES:
        return None
    if m.where.startswith("return["):
        if m.returned is not None and m.returned < len(program.returns):
            r = program.returns[m.returned]
            return {r} if r.isidentifier() else set()
        return None
    if m.where.endswith(" after call"):  # an input or parameter, read after the call
        return {m.where[: -len(" after call")]}
    return None


def _aliases(block: tuple[Statement, ...]) -> dict[str, set[str]]:
    """Each name's alias group: names joined by a view, a detach or a helper call."""
    group: dict[str, set[str]] = {}

    def join(a: str, b: str) -> None:
        ga, gb = group.setdefault(a, {a}), group.setdefault(b, {b})
        if ga is not gb:
            ga |= gb
            for n in gb:
                group[n] = ga

    for s in statements_in(block):
        if isinstance(s, Assign):
            v = s.value
            if (isinstance(v, Call) and (v.op in VIEWS or v.op == "detach")) or isinstance(v, HelperCall):
                for a in v.args:
                    join(s.target, a)
    return group


def _reads(s: Statement) -> set[str]:
    if isinstance(s, Assign):
        v = s.value
        return set(v.args) if isinstance(v, (Call, HelperCall, Read, Grad)) else set()
    if isinstance(s, InPlace):
        return set(s.reads)
    if isinstance(s, RequiresGrad):
        return {s.target}
    return set()


def _writes(s: Statement) -> str | None:
    if isinstance(s, Assign):
        return s.target
    if isinstance(s, (InPlace, RequiresGrad)):
        return s.target
    return None


def _slice(block: tuple[Statement, ...], needed: set[str], aliases: dict[str, set[str]],
           keep_modes: bool = False) -> tuple[Statement, ...]:
    """The statements of `block` that write what `needed` holds (updated in place as the walk
    goes back), with the regions and branches around them; every plain grad-mode change too
    where `keep_modes`, else those that something kept follows."""
    kept: list[Statement] = []
    for s in reversed(block):
        if isinstance(s, GradRegion):
            body = _slice(s.body, needed, aliases, keep_modes)
            if body:
                kept.append(replace(s, body=body))
        elif isinstance(s, IfGradEnabled):
            then_needed, else_needed = set(needed), set(needed)
            then = _slice(s.then, then_needed, aliases, keep_modes)
            orelse = _slice(s.orelse, else_needed, aliases, keep_modes)
            if then or orelse:
                needed |= then_needed | else_needed
                if s.condition:
                    needed |= aliases.get(s.condition, {s.condition})
                if keep_modes:  # a branch left empty renders as `pass`: nothing it read is kept
                    kept.append(replace(s, then=then, orelse=orelse))
                else:
                    kept.append(replace(s, then=then or s.then, orelse=orelse or s.orelse))
        elif isinstance(s, SetGradMode):
            if kept or keep_modes:
                kept.append(s)
        else:
            target = _writes(s)
            if target is not None and target in needed:
                for r in _reads(s):
                    needed |= aliases.get(r, {r})
                kept.append(s)
    return tuple(reversed(kept))
