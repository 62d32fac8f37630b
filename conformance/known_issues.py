"""Known discrepancies of the reference stack, read from known_issues.toml.

One entry is one root cause. It says how the bug shows, in typed fields a reader checks
against a report (`[[issue.shows]]`: the oracle and aspect that differ, what each side
gives, the constructs and ops the program has, facts of its structure), and carries its
minimal program, which the suite re-runs so that an issue that no longer reproduces is
reported, not silently kept. A finding that matches an entry keeps the suite green and is
reported as known; any other fails it.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

from conformance import serialize
from conformance.generators.schedules import AMBIENT_AUTOCAST, OPTIMIZER_STEP, CallSpec, Schedule
from conformance.ops import CREATION, INPLACE, INPLACE_UNARY, OPS
from conformance.oracles.mismatch import ORACLES, Mismatch, class_key
from conformance.program import GradRegion, Program, constructs, device, ops_called
from conformance.program_facts import FACTS
from conformance.report.signatures import Signature

PATH = Path(__file__).with_name("known_issues.toml")


class BadKnownIssues(ValueError):
    pass


@dataclass(frozen=True)
class Context:
    """What a finding says of the call that differed, beyond its signature: the ambient mode
    it ran under (grad-mode facts follow eager from it), whether eager raised in it, and
    whether in eager another output of it requires grad (a computed one, not an input
    returned as itself: what connects a compiled call to autograd). None: not known (a fact
    then holds if some ambient mode gives it)."""

    ambient: str | None = None
    raised: bool | None = None
    another_output_requires_grad: bool | None = None
    autocast: bool = False  # the call was made under the caller's torch.autocast


NO_CONTEXT = Context()


@dataclass(frozen=True)
class Shows:
    """One way an issue shows. Every field given must hold; a list means any one of its items
    (`constructs`: all of them). Omitted fields ask nothing."""

    oracle: tuple[str, ...]
    aspect: tuple[str, ...] = ()
    # What each side gives: the flag's or value's text exactly ("True", "a grad_fn"), or, for
    # exceptions, words of its message ("no exception", "does not require grad").
    eager: tuple[str, ...] = ()
    backend: tuple[str, ...] = ()
    message: tuple[str, ...] = ()  # words of either side's exception message
    call: str = ""  # "first" or "later" (then the cache is involved); "": either
    raised: bool | None = None  # eager raised in the call that differed; None: either
    # In eager, another (computed) output of that call requires grad; None: either.
    another_output_requires_grad: bool | None = None
    constructs: tuple[str, ...] = ()  # the program has all of these (conformance.program.constructs)
    any_of: tuple[str, ...] = ()  # ... and one of these
    others: tuple[str, ...] | None = None  # ... and no construct but those and these; None: any
    ops: tuple[str, ...] = ()  # the program calls one of these ops or in-place methods
    needs: tuple[str, ...] = ()  # facts of the program (conformance.program_facts.FACTS)

    def matches(self, sig: Signature, program: Program | None, context: Context = NO_CONTEXT) -> bool:
        """Whether a finding matches: its signature, its shrunk program, and its call's Context."""
        bug = sig.bug
        if bug.oracle not in self.oracle or (self.aspect and bug.aspect not in self.aspect):
            return False
        if self.call and self.call != ("later" if bug.later_call else "first"):
            return False
        if self.raised is not None and context.raised != self.raised:
            return False
        if (self.another_output_requires_grad is not None
                and context.another_output_requires_grad != self.another_output_requires_grad):
            return False
        if not (_side(bug.oracle, bug.eager, self.eager) and _side(bug.oracle, bug.backend, self.backend)):
            return False
        if self.message and not any(w in bug.eager or w in bug.backend for w in self.message):
            return False
        return self._fits(sig, program, context.ambient, context.autocast)

    def _fits(self, sig: Signature, program: Program | None, ambient: str | None, autocast: bool = False) -> bool:
        """Whether the program has the constructs, ops and facts asked for."""
        asks_program = self.ops or self.needs
        asks_constructs = self.constructs or self.any_of or self.others is not None
        if not (asks_program or asks_constructs):
            return True
        if program is None and (asks_program or sig.constructs is None):
            return False  # nothing to check them on
        have = set(constructs(program) if program is not None else sig.constructs) - {UNMATCHED_CONSTRUCT}
        have |= set(sig.constructs or ()) & {AMBIENT_AUTOCAST, OPTIMIZER_STEP}  # the caller's, not the program's
        if not set(self.constructs) <= have or (self.any_of and not have & set(self.any_of)):
            return False
        if self.others is not None and not have <= set(self.constructs) | set(self.any_of) | set(self.others):
            return False
        # Facts follow eager through the function as called: inside the caller's autocast, its
        # body runs as in an autocast region.
        called = replace(program, body=(GradRegion("autocast", program.body, True, device(program)),)) \
            if autocast and program is not None else program
        return (not self.ops or calls_one_of(program, self.ops)) and all(FACTS[n](called, ambient) for n in self.needs)

    def specificity(self) -> tuple[int, int, int]:
        """How much a finding must have to match: facts of the program first (they tell apart
        bugs that one set of constructs does not), then the other fields asked, then the words
        asked of the messages. A finding two issues match goes to the more specific one: a broad
        entry (any backward error) must not claim a narrower one's findings."""
        asked = (len(self.constructs) + bool(self.any_of) + (self.others is not None) + bool(self.aspect)
                 + bool(self.eager) + bool(self.backend) + bool(self.message) + bool(self.call) + (self.raised is not None)
                 + (self.another_output_requires_grad is not None))
        return (len(self.needs) + bool(self.ops), asked,
                min(map(len, self.eager + self.backend + self.message), default=0))


# What an example that breaks the process it runs in shows (conformance.night.crash): a known
# issue of one of these is run in a process of its own, never in the one that checks it.
RUN_FAILURES = ("crash", "hang")

# Most programs return torch.is_grad_enabled() (so that a grad-mode fault shows as a value):
# a signature and a table's constructs leave it out, or every table would have to name it.
UNMATCHED_CONSTRUCT = "return_is_grad_enabled"


def _side(oracle: str, value: str, wanted: tuple[str, ...]) -> bool:
    if not wanted:
        return True
    if oracle == "exceptions":
        return any(w in value for w in wanted)
    return value in wanted


def calls_one_of(program: Program, ops: tuple[str, ...]) -> bool:
    """Whether the function (or a helper) calls one of the ops or in-place methods."""
    return not ops_called(program).isdisjoint(ops)


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    # backend families (fnmatch patterns): "thunder", "torch.compile"; or names with options
    backends: tuple[str, ...]
    shows: tuple[Shows, ...]
    program: Program
    schedule: Schedule
    oracle: str
    notes: str = ""
    upstream: str = ""
    # (package, first version without the bug): `fixed_in = {thunder = "0.2.7"}` in the TOML.
    fixed_in: tuple[tuple[str, str], ...] = ()
    # Backends of a family named in `backends` where the bug does not hold (their whole names):
    # `not_on = ["torch.compile[backend=eager]"]` for a bug of AOTAutograd, which Dynamo alone lacks.
    not_on: tuple[str, ...] = ()

    def holds_on(self, versions: dict[str, str]) -> bool:
        """Whether the bug is there in these package versions (a backend's versions()): not
        where a version is at or past the one the entry says fixed it."""
        from packaging.version import InvalidVersion, Version

        for package, fixed in self.fixed_in:
            try:
                if package in versions and Version(versions[package]) >= Version(fixed):
                    return False
            except InvalidVersion:
                continue  # a checkout's version string that is not PEP 440: assume the bug is there
        return True

    @property
    def breaks_its_process(self) -> bool:
        """Whether running the issue's example breaks the process that runs it."""
        return self.oracle in RUN_FAILURES

    def applies_to(self, backend_name: str) -> bool:
        """Whether the issue holds for the backend: its family (the name before any
        `[options]`: `thunder[cache=no caching]` is thunder) matches one of `backends`, or its
        whole name is one that names options (`torch.compile[backend=eager]`: a bug of Dynamo
        that AOTAutograd hides)."""
        family = backend_name.split("[", 1)[0]
        return backend_name not in self.not_on and any(
            backend_name == p if "[" in p else fnmatch.fnmatchcase(family, p) for p in self.backends)

    def match(self, sig: Signature, program: Program | None, context: Context = NO_CONTEXT) -> Shows | None:
        """The most specific way the issue shows that the finding matches."""
        found = [s for s in self.shows if s.matches(sig, program, context)]
        return max(found, key=Shows.specificity, default=None)


_SHOWS_FIELDS = {f.name for f in fields(Shows)}
_LISTS = {"oracle", "aspect", "eager", "backend", "message", "constructs", "any_of", "others", "ops", "needs"}


def _shows(entry: dict, defaults: dict) -> Shows:
    """A Shows from its TOML table; the issue's own `ops` and `needs` apply to every one."""
    if unknown := set(entry) - _SHOWS_FIELDS:
        raise KeyError(f"unknown fields {sorted(unknown)} in [[issue.shows]] (known: {sorted(_SHOWS_FIELDS)})")
    values = {**defaults, **entry}
    for name in _LISTS & set(values):
        values[name] = (values[name],) if isinstance(values[name], str) else tuple(values[name])
    shows = Shows(**values)
    if bad := [o for o in shows.oracle if o not in ORACLES + RUN_FAILURES]:
        raise KeyError(f"oracle {bad} is not one of {list(ORACLES + RUN_FAILURES)}")
    if bad := [op for op in shows.ops if op not in OPS and op not in INPLACE and op not in INPLACE_UNARY and op not in CREATION]:
        raise KeyError(f"ops {bad} are not in conformance/ops.py")
    if bad := [n for n in shows.needs if n not in FACTS]:
        raise KeyError(f"facts {bad} are not known (known: {sorted(FACTS)})")
    if UNMATCHED_CONSTRUCT in shows.constructs + shows.any_of + (shows.others or ()):
        raise KeyError(f"construct {UNMATCHED_CONSTRUCT!r} is never matched (signatures leave it out: most "
                       "programs return torch.is_grad_enabled()); ask needs = [\"grad mode read or restored "
                       "where the function changed it\"] instead")
    if shows.call not in ("", "first", "later"):
        raise KeyError(f"call {shows.call!r} is not 'first' or 'later'")
    return shows


def load(path: Path = PATH) -> list[KnownIssue]:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BadKnownIssues(f"cannot read {path}: {exc}") from None
    issues = []
    for i, entry in enumerate(data.get("issue", [])):
        where = f"issue {entry.get('id', f'#{i + 1}')!r}"
        try:
            defaults = {k: entry[k] for k in ("ops", "needs") if k in entry}
            issues.append(KnownIssue(
                id=entry["id"],
                title=entry["title"],
                backends=tuple(entry["backends"]),
                shows=tuple(_shows(s, defaults) for s in entry.get("shows", ())),
                program=serialize.loads(entry["program"]),
                schedule=serialize.loads(entry["schedule"]) if "schedule" in entry else tuple(
                    CallSpec(ambient=a, values_seed=k) for k, a in enumerate(entry.get("calls", ["grad"]))),
                oracle=entry["oracle"],
                notes=entry.get("notes", ""),
                upstream=entry.get("upstream", ""),
                fixed_in=tuple((str(k), str(v)) for k, v in entry.get("fixed_in", {}).items()),
                not_on=tuple(entry.get("not_on", ())),
            ))
        except KeyError as exc:
            raise BadKnownIssues(f"{path}: {where} is malformed: {exc.args[0]}" if " " in str(exc.args[0])
                                 else f"{path}: {where} lacks the field {exc.args[0]!r}") from None
        except (TypeError, serialize.BadProgram) as exc:
            raise BadKnownIssues(f"{path}: {where} is malformed: {exc}") from None
        if not issues[-1].shows:
            raise BadKnownIssues(f"{path}: {where} has no [[issue.shows]]: say how the bug shows")
    ids = [k.id for k in issues]
    if len(set(ids)) != len(ids):
        raise BadKnownIssues(f"{path}: duplicate issue ids")
    return issues


def holding(issues: list[KnownIssue], backend) -> list[KnownIssue]:
    """The issues that hold for the backend's package versions: an issue fixed in the version
    under test is not one to explain a finding by (its return is a regression: new)."""
    try:
        versions = {str(k): str(v) for k, v in dict(backend.versions()).items()}
    except Exception:  # noqa: BLE001 - a broken backend's versions(): every issue holds
        versions = {}
    return [i for i in issues if i.holds_on(versions)]


def classify(sig: Signature, backend_name: str, issues: list[KnownIssue],
             program: Program | None = None, context: Context = NO_CONTEXT) -> KnownIssue | None:
    """The known issue whose most specific way of showing (Shows.specificity) the finding
    matches; on a tie, the first in the file."""
    best, best_score = None, None
    for issue in issues:
        if issue.applies_to(backend_name) and (shows := issue.match(sig, program, context)) is not None:
            if best_score is None or shows.specificity() > best_score:
                best, best_score = issue, shows.specificity()
    return best


def stub(record: dict, issue_id: str = "") -> str:
    """A known_issues.toml entry for a finding, to be given a title, notes and a narrower
    `shows` by a person."""
    import json

    from conformance.report.issue import docs_link, title
    from conformance.report.signatures import slug

    schedule = json.dumps(record["schedule"])
    body = "\n".join("#   " + line for line in record["body"].splitlines())
    program = serialize.loads(json.dumps(record["program"]))
    docs = docs_link(program)
    first = record["mismatches"][0]
    bug = class_key(Mismatch(**{k: first[k] for k in ("oracle", "aspect", "where", "eager", "backend", "call")}))
    sides = "".join(f"{name} = {json.dumps(value)}\n" for name, value in (("eager", bug.eager), ("backend", bug.backend))
                    if value)
    return (
        "[[issue]]\n"
        f"id = {json.dumps(issue_id or slug(record))}\n"
        f"title = {json.dumps('TODO: in the words of the backend (issue.md says: ' + title(record) + ')')}\n"
        f"oracle = {json.dumps(record['oracle'])}\n"
        f"backends = {json.dumps([record['backend'].split('[')[0]])}\n"
        f"schedule = '''{schedule}'''\n"
        f"notes = {json.dumps('TODO: why what eager does is documented PyTorch behaviour (' + docs + ')')}\n"
        f"# body:\n{body}\n"
        f"program = '''{json.dumps(record['program'])}'''\n"
        "[[issue.shows]]\n"
        f"oracle = {json.dumps(record['oracle'])}\n"
        f"aspect = {json.dumps(record['aspect'])}\n"
        f"{sides}"
        f"call = {json.dumps('later' if bug.later_call else 'first')}\n"
        f"constructs = {json.dumps(sorted(constructs(program) - {'return_is_grad_enabled'}))}\n"
    )
