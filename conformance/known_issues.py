"""Known discrepancies of the reference stack, read from known_issues.toml.

A mismatch whose signature matches a known issue keeps the suite green and is reported
as known; any other fails the suite. Each issue carries its minimal program, which the
suite re-runs so that an issue that no longer reproduces is reported, not silently kept.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path

from conformance import serialize
from conformance.generators.schedules import CallSpec, Schedule
from conformance.ops import ALIASES, INPLACE, OPS
from conformance.program import (Assign, Call, GradRegion, HelperCall, IfGradEnabled, InPlace, Program, SetGradMode,
                                 statements_in)
from conformance.report.signatures import matches

PATH = Path(__file__).with_name("known_issues.toml")


class BadKnownIssues(ValueError):
    pass


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    backends: tuple[str, ...]  # fnmatch patterns of backend names
    signatures: tuple[str, ...]  # fnmatch patterns of signatures
    program: Program
    schedule: Schedule
    oracle: str
    notes: str = ""
    upstream: str = ""
    # Ops (or in-place methods) one of which every program of the issue calls (none: any
    # program). A signature names a program's constructs, not its ops: `outputs.value | * @
    # plain ops` is relu's NaN bug, and without `ops = ["relu"]` it would be any other value
    # bug of a program of plain ops.
    ops: tuple[str, ...] = ()
    # Facts of the program's structure (FACTS) that every program of the issue has: what a
    # signature's set of constructs cannot tell, such as whether an update ran before or
    # after a grad-off call.
    needs: tuple[str, ...] = ()

    def applies_to(self, backend_name: str) -> bool:
        return any(fnmatch.fnmatchcase(backend_name, p) for p in self.backends)

    def may_be(self, program: Program | None) -> bool:
        """Whether the program calls one of the issue's ops and has the facts it needs (True
        where no program is given, or the issue names neither)."""
        if program is None:
            return True
        calls = not self.ops or any(
            (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op in self.ops)
            or (isinstance(s, InPlace) and s.method in self.ops)
            for s in _statements(program))
        return calls and all(FACTS[n](program) for n in self.needs)


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


# Program facts a known issue may need (KnownIssue.needs), by the name the file uses.
FACTS = {"an update while grad is off": updates_while_grad_off,
         "a computed value multiplied in place": multiplies_a_computed_value_in_place,
         "an update through an alias": updates_through_an_alias,
         "a size-0 input": has_a_size_zero_input}


def load(path: Path = PATH) -> list[KnownIssue]:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BadKnownIssues(f"cannot read {path}: {exc}") from None
    issues = []
    for i, entry in enumerate(data.get("issue", [])):
        try:
            issues.append(KnownIssue(
                id=entry["id"],
                title=entry["title"],
                backends=tuple(entry.get("backends", ["thunder*"])),
                signatures=tuple(entry["signatures"]),
                program=serialize.loads(entry["program"]),
                schedule=serialize.loads(entry["schedule"]) if "schedule" in entry else tuple(
                    CallSpec(ambient=a, values_seed=k) for k, a in enumerate(entry.get("calls", ["grad"]))),
                oracle=entry["oracle"],
                notes=entry.get("notes", ""),
                upstream=entry.get("upstream", ""),
                ops=tuple(entry.get("ops", [])),
                needs=tuple(entry.get("needs", [])),
            ))
        except (KeyError, serialize.BadProgram) as exc:
            raise BadKnownIssues(f"{path}: issue #{i + 1} is malformed: {exc}") from None
        if unknown := [op for op in issues[-1].ops if op not in OPS and op not in INPLACE]:
            raise BadKnownIssues(f"{path}: issue {issues[-1].id!r} names ops not in conformance/ops.py: {unknown}")
        if unknown := [n for n in issues[-1].needs if n not in FACTS]:
            raise BadKnownIssues(f"{path}: issue {issues[-1].id!r} needs facts conformance/known_issues.py does not "
                                 f"know: {unknown} (known: {sorted(FACTS)})")
    ids = [k.id for k in issues]
    if len(set(ids)) != len(ids):
        raise BadKnownIssues(f"{path}: duplicate issue ids")
    return issues


def classify(sig, backend_name: str, issues: list[KnownIssue],
             program: Program | None = None) -> KnownIssue | None:
    """The known issue whose most specific pattern matches `sig`, among those the program
    (where given) may be (KnownIssue.may_be: it calls one of their ops and has the facts they
    need); on a tie of patterns, the issue that asks more of the program (ops, facts), then
    the first in the file.

    The most specific one, not the first: a broad pattern (`exceptions.backend raised during
    backward | *`) would otherwise claim the findings of a narrower issue listed after it
    (`*A view was created in no_grad mode*`), and that issue would never be reported as hit."""
    best, best_score = None, (-1, -1)
    for issue in issues:
        if not issue.applies_to(backend_name) or not issue.may_be(program):
            continue
        for pattern in issue.signatures:
            score = (_specificity(pattern), bool(issue.ops) + len(issue.needs) if program is not None else 0)
            if score > best_score and matches(sig, [pattern]):
                best, best_score = issue, score
    return best


def _specificity(pattern: str) -> int:
    # The characters a signature must contain, not those a wildcard stands for.
    return len(pattern.replace("*", "").replace("?", ""))


def stub(record: dict, issue_id: str = "") -> str:
    """A known_issues.toml entry for a finding, to be given a title and notes by a person."""
    import json

    from conformance.report.signatures import slug

    calls = [c["ambient"] for c in record["schedule"]]
    schedule = json.dumps(record["schedule"])
    body = "\n".join("#   " + line for line in record["body"].splitlines())
    return (
        "[[issue]]\n"
        f"id = {json.dumps(issue_id or slug(record))}\n"
        'title = "TODO: what the backend does wrong, in one line"\n'
        f"oracle = {json.dumps(record['oracle'])}\n"
        f"backends = {json.dumps([record['backend'].split('[')[0] + '*'])}\n"
        f"signatures = [{json.dumps(record['signature'])}]\n"
        f"calls = {json.dumps(calls)}\n"
        f"schedule = '''{schedule}'''\n"
        'notes = "TODO: why eager\'s side is documented PyTorch behaviour"\n'
        f"# body:\n{body}\n"
        f"program = '''{json.dumps(record['program'])}'''\n"
    )
