"""The night's parent process: start the workers, watch them, stop them, write the reports.

    supervisor ──spawn──> worker 0..N-1  (night.worker: search, shrink, sweep, record)
        ^   │                 │
        │   └── Shrunk ──> inbox of every other worker (no class shrunk twice over)
        └────── Beat / Shrunk / Hit / Exit ─────┘
    then: merge findings/ -> triage (known issues, baseline) -> repros, HTML, summary.json

What keeps an unattended night going: a worker that dies has the example it was running
(current.json) reported as a crash and is restarted; one that stops beating where SIGALRM
cannot reach is killed and its example reported as a hang; one past --recycle-after examples
or --max-rss-mb exits and is restarted. Ctrl-C or SIGTERM stops the workers and still
writes the reports; a second one quits at once.
"""

from __future__ import annotations

import multiprocessing as mp
import queue as queue_mod
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from conformance.night import forkserver
from conformance.night.config import NightConfig
from conformance.night.crash import BROKEN, BROKEN_EXIT, DIED, FLOOD, OUT_OF_MEMORY, STUCK, RunFailure, crash_record
from conformance.night.messages import Beat, Exit, Hit, Shrunk
from conformance.night.signals import StopSignals
from conformance.night.worker import output_log, rss_mb, worker_main

# What a worker may write to its output (findings/w<N>/output-<incarnation>.log) before it is
# taken for a backend that writes without end, and killed.
MAX_OUTPUT_BYTES = 64 * 2**20
# A worker beats before each example, and an example past --example-timeout is stopped by
# SIGALRM: silence past this (plus the timeout) means it is stuck where SIGALRM cannot reach.
STUCK_MARGIN_S = 5.0
STARTUP_S = 120.0  # importing torch and the backend, before the first beat

@dataclass
class Slot:
    """A worker as the supervisor sees it, over all its incarnations."""

    id: int
    process: mp.process.BaseProcess | None = None
    inbox: object = None
    examples: int = 0  # over every incarnation
    examples_now: int = 0  # of the running one
    peak_rss_mb: float = 0.0
    restarts: int = 0
    crashes: int = 0
    last_beat: float = field(default_factory=time.monotonic)
    finished: str | None = None  # the running incarnation's Exit.why
    started: bool = False  # the running incarnation has beaten once
    swept: int = 0  # where the next incarnation takes up the sweep
    constructs: Counter = field(default_factory=Counter)  # over finished incarnations
    spent: Counter = field(default_factory=Counter)
    now: Beat | None = None  # the running incarnation's last beat
    growth: tuple[float, int] = (0.0, 0)  # its memory (MB) and output (bytes) when last looked at

    def take(self, beat: Beat) -> None:
        self.examples += beat.examples - self.examples_now
        self.examples_now = beat.examples
        self.peak_rss_mb = max(self.peak_rss_mb, beat.rss_mb)
        self.swept = max(self.swept, beat.swept)
        self.now = beat

    def close_incarnation(self) -> None:
        if self.now is not None:
            self.constructs.update(self.now.constructs)
            self.spent.update(self.now.seconds)
        self.now, self.examples_now, self.finished, self.started = None, 0, None, False
        self.growth = (0.0, 0)


def _died(exitcode: int) -> RunFailure:
    if exitcode == BROKEN_EXIT:  # the worker saw torch fail on a plain op after its example
        return RunFailure(*BROKEN, "every op raised after this example; worker restarted")
    return RunFailure(*DIED, f"exit code {exitcode}" + (f" (signal {-exitcode})" if exitcode < 0 else ""))


class Supervisor:
    def __init__(self, cfg: NightConfig, out=None):
        self.cfg, self.out = cfg, out or sys.stdout  # the stream of the call, not of the import
        self.folder = Path(cfg.report_dir)
        self.ctx = forkserver.context(cfg.backend)
        self.messages = self.ctx.Queue()
        self.stop = self.ctx.Event()
        self.slots = [Slot(i) for i in range(cfg.workers)]
        self.shrunk: list[Shrunk] = []  # every class shrunk tonight, for workers (re)started later
        self.signatures: dict[str, str | None] = {}
        self.hits: Counter = Counter()  # later hits of settled classes, per class (as records write it)
        self.only_behind: Counter = Counter()  # classes whose shrunk programs showed them only behind others
        self.crash_records: list[dict] = []
        self.start = time.time()

    # ------------------------------------------------------------------ running

    def run(self, stopped: StopSignals) -> int:
        shutil.rmtree(self.folder / "findings", ignore_errors=True)
        (self.folder / "findings").mkdir(parents=True, exist_ok=True)
        self.start = time.time()
        for slot in self.slots:
            self.launch(slot)
        try:
            self.watch(stopped)
        finally:
            self.stop.set()
            for slot in self.slots:
                if slot.process is not None and slot.process.is_alive():
                    slot.process.terminate()
                    slot.process.join(1)
                    if slot.process.is_alive():
                        slot.process.kill()
            self.drain(0.05)
        if self.progress:
            self.out.write("\n")
        return self.report(interrupted=stopped.received is not None)

    @property
    def progress(self) -> bool:
        return self.cfg.progress if self.cfg.progress is not None else self.out.isatty()

    def launch(self, slot: Slot) -> None:
        slot.close_incarnation()
        slot.inbox = self.ctx.Queue()
        slot.process = self.ctx.Process(
            target=worker_main, name=f"conformance-fuzz-{slot.id}", daemon=True,
            args=(self.cfg, slot.id, slot.restarts, self.messages, slot.inbox, self.stop, self.start, self.shrunk,
                  slot.swept))
        slot.process.start()
        slot.last_beat = time.monotonic()

    def watch(self, stopped: StopSignals) -> None:
        deadline = self.start + self.cfg.seconds
        while any(s.process is not None for s in self.slots) and not stopped.received:
            self.drain()
            self.show(deadline)
            for slot in self.slots:
                if slot.process is not None:
                    self.check(slot, deadline)
            now = time.time()
            if now >= deadline + self.cfg.grace:
                break  # a shrink in flight past the grace period: its raw record is saved
            if now >= deadline:
                self.stop.set()
        if stopped.received:  # the workers finish their example and exit; 3 s, then they are killed
            print(f"{stopped.received}: stopping the workers, then writing the reports (again: kill them now)",
                  file=sys.stderr, flush=True)
            self.stop.set()
            t_end = time.time() + 3
            while time.time() < t_end and not stopped.hurried \
                    and any(s.process is not None and s.process.is_alive() for s in self.slots):
                self.drain(0.1)

    def misbehaving(self, slot: Slot) -> tuple[RunFailure, str] | None:
        """(failure, note) for a live worker to kill: stuck where SIGALRM cannot reach it, past
        twice --max-rss-mb of memory, or writing without end; None if it is well."""
        # Memory and output first: a worker past both limits and silent too is silent because it
        # allocates or writes, and which check sees it first must not depend on the clock. Nor is
        # a silent worker whose memory or output grows since the last look stuck: it is on its way
        # to one of those limits, however slowly a loaded machine lets it go.
        rss = rss_mb(slot.process.pid)
        if rss > 2 * self.cfg.max_rss_mb:
            return RunFailure(*OUT_OF_MEMORY, f"worker past {2 * self.cfg.max_rss_mb} MB; killed"), ""
        log = output_log(self.cfg, slot.id, slot.restarts)
        written = log.stat().st_size if log.exists() else 0
        if written > MAX_OUTPUT_BYTES:
            return RunFailure(*FLOOD, f"worker wrote more than {MAX_OUTPUT_BYTES // 2**20} MB; killed"), str(log)
        grows = rss > slot.growth[0] + 1 or written > slot.growth[1]
        slot.growth = (max(rss, slot.growth[0]), max(written, slot.growth[1]))
        silent = time.monotonic() - slot.last_beat
        if not grows and silent > (self.cfg.example_timeout + STUCK_MARGIN_S if slot.started else STARTUP_S):
            return RunFailure(*STUCK, "no progress where SIGALRM cannot stop it; worker killed"), f"{silent:.0f} s"
        return None

    def check(self, slot: Slot, deadline: float) -> None:
        """Restart a worker that died, misbehaved (hang, memory, output), or asked to be recycled."""
        p = slot.process
        bad = self.misbehaving(slot) if p.is_alive() else None
        if p.is_alive() and bad is None:
            return
        if p.is_alive():
            p.kill()
            p.join()
            slot.examples += 1  # the example it was killed on
            self.crash_records.append(self.crash_record(slot, *bad))
        else:
            p.join()
            self.drain(0.05)
            if slot.finished is None:  # no Exit message: it died (os._exit(0) too), not by its own choice
                slot.crashes += 1
                slot.examples += 1  # the example it died on: a backend that always crashes ends too
                log = output_log(self.cfg, slot.id, slot.restarts)
                self.crash_records.append(self.crash_record(slot, _died(p.exitcode), f"its output: {log}"))
        slot.process = None
        share = self.cfg.share(slot.id)
        if slot.finished != "done" and not self.stop.is_set() and time.time() < deadline \
                and (share is None or slot.examples < share):
            slot.restarts += 1
            self.launch(slot)

    def drain(self, timeout: float = 0.2) -> None:
        try:
            msg = self.messages.get(timeout=timeout)
        except queue_mod.Empty:
            return
        while True:
            self.take(msg)
            try:
                msg = self.messages.get_nowait()
            except queue_mod.Empty:
                return

    def take(self, msg) -> None:
        if isinstance(msg, Exit):
            slot = self.slots[msg.last.worker]
            slot.take(msg.last)
            slot.finished = msg.why
        elif isinstance(msg, Beat):
            self.slots[msg.worker].take(msg)
            self.slots[msg.worker].started = True
        elif isinstance(msg, Shrunk):
            self.shrunk.append(msg)
            if msg.statements is not None:
                self.signatures[msg.signature] = msg.known
            else:
                self.only_behind[str(msg.bug)] += 1
            for slot in self.slots:
                if slot.id != msg.worker and slot.inbox is not None:
                    slot.inbox.put(msg)
        elif isinstance(msg, Hit):
            self.hits[str(msg.bug)] += 1
        worker = msg.last.worker if isinstance(msg, Exit) else msg.worker
        self.slots[worker].last_beat = time.monotonic()  # any message is a sign of life

    def total(self) -> int:
        return sum(s.examples for s in self.slots)

    def show(self, deadline: float) -> None:
        if self.progress:
            left = max(0, deadline - time.time())
            rate = self.total() / max(1e-9, time.time() - self.start)
            new = sum(1 for k in self.signatures.values() if k is None)
            self.out.write(f"\r{self.total()} examples, {rate:.1f}/s, {len(self.signatures)} signatures "
                           f"({new} new), {left:.0f} s left   ")
            self.out.flush()

    def crash_record(self, slot: Slot, failure: RunFailure, note: str) -> dict:
        return crash_record(self.cfg, slot.id, failure, note, time.time() - self.start, self.total())

    # ------------------------------------------------------------------ reporting

    def report(self, interrupted: bool) -> int:
        from conformance.night.summary import finish

        return finish(self, interrupted)
