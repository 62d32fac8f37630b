"""The nightly fuzzing job: `python -m conformance fuzz`.

N worker processes each run the program generator through Hypothesis in chunks until
the time budget is spent: runs of 10 examples, each with a seed of its own. Within one run
Hypothesis spends most examples on variations of earlier ones (a span copied over another,
often only the schedule); 1,200 examples held 715 distinct programs in runs of 200, and 958
in runs of 10 (a thunder run costs 0.1-0.3 s, a repeated one nothing: runs are memoized).
A mismatch is shrunk by Hypothesis (when found, or after exploring, below), classified
against known_issues.toml, and saved as a record; the parent merges the records into
repros, HTML reports and summary.json at the end (also after Ctrl-C).

What keeps an unattended night going:
- an example that runs past --example-timeout is reported as a hang (SIGALRM in the
  worker; a worker stuck where Python cannot interrupt it is killed by the parent and
  its example reported as a hang all the same);
- a worker that dies has its example (written to current.json before each run)
  reported as a crash, and is restarted with a fresh seed;
- a raw failure is saved before shrinking starts, so a run stopped mid-shrink loses nothing;
- workers are recycled after --recycle-after examples, or when their RSS passes
  --max-rss-mb, since thunder keeps caches per jitted function.

With --baseline, each worker first runs its share of the previous night's repros
(replay_baseline): what is still there is reported in seconds, and a class whose repro is
short counts as shrunk.

Exploring first (--explore, half the night by default): a worker draws new programs only,
and saves the first failure of each class of mismatch (Hypothesis's database, per worker)
without shrinking it, as long as the time left can shrink the urgent ones it found
(SHRINK_ESTIMATE a class). It then replays what it found, a few classes at a time, and
Hypothesis and the last pass shrink them. Only the first class of each known issue (as its
raw program is classified) and classes of no known issue count for that time, and are
shrunk first (new bugs before known ones); the rest wait for the end of the exploring
part. A class that a replay meets while shrinking another is saved and shrunk in a later
replay, in the same order. Constructs that a found exception saturates are no longer drawn
(saturation.py). Shrinking each class when first found left 12-14 s per worker for new
programs in a 10-minute night (night 12): most classes were first met among the shrinker's
candidates, and the rare ones were not met at all.

Shrinking budget: each mismatch class (oracles.mismatch.class_key) gets --shrink-seconds
per shrink (Hypothesis, then reduction.reduce), and is shrunk again (at most
--shrinks-per-class times in all) only while the smallest program for it is longer than a
repro should be. Later hits of that class are counted, and some get a second look
(reduction only, at most --reductions-per-class in all): those that lack a construct the
class's repros need, and the 1st, 2nd, 4th, 8th... of the others. One class is one
symptom, and one symptom can be two bugs; a second look that lands on another signature
reports the other bug. A hit whose raw signature names a known issue that no repro shows
tonight gets a look for that issue at once, while exploring too (unmet_issue); so does the
first hit of a class found as a known issue whose shrink showed another (find_lost_issue), and
a class first met while exploring behind others' mismatches, as a known issue no class shows
yet (issue_behind): its shrink waits for theirs. Workers
share what they shrank (ClassLog, through the parent): without it each worker, and each
incarnation of one after a recycle, shrank every class again, at about 10 s a shrink. A
hit of a class that is done, with a mismatch of a class not done behind its first one, is
shrunk for that one (suite.focus), and reported only if the reduced program shows it first.
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing as mp
import queue as queue_mod
import resource
import signal
import sys
import threading
import time
import unittest
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance.report.records import merge, merge_pair, write_atomic

CRASH_SIGNATURE = "crash.worker died"
HANG_SIGNATURE = "hang.example timed out"


@dataclass
class FuzzConfig:
    backend: str
    seconds: float
    max_examples: int | None = None
    seed: int | None = None
    workers: int = 1
    report_dir: Path = Path("reports/fuzz")
    db: Path | None = None
    baseline: Path | None = None
    known_issues: Path | None = None  # None: conformance/known_issues.toml
    chunk: int = 10
    example_timeout: float = 60.0
    shrinks_per_class: int = 3
    # Half: nights 62-64 explored 0.75 and 0.65 of the night (with SHRINK_ESTIMATE
    # 20), 386-444 s of new programs a worker instead of 296, and hit 25, 23 and 23 of 28
    # issues where the same seeds at 0.5 hit 23 and 24, and 0.75 left three issues' repros raw:
    # shrinking finds issues too (a raw program often classifies as another issue until it
    # is shrunk; the shrinker's candidates meet size-0 bugs).
    explore: float = 0.5
    keep_saturated: bool = False
    sweep: bool = True  # every one-op and motif program over a small domain first (generators.sweep)
    small_examples: bool = True  # half the examples small (suite.examples)
    reductions_per_class: int = 8
    shrink_seconds: float = 60.0
    recycle_after: int = 2000
    max_rss_mb: int = 3000
    command: str = ""
    progress: bool | None = None  # None: only on a terminal

    @property
    def grace(self) -> float:
        """How long past the deadline the parent waits for workers to write what they have."""
        return min(30.0, max(5.0, self.seconds * 0.1))

    def reduction_seconds(self, deadline: float) -> float:
        # Reduction turns a half-shrunk program into a repro in seconds, so it may use half
        # the grace period: a bug found in the last minute is still reported small.
        return max(1.0, min(self.shrink_seconds, deadline + self.grace / 2 - time.time()))


@dataclass
class WorkerState:
    id: int
    process: mp.process.BaseProcess | None = None
    examples: int = 0  # over every incarnation of this worker
    examples_now: int = 0  # of the running incarnation
    peak_rss_mb: float = 0.0
    restarts: int = 0
    crashes: int = 0
    last_beat: float = field(default_factory=time.monotonic)
    hits_unshrunk: Counter = field(default_factory=Counter)
    constructs: Counter = field(default_factory=Counter)  # over finished incarnations
    constructs_now: dict = field(default_factory=dict)  # of the running one
    spent: Counter = field(default_factory=Counter)  # seconds per activity, over finished incarnations
    spent_now: dict = field(default_factory=dict)  # of the running one


# ---------------------------------------------------------------------------- classes


class ClassLog:
    """What the night has done per mismatch class: found it while exploring (when, where),
    shrunk it (with the statements and the constructs of each result), looks at later hits.
    Built from events, {"by": incarnation, "class": key, "kind": "found", "shrink" or "look",
    "statements": n or None, "constructs": [...] or None, for "found" "seconds", "examples"
    and "alongside" (the other classes of its program; see waits_for), for "found" and
    "look" "during" (the worker's mode: "explore", "fuzz", or "replay" for a class met while
    shrinking another), and the known issue the program was classified as, "issue"; for a
    look for an unmet issue, that issue, "looked_for"}, which
    each worker incarnation sends to the parent; the parent shares them all
    (CLASS_LOG in the findings folder), and each worker reads the others' at the start of a
    chunk, never within one (Hypothesis replays a failure at its end and must see it fail
    again)."""

    def __init__(self, events=()):
        self.shrinks: Counter = Counter()  # Hypothesis, then the last pass
        self.looks: Counter = Counter()  # second looks: the last pass alone
        self.smallest: dict[str, int] = {}  # statements of the smallest shrunk program
        self.needs: dict[str, list[frozenset]] = defaultdict(list)  # the constructs of each repro
        self.found: dict[str, tuple[float, str, int]] = {}  # first found, unshrunk: (seconds, by, examples)
        self.issue: dict[str, str] = {}  # the known issue a found class's raw program was classified as
        self.repro_of: set[str] = set()  # known issues with a shrunk repro tonight
        self.behind_only: set[str] = set()  # shrunk, and shown only behind a reported class
        self.alongside: dict[str, list[str]] = {}  # the other classes of the program a class was found in
        for e in events:
            self.add(e)

    def add(self, e: dict) -> None:
        key = e["class"]
        if e["kind"] == "found":
            if key not in self.found:
                self.alongside[key] = e.get("alongside") or []
            self.found[key] = min(self.found.get(key, (math.inf, "", 0)), (e["seconds"], e["by"], e["examples"]))
            if e.get("issue"):
                self.issue[key] = e["issue"]
        elif e["kind"] == "look":
            self.looks[key] += 1
            if e.get("issue"):
                self.repro_of.add(e["issue"])
        else:
            self.shrinks[key] += 1
            if e.get("issue"):
                self.repro_of.add(e["issue"])
            if e.get("statements") is not None:
                self.smallest[key] = min(self.smallest.get(key, e["statements"]), e["statements"])
            else:
                self.behind_only.add(key)
        if e.get("constructs") is not None:
            self.needs[key].append(frozenset(e["constructs"]))

    def done(self, key: str, shrinks_per_class: int, max_statements: int) -> bool:
        """Shrunk to a readable repro, or out of shrinks, or shrunk only to programs that show
        it behind a reported class (shrinking it again did the same: a fake night shrank such
        classes three times each, most of its shrinks): later hits are counted, not shrunk."""
        return self.shrinks[key] >= shrinks_per_class or (key in self.behind_only and key not in self.smallest) \
            or self.smallest.get(key, max_statements + 1) <= max_statements

    def covered(self, key: str) -> bool:
        """Found as a known issue that has a shrunk repro tonight, or whose first class found
        and not shrunk yet (which gets one) is another: more shrinks of it can wait. A class of
        the issue shrunk without giving it a repro (shrunk to another issue, or shown only
        behind a reported class) passes the turn to the next: night 53 found
        grad-mode-not-written-back-when-call-raises as two classes, shrank the first to nothing
        it could report, and left the second waiting all night."""
        issue = self.issue.get(key)
        if issue is None:
            return False
        if issue in self.repro_of:
            return True
        pending = [k for k, i in self.issue.items() if i == issue and not self.shrinks[k]]
        return bool(pending) and key != min(pending, key=lambda k: self.found[k])

    def met(self) -> set[str]:
        """The known issues met tonight: with a repro, or found as a class not shrunk yet (a
        shrink keeps the class, not the issue, so the repro may show another issue of it)."""
        return self.repro_of | {i for k, i in self.issue.items() if not self.shrinks[k]}

    def lost(self, key: str) -> str | None:
        """The known issue the class was found as (its first hit classified so), where no repro
        shows that issue tonight though the class was shrunk: to another issue, or only behind
        a reported class. None otherwise."""
        issue = self.issue.get(key)
        return issue if issue is not None and self.shrinks[key] and issue not in self.repro_of else None

    def owed(self, worker: str) -> list[str]:
        """The classes `worker` found and has to shrink, in the order to shrink them: classes
        of no known issue (new bugs, the night's news), then the first class found of each
        known issue, then variants of known issues; each group in the order found, and each
        class after the classes it waits for. A class shrunk once already is not owed, though
        it may have no repro: a class found behind another's mismatch and not shown alone was
        shrunk again by each incarnation of its worker, up to --shrinks-per-class times
        (night 25: a third of the shrinks)."""
        mine = [k for k in self.found if self.finder(k) == worker and not self.shrinks[k]]
        owed = set(mine)
        order: dict[str, None] = {}  # insertion-ordered, with set lookups

        def place(key: str) -> None:
            # What a class waits for (see waits_for) goes before it: night 31 left the four
            # classes of no known issue it had found behind others unshrunk, each waiting
            # for a variant of a known issue at the end of the order that time never reached.
            if key in order:
                return
            for k in sorted(self.waited_for(key, owed), key=lambda k: self.found[k]):
                place(k)
            order[key] = None

        for key in sorted(mine, key=lambda k: (self.covered(k), k in self.issue, self.found[k])):
            place(key)
        return list(order)

    def waits_for(self, key: str, owed) -> bool:
        """Whether a class found behind others (found before it, so masked then) has to wait
        for those still owed: replayed before they are shrunk, its program fails as one of
        them, Hypothesis keeps that one's smaller example, and the entry is gone with the
        class (a fake night recycling every 3 examples left such a class unshrunk)."""
        return bool(self.waited_for(key, owed))

    def waited_for(self, key: str, owed) -> list[str]:
        """The owed classes that `key` waits for: found before it, in its program."""
        return [k for k in self.alongside.get(key, ()) if k in owed and self.found[k] < self.found[key]]

    def finder(self, key: str) -> str | None:
        """The worker that found the class first (ties: the lower incarnation name), which
        shrinks it after the exploring part of the night; None if no worker found it yet."""
        return self.found[key][1].split(".")[0] if key in self.found else None


CLASS_LOG = "classes.json"

# Seconds to shrink a class found while exploring (Hypothesis, then the last pass): about
# 13-20 on the reference machine (nights 18, 19). Exploring stops while the time left cannot shrink its finds.
SHRINK_ESTIMATE = 15.0
REPLAY_SHRINK_SECONDS = 8.0  # Hypothesis's part of it, per class
REPLAY_BATCH = 4  # classes shrunk per replay run
ISSUE_LOOKS = 2  # looks per worker incarnation for a known issue no class met (unmet_issue)


def read_events(findings: Path, but: str) -> list[dict]:
    """The events of every incarnation but `but`, as the parent last wrote them."""
    try:
        return [e for e in json.loads((findings / CLASS_LOG).read_text()) if e.get("by") != but]
    except (OSError, ValueError):
        return []


# ---------------------------------------------------------------------------- worker


class ExampleTimeout(BaseException):
    """Raised by SIGALRM inside an example that ran past its time limit. A BaseException,
    so that the runner, which records what a program raises, does not take it for one."""


def _on_alarm(signum, frame):
    raise ExampleTimeout()


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker_main(cfg: FuzzConfig, wid: int, incarnation: int, messages, stop, start: float) -> None:
    """One worker process: fuzz in chunks until the deadline, stop, or recycling."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    signal.signal(signal.SIGALRM, _on_alarm)
    from hypothesis import HealthCheck, Phase, event, given, reject, settings, statistics
    from hypothesis import strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase, MultiplexedDatabase
    from hypothesis.errors import Unsatisfiable

    from conformance import known_issues
    from conformance.backends import get
    from conformance.check import Result, raise_for, run_example
    from conformance.oracles.mismatch import Mismatch, class_key
    from conformance.outcome import SideOutcome
    from conformance.generators.sweep import sweep_examples
    from conformance.program import constructs, count_statements, render
    from conformance.report.records import record_of, save
    from conformance.report.signatures import signature
    from conformance.saturation import Saturation
    from conformance.serialize import decode, encode
    from conformance.shrinking import Budget, Memo, shrink_budget
    from conformance.suite import (MAX_STATEMENTS, PHASES, examples, finding_of, focus, reduce_finding, seeded,
                                  split_failures)

    backend = get(cfg.backend)
    backend.spec = cfg.backend
    issues = known_issues.load(cfg.known_issues or known_issues.PATH)
    folder = Path(cfg.report_dir) / "findings" / f"w{wid}"
    folder.mkdir(parents=True, exist_ok=True)
    current = folder / "current.json"
    db = DirectoryBasedExampleDatabase(str(cfg.db)) if cfg.db else None
    # What this worker finds while exploring, kept over its incarnations: the shrinking part
    # of the night replays it, and Hypothesis shrinks what it replays.
    found_db = DirectoryBasedExampleDatabase(str(folder / "found-db"))
    night_db = MultiplexedDatabase(found_db, db) if db else found_db
    deadline = start + cfg.seconds
    explore_until = start + cfg.seconds * cfg.explore
    mode = "explore"  # of the running chunk: "explore", "replay" (shrink what exploring found), "fuzz"
    me = f"{wid}.{incarnation}"
    own: list[dict] = []  # this incarnation's class events; the others' come from the parent
    others: list[dict] = []  # the other incarnations' events, as last read (CLASS_LOG)
    others_log, others_read = ClassLog(), -math.inf
    log = ClassLog()  # own and others' events as of the chunk's start: what prop goes by
    later: Counter = Counter()  # hits of a class after it was shrunk small enough
    issue_looks: Counter = Counter()  # looks for an issue no class tonight met (unmet_issue)
    raw_saved: set[str] = set()
    first_seen: dict[str, tuple[int, float]] = {}  # (examples, seconds) when a class first failed
    first_hits: dict = {}  # the (program, schedule) of each class's first failure, unshrunk
    by_id = {i.id: i for i in issues}
    run = Memo(run_example)
    seen: Counter = Counter()  # examples per construct, for the conformance matrix
    spent: Counter = Counter()  # seconds per activity: where the night went
    saturation = Saturation()
    avoid: frozenset[str] = frozenset()  # saturated constructs the running chunk does not draw
    announced: dict[str, int] = {}  # saturated constructs (reported to the parent): programs then
    last_beat = 0.0

    def hung(program, schedule) -> Result:
        return Result(program, schedule, render(program), SideOutcome("eager"), SideOutcome(backend.name),
                      [Mismatch("hang", "example timed out", "the whole example", "returned",
                                f"still running after {cfg.example_timeout:g} s")])

    def beat(force=False):
        nonlocal last_beat
        now = time.monotonic()
        if force or now - last_beat > 1.0:
            last_beat = now
            messages.put(("beat", wid, run.misses, _rss_mb(), dict(seen), dict(spent)))

    def over() -> bool:
        m = run.misses
        if stop.is_set() or time.time() >= deadline or (cfg.max_examples is not None and m >= cfg.max_examples):
            return True
        # A replay runs to its end, and the worker is recycled after it: an entry that a
        # replay passes over (prop returning at once) is not interesting, and Hypothesis
        # deletes it from found_db, with the class it held (night 28 left the only class of a
        # known issue unshrunk, found at 70 s by a worker recycled before it shrank it; a
        # fake night recycling every 3 examples left 1 of 3 classes found unshrunk).
        return mode != "replay" and (m >= cfg.recycle_after or _rss_mb() > cfg.max_rss_mb)

    def prop(example):
        if over():
            return
        program, schedule = example
        if avoid and constructs(program) & avoid:
            # Rejected here, not by a filter on the strategy: a filter draws again from the
            # choices that follow, so a replay through the plain strategy (unfiltered: it
            # must reproduce finds from before the construct saturated) would draw the
            # rejected program instead of the one found (24 of 55 draws).
            reject()
        beat()
        write_atomic(current, json.dumps({"program": encode(program), "schedule": encode(schedule)}))
        signal.setitimer(signal.ITIMER_REAL, cfg.example_timeout)
        before = run.misses
        fresh = False
        try:
            result = run(program, backend, schedule)
            fresh = run.misses > before
            if fresh:
                seen.update(constructs(program) or {"plain ops"})
        except ExampleTimeout:
            result = hung(program, schedule)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        first = result.mismatches[0] if result.mismatches else None
        if fresh and mode != "replay":
            saturation.count(constructs(program), first is not None and first.oracle == "exceptions"
                             and masked(class_key(first)))
        if first is None:
            return
        key = class_key(first)
        event(key)
        behind = None
        if masked(key):
            later[key] += 1
            behind = focus(result, masked)
            if behind is not None:  # the first bug is reported; shrink the one behind it
                messages.put(("unshrunk", wid, key))
                result, key = behind, class_key(behind.mismatches[0])
                if mode == "explore" and (issue := issue_behind(result, key)) is not None:
                    issue_looks[issue.id] += 1
                    look(result, "looks for an issue found behind others", masked=lambda k: True, issue=issue)
            elif mode != "replay" and (unmet := unmet_issue(result)) is not None:
                hit, issue = unmet
                issue_looks[issue.id] += 1
                # each smaller program still a hit of the issue, led by its class's mismatch
                look(hit, "looks for an unmet issue", masked=lambda k: True, issue=issue)
                return
            elif mode != "replay" and done(key) and second_look_due(key, program):
                look(result, "second looks")
                return
            else:
                messages.put(("unshrunk", wid, key))
                return
        if behind is None and key not in raw_saved:  # nothing found is lost, even if shrinking never ends
            raw_saved.add(key)
            rec = record_of(finding_of(result, backend.name, issues), backend, examples=run.misses,
                            seconds=time.time() - start, command=cfg.command, seed=cfg.seed)
            rec.update(shrunk=False, **{"class": key})
            write_atomic(raw_path(key), json.dumps(rec))
        for c in sorted(constructs(program)):
            event(c)
        first_seen.setdefault(key, (run.misses, time.time() - start))
        first_hits.setdefault(key, (program, schedule))
        raise_for(result)

    def conclude(result, key: str, behind: bool) -> None:
        """The last pass on a failure Hypothesis shrank for class `key` (one behind a reported
        class: with that one masked); note it in the class log, record it where it shows alone."""
        finding = reduce_finding(finding_of(result, backend.name, issues), backend, issues, run=timed_run,
                                 budget=Budget(seconds=cfg.reduction_seconds(deadline)),
                                 masked=done if behind else (lambda k: False))
        alone = not behind or first_class(finding.result) == key
        if not alone and (raw := reduced_raw(key)) is not None:
            finding, alone = raw, True
        note(key, "shrink", finding.result.program if alone else None,
             issue=finding.known.id if finding.known and alone else None)
        if behind:
            messages.put(("behind", wid, key, "reported" if alone else "not shown alone"))
            if not alone:
                # Not shown without a reported bug's mismatch before it: maybe a consequence
                # of that bug, so not reported as one of its own (a false alarm costs an hour).
                messages.put(("unshrunk", wid, key))
                find_lost_issue(key, finding)
                return
        record(finding, key, *first_seen[key])
        find_lost_issue(key, finding)
        raw_path(key).unlink(missing_ok=True)

    def find_lost_issue(key: str, shrunk) -> None:
        """The class was found as a known issue that no repro shows tonight (its first hit
        classified so), and its shrink showed another issue, or showed the class only behind a
        reported one. One class is one symptom: the shrink keeps the symptom, not the issue.
        Where the shrunk program, led by the class, still names the issue, it is recorded as a
        look would record it (known issues only, so no false alarm); else the class's first
        hit gets a look for the issue (each smaller program still a hit of it). Nights 48-53
        found seven issues while exploring and lost them so: night 53's
        no-grad-view-requires-grad-dropped at 46 s, its `grad_fn` mismatch always behind the
        `requires_grad` one of the same output, a class shrunk for an in-place bug."""
        issue = by_id.get(log.lost(key) or "")
        if issue is None:
            return
        if shrunk.known is not None and shrunk.known.id == issue.id:
            note(key, "look", shrunk.result.program, issue=issue.id, during=mode, looked_for=issue.id)
            record(shrunk, key, *first_seen[key])
            return
        if key not in first_hits or issue_looks[issue.id] >= ISSUE_LOOKS \
                or log.looks[key] >= cfg.reductions_per_class:
            return
        program, schedule = first_hits[key]
        hit = timed_run(program, backend, schedule)
        for m in hit.mismatches if hit is not None else ():
            if class_key(m) == key and known_issues.classify(signature(m, program, schedule), backend.name,
                                                             issues, program) == issue:
                issue_looks[issue.id] += 1
                look(focus(hit, lambda k: k != key), "looks for an unmet issue", masked=lambda k: True, issue=issue)
                return

    def raw_path(key: str) -> Path:
        # The class's raw failure, saved when first met: the incarnation's own (str hashes differ per process).
        return folder / "raw" / f"{abs(hash(key))}.json"

    def reduced_raw(key: str):
        """The class's raw failure reduced by the last pass, where this incarnation found it as
        an example's first mismatch. Shrinking can drift to programs that show a class only
        behind one already reported (a later call's error behind the same error in the first
        call), which are not reported: the class then had no repro but its raw program."""
        path = raw_path(key)
        if key not in raw_saved or not path.exists():
            return None
        raw = json.loads(path.read_text())
        result = timed_run(decode(raw["program"]), backend, decode(raw["schedule"]))
        if result is None or not result.mismatches or class_key(result.mismatches[0]) != key:
            return None
        return reduce_finding(finding_of(result, backend.name, issues), backend, issues, run=timed_run,
                              budget=Budget(seconds=cfg.reduction_seconds(deadline)))

    def record(finding, key: str, examples: int, seconds: float, shrunk: bool = True) -> None:
        rec = record_of(finding, backend, examples=examples, seconds=seconds, command=cfg.command, seed=cfg.seed)
        rec.update(shrunk=shrunk, **{"class": key})
        save(rec, folder, "w")
        messages.put(("finding", wid, finding.signature, finding.known.id if finding.known else None))

    def first_class(result) -> str | None:
        # The class of the first mismatch the example shows, unfocused (a Memo hit).
        again = timed_run(result.program, backend, result.schedule)
        return class_key(again.mismatches[0]) if again is not None and again.mismatches else None

    def done(key: str) -> bool:
        return log.done(key, cfg.shrinks_per_class, MAX_STATEMENTS)

    def masked(key: str) -> bool:
        """Classes prop does not raise for: shrunk ones; while exploring, found ones too (each
        is saved once, and shrunk later); while replaying, those another worker found first,
        and those shrunk once or replayed already (not owed)."""
        if done(key):
            return True
        if mode == "explore":
            return key in log.found
        if mode == "replay":  # each class once per replay; one shrunk is not owed again (ClassLog.owed)
            return log.finder(key) not in (None, str(wid)) or key in replayed or log.shrinks[key] > 0
        return False

    def found_at(key: str, default: tuple[int, float]) -> tuple[int, float]:
        # (examples, seconds) when the night first found the class, in any worker
        if key in log.found:
            seconds, _, examples = log.found[key]
            return min((examples, seconds), first_seen.get(key, (math.inf, math.inf)), key=lambda x: x[1])
        return first_seen.get(key, default)

    def read_others(max_age: float) -> None:
        nonlocal others, others_log, others_read
        if time.monotonic() - others_read > max_age:
            others, others_read = read_events(folder.parent, but=me), time.monotonic()
            others_log = ClassLog(others)

    def shrunk_elsewhere(key: str) -> bool:
        # Done by another worker since this chunk started: Hypothesis stops shrinking it
        # (Budget.skip). Both workers meet the common classes in their first minute, and
        # each shrank them all. prop itself keeps to the chunk's log (see ClassLog).
        read_others(max_age=1.0)
        return others_log.done(key, cfg.shrinks_per_class, MAX_STATEMENTS)

    def note(key: str, kind: str, program=None, **extra) -> None:
        e = {"by": me, "class": key, "kind": kind,
             "statements": None if program is None else count_statements(program),
             "constructs": None if program is None else sorted(constructs(program)), **extra}
        own.append(e)
        log.add(e)
        messages.put(("class", wid, e))

    def second_look_due(key: str, program) -> bool:
        # One class of mismatch (one symptom) can be several bugs: `requires_grad True vs
        # False` is an in-place bug in one program and an enable_grad one in another. A hit
        # that lacks a construct each repro of its class needs cannot be one of those bugs;
        # other hits get a look now and then (the 1st, 2nd, 4th, 8th... after the shrink).
        if log.looks[key] >= cfg.reductions_per_class:
            return False
        have = constructs(program)
        n = later[key]
        return not any(need <= have for need in log.needs[key]) or n & (n - 1) == 0

    def look(result, activity: str, **reduction) -> None:
        """Reduce a later hit of a class (the last shrink pass only: seconds, not a minute) and
        record it: under a signature of its own if it is another bug."""
        t0 = time.time()
        key = class_key(result.mismatches[0])
        finding = reduce_finding(finding_of(result, backend.name, issues), backend, issues, run=timed_run,
                                 budget=Budget(seconds=cfg.reduction_seconds(deadline)), **reduction)
        spent[activity] += time.time() - t0
        note(key, "look", finding.result.program, issue=finding.known.id if finding.known else None, during=mode,
             looked_for=reduction["issue"].id if reduction.get("issue") else None)
        record(finding, key, run.misses, t0 - start)

    def unmet_issue(result):
        """(the result led by it, the issue) for the first mismatch of a hit whose signature
        names a known issue that no repro tonight shows and no class waits to be shrunk as,
        or could name one once shrunk (known_issues.may_shrink_to); None if there is none.
        One class of mismatch can be several bugs: the two view bugs show as `requires_grad
        True vs False`, the class of an in-place bug found in the first seconds, and while
        exploring a found class's later hits are only counted (nights 32 and 34 missed both;
        the census met them as the first mismatch of 1-3 programs in 2,440). A raw hit
        rarely names an issue whose patterns list its constructs (`... @ enable_grad`): it
        carries others that shrinking would delete (nights 37-39 missed that issue). Matching
        a hit costs no run; the look, a last pass, seconds."""
        met = log.met()
        open_issues = [i for i in issues if i.id not in met and issue_looks[i.id] < ISSUE_LOOKS
                       and i.applies_to(backend.name)]
        for m in result.mismatches:
            if not open_issues or log.looks[class_key(m)] >= cfg.reductions_per_class:
                continue
            sig = signature(m, result.program, result.schedule)
            known = known_issues.classify(sig, backend.name, issues, result.program)
            if known is None or known.id in met or issue_looks[known.id] >= ISSUE_LOOKS:
                known = next((i for i in open_issues if known_issues.may_shrink_to(sig, i, result.program)), None)
            if known is not None:
                return focus(result, lambda k: k != class_key(m)), known
        return None

    def issue_behind(result, key: str):
        """The known issue that a class found behind others' mismatches (led by it in `result`)
        names, where no repro shows that issue tonight and no class found as it waits to be
        shrunk; None otherwise. Such a class is shrunk after the classes it was found behind
        (ClassLog.waits_for), and those are often a dozen variants of known issues that the
        night never finishes: night 64 found inplace-through-alias-of-grad-tensor-lost at
        147 s behind 17 classes, never shrunk it, and missed the issue. A look for the issue
        now (the last pass, seconds) gives its repro; the class is still saved and shrunk in
        its turn. Known issues only: a class of no known issue shown only behind a reported
        one may be a consequence of it (see conclude), and a false alarm costs an hour."""
        if key in log.found:
            return None
        known = known_issues.classify(signature(result.mismatches[0], result.program, result.schedule),
                                      backend.name, issues, result.program)
        if known is None or known.id in log.met() or issue_looks[known.id] >= ISSUE_LOOKS:
            return None
        return known

    def waits(key: str) -> bool:
        # Raised in a replay, so that it is saved in (or stays in) found_db, but shrunk in a later one.
        return mode == "replay" and key not in batch

    def timed_run(program, backend, schedule):
        # A reduction candidate, under the same time limit as an example: one that hangs is
        # not a smaller example of the bug being reduced.
        beat()
        signal.setitimer(signal.ITIMER_REAL, cfg.example_timeout)
        try:
            return run(program, backend, schedule)
        except ExampleTimeout:
            return None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def replay_baseline(entries: list[dict]) -> None:
        """The previous night's repros first, this worker's share: a bug still there is
        reported in seconds, also one that only a look found (Hypothesis's database holds
        failing examples, not looks), and a class whose repro is short counts as shrunk, so
        the night's shrinking goes to what is new. Run on the backend only; a repro that no
        longer shows its bug is left to the end, where the parent replays what no worker hit."""
        t0 = time.time()
        for m in entries:
            if over():
                break
            if not m.get("program") or m.get("oracle") in ("crash", "hang"):  # not run again in a worker
                continue
            write_atomic(current, json.dumps({"program": m["program"], "schedule": m["schedule"]}))
            program, schedule = decode(m["program"]), decode(m["schedule"])
            result = timed_run(program, backend, schedule)
            hits = _shows(m, result)
            if not hits:
                continue
            key = class_key(hits[0])
            finding = finding_of(focus(result, lambda k: k != key), backend.name, issues)
            if count_statements(program) <= MAX_STATEMENTS:
                note(key, "shrink", program, issue=finding.known.id if finding.known else None)
            # Recorded as shrunk, short or not: it is what the last night reported. Recorded raw,
            # it was dropped wherever tonight shrank another bug of its class (night 51's
            # int-unary repro, 8 statements, behind the empty-input aliases' `outputs.dtype`).
            record(finding, key, run.misses, time.time() - start)
        spent["replaying the baseline"] += time.time() - t0

    def sweep(share) -> None:
        """This worker's share of the sweep's programs (generators.sweep: one-op programs and
        two motifs), before it explores. Each has one to four statements, a repro's size
        already, so a class it shows is recorded as shrunk; a later program of
        a class shrunk before is recorded only where it names another known issue or none
        (one symptom can be two bugs). A hang is reported as one. Only a worker's first
        incarnation sweeps: a recycled or restarted one goes on with the night."""
        t0 = time.time()
        kept: set[tuple[str, str | None]] = set()
        for program, schedule in share:
            if over():
                break
            beat()
            write_atomic(current, json.dumps({"program": encode(program), "schedule": encode(schedule)}))
            result = timed_run(program, backend, schedule) or hung(program, schedule)
            if not result.mismatches:
                continue
            key = class_key(result.mismatches[0])
            finding = finding_of(result, backend.name, issues)
            issue = finding.known.id if finding.known else None
            if (key, issue) in kept or (done(key) and issue is not None and issue in log.met()):
                later[key] += 1
                continue
            kept.add((key, issue))
            note(key, "shrink", program, issue=issue)
            record(finding, key, run.misses, time.time() - start)
        spent["sweeping small programs"] += time.time() - t0

    prop._hypothesis_internal_add_digest = f"fuzz:{backend.name}".encode()
    if cfg.baseline is not None and incarnation == 0:
        replay_baseline(load_baseline(cfg.baseline)["mismatches"][wid::cfg.workers])
    if cfg.sweep and incarnation == 0:
        sweep(sweep_examples()[wid::cfg.workers])
    chunk = 0
    replayed: set[str] = set()  # classes this incarnation replayed to shrink them
    reused = incarnation > 0  # replaying the database once per worker is enough
    while not over():
        read_others(max_age=0.0)
        log = ClassLog(others + own)  # what the other workers found and shrank meanwhile
        # The night explores first: new programs only, each class of mismatch saved once and
        # not shrunk (a shrink costs some 15 s, the time of 80 new programs), while the time
        # left can shrink the urgent ones it found: the first class found of each known issue
        # and classes of no known issue (nights 21 and 22 explored half the night regardless,
        # left 60-80 classes raw and hit fewer issues; night 23 stopped at 150 s to make time
        # for variants of known issues as well). Then the worker replays what it found and
        # Hypothesis shrinks it, a few classes a run, since the last pass of a class comes
        # after its run (one run that shrank class after class ended night 21 with none
        # finished), in ClassLog.owed's order. Then it explores again, or,
        # once the exploring part is over and all is shrunk, fuzzes as before: each class
        # shrunk when found.
        owed = [k for k in log.owed(str(wid)) if not done(k) and k not in replayed]
        owed_set = set(owed)
        batch = [k for k in owed if not log.waits_for(k, owed_set)][:REPLAY_BATCH]
        urgent = [k for k in owed if not log.covered(k)]
        if time.time() < explore_until and len(urgent) * SHRINK_ESTIMATE < deadline - time.time():
            mode = "explore"
        else:
            mode = "replay" if batch else "fuzz"
        if mode == "replay":
            # max_examples: the size of the database's corpus replayed (all of it)
            s = settings(max_examples=100_000, database=found_db, phases=[Phase.reuse, Phase.shrink])
        else:
            phases = [p for p in PHASES if (p != Phase.shrink or mode == "fuzz") and (p != Phase.reuse or not reused)]
            reused = True
            s = settings(max_examples=cfg.chunk, database=night_db if mode == "explore" else db, phases=phases)
        s = settings(s, deadline=None, derandomize=False, report_multiple_bugs=True, print_blob=False,
                     suppress_health_check=list(HealthCheck))
        strategy = examples(small=cfg.small_examples)
        for c in sorted(saturation.saturated() - set(announced)):
            announced[c] = saturation.used[c]
            messages.put(("saturated", wid, c, {"seconds": round(time.time() - start, 1), **saturation.why(c)}))
        avoid = frozenset() if cfg.keep_saturated or mode == "replay" else frozenset(announced)
        if mode == "replay":
            # One draw more than was saved: a replay that reproduces its saved choices exactly
            # makes Hypothesis skip shrinking ("unlikely to work"), and these were never shrunk.
            strategy = st.tuples(strategy, st.booleans()).map(lambda drawn: drawn[0])
        test = settings(s)(given(strategy)(prop))
        if cfg.seed is not None:
            # One seed per (night, worker, incarnation, chunk), none shared by two of them.
            name = f"{cfg.seed}:{wid}:{incarnation}:{chunk}".encode()
            test = seeded(test, int(hashlib.sha256(name).hexdigest()[:16], 16))
        first_n, t0 = run.misses, time.time()
        phases_seconds: dict = {}
        try:
            # Shrinking stops at the deadline too, so what it has is written on time.
            # A replay shrinks dozens of classes in a row, and Hypothesis took up to its full
            # --shrink-seconds on some of them while common ones were left raw (night 18):
            # there it gets a share, and the last pass finishes the repro.
            per_class = min(cfg.shrink_seconds, REPLAY_SHRINK_SECONDS) if mode == "replay" else cfg.shrink_seconds
            with shrink_budget(Budget(seconds=per_class, run_seconds=max(1.0, deadline - time.time()),
                                      skip=lambda k: waits(k) or shrunk_elsewhere(k))), \
                    statistics.collector.with_value(phases_seconds.update):
                test()
            failures = []
        except (unittest.SkipTest, Unsatisfiable):
            # Nothing ran: a replay whose entries are gone (Hypothesis keys its database by
            # the test's source, so a harness upgraded mid-night replays nothing), or a chunk
            # whose every draw used a saturated construct. Not a reason to kill the worker.
            failures = []
        except BaseException as exc:  # noqa: BLE001 - split_failures re-raises harness bugs
            failures = split_failures(exc)
        # Hypothesis's own account of its phases (the statistics its pytest plugin prints).
        for phase, activity in (("reuse", "replaying the database"), ("generate", "generating"),
                                ("target", "generating"), ("shrink", "shrinking (Hypothesis)")):
            spent[activity] += phases_seconds.get(f"{phase}-phase", {}).get("duration-seconds", 0.0)
        if mode == "replay":
            replayed.update(batch)  # shrunk now, or not reproduced: not replayed again
        for f in failures:
            key = class_key(f.mismatches[0])
            # Saved in found_db by Hypothesis, shrunk in a later replay: what exploring found,
            # and what a replay met while shrinking another class (of those, night 23 shrank
            # 56 at once, most of them variants of known issues, and left 51 found ones raw).
            if mode == "explore" or waits(key):
                if key not in log.found:
                    examples_at, seconds_at = first_seen.setdefault(key, (first_n, t0 - start))
                    known = finding_of(f.result, backend.name, issues).known
                    note(key, "found", seconds=seconds_at, examples=examples_at,
                         issue=known.id if known else None, during=mode,
                         alongside=sorted({class_key(m) for m in f.mismatches[1:]} - {key}))
                continue
            if shrunk_elsewhere(key):  # its shrinking was skipped: a later hit, counted
                messages.put(("unshrunk", wid, key))
                continue
            first = first_class(f.result)
            first_seen[key] = found_at(key, (first_n, t0 - start))
            if mode == "replay":
                replayed.add(key)
            t1 = time.time()
            # shrunk for a mismatch behind a reported one, or for its first
            conclude(f.result, key, first is not None and first != key)
            spent["shrinking (last pass)"] += time.time() - t1
        chunk += 1
        beat(force=True)
    current.unlink(missing_ok=True)
    messages.put(("drawn after saturated", wid, {c: saturation.used[c] - n for c, n in announced.items()}))
    why = "recycle" if not stop.is_set() and time.time() < deadline and (
        cfg.max_examples is None or run.misses < cfg.max_examples) else "done"
    messages.put(("exit", wid, run.misses, _rss_mb(), dict(seen), dict(spent), why))


# ---------------------------------------------------------------------------- parent


def _crash_record(cfg: FuzzConfig, wid: int, why: str, signature_kind: str, seconds: float, examples: int) -> dict:
    """A record for the example a dead or stuck worker was running."""
    from conformance.program import constructs, count_statements, render, render_body
    from conformance.serialize import decode

    path = Path(cfg.report_dir) / "findings" / f"w{wid}" / "current.json"
    try:
        data = json.loads(path.read_text())
        program, schedule = decode(data["program"]), decode(data["schedule"])
    except (OSError, ValueError, KeyError):
        program = schedule = None
    used = " ".join(sorted(constructs(program))) if program else "unknown program"
    modes = ",".join(c.ambient for c in schedule) if schedule else ""
    oracle = signature_kind.split(".")[0]
    return {
        "signature": f"{signature_kind} @ {used} | {modes}", "oracle": oracle, "aspect": signature_kind.split(".", 1)[1],
        "known": None, "known_title": None, "summary": f"[{signature_kind}] {why}",
        "mismatches": [{"oracle": oracle, "aspect": signature_kind.split(".", 1)[1], "where": "worker process",
                        "eager": "returned", "backend": why, "call": None, "ambient": None, "line": why}],
        "statements": count_statements(program) if program else 0,
        "inputs": "", "calls": [],
        "body": render_body(program) if program else "(the example could not be recovered)",
        "source": render(program) if program else "", "program": data["program"] if program else None,
        "schedule": data["schedule"] if program else None, "backend": cfg.backend, "backend_spec": cfg.backend,
        "versions": {}, "hits": 1, "found_after_examples": examples, "found_after_seconds": seconds,
        "seed": cfg.seed, "command": cfg.command, "traces": None, "shrunk": False, "class": signature_kind,
    }


def _bug(signature: str) -> str:
    # The class key: the constructs after " @ " vary with how far one night's shrinking got.
    return signature.split(" @ ")[0]


def _shows(entry: dict, result) -> list:
    """The mismatches of `result`, a run of a baseline entry's program, that are its bug."""
    from conformance.report.signatures import signature

    bug = _bug(entry["signature"])
    mismatches = result.mismatches if result else []
    return [m for m in mismatches if _bug(signature(m, result.program, result.schedule)) == bug]


def _baseline_status(records: list[dict], baseline: dict | None) -> list[dict]:
    """Triage against the previous night: still there (same bug as a baseline entry), else
    known (in known_issues.toml) or new."""
    before = {_bug(m["signature"]) for m in (baseline or {}).get("mismatches", [])}
    for r in records:
        if _bug(r["signature"]) in before:
            r["status"] = "still there"
        else:
            r["status"] = "known" if r.get("known") else "new"
    return records


def _unseen(baseline: dict, records: list[dict]) -> list[dict]:
    """The baseline's mismatches whose signature tonight did not report. By signature, not by
    class: one class can be two bugs, and a bug fixed beside another of its class would never
    be reported fixed."""
    seen = {r["signature"] for r in records}
    return [m for m in baseline["mismatches"] if m["signature"] not in seen]


def _replay_unseen(baseline: dict, records: list[dict], spec: str) -> tuple[list[str], list[str]]:
    """Baseline bugs not hit tonight: replay each recorded program; (fixed, still reproducing).
    Not hitting a bug in one night's budget does not make it fixed."""
    from conformance import serialize
    from conformance.backends import get
    from conformance.check import run_example

    unseen = _unseen(baseline, records)
    if not unseen:
        return [], []
    backend = get(spec)
    fixed, still = [], []
    for m in unseen:
        if not m.get("program"):
            continue
        program, schedule = serialize.decode(m["program"]), serialize.decode(m["schedule"])
        (still if _shows(m, run_example(program, backend, schedule)) else fixed).append(m["signature"])
    return fixed, still


def load_baseline(path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"baseline {path} is not a readable summary.json ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("mismatches"), list):
        raise ValueError(f"baseline {path} is not a gradmode-conformance summary.json (no 'mismatches' list)")
    return data


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM as a flag that the parent's loop reads, while the block runs.

    The first one stops the night: the workers are stopped and the reports written. A
    KeyboardInterrupt raised wherever the signal lands could leave a lock held (the stop
    Event's, between its acquire and the `with` block) or a worker just spawned untracked,
    and the parent running (CI at ba661bd, once; inferred). SIGTERM is what a CI runner sends a job it
    cancels or times out, a few seconds before SIGKILL. A second signal acts as usual:
    quit at once, without reports. A SIGINT ignored when the block starts (a background
    job of a shell) stays ignored.
    """

    def __init__(self):
        self.received: str | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():  # elsewhere signals cannot be set
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum, frame) -> None:
        self.received = signal.Signals(signum).name
        for sig, handler in self._previous.items():
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else handler)


def run_fuzz(cfg: FuzzConfig, out=sys.stdout) -> int:
    with StopSignals() as stopped:
        return _run_fuzz(cfg, out, stopped)


def _run_fuzz(cfg: FuzzConfig, out, stopped: StopSignals) -> int:
    from conformance.report.write import write_run

    baseline = load_baseline(cfg.baseline)
    folder = Path(cfg.report_dir)
    findings = folder / "findings"
    import shutil

    shutil.rmtree(findings, ignore_errors=True)
    findings.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("spawn")  # a fresh interpreter per worker: no state shared through fork
    messages = ctx.Queue()
    stop = ctx.Event()
    start = time.time()
    deadline = start + cfg.seconds
    workers = [WorkerState(i) for i in range(cfg.workers)]
    signatures: dict[str, str | None] = {}
    crash_records: list[dict] = []
    unshrunk: Counter = Counter()
    behind: defaultdict = defaultdict(Counter)  # outcome -> class -> shrinks
    events: list[dict] = []  # every incarnation's ClassLog events, shared through CLASS_LOG
    saturated: dict[str, dict] = {}  # construct -> when and why a worker stopped drawing it
    progress = cfg.progress if cfg.progress is not None else out.isatty()
    # A worker's budget of examples is its share of --max-examples.
    share = None if cfg.max_examples is None else max(1, cfg.max_examples // cfg.workers)

    def launch(w: WorkerState):
        wcfg = FuzzConfig(**{**asdict(cfg), "max_examples": None if share is None else max(0, share - w.examples)})
        w.process = ctx.Process(target=worker_main, args=(wcfg, w.id, w.restarts, messages, stop, start),
                                name=f"conformance-fuzz-{w.id}", daemon=True)
        w.process.start()
        w.constructs.update(w.constructs_now)  # what a dead or recycled incarnation had counted
        w.constructs_now = {}
        w.spent.update(w.spent_now)
        w.spent_now = {}
        w.examples_now = 0
        w.last_beat = time.monotonic()

    def drain(timeout=0.2):
        try:
            msg = messages.get(timeout=timeout)
        except queue_mod.Empty:
            return
        before = len(events)
        while True:
            kind, wid = msg[0], msg[1]
            w = workers[wid]
            w.last_beat = time.monotonic()
            if kind in ("beat", "exit"):
                w.examples += msg[2] - w.examples_now
                w.examples_now = msg[2]
                w.peak_rss_mb = max(w.peak_rss_mb, msg[3])
                w.constructs_now = msg[4]
                w.spent_now = msg[5]
                if kind == "exit":
                    w.finished = msg[6]
                    w.constructs.update(w.constructs_now)
                    w.constructs_now = {}
                    w.spent.update(w.spent_now)
                    w.spent_now = {}
            elif kind == "finding":
                signatures[msg[2]] = msg[3]
            elif kind == "unshrunk":
                unshrunk[msg[2]] += 1
            elif kind == "behind":
                behind[msg[3]][msg[2]] += 1
            elif kind == "class":
                events.append(msg[2])
            elif kind == "saturated":  # the first worker (incarnation) to find it so
                saturated.setdefault(msg[2], {"worker": wid, **msg[3], "drawn_after": 0})
            elif kind == "drawn after saturated":  # by each incarnation, after it found it so
                for c, n in msg[2].items():
                    if c in saturated:
                        saturated[c]["drawn_after"] += n
            try:
                msg = messages.get_nowait()
            except queue_mod.Empty:
                break
        if len(events) > before:
            write_atomic(findings / CLASS_LOG, json.dumps(events))

    def total() -> int:
        return sum(w.examples for w in workers)

    def show():
        if progress:
            left = max(0, deadline - time.time())
            rate = total() / max(1e-9, time.time() - start)
            out.write(f"\r{total()} examples, {rate:.1f}/s, {len(signatures)} signatures "
                      f"({sum(1 for k in signatures.values() if k is None)} new), {left:.0f} s left   ")
            out.flush()

    for w in workers:
        launch(w)
    try:
        while any(w.process is not None for w in workers) and not stopped.received:
            drain()
            show()
            now = time.time()
            for w in workers:
                p = w.process
                if p is None:
                    continue
                stuck = time.monotonic() - w.last_beat > cfg.example_timeout * 2 + 30
                if p.is_alive() and not stuck:
                    continue
                if p.is_alive():  # stuck where SIGALRM cannot reach: kill, report as a hang
                    p.kill()
                    p.join()
                    crash_records.append(_crash_record(cfg, w.id, "no progress; worker killed",
                                                       HANG_SIGNATURE, now - start, total()))
                else:
                    p.join()
                    drain(0.05)
                    finished = getattr(w, "finished", None)
                    if p.exitcode != 0 and finished is None:
                        w.crashes += 1
                        why = f"worker died with exit code {p.exitcode}" + (
                            f" (signal {-p.exitcode})" if p.exitcode < 0 else "")
                        crash_records.append(_crash_record(cfg, w.id, why, CRASH_SIGNATURE, now - start, total()))
                w.process = None
                done = getattr(w, "finished", None) == "done"
                w.finished = None
                budget_left = share is None or w.examples < share
                if not done and not stop.is_set() and not stopped.received and now < deadline and budget_left:
                    w.restarts += 1
                    launch(w)
            if now >= deadline + cfg.grace:
                break  # shrinking in flight past the grace period: its raw record is saved
            if now >= deadline:
                stop.set()
        if stopped.received:  # the workers finish their example and exit; 3 s, then they are killed
            print(f"{stopped.received}: stopping the workers, then writing the reports (again: quit at once)",
                  file=sys.stderr, flush=True)
            stop.set()
            t_end = time.time() + 3
            while time.time() < t_end and any(w.process is not None and w.process.is_alive() for w in workers):
                drain(0.1)
    finally:
        stop.set()
        for w in workers:
            if w.process is not None and w.process.is_alive():
                w.process.terminate()
                w.process.join(1)
                if w.process.is_alive():
                    w.process.kill()
        drain(0.05)
    if progress:
        out.write("\n")
    interrupted = stopped.received is not None
    seconds = time.time() - start
    crashes: dict[str, dict] = {}
    for r in crash_records:  # a worker that dies on every example is one signature, many hits
        crashes[r["signature"]] = merge_pair(crashes[r["signature"]], r) if r["signature"] in crashes else r
    records = merge(findings) + list(crashes.values())
    for r in records:
        r["unshrunk_hits"] = unshrunk.get(r.get("class", ""), 0)
    records = _baseline_status(records, baseline)
    from conformance import __version__
    from conformance.backends import get

    try:
        versions = {"python": sys.version.split()[0], "gradmode-conformance": __version__, **get(cfg.backend).versions()}
    except Exception:
        versions = {}
    fixed, replayed, not_replayed = [], [], []
    if baseline is not None and interrupted:  # replaying takes up to a minute; Ctrl-C promises seconds
        not_replayed = [m["signature"] for m in _unseen(baseline, records)]
    elif baseline is not None:
        fixed, replayed = _replay_unseen(baseline, records, cfg.backend)
    extra = {"workers": [{"id": w.id, "examples": w.examples, "peak_rss_mb": round(w.peak_rss_mb, 1),
                          "restarts": w.restarts, "crashes": w.crashes,
                          "seconds": {k: round(v, 1) for k, v in (w.spent + Counter(w.spent_now)).items()}}
                         for w in workers],
             "fixed_since_baseline": fixed, "still_there_on_replay": replayed, "interrupted": interrupted,
             "baseline_not_replayed": not_replayed,  # after Ctrl-C: neither fixed nor still there
             "construct_examples": dict(sum((w.constructs + Counter(w.constructs_now) for w in workers), Counter())),
             "unshrunk_hits": dict(unshrunk),
             # Constructs nearly all of whose programs ended in an exception found before: when,
             # and how many programs used them after that (none, unless --keep-saturated).
             "saturated_constructs": saturated,
             # Classes shrunk for a mismatch behind a reported bug's: reported where the reduced
             # program showed it first, else not (maybe a consequence of the reported bug).
             "shrunk_behind": {outcome: dict(c) for outcome, c in behind.items()}}
    index = write_run(folder, backend_name=cfg.backend, seed=cfg.seed, command=cfg.command, examples=total(),
                      seconds=round(seconds, 1), versions=versions, records=records, extra=extra)
    print_table(records, fixed, total(), seconds, index, out)
    if replayed:
        out.write(f"{len(replayed)} earlier signature(s) not hit tonight still reproduce when replayed\n")
    if not_replayed:
        out.write(f"{len(not_replayed)} earlier signature(s) not hit tonight were not replayed: interrupted\n")
    new = [r for r in records if r["status"] == "new"]
    return 1 if new else 0


def print_table(records: list[dict], fixed: list[str], examples: int, seconds: float, index: Path, out) -> None:
    from conformance.text import printable

    out.write(f"{examples} examples in {seconds:.0f} s; {len(records)} signature(s)\n")
    for r in records:
        out.write(f"  {r['status']:<12} {r['statements']:>2} stmts  {printable(r['signature'])}\n")
    for sig in fixed:
        out.write(f"  {'fixed':<12}          {printable(sig)}\n")
    out.write(f"report: {index}\n")
