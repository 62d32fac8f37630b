"""The programs a night worker runs as they are, not shrunk: the probes that open a night
(generators.probes), the sweep (generators.sweep) and the previous night's repros (the
baseline). Each is small enough to be its own repro; a probe that is not is taken apart into
programs that are. A mixin of night.worker.Worker, whose running and recording it uses."""

from __future__ import annotations

import time

from conformance.night.messages import Hit


class AsTheyAre:
    """Runs programs that need no shrinking and records what they show (night.worker.Worker)."""

    def sweep(self, programs) -> None:
        """Small programs, recorded as they are: each has one to four statements."""
        t0 = time.time()
        for program, schedule in programs:
            if self.over():
                break
            result = self.timed_run(program, schedule)
            if result.mismatches:
                self.keep_small(result)
        self.spent["sweeping small programs"] += time.time() - t0

    def keep_small(self, result) -> None:
        """Record a small program's result as it is, led by its first class. A class is recorded
        again where its program is another known issue, or none where the class's records are
        all known ones (one symptom can be two bugs: a new bug with a known bug's symptom is
        new), once per class and known issue."""
        from conformance.engine import finding_of
        from conformance.oracles.mismatch import class_key

        key = class_key(result.mismatches[0])
        finding = finding_of(result, self.backend.name, self.issues)
        known = finding.known.id if finding.known else None
        if self.settled.has(key, known):
            self.outbox.put(Hit(self.wid, key))
            return
        self.first_seen.setdefault(key, (self.run.misses, self.seconds()))
        self.record(result, key, shrunk=True, finding=finding)

    def probe(self, probes) -> None:
        """The night's first programs (generators.probes): a construct's program is a repro as it
        is; a batch that differs is taken apart into the one-op program of each class it shows
        (the op of the value that differs first, then each op in turn). A class that no one-op
        program shows (ops that act on each other) is left for the last pass, as a class met
        while another one shrank."""
        from conformance.engine import focus
        from conformance.oracles.mismatch import class_key

        t0 = time.time()
        for probe in probes:
            if self.over():
                break
            result = self.timed_run(probe.program, probe.schedule)
            if not result.mismatches:
                continue
            if not probe.parts:
                self.keep_small(result)
                continue
            seen, done = (self.run.misses, self.seconds()), set()
            for m in result.mismatches:
                key = class_key(m)
                if key in done or self.is_settled(key):
                    continue
                done.add(key)
                self.first_seen.setdefault(key, seen)
                part = probe.part_for(m)  # first: the op of the value that differs
                for program in sorted(probe.parts, key=lambda q: q is not part):
                    single = self.timed_run(program, probe.schedule)
                    if any(class_key(x) == key for x in single.mismatches):
                        self.keep_small(focus(single, lambda k, key=key: k != key))
                        break
                else:
                    self.unshrunk.setdefault(key, (focus(result, lambda k, key=key: k != key), seen))
        self.spent["probing each construct and op"] += time.time() - t0

    def replay_baseline(self, entries: list[dict]) -> None:
        """The previous night's repros, this worker's share, on the backend: a bug still there
        is reported in seconds, and its class is settled where its repro is short."""
        from conformance.engine import finding_of, focus
        from conformance.night.baseline import shows
        from conformance.oracles.mismatch import class_key
        from conformance.serialize import decode

        t0 = time.time()
        for entry in entries:
            if self.over():
                break
            if not entry.get("program") or entry.get("oracle") in ("crash", "hang"):  # not run again here
                continue
            result = self.timed_run(decode(entry["program"]), decode(entry["schedule"]))
            hits = shows(entry, result)
            if hits:
                key = class_key(hits[0])
                self.first_seen.setdefault(key, (self.run.misses, self.seconds()))
                lead = focus(result, lambda k: k != key)
                self.record(lead, key, shrunk=True, finding=finding_of(lead, self.backend.name, self.issues))
        self.spent["replaying the baseline"] += time.time() - t0
