"""Reduction: the last pass of shrinking, made on the Program itself.

Hypothesis shrinks the choices a program was drawn from, and does most of the work. Some
edits a person would make first are not small changes of those choices, though: deleting
the unused `t0 = torch.ones(())` renumbers every later temporary and shifts the index each
later argument was drawn by, so the shrinker sees another program and keeps the statement.
Nightly repros were left at 8-9 statements that way, with two or three dead lines each.

So once Hypothesis is done, the same kind of edits are made on the Program directly, as
delta debugging does (C-Reduce for C): drop a call of the schedule, a returned value, a
statement, a region or an `if` around its body, an unused helper, input or parameter; point
an argument or a returned value at an input instead of a temporary; inline a decorated helper
as a region; make an input plainer.
A candidate is kept when it is smaller and still shows the same class of mismatch (the
caller's predicate); the passes repeat until none applies or the budget is spent. Names are renumbered at the end
(a, b, ...; t0, t1, ... in the order they appear), for the reader.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from conformance.generators.schedules import Schedule
from conformance.program import (
    GRAD_ENABLED,
    Assign,
    Call,
    Grad,
    GradRegion,
    Helper,
    HelperCall,
    IfGradEnabled,
    InPlace,
    Program,
    Read,
    RequiresGrad,
    SetGradMode,
    Statement,
    count_statements,
    reads,
    statements_in,
    without_uncalled_helpers,
)

Example = tuple[Program, Schedule]
INPUT_NAMES = "abcd"


@dataclass
class Reduction:
    program: Program
    schedule: Schedule
    result: object  # what `still_fails` returned for them
    tried: int  # candidates run
    kept: int  # candidates kept


def reduce(program: Program, schedule: Schedule, still_fails: Callable[[Program, Schedule], object],
           max_tries: int | None = None, seconds: float | None = None, result: object = None) -> Reduction:
    """The smallest example found from (program, schedule) for which `still_fails` is truthy.

    `still_fails` runs a candidate and returns its evidence (a check.Result) when the
    candidate shows the mismatch being reduced, else None. `result` is that evidence for the
    example given, if the caller has it. At most `max_tries` candidates are run, and none
    after `seconds`: a budget in tries gives the same result on any machine.
    """
    start = time.perf_counter()
    best: Example = (program, schedule)
    tried = kept = 0

    def spent() -> bool:
        return (max_tries is not None and tried >= max_tries) or (
            seconds is not None and time.perf_counter() - start >= seconds)

    # As C-Reduce does, a pass goes on from where its last kept edit was (the edit now there is
    # the next one) instead of starting over: the edits before it failed on a bigger example
    # and are tried again by the next pass only. Starting over after each kept edit ran each
    # failing edit once per kept one: 92 runs where 4 calls and 10 statements came down to 2
    # and 4.
    resume, progress = 0, True
    while progress and not spent():
        progress = False
        eligible = (c for c in candidates(*best) if size(*c) < size(*best) and well_scoped(c[0]))
        for i, candidate in enumerate(eligible):
            if i < resume:
                continue
            if spent():
                break
            tried += 1
            evidence = still_fails(*candidate)
            if evidence:
                best, result, kept, progress, resume = candidate, evidence, kept + 1, True, i
                break
        else:  # the pass reached the end: the next one starts at the first edit
            if resume:
                resume, progress = 0, True
    renamed = (canonical_names(best[0]), best[1])
    if renamed[0] != best[0]:  # one run more, past the budget too: a repro is read by people
        tried += 1
        evidence = still_fails(*renamed)
        if evidence:
            best, result = renamed, evidence
    if result is None:
        result = still_fails(*best)
    return Reduction(best[0], best[1], result, tried, kept)


def size(program: Program, schedule: Schedule) -> tuple:
    """What "smaller" means, most important first: a candidate is kept only if this drops,
    so the passes end. Pointing an argument at an input instead of a temporary counts as
    smaller: it leaves the temporary unused, for the next pass to delete."""
    temps = sum(1 for name in _uses(program) if not _is_input_or_parameter(name, program))
    plain_inputs = sum(int(i.requires_grad) + int(i.dtype != "float32") + len(i.shape) + sum(i.shape)
                       + int(bool(i.special)) for i in program.inputs + program.parameters)
    plain_calls = sum(int(c.ambient != "grad") + int(bool(c.requires_grad)) + int(c.autocast) + int(c.step)
                      + int(not c.training) + int(not c.zero_grad) for c in schedule)
    return (count_statements(program), len(program.helpers),
            sum(int(h.is_function) + int(h.non_differentiable) for h in program.helpers), len(schedule), len(program.inputs),
            len(program.parameters), len(program.returns), temps, plain_inputs, plain_calls,
            int(program.seed != 0))


# ------------------------------------------------------------------------- candidates


def candidates(program: Program, schedule: Schedule) -> Iterator[Example]:
    """Examples one edit away, biggest edits first."""
    for i in range(len(schedule)):
        if len(schedule) > 1:
            yield program, schedule[:i] + schedule[i + 1:]
    # The caller's extras of a call (its autocast, step, eval mode, gradients kept) all at once,
    # early: a signature names them, and a budget spent before the one-flag edits below left
    # them on a known issue's repro (reported new on a 10-minute thunder night).
    for i, c in enumerate(schedule):
        plain = replace(c, autocast=False, step=False, training=True, zero_grad=True)
        if plain != c:
            yield program, schedule[:i] + (plain,) + schedule[i + 1:]
    for i in range(len(program.returns)):
        if len(program.returns) > 1:
            yield replace(program, returns=program.returns[:i] + program.returns[i + 1:]), schedule
    for body in _block_edits(program.body):
        yield without_uncalled_helpers(replace(program, body=body)), schedule
    helpers = {h.name: h for h in program.helpers}
    for body in _inlined(program.body, helpers):
        yield without_uncalled_helpers(replace(program, body=body)), schedule
    for k, h in enumerate(program.helpers):
        for body in _block_edits(h.body):
            yield _with_helper(program, k, replace(h, body=body)), schedule
        for p in h.params:
            if p != h.result:
                yield _with_helper(program, k, replace(h, result=p)), schedule
        if h.non_differentiable:
            yield _with_helper(program, k, replace(h, non_differentiable=False)), schedule
        if h.is_function:  # without its backward
            yield _with_helper(program, k, replace(h, decorator="no_grad", non_differentiable=False)), schedule
    yield from _fewer_inputs(program, schedule)
    for i, p in enumerate(program.parameters):
        yield replace(program, parameters=program.parameters[:i] + program.parameters[i + 1:]), schedule
    simpler = [i.name for i in program.inputs] + [f"self.{p.name}" for p in program.parameters]
    for body in _argument_edits(program.body, simpler):
        yield replace(program, body=body), schedule
    for i, r in enumerate(program.returns):
        if r != GRAD_ENABLED and r not in simpler:
            for name in simpler:
                returns = program.returns[:i] + (name,) + program.returns[i + 1:]
                yield replace(program, returns=tuple(dict.fromkeys(returns))), schedule
    for i, inp in enumerate(program.inputs):
        for plainer in (replace(inp, requires_grad=False), replace(inp, dtype="float32"), replace(inp, shape=()),
                        replace(inp, special="")):
            if plainer != inp:
                yield replace(program, inputs=program.inputs[:i] + (plainer,) + program.inputs[i + 1:]), schedule
    for i, w in enumerate(program.parameters):  # a parameter stays a float that requires grad
        for plainer in (replace(w, dtype="float32"), replace(w, shape=()), replace(w, special="")):
            if plainer != w:
                parameters = program.parameters[:i] + (plainer,) + program.parameters[i + 1:]
                yield replace(program, parameters=parameters), schedule
    for i, c in enumerate(schedule):
        for plainer in (replace(c, ambient="grad"), replace(c, requires_grad=()), replace(c, autocast=False),
                        replace(c, step=False), replace(c, training=True),
                        replace(c, zero_grad=True)):
            if plainer != c:
                yield program, schedule[:i] + (plainer,) + schedule[i + 1:]
    if program.seed != 0:
        yield replace(program, seed=0), schedule


def _block_edits(block: tuple[Statement, ...]) -> Iterator[tuple[Statement, ...]]:
    """The block with one statement deleted, one region or `if` replaced by its body, or
    one such edit inside a nested block."""
    for i, s in enumerate(block):
        before, after = block[:i], block[i + 1:]
        yield before + after
        if isinstance(s, GradRegion):
            yield before + s.body + after
            for body in _block_edits(s.body):
                yield before + (replace(s, body=body),) + after
        elif isinstance(s, IfGradEnabled):
            yield before + s.then + after
            yield before + s.orelse + after
            for then in _block_edits(s.then):
                yield before + (replace(s, then=then),) + after
            for orelse in _block_edits(s.orelse):
                yield before + (replace(s, orelse=orelse),) + after


def _inlined(block: tuple[Statement, ...], helpers: dict[str, Helper]) -> Iterator[tuple[Statement, ...]]:
    """The block with one call of a decorated helper replaced by the helper's body in a region
    of its decorator's mode, as a person reading the repro would write it first
    (`@torch.no_grad()` on a function is `with torch.no_grad():` around its body). A helper
    that returns its own parameter stays: its call binds a second name to a tensor; a
    torch.autograd.Function is made a no_grad helper first (its forward runs with grad off)."""
    for i, s in enumerate(block):
        before, after = block[:i], block[i + 1:]
        if isinstance(s, Assign) and isinstance(s.value, HelperCall):
            h = helpers[s.value.helper]
            if h.result in h.params or h.is_function:
                continue
            temps = [t.target for t in statements_in(h.body) if isinstance(t, Assign)]
            mapping = {t: f"{s.target}_{t}" for t in temps}  # the helper's names, unique in the caller
            mapping.update(zip(h.params, s.value.args))
            mapping[h.result] = s.target
            yield before + (h.region(renamed(h.body, mapping)),) + after
        elif isinstance(s, GradRegion):
            yield from (before + (replace(s, body=body),) + after for body in _inlined(s.body, helpers))
        elif isinstance(s, IfGradEnabled):
            yield from (before + (replace(s, then=then),) + after for then in _inlined(s.then, helpers))
            yield from (before + (replace(s, orelse=orelse),) + after for orelse in _inlined(s.orelse, helpers))


def _argument_edits(block: tuple[Statement, ...], simpler: list[str]) -> Iterator[tuple[Statement, ...]]:
    """The block with one temporary argument replaced by an input or a parameter."""
    for i, s in enumerate(block):
        before, after = block[:i], block[i + 1:]
        for edited in _statement_argument_edits(s, simpler):
            yield before + (edited,) + after
        if isinstance(s, GradRegion):
            for body in _argument_edits(s.body, simpler):
                yield before + (replace(s, body=body),) + after
        elif isinstance(s, IfGradEnabled):
            for then in _argument_edits(s.then, simpler):
                yield before + (replace(s, then=then),) + after
            for orelse in _argument_edits(s.orelse, simpler):
                yield before + (replace(s, orelse=orelse),) + after


def _statement_argument_edits(s: Statement, simpler: list[str]) -> Iterator[Statement]:
    if isinstance(s, Assign) and isinstance(s.value, (Call, HelperCall, Grad)):
        args = s.value.args
        for j, arg in enumerate(args):
            if arg not in simpler:
                for name in simpler:
                    yield replace(s, value=replace(s.value, args=args[:j] + (name,) + args[j + 1:]))
    elif isinstance(s, InPlace):
        if s.arg is not None and s.arg not in simpler:
            yield from (replace(s, arg=name) for name in simpler)
        if s.target not in simpler:
            yield from (replace(s, target=name) for name in simpler)
    elif isinstance(s, RequiresGrad) and s.target not in simpler:
        for name in simpler:
            yield replace(s, target=name)


def _fewer_inputs(program: Program, schedule: Schedule) -> Iterator[Example]:
    used = set(_uses(program))
    for i, inp in enumerate(program.inputs):
        if inp.name in used:
            continue
        calls = tuple(replace(c, requires_grad=_without(c.requires_grad, i)) for c in schedule)
        yield replace(program, inputs=program.inputs[:i] + program.inputs[i + 1:]), calls


def _without(flags: tuple, i: int) -> tuple:
    flags = flags[:i] + flags[i + 1:]
    return flags if any(f is not None for f in flags) else ()


def _with_helper(program: Program, k: int, helper: Helper) -> Program:
    return replace(program, helpers=program.helpers[:k] + (helper,) + program.helpers[k + 1:])


# ------------------------------------------------------------------------- scoping


def well_scoped(program: Program) -> bool:
    """Every name is assigned before it is read, as the generator guarantees: Python has
    no block scope, but a name assigned in only one branch of an `if` is not read after it."""
    helpers = {h.name: h for h in program.helpers}
    for h in program.helpers:
        names = set(h.params)
        if not _block_scoped(h.body, names, {}) or h.result not in names:
            return False
    names = {i.name for i in program.inputs} | {f"self.{p.name}" for p in program.parameters}
    if not program.returns or not _block_scoped(program.body, names, helpers):
        return False
    if not program.is_module and any(isinstance(s, Assign) and isinstance(s.value, Read) and s.value.attr == "training"
                                     for s in statements_in(program.body)):
        return False  # `self.training` of a function without its module
    return all(r == GRAD_ENABLED or r in names for r in program.returns)


def _block_scoped(block, names: set[str], helpers: dict[str, Helper]) -> bool:
    for s in block:
        if isinstance(s, Assign):
            v = s.value
            if isinstance(v, HelperCall) and (v.helper not in helpers or len(v.args) != len(helpers[v.helper].params)):
                return False
            if not all(a in names for a in getattr(v, "args", ())):
                return False
            names.add(s.target)
        elif isinstance(s, InPlace):
            if not all(n in names for n in s.reads):
                return False
        elif isinstance(s, RequiresGrad):
            if s.target not in names:
                return False
        elif isinstance(s, GradRegion):
            if not _block_scoped(s.body, names, helpers):
                return False
        elif isinstance(s, IfGradEnabled):
            if s.condition and s.condition not in names:
                return False
            then, orelse = set(names), set(names)
            if not (_block_scoped(s.then, then, helpers) and _block_scoped(s.orelse, orelse, helpers)):
                return False
            names |= then & orelse
    return True


def _uses(program: Program) -> Iterator[str]:
    yield from reads(program.body)
    yield from (r for r in program.returns if r != GRAD_ENABLED)


def _is_input_or_parameter(name: str, program: Program) -> bool:
    return name.startswith("self.") or any(i.name == name for i in program.inputs)


# ------------------------------------------------------------------------- names


def renamed(block: tuple[Statement, ...], mapping: dict[str, str]) -> tuple[Statement, ...]:
    """The block with every name in `mapping` (variables, helpers) replaced."""

    def name(n: str) -> str:
        return mapping.get(n, n)

    def statement(s):
        if isinstance(s, Assign):
            v = s.value
            if isinstance(v, (Call, Grad)):
                v = replace(v, args=tuple(map(name, v.args)))
            elif isinstance(v, HelperCall):
                v = replace(v, helper=name(v.helper), args=tuple(map(name, v.args)))
            elif isinstance(v, Read):
                v = replace(v, of=name(v.of))
            return replace(s, target=name(s.target), value=v)
        if isinstance(s, InPlace):
            return replace(s, target=name(s.target), arg=name(s.arg) if s.arg is not None else None)
        if isinstance(s, RequiresGrad):
            return replace(s, target=name(s.target))
        if isinstance(s, GradRegion):
            return replace(s, body=renamed(s.body, mapping))
        if isinstance(s, IfGradEnabled):
            return replace(s, then=renamed(s.then, mapping), orelse=renamed(s.orelse, mapping),
                           condition=name(s.condition))
        assert isinstance(s, SetGradMode), s
        return s

    return tuple(statement(s) for s in block)


def canonical_names(program: Program) -> Program:
    """The same program with inputs named a, b, ... and temporaries t0, t1, ... in the
    order the source shows them, helpers helper0, ... and parameters w0, ...: what the
    generator would have named a program drawn this small."""
    mapping: dict[str, str] = {}
    for i, inp in enumerate(program.inputs):
        mapping[inp.name] = INPUT_NAMES[i]
    for i, p in enumerate(program.parameters):
        mapping[f"self.{p.name}"] = f"self.w{i}"
    functions = iter(range(len(program.helpers)))
    helpers = iter(range(len(program.helpers)))
    for h in program.helpers:
        mapping[h.name] = f"Fn{next(functions)}" if h.is_function else f"helper{next(helpers)}"
    temps = [s.target for h in program.helpers for s in statements_in(h.body) if isinstance(s, Assign)]
    temps += [s.target for s in statements_in(program.body) if isinstance(s, Assign)]
    for n, t in enumerate(dict.fromkeys(temps)):
        mapping[t] = f"t{n}"

    def name(n: str) -> str:
        return mapping.get(n, n)

    def block(stmts):
        return renamed(stmts, mapping)

    return replace(
        program,
        inputs=tuple(replace(i, name=name(i.name)) for i in program.inputs),
        parameters=tuple(replace(p, name=name(f"self.{p.name}").removeprefix("self.")) for p in program.parameters),
        helpers=tuple(replace(h, name=name(h.name), body=block(h.body), result=name(h.result)) for h in program.helpers),
        body=block(program.body),
        returns=tuple(name(r) for r in program.returns),
    )
