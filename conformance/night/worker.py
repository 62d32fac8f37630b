"""One worker process of a night: search, shrink, record, until the night or its budget ends.

First, once (night.as_they_are): the previous night's repros (--baseline), then the probes
(generators.probes): each grad-mode construct alone and the grad-mode boundary of every op,
in batches, so that a fault of a grad-mode part shows in the night's first seconds. Then the
loop, per round:
1. search: one Hypothesis run of `chunk` random examples (a seed of its own per round). An
   example fails on its first mismatch of a class not yet settled (`focus`); Hypothesis
   shrinks each such class within the shrink budget, the last pass (engine.reduce_finding)
   finishes it, and the finding is recorded; a class met only while another one shrank gets
   the last pass alone, from the program it was met in;
2. sweep: as many programs of this worker's share of the sweep (generators.sweep) as the search
   ran, small enough to be repros as they are, recorded without shrinking.
A class is settled once some worker recorded a repro of it of at most MAX_STATEMENTS
statements, or shrank it `shrinks_per_class` times: its later hits are counted, not shrunk,
but for a few that no recorded repro of the class explains (night.settled): those get a second
look, a bounded last pass, and are recorded where they turn out to be another bug.
Random programs come first in every round: the sweep's one-op programs cannot show a fault of
grad-mode handling, which needs a grad-mode construct.

Nothing found is lost: a failure is written raw (`shrunk: false`) before it is shrunk, and
the example running is in current.json, where the supervisor finds it if the worker dies.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from collections import Counter
from pathlib import Path

from conformance.night.as_they_are import AsTheyAre
from conformance.night.config import NightConfig
from conformance.night.database import open_database
from conformance.night.messages import Beat, Exit, Hit, Needs, Shrunk
from conformance.night.settled import Settled
from conformance.report.records import write_atomic


# Second looks at hits of settled classes: at most this many per class and incarnation, with a
# last pass of at most LOOK_CALLS runs, in at most LOOK_SHARE of the worker's runs. The last
# passes of classes met only while another shrank (shrink_the_unshrunk) have a share of their
# own: sharing one, they took it all, and a 10-minute night made no second look at all.
LOOKS_PER_CLASS = 8
LOOK_CALLS = 60
LOOK_SHARE = 0.1
UNSHRUNK_SHARE = 0.1


class ExampleTimeout(BaseException):
    """An example ran past --example-timeout (raised by SIGALRM, caught by the worker)."""


def _on_alarm(signum, frame):
    raise ExampleTimeout()


def rss_mb(pid: int | None = None) -> float:
    """This process's peak resident memory in MB; another's, current, where `pid` is given."""
    if pid is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):  # gone, or no /proc here
        return 0.0
    return pages * resource.getpagesize() / 2**20


def output_log(cfg: NightConfig, wid: int, incarnation: int) -> Path:
    """Where a worker's stdout and stderr go: a backend's prints and a worker's last traceback."""
    return Path(cfg.report_dir) / "findings" / f"w{wid}" / f"output-{incarnation}.log"


def _to_log(path: Path) -> None:
    # At the descriptor level, so that output written from C lands there too.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for stream in (1, 2):
        os.dup2(fd, stream)
    os.close(fd)


def worker_main(cfg: NightConfig, wid: int, incarnation: int, outbox, inbox, stop, start: float,
                shrunk: list[Shrunk], swept: int = 0) -> None:
    """The entry point of a worker process (spawned: a fresh interpreter)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when to stop
    signal.signal(signal.SIGALRM, _on_alarm)
    _to_log(output_log(cfg, wid, incarnation))
    Worker(cfg, wid, incarnation, outbox, inbox, stop, start, shrunk, swept).main()


class Worker(AsTheyAre):
    def __init__(self, cfg: NightConfig, wid: int, incarnation: int, outbox, inbox, stop, start: float,
                 shrunk: list[Shrunk], swept: int = 0):
        from conformance import known_issues
        from conformance.backends import get
        from conformance.check import run_example
        from conformance.shrinking import Memo

        self.cfg, self.wid, self.incarnation = cfg, wid, incarnation
        self.outbox, self.inbox, self.stop, self.start = outbox, inbox, stop, start
        self.backend = get(cfg.backend)
        self.backend.spec = cfg.backend
        self.issues = known_issues.holding(known_issues.load(cfg.known_issues or known_issues.PATH), self.backend)
        self.folder = Path(cfg.report_dir) / "findings" / f"w{wid}"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.current = self.folder / "current.json"
        self.db = open_database(cfg.db, self.folder)  # once: a Redis lost stays lost for the night
        self.deadline = start + cfg.seconds
        self.budget = cfg.share(wid)
        self.run = Memo(run_example)
        self.settled = Settled(cfg.shrinks_per_class)
        self.first_seen: dict[str, tuple[int, float]] = {}  # class -> (examples, seconds)
        self.looks: Counter = Counter()  # second looks per class
        self.look_runs = 0  # runs of second looks
        self.unshrunk_runs = 0  # runs of the last passes of shrink_the_unshrunk
        self.to_look: list = []  # (class, result, seen) of settled classes, for after the search round
        # Classes met only while Hypothesis shrank another (saved raw): class -> (result, seen).
        self.unshrunk: dict = {}
        self.constructs: Counter = Counter()  # examples per construct, for the conformance matrix
        self.spent: Counter = Counter()  # seconds per activity
        self.last_beat = 0.0
        self.swept = swept  # sweep programs run by this worker's earlier incarnations and this one
        for s in shrunk:
            self.settled.learn(s)
        self.beat(force=True)  # started: from now on, silence means stuck

    # ------------------------------------------------------------------ the loop

    def main(self) -> None:
        from conformance.generators.sweep import sweep_examples

        if self.cfg.baseline is not None and self.incarnation == 0:
            from conformance.night.baseline import load_baseline

            self.replay_baseline(self.mine(load_baseline(self.cfg.baseline)["mismatches"]))
        if self.cfg.sweep and self.incarnation == 0:
            from conformance.generators.probes import probes

            self.probe(self.mine(probes()))
        # A recycled or restarted incarnation goes on with the sweep where the last one was.
        sweep = self.mine(sweep_examples()) if self.cfg.sweep else []
        round_, swept = 0, self.swept
        while not self.over():
            before = self.run.misses
            self.search(round_)
            # As many sweep programs as the round ran examples (shrinking included): half the
            # night's runs until the sweep is done, counted in runs, so a seed gives the same night.
            n = max(self.cfg.chunk, self.run.misses - before)
            self.sweep(sweep[swept:swept + n])
            round_, swept = round_ + 1, min(len(sweep), swept + n)
            self.swept = swept
            self.beat(force=True)
        self.current.unlink(missing_ok=True)
        self.outbox.put(Exit(self.beat_message(), self.why_over()))

    def mine(self, items: list) -> list:
        """This worker's share of a list that the night's workers (of every shard) divide."""
        if self.cfg.shard is not None:
            items = self.cfg.shard.pick(items)
        return items[self.wid::self.cfg.workers]

    def over(self) -> bool:
        return self.why_over() is not None

    def why_over(self) -> str | None:
        n = self.run.misses
        if self.stop.is_set() or time.time() >= self.deadline or (self.budget is not None and n >= self.budget):
            return "done"
        if n >= self.cfg.recycle_after or rss_mb() > self.cfg.max_rss_mb:
            return "recycle"  # thunder keeps caches per jitted function: a fresh process frees them
        return None

    # ------------------------------------------------------------------ what others found

    def read_inbox(self) -> None:
        import queue

        while True:
            try:
                self.settled.learn(self.inbox.get_nowait())
            except queue.Empty:
                return

    def is_settled(self, key) -> bool:
        return key in self.settled

    # ------------------------------------------------------------------ running examples

    def beat_message(self) -> Beat:
        return Beat(self.wid, self.run.misses, rss_mb(), dict(self.constructs), dict(self.spent), self.swept)

    def beat(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_beat > 1.0:
            self.last_beat = now
            self.outbox.put(self.beat_message())

    def timed_run(self, program, schedule):
        """The example's Result; a hang's Result where it runs past --example-timeout."""
        from conformance.generators.schedules import caller_constructs
        from conformance.program import constructs
        from conformance.serialize import encode

        self.beat()
        write_atomic(self.current, json.dumps({"program": encode(program), "schedule": encode(schedule)}))
        before = self.run.misses
        signal.setitimer(signal.ITIMER_REAL, self.cfg.example_timeout)
        try:
            result = self.run(program, self.backend, schedule)
        except ExampleTimeout:
            return self.hung(program, schedule)
        except Exception:  # the harness failed: where torch itself no longer works, say so
            self.exit_if_torch_broken()
            raise
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if self.run.misses > before:
            self.constructs.update(constructs(program) | caller_constructs(schedule, program.is_module) or {"plain ops"})
            self.exit_if_torch_broken()
        return result

    def exit_if_torch_broken(self) -> None:
        """After an example that left torch unable to run an op, every later one would fail on
        both sides: the process ends, its current.json (this example) for the supervisor to record."""
        from conformance import grad_mode
        from conformance.night.crash import BROKEN_EXIT

        why = grad_mode.broken()
        if why is not None:
            print(f"torch cannot run an op after this example ({why}); the worker exits", file=sys.stderr, flush=True)
            os._exit(BROKEN_EXIT)

    def hung(self, program, schedule):
        from conformance.check import Result
        from conformance.oracles.mismatch import Mismatch
        from conformance.outcome import SideOutcome
        from conformance.program import render

        return Result(program, schedule, render(program), SideOutcome("eager"), SideOutcome(self.backend.name),
                      [Mismatch("hang", "example timed out", "the whole example", "returned",
                                f"still running after {self.cfg.example_timeout:g} s")])

    def seconds(self) -> float:
        return time.time() - self.start

    # ------------------------------------------------------------------ search and shrink

    def search(self, round_: int) -> None:
        import hashlib

        from hypothesis import HealthCheck, Phase, settings

        from conformance.engine import PHASES, examples, search
        from conformance.shrinking import DEFAULT_SHRINK_CALLS, Budget

        # Hypothesis's database (--db) is replayed once per worker, in its first round.
        phases = [p for p in PHASES if p != Phase.reuse or (round_ == 0 and self.incarnation == 0)]
        s = settings(max_examples=self.cfg.chunk, database=self.db, phases=phases, deadline=None, derandomize=False,
                     report_multiple_bugs=True, print_blob=False, suppress_health_check=list(HealthCheck))
        seed = None
        if self.cfg.seed is not None:  # one seed per (night, shard, worker, incarnation, round)
            shard = f"{self.cfg.shard}:" if self.cfg.shard else ""
            name = f"{self.cfg.seed}:{shard}{self.wid}:{self.incarnation}:{round_}".encode()
            seed = int(hashlib.sha256(name).hexdigest()[:16], 16)
        # Counted in runs only (--shrink-calls without --shrink-seconds), a seeded night is the same
        # on any machine; the deadline still ends it, through check().
        clock = self.cfg.shrink_seconds is not None
        budget = Budget(seconds=self.cfg.shrink_seconds, calls=self.cfg.shrink_calls or DEFAULT_SHRINK_CALLS,
                        run_seconds=max(1.0, self.deadline - time.time()) if clock else None, skip=self.is_settled)
        n0, t0 = self.run.misses, time.time()
        failures = search(examples(small=self.cfg.small_examples), self.check, s, budget, seed,
                          digest=f"fuzz:{self.backend.name}")
        self.spent["searching and shrinking (Hypothesis)"] += time.time() - t0
        t1 = time.time()
        for f in failures:
            self.conclude(f.result, first_seen=(n0, t0 - self.start))
        self.shrink_the_unshrunk()
        self.spent["shrinking (last pass)"] += time.time() - t1
        self.look_again()

    def check(self, program, schedule):
        """What Hypothesis fails on: the example led by its first mismatch of a class not settled.

        While Hypothesis shrinks a class, a candidate counts only for that class: another class
        it shows is saved raw and left for a fresh draw to meet, not shrunk there and then
        (candidates meet many classes, and shrinking each in turn would leave no time to draw
        new programs)."""
        from conformance.engine import focus
        from conformance.oracles.mismatch import class_key
        from conformance.shrinking import shrinking_class

        if self.over():
            return None
        result = self.timed_run(program, schedule)
        self.read_inbox()
        if not result.mismatches:
            return None
        shrinking = shrinking_class()
        if shrinking is not None and any(class_key(m) == shrinking for m in result.mismatches):
            return focus(result, lambda k: k != shrinking)
        lead = focus(result, self.is_settled)
        if lead is None:
            self.outbox.put(Hit(self.wid, class_key(result.mismatches[0])))
            self.queue_a_look(result)
            return None
        key = class_key(lead.mismatches[0])
        self.first_seen.setdefault(key, (self.run.misses, self.seconds()))
        if lead.mismatches[0].oracle == "hang":
            # Not shrunk: each candidate could take the whole timeout.
            self.record(lead, key, shrunk=True)
            return None
        if lead is result and not self.raw_path(key).exists():
            self.record(lead, key, shrunk=False)  # nothing found is lost, even if shrinking never ends
        if shrinking is not None:
            self.unshrunk.setdefault(key, (lead, self.first_seen[key]))
        return None if shrinking is not None else lead

    def queue_a_look(self, result) -> None:
        """Queue a second look at the first class of this hit (all its classes settled) that no
        recorded repro explains (Settled.unexplained)."""
        from conformance.engine import focus

        if self.look_runs > LOOK_SHARE * self.run.misses:  # no look would be made: skip the slicing
            return
        for key in self.settled.unexplained(result):
            queued = sum(k == key for k, _, _ in self.to_look)
            if queued < LOOKS_PER_CLASS and self.may_look(key):
                self.to_look.append((key, focus(result, lambda k: k != key), (self.run.misses, self.seconds())))
                return

    def shrink_the_unshrunk(self) -> None:
        """The last pass (at most LOOK_CALLS runs) on each class met only while Hypothesis shrank
        another one and not recorded shrunk since. Such a class is left for a later draw to meet
        again, and Hypothesis to shrink; a rare one is not met again, and its raw program was
        its repro: 6 to 29 statements in a 10-minute thunder night. These passes take at most
        UNSHRUNK_SHARE of the worker's runs: unbounded, they took half of a night that met many
        classes (226 and 295 s of 600), and it met 27 of the guard's 33 known issues."""
        for key, (result, seen) in list(self.unshrunk.items()):
            if self.over() or self.unshrunk_runs > UNSHRUNK_SHARE * self.run.misses:
                return
            del self.unshrunk[key]
            if not self.is_settled(key):
                n0 = self.run.misses
                self.conclude(result, seen, calls=LOOK_CALLS)
                self.unshrunk_runs += self.run.misses - n0

    def conclude(self, result, first_seen: tuple[int, float], calls: int | None = None) -> None:
        """The last pass on a failure Hypothesis shrank; record it where it shows its class first.

        A class found behind a settled one's mismatch (focus) that the reduced program shows only
        behind it is not recorded: it may be a consequence of that bug, and a false alarm costs
        a compiler engineer an hour."""
        from conformance.engine import finding_of, focus, reduce_finding
        from conformance.oracles.mismatch import class_key
        from conformance.shrinking import Budget

        key = class_key(result.mismatches[0])
        if self.is_settled(key):
            return  # another worker finished it while this one shrank
        calls = min(calls, self.cfg.shrink_calls or calls) if calls else self.cfg.shrink_calls
        budget = Budget(seconds=self.cfg.reduction_seconds(self.deadline), calls=calls)
        finding = reduce_finding(finding_of(result, self.backend.name, self.issues), self.backend, self.issues,
                                 run=lambda p, b, s: self.timed_run(p, s), budget=budget, masked=self.is_settled)
        again = self.timed_run(finding.result.program, finding.result.schedule)
        if not again.mismatches or class_key(again.mismatches[0]) != key:
            self.tell(Shrunk(self.wid, key, str(finding.signature), None, None))
            return
        finding = finding_of(focus(again, lambda k: k != key), self.backend.name, self.issues)
        self.first_seen.setdefault(key, first_seen)
        self.record(finding.result, key, shrunk=True, finding=finding)

    def look_again(self) -> None:
        """The second looks the search round queued, each asked again: an earlier one may
        explain it now."""
        t0 = time.time()
        for key, result, seen in self.to_look:
            if not self.over() and self.may_look(key) and key in self.settled.unexplained(result):
                self.second_look(key, result, seen)
        self.to_look.clear()
        self.spent["second looks"] += time.time() - t0

    def may_look(self, key) -> bool:
        """Whether the looks' budget allows a second look at this class."""
        return (key.oracle != "hang" and self.looks[key] < LOOKS_PER_CLASS  # a hang's candidates could each hang
                and self.look_runs <= LOOK_SHARE * self.run.misses)

    def second_look(self, key, result, seen: tuple[int, float]) -> None:
        """A hit of a settled class in a program that no recorded repro of the class explains:
        its last pass, and a record where the short program is a bug the class has no record of
        (another known issue, or not a known one behind a known one's class), or a shorter repro
        of one it has. As in `conclude`, a class that the short program shows only behind
        another is not recorded: it may be a consequence of that one."""
        from conformance.engine import finding_of, reduce_finding
        from conformance.oracles.mismatch import class_key
        from conformance.program import count_statements
        from conformance.shrinking import Budget

        n0 = self.run.misses
        self.looks[key] += 1
        calls = min(LOOK_CALLS, self.cfg.shrink_calls or LOOK_CALLS)
        budget = Budget(seconds=self.cfg.reduction_seconds(self.deadline), calls=calls)
        finding = reduce_finding(finding_of(result, self.backend.name, self.issues), self.backend, self.issues,
                                 run=lambda p, b, s: self.timed_run(p, s), budget=budget, masked=self.is_settled)
        again = self.timed_run(finding.result.program, finding.result.schedule)
        self.look_runs += self.run.misses - n0
        known = finding.known.id if finding.known else None
        behind = not again.mismatches or class_key(again.mismatches[0]) != key
        if behind or self.settled.has(key, known, count_statements(finding.result.program)):  # recorded, as short
            self.settled.needs[key].add(Needs.of(finding.result.program))
            return
        self.record(finding.result, key, shrunk=True, finding=finding, seen=seen)

    def record(self, result, key, shrunk: bool, finding=None, seen: tuple[int, float] | None = None) -> None:
        from conformance.engine import finding_of
        from conformance.program import count_statements
        from conformance.report.records import record_of, save

        finding = finding or finding_of(result, self.backend.name, self.issues)
        examples, seconds = seen or self.first_seen.get(key, (self.run.misses, self.seconds()))
        rec = record_of(finding, self.backend, examples=examples, seconds=seconds, command=self.cfg.command,
                        seed=self.cfg.seed)
        rec["shrunk"] = shrunk
        if not shrunk:
            write_atomic(self.raw_path(key), json.dumps(rec))
            return
        save(rec, self.folder, "w")
        self.raw_path(key).unlink(missing_ok=True)
        self.unshrunk.pop(key, None)
        known = finding.known.id if finding.known else None
        self.tell(Shrunk(self.wid, key, str(finding.signature), known, count_statements(result.program),
                         Needs.of(result.program)))

    def tell(self, s: Shrunk) -> None:
        self.settled.learn(s)  # at once: the supervisor forwards it to the other workers only
        self.outbox.put(s)

    def raw_path(self, key) -> Path:
        import hashlib

        return self.folder / "raw" / f"{hashlib.sha1(str(key).encode()).hexdigest()[:16]}.json"
