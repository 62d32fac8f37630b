"""The nightly job's unattended paths, on fast fake backends: a hang, a crash, Ctrl-C,
and triage against a baseline with a persistent database."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from conformance import fuzz as fuzz_mod

ROOT = Path(__file__).resolve().parents[1]


def fuzz(*args, timeout=180, sweep=False, small=False):
    # Without the sweep of one-op programs and with every example full-size, unless a test is
    # about them: the other fake nights' scenarios (seeds, lengths) were chosen under those
    # draws, and a sweep first would find some of their bugs.
    args += (() if sweep else ("--no-sweep",)) + (() if small else ("--no-small-examples",))
    return subprocess.run([sys.executable, "-m", "conformance", "fuzz", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_hanging_example_is_reported_as_a_hang(tmp_path):
    proc = fuzz("--backend", "tests.fake_backends:hangs", "--seconds", "12", "--example-timeout", "1",
                "--shrink-seconds", "2", "--report-dir", str(tmp_path), "--seed", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    oracles = {m["oracle"] for m in summary(tmp_path)["mismatches"]}
    assert "hang" in oracles, proc.stdout


def test_dying_worker_is_reported_as_a_crash_and_restarted(tmp_path):
    proc = fuzz("--backend", "tests.fake_backends:crashes", "--seconds", "15", "--report-dir", str(tmp_path),
                "--seed", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    s = summary(tmp_path)
    crashes = [m for m in s["mismatches"] if m["oracle"] == "crash"]
    assert crashes and "exit code 3" in crashes[0]["summary"]
    assert s["workers"][0]["crashes"] >= 1 and s["workers"][0]["restarts"] >= 1
    repro = (tmp_path / crashes[0]["repro"]).read_text()
    assert "def fn(" in repro or "class Model" in repro  # the example the worker died on


def _records(findings: Path) -> list[Path]:
    """Saved findings, raw (before shrinking) or shrunk; not the worker's current example."""
    return [p for p in findings.glob("**/*.json") if p.name != "current.json"]


def _as_in_a_terminal():
    # A run started by a shell's background job inherits SIGINT ignored, and keeps ignoring
    # it (as Unix tools do): pytest itself may have been started so. Ctrl-C at a terminal
    # reaches a foreground run, whose SIGINT has its default action.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_signal_stops_within_five_seconds_and_keeps_what_was_found(tmp_path, sig):
    # SIGTERM: what a CI runner sends a job it cancels. A baseline bug not hit tonight is not
    # replayed after a stop (replays take up to a minute).
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"mismatches": [{"signature": "outputs.value | x @ never | on", "program": None}]}))
    folder = tmp_path / "night"
    proc = subprocess.Popen([sys.executable, "-m", "conformance", "fuzz", "--backend",
                             "conformance.backends.faulty:perturbs_outputs", "--seconds", "120", "--report-dir",
                             str(folder), "--seed", "3", "--shrink-seconds", "3", "--baseline", str(baseline)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_in_a_terminal)
    deadline = time.time() + 90
    while time.time() < deadline and not _records(folder / "findings"):
        time.sleep(0.5)
    sent = time.time()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert time.time() - sent < 15, "5 s to stop the workers, then the reports are written"
    s = summary(folder)
    assert s["interrupted"] is True
    assert any(m["oracle"] == "outputs" for m in s["mismatches"]), out + err
    assert s["baseline_not_replayed"] == ["outputs.value | x @ never | on"]
    assert (folder / "index.html").exists()


def test_a_stop_signal_sets_a_flag_and_a_second_one_quits_at_once():
    # A KeyboardInterrupt raised wherever the first signal lands could cut a queue message
    # in half and leave the parent blocked; the flag is read by the loop instead.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a foreground run
    with fuzz_mod.StopSignals() as stopped:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert stopped.received == "SIGINT"
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # a second SIGTERM kills
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # Ignored when the run starts (a shell's background job): stays ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with fuzz_mod.StopSignals():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    signal.signal(signal.SIGINT, before)


def test_second_night_reports_still_there_and_finds_it_early(tmp_path):
    db, night1, night2 = tmp_path / "db", tmp_path / "n1", tmp_path / "n2"
    common = ["--backend", "conformance.backends.faulty:perturbs_outputs", "--db", str(db), "--shrink-seconds", "5"]
    first = fuzz(*common, "--seconds", "20", "--report-dir", str(night1), "--seed", "5")
    assert first.returncode == 1, first.stdout + first.stderr
    s1 = summary(night1)
    assert s1["mismatches"] and all(m["status"] == "new" for m in s1["mismatches"])
    second = fuzz(*common, "--seconds", "20", "--report-dir", str(night2), "--seed", "6",
                  "--baseline", str(night1 / "summary.json"))
    s2 = summary(night2)
    statuses = {m["signature"]: m["status"] for m in s2["mismatches"]}
    assert any(v == "still there" for v in statuses.values()), second.stdout
    replayed = [m for m in s2["mismatches"] if m["status"] == "still there"]
    assert min(m["found_after_seconds"] for m in replayed) < 60
    assert second.returncode == (1 if any(v == "new" for v in statuses.values()) else 0)


def test_a_second_night_replays_the_baselines_repros_first(tmp_path):
    # A bug of the baseline that the night's own draws do not make (a look may have found
    # it, and Hypothesis's database holds no look) is reported in the night's first seconds,
    # and its class counts as shrunk: the night shrinks only what is new. Planted fault:
    # without the replay at the start, it is only in `still_there_on_replay`, at the end.
    from conformance import serialize
    from conformance.backends import get
    from conformance.check import run_example
    from conformance.generators.schedules import SINGLE_CALL
    from conformance.program import Assign, Call, Program, TensorInput, count_statements
    from conformance.report.signatures import signature

    spec = "tests.fake_backends:rare_bug"
    program = Program((TensorInput("a", (2,)),), (Assign("t0", Call("hypot", ("a", "a"))),
                                                  Assign("t1", Call("atan2", ("t0", "a"))),
                                                  Assign("t2", Call("cumsum", ("t1",))),
                                                  Assign("t3", Call("flip", ("t2",))),
                                                  Assign("t4", Call("erf", ("t3",)))), ("t4",))
    result = run_example(program, get(spec), SINGLE_CALL)
    sig = signature(result.mismatches[0], program, SINGLE_CALL)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"mismatches": [{"signature": sig, "oracle": result.mismatches[0].oracle,
                                                    "program": serialize.encode(program),
                                                    "schedule": serialize.encode(SINGLE_CALL)}]}))

    def night(folder, *extra) -> dict:
        proc = fuzz("--backend", spec, "--seconds", "15", "--workers", "1", "--shrink-seconds", "3",
                    "--report-dir", str(folder), "--seed", "4", *extra)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        return summary(folder)

    s = night(tmp_path / "n2", "--baseline", str(baseline))
    hit = [m for m in s["mismatches"] if m["signature"] == sig]
    assert hit and hit[0]["status"] == "still there", s["mismatches"]
    assert hit[0]["found_after_seconds"] < 10 and not s["still_there_on_replay"], hit[0]
    events = json.loads((tmp_path / "n2" / "findings" / "classes.json").read_text())
    shrinks = [e for e in events if e["kind"] == "shrink" and sig.startswith(e["class"])]
    assert [e["statements"] for e in shrinks] == [count_statements(program)], shrinks  # the baseline's, only
    # The control: the night's own draws do not make the bug.
    assert not night(tmp_path / "alone")["mismatches"]


def test_a_second_look_tells_two_bugs_of_one_symptom_apart(tmp_path):
    def bugs_per_class(folder, *extra, seconds="60") -> dict[str, set[str]]:
        # --explore 0: second looks at later hits of a class shrunk as found (a night's fuzzing
        # part); 30 s leave no time for them after an exploring part, and with programs that
        # return more values (more classes to shrink) 30 s of fuzzing left 2 s for new programs
        proc = fuzz("--backend", "tests.fake_backends:two_bugs_one_symptom", "--seconds", seconds, "--workers", "1",
                    "--explore", "0", "--shrink-seconds", "5", "--report-dir", str(folder), "--seed", "2", *extra)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        found: dict[str, set[str]] = {}
        for m in summary(folder)["mismatches"]:
            cls, _, used = m["signature"].partition(" @ ")
            if cls.startswith("flags.requires_grad | eager True, backend False"):
                found.setdefault(cls, set()).update(b for b in ("enable_grad", "inplace") if b in used.split())
        return found

    # 90 s: two fresh-clone CIs of 2026-12-06, beside the sweep's fake nights, gave no class
    # both bugs in 60 s (the planted fault keeps 60 s: more shrinks could land on both bugs)
    looks = bugs_per_class(tmp_path / "looks", seconds="90")
    assert any(bugs == {"enable_grad", "inplace"} for bugs in looks.values()), looks
    # Planted fault: without second looks, each class reports one of the two bugs only.
    assert all(len(bugs) == 1 for bugs in bugs_per_class(tmp_path / "no-looks", "--reductions-per-class", "0").values())


def _two_known_bugs(tmp_path) -> Path:
    """A known_issues.toml of two_bugs_one_symptom's two bugs."""
    from conformance.program import GradRegion, Program, TensorInput
    from conformance.serialize import dumps

    program = dumps(Program((TensorInput("a", (2,), requires_grad=True),), (GradRegion("enable_grad", ()),), ("a",)))
    entry = ("[[issue]]\nid = '{0}'\ntitle = '{0}'\noracle = 'flags'\nbackends = ['*']\n"
             "signatures = ['flags.requires_grad | eager True, backend False | first call @ {1}']\n"
             "program = '{2}'\n\n")
    known = tmp_path / "known_issues.toml"
    known.write_text(entry.format("enable-grad-bug", "*enable_grad*", program)
                     + entry.format("inplace-bug", "*inplace*", program))
    return known


def test_a_hit_that_names_a_known_issue_no_class_met_gets_a_look_for_it(tmp_path):
    # Two known bugs with one symptom (requires_grad True vs False). While exploring, a
    # class is saved once and its later hits are only counted, so the bug that did not
    # find the class is met only as such a hit: one whose signature names its issue.
    known = _two_known_bugs(tmp_path)
    cls = "flags.requires_grad | eager True, backend False | first call"

    def night(folder, *extra) -> tuple[set, set, set]:
        """The issues the class was found as, those that looks for an issue no repro showed
        yet reduced its hits to (while exploring or fuzzing: how far a 60 s night explores
        depends on the machine's speed), and those reported for it."""
        proc = fuzz("--backend", "tests.fake_backends:two_bugs_one_symptom", "--seconds", "60", "--workers", "1",
                    "--shrink-seconds", "5", "--report-dir", str(folder), "--seed", "3",
                    "--known-issues", str(known), *extra)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        events = [e for e in json.loads((folder / "findings" / "classes.json").read_text()) if e["class"] == cls]
        found = {e.get("issue") for e in events if e["kind"] == "found"}
        looked = {e["issue"] for e in events if e["kind"] == "look" and e.get("looked_for") == e["issue"]}
        reported = {m["known_issue"] for m in summary(folder)["mismatches"] if m["signature"].startswith(cls)}
        return found, looked, reported

    found, looked, reported = night(tmp_path / "looks")
    assert reported == {"enable-grad-bug", "inplace-bug"}, reported
    # A look for the issue that no repro showed yet gave a repro of it.
    assert looked and looked <= reported, (found, looked)
    # Planted fault: without looks, the hits of the issue that did not find the class are counted only.
    found, looked, reported = night(tmp_path / "no-looks", "--reductions-per-class", "0")
    assert not looked and len(reported) == 1, (looked, reported)


def test_a_class_shrunk_to_another_issue_than_its_first_hit_gets_a_look_for_that_issue(tmp_path):
    # A class is one symptom: found as one known issue (its first hit classified so), it can
    # shrink to another of the same symptom. The issue it was found as then has no repro;
    # its first hit gets a look for it, in the replay that shrank the class (nights 48-53
    # lost seven issues found while exploring so). The backend has only the in-place bug, so
    # the class always shrinks to it: with both bugs, where a shrink ended depended on its
    # budget (1 s and 5 s ended in-place, 3 s enable_grad) and so on the machine's load, and
    # a fresh-clone CI failed. Seed 2: the first hit uses both constructs, classified as the
    # enable_grad issue. Fails on the code before (checked):
    # looks for an issue came only at later hits, never in a replay.
    known = _two_known_bugs(tmp_path)
    folder = tmp_path / "night"
    proc = fuzz("--backend", "tests.fake_backends:inplace_bug_only", "--seconds", "60", "--workers", "1",
                "--shrink-seconds", "5", "--report-dir", str(folder), "--seed", "2", "--known-issues", str(known))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    cls = "flags.requires_grad | eager True, backend False | first call"
    events = [e for e in json.loads((folder / "findings" / "classes.json").read_text()) if e["class"] == cls]
    found = next(e["issue"] for e in events if e["kind"] == "found")
    shrunk = next(e["issue"] for e in events if e["kind"] == "shrink")
    assert (found, shrunk) == ("enable-grad-bug", "inplace-bug"), events  # the scenario
    assert any(e["kind"] == "look" and e["during"] == "replay" and e["looked_for"] == e["issue"] == found
               for e in events), events
    assert {m["known_issue"] for m in summary(folder)["mismatches"] if m["signature"].startswith(cls)} == {
        "enable-grad-bug", "inplace-bug"}


def test_a_mismatch_behind_a_reported_bug_is_shrunk_and_reported_only_where_it_shows_alone(tmp_path):
    def night(backend, folder):
        # --explore 0: the mismatch behind a class shrunk as found (a night's fuzzing part).
        # Seed 7: with the draws of 627cb89, seed 4's consequence night shrank nothing behind
        # another class in 40 s (the fresh-clone CI failed on it); of seeds 4-8, run two at a
        # time, 5, 6 and 7 did (7 in two runs of two), 4 and 8 did not.
        proc = fuzz("--backend", f"tests.fake_backends:{backend}", "--seconds", "40", "--workers", "1",
                    "--explore", "0", "--shrink-seconds", "5", "--report-dir", str(folder), "--seed", "7")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        s = summary(folder)
        return s["shrunk_behind"], {m["signature"].split(" | ")[0] for m in s["mismatches"]}

    # Its own bug: reduced to a program without `.detach()`, where it shows first.
    behind, oracles = night("hides_a_bug", tmp_path / "bug")
    assert "flags.requires_grad" in oracles and "outputs.value" in oracles
    # A consequence: shrunk, and not reported, since it never shows without the first bug.
    # Planted fault: reporting every mismatch shrunk behind another reports it.
    behind, oracles = night("hides_a_consequence", tmp_path / "consequence")
    assert behind.get("not shown alone"), behind
    # The consequence's own symptoms, only ever behind the first bug's, are not reported.
    assert "outputs.structure" in oracles and not any(o.startswith(("flags.", "gradients.")) for o in oracles), oracles


def test_the_class_log_counts_every_incarnations_shrinks_and_looks(tmp_path):
    from conformance.fuzz import CLASS_LOG, ClassLog, read_events

    events = [{"by": "0.0", "class": "a", "kind": "shrink", "statements": 9, "constructs": ["inplace"]},
              {"by": "1.0", "class": "a", "kind": "shrink", "statements": None, "constructs": None},
              {"by": "1.0", "class": "b", "kind": "shrink", "statements": 3, "constructs": ["no_grad"]},
              {"by": "0.1", "class": "a", "kind": "look", "statements": 2, "constructs": ["enable_grad"]}]
    (tmp_path / CLASS_LOG).write_text(json.dumps(events))
    log = ClassLog(read_events(tmp_path, but="1.0"))
    assert log.shrinks == {"a": 1} and log.looks == {"a": 1} and log.smallest == {"a": 9}
    assert log.needs["a"] == [frozenset({"inplace"}), frozenset({"enable_grad"})]  # a look's repro counts too
    assert not log.done("a", shrinks_per_class=3, max_statements=4)
    everyone = ClassLog(read_events(tmp_path, but=""))
    assert everyone.done("b", shrinks_per_class=3, max_statements=4)  # small enough
    assert not everyone.done("a", shrinks_per_class=3, max_statements=4)
    assert everyone.done("a", shrinks_per_class=2, max_statements=4)  # out of shrinks
    # shrunk once, and shown only behind a reported class: not shrunk again
    everyone.add({"by": "1.0", "class": "c", "kind": "shrink", "statements": None, "constructs": None})
    assert everyone.done("c", shrinks_per_class=3, max_statements=4)
    assert read_events(tmp_path / "missing", but="") == []


def test_the_class_log_says_who_found_a_class_first_and_which_wait_for_their_shrink():
    from conformance.fuzz import ClassLog

    log = ClassLog([
        {"by": "1.0", "class": "c", "kind": "found", "seconds": 9.0, "examples": 40, "issue": "known-x"},
        {"by": "0.1", "class": "c", "kind": "found", "seconds": 4.0, "examples": 20, "issue": "known-x"},
        {"by": "1.0", "class": "d", "kind": "found", "seconds": 5.0, "examples": 30, "issue": "known-y"},
        {"by": "1.0", "class": "e", "kind": "found", "seconds": 6.0, "examples": 31, "issue": None},
        {"by": "0.1", "class": "b", "kind": "shrink", "statements": 2, "constructs": [], "issue": "known-x"}])
    assert log.finder("c") == "0" and log.finder("d") == "1" and log.finder("b") is None  # first found shrinks
    assert log.found["c"] == (4.0, "0.1", 20) and log.shrinks["c"] == 0  # found is not shrunk
    # c is known-x, which b has a repro of: its shrink waits; d's issue and e (unknown) do not
    assert log.covered("c") and not log.covered("d") and not log.covered("e")
    # f, found after d as the same known issue, waits for d's repro
    log.add({"by": "0.2", "class": "f", "kind": "found", "seconds": 7.0, "examples": 35, "issue": "known-y"})
    assert log.covered("f") and not log.covered("d")
    # what worker 1 shrinks after exploring: the new bug, then known-y's first class, then variants
    log.add({"by": "1.0", "class": "g", "kind": "found", "seconds": 8.0, "examples": 36, "issue": "known-y"})
    log.add({"by": "1.0", "class": "h", "kind": "found", "seconds": 9.0, "examples": 37, "issue": None})
    assert log.owed("1") == ["e", "h", "d", "g"] and log.owed("0") == ["c", "f"]
    # a look that lands on an issue gives it a repro tonight: d (known-y) is no longer urgent
    log.add({"by": "0.1", "class": "b", "kind": "look", "statements": 3, "constructs": [], "issue": "known-y"})
    assert log.covered("d") and "known-y" in log.repro_of
    # shrunk once, behind another class's mismatch and not shown alone: not owed again
    log.add({"by": "1.0", "class": "e", "kind": "shrink", "statements": None, "constructs": None, "issue": None})
    assert log.owed("1") == ["h", "d", "g"]


def test_a_class_shrunk_without_a_repro_of_its_issue_passes_the_turn_to_the_next_class_of_it():
    # Night 53 found grad-mode-not-written-back-when-call-raises as two classes; the first, shrunk,
    # showed only behind a reported class, and the second waited all night as covered.
    from conformance.fuzz import ClassLog

    log = ClassLog([
        {"by": "0.0", "class": "a", "kind": "found", "seconds": 5.0, "examples": 20, "issue": "known-x"},
        {"by": "0.0", "class": "b", "kind": "found", "seconds": 9.0, "examples": 40, "issue": "known-x"}])
    assert not log.covered("a") and log.covered("b")
    log.add({"by": "0.0", "class": "a", "kind": "shrink", "statements": None, "constructs": None, "issue": None})
    assert not log.covered("b") and log.owed("0") == ["b"]
    # shrunk to another issue: the same
    log.add({"by": "0.0", "class": "c", "kind": "found", "seconds": 12.0, "examples": 50, "issue": "known-x"})
    assert log.covered("c")
    log.add({"by": "0.0", "class": "b", "kind": "shrink", "statements": 3, "constructs": [], "issue": "known-y"})
    assert not log.covered("c")
    # a is lost to known-x (found as it, shrunk, no repro of it): the fuzzer looks for it there
    assert log.lost("a") == log.lost("b") == "known-x" and log.lost("c") is None  # c: not shrunk yet
    # until a class gives the issue its repro
    log.add({"by": "0.0", "class": "c", "kind": "shrink", "statements": 2, "constructs": [], "issue": "known-x"})
    log.add({"by": "0.0", "class": "d", "kind": "found", "seconds": 14.0, "examples": 60, "issue": "known-x"})
    assert log.covered("d") and log.lost("a") is None



def test_a_class_found_behind_others_waits_for_them_to_be_shrunk():
    # Replayed before the classes it was found behind are shrunk, its program fails as one
    # of them (masked while exploring, not in a replay) and Hypothesis drops the entry: the
    # recycling fake night below, with a generator returning more values (tried and
    # reverted), left such a class unshrunk in 3 of 3 runs, and in 0 of 2 with the wait.
    # Planted fault: waits_for always False (checked: this test fails).
    from conformance.fuzz import ClassLog

    log = ClassLog([
        {"by": "0.0", "class": "m", "kind": "found", "seconds": 1.0, "examples": 1},
        {"by": "0.0", "class": "n", "kind": "found", "seconds": 2.0, "examples": 2},
        # k: its program also showed m (found before, so masked then) and z (found after)
        {"by": "0.2", "class": "k", "kind": "found", "seconds": 3.0, "examples": 3, "alongside": ["m", "z"]},
        {"by": "0.3", "class": "z", "kind": "found", "seconds": 4.0, "examples": 4, "alongside": ["k"]}])
    owed = log.owed("0")
    assert owed == ["m", "n", "k", "z"]
    assert log.waits_for("k", owed) and log.waits_for("z", owed)  # z waits for k
    assert not log.waits_for("m", owed) and not log.waits_for("n", owed)
    log.add({"by": "0.4", "class": "m", "kind": "shrink", "statements": 2, "constructs": [], "issue": None})
    owed = log.owed("0")
    assert owed == ["n", "k", "z"] and not log.waits_for("k", owed)  # m is shrunk: k's turn (z came after k)
    assert log.waits_for("z", owed)
    # a later "found" of k (another program) does not change what it was first found with
    log.add({"by": "0.5", "class": "k", "kind": "found", "seconds": 9.0, "examples": 9, "alongside": ["n"]})
    assert not log.waits_for("k", owed)


def test_the_classes_a_class_waits_for_are_shrunk_before_it_whatever_their_rank():
    # Night 31: the four classes of no known issue found behind others (shrunk first, as a
    # night's news) waited for variants of known issues (shrunk last), which time never
    # reached; none of the four was shrunk. Planted fault: owed() in rank order only (checked:
    # `new` comes first, waits, and the batch is v0-v3; v5, behind them, is reached last).
    from conformance.fuzz import REPLAY_BATCH, ClassLog

    events = [{"by": "0.0", "class": f"v{i}", "kind": "found", "seconds": float(i), "examples": i, "issue": "x"}
              for i in range(REPLAY_BATCH + 2)]
    events.append({"by": "0.0", "class": "new", "kind": "found", "seconds": 9.0, "examples": 9,
                   "alongside": [f"v{REPLAY_BATCH + 1}"]})
    log = ClassLog(events)
    owed = log.owed("0")
    batch = [k for k in owed if not log.waits_for(k, set(owed))][:REPLAY_BATCH]
    assert owed[:2] == [f"v{REPLAY_BATCH + 1}", "new"], owed  # what it waits for, then the news
    assert batch[0] == f"v{REPLAY_BATCH + 1}", batch
    log.add({"by": "0.1", "class": f"v{REPLAY_BATCH + 1}", "kind": "shrink", "statements": 2, "constructs": []})
    owed = log.owed("0")
    assert owed[0] == "new" and not log.waits_for("new", set(owed))

def test_a_recycled_worker_does_not_shrink_again_what_it_shrank_before(tmp_path):
    # Before the class log, each incarnation shrank every class again: after a recycle a
    # night re-spent minutes on bugs it had. Here every class is shrunk by one incarnation.
    proc = fuzz("--backend", "conformance.backends.faulty:perturbs_outputs", "--seconds", "40", "--workers", "1",
                "--recycle-after", "150", "--shrink-seconds", "3", "--shrinks-per-class", "1",
                "--report-dir", str(tmp_path), "--seed", "7")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    s = summary(tmp_path)
    assert s["workers"][0]["restarts"] >= 1, s["workers"]
    events = json.loads((tmp_path / "findings" / "classes.json").read_text())
    shrinks = Counter(e["class"] for e in events if e["kind"] == "shrink")
    assert shrinks and max(shrinks.values()) == 1, shrinks
    assert sum(s["unshrunk_hits"].values()) > 0  # later hits were seen, and counted, not shrunk


@pytest.mark.parametrize("backend", ["conformance.backends.faulty:perturbs_outputs",
                                     "tests.fake_backends:rejects_requires_grad_method_perturbs_outputs"])
def test_a_night_explores_first_and_shrinks_what_it_found_after(tmp_path, backend):
    # While exploring, each class is saved when first found and not shrunk (a shrink costs
    # the time of some 50 new programs); then the worker replays what it found, and
    # Hypothesis shrinks it. Planted fault: a worker that never replays leaves raw records.
    # A short exploring part and short shrinks, so that every class found is shrunk before
    # the end also on a slow machine (with 30 s, half of them exploring, one was not in CI).
    # The second backend saturates requires_grad_() while exploring: a replay must draw
    # what was found after that too (a filter on the strategy made it draw another program).
    proc = fuzz("--backend", backend, "--seconds", "40", "--workers", "1",
                "--explore", "0.25", "--shrink-seconds", "2", "--report-dir", str(tmp_path), "--seed", "7")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    events = json.loads((tmp_path / "findings" / "classes.json").read_text())
    found = {}  # class -> its first found event: (index, seconds)
    for i, e in enumerate(events):
        if e["kind"] == "found" and e["class"] not in found:
            found[e["class"]] = (i, e["seconds"])
    explored = [e["seconds"] for e in events if e["kind"] == "found" and e["during"] == "explore"]
    # The exploring part ends at 10 s; an example begun before then may end after it (10.2 s
    # beside another test's night). The rest were met while a replay shrank another class.
    assert explored and max(explored) < 15, found
    for key, (i, _) in found.items():  # one worker: the parent logs its events in order
        assert any(e["kind"] == "shrink" and e["class"] == key for e in events[i + 1:]), (key, events)
        assert not any(e["kind"] == "shrink" and e["class"] == key for e in events[:i]), (key, events)
    # A shrink that shows its class alone is recorded (its event names the program's size);
    # one that shows it only behind another class is not: its raw record, if it was saved,
    # stays (reported raw), and the class may be recorded by second looks at later hits,
    # each at the time of its hit (fresh-clone CI, 2026-12-05, with returns.unread: a look's
    # last pass left 7 statements). Each class recorded by its shrink has a small repro (two
    # classes whose records have one signature share one file, named by it, under either class).
    recorded = {e["class"] for e in events if e["kind"] == "shrink" and e["statements"] is not None}
    records = [json.loads(p.read_text()) for p in (tmp_path / "findings" / "w0").glob("**/*.json")]
    records = [r for r in records if r["class"] in found]
    mine = [r for r in records if r["class"] in recorded]
    assert mine and all(r["shrunk"] for r in mine), records
    # At most 8 statements, where a night's repro aims at 6: the shrinks here get 2 s, and with
    # the draws of 627cb89 one class came out at 7 in the fresh-clone CI (2026-12-05, both
    # cores busy); a raw program, what the planted fault leaves, has 10-40.
    for key in {r["class"] for r in mine}:
        assert min(r["statements"] for r in mine if r["class"] == key) <= 8, (key, records)
    explored_classes = {e["class"] for e in events if e["kind"] == "found" and e["during"] == "explore"}
    looked = {e["class"] for e in events if e["kind"] == "look"}  # their records: each hit's own time
    for key in {r["class"] for r in records} & explored_classes & recorded - looked:
        # Its shrink's record carries when the class was met, not when it was shrunk (after
        # the exploring part). Not always the found event's time: Hypothesis reports one
        # failure per place an exception is raised, so a class met beside another may be
        # reported, and its event noted, in a later chunk; the record keeps the earlier time
        # (5.5 s against 9.5 s, fresh-clone CI, 2026-12-05).
        times = [r["found_after_seconds"] for r in records if r["class"] == key]
        assert min(times) <= found[key][1], (key, times, found[key])


def test_a_construct_whose_programs_end_in_an_exception_found_before_is_no_longer_drawn(tmp_path):
    # A backend that rejects requires_grad_() (as thunder does): once nearly every program
    # with it ended in that exception, found before, new programs are drawn without it.
    # Planted fault: --keep-saturated draws it all night.
    def night(folder, *extra):
        proc = fuzz("--backend", "tests.fake_backends:rejects_requires_grad_method", "--seconds", "20",
                    "--shrink-seconds", "2", "--report-dir", str(folder), "--seed", "2", *extra)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        return summary(folder)["saturated_constructs"]

    saturated = night(tmp_path / "filtered")
    assert set(saturated) == {"requires_grad_"}, saturated
    why = saturated["requires_grad_"]
    assert why["programs"] >= 30 and why["stopped"] >= 0.85 * why["programs"] and why["seconds"] < 20, why
    assert why["drawn_after"] == 0, why
    kept = night(tmp_path / "kept", "--keep-saturated")["requires_grad_"]
    assert kept["drawn_after"] >= 10, kept


def test_saturation_needs_enough_programs_nearly_all_ended_by_a_found_exception():
    from conformance.saturation import MIN_PROGRAMS, Saturation

    s = Saturation()
    for i in range(MIN_PROGRAMS - 1):
        s.count({"requires_grad_", "no_grad"}, stopped=True)
    assert s.saturated() == frozenset()  # too few programs yet
    s.count({"requires_grad_", "no_grad"}, stopped=True)
    assert s.saturated() == {"requires_grad_", "no_grad"}
    for i in range(10):  # no_grad's programs now mostly show other things
        s.count({"no_grad"}, stopped=False)
    assert s.saturated() == {"requires_grad_"}
    assert s.why("requires_grad_") == {"programs": MIN_PROGRAMS, "stopped": MIN_PROGRAMS}


def test_a_worker_that_dies_between_examples_is_reported_without_a_program(tmp_path):
    # Night 26: a worker died outside any example, and the parent, writing the reports,
    # died on its crash record (no program to render): nothing of the night was written.
    from conformance.fuzz import CRASH_SIGNATURE, FuzzConfig, _crash_record
    from conformance.report.write import write_run

    cfg = FuzzConfig(backend="eager", seconds=1, report_dir=tmp_path)  # no current.json
    rec = _crash_record(cfg, 0, "worker died with exit code 1", CRASH_SIGNATURE, 5.0, 10)
    assert rec["program"] is None
    write_run(tmp_path, backend_name="eager", seed=None, command="", examples=10, seconds=5.0, records=[rec])
    [entry] = summary(tmp_path)["mismatches"]
    repro = tmp_path / entry["repro"]
    assert "No program to replay" in repro.read_text() and (tmp_path / entry["report"]).exists()
    assert subprocess.run([sys.executable, str(repro)]).returncode == 2


def test_a_worker_recycled_while_replaying_keeps_what_it_found(tmp_path):
    # A replay passed over by a worker at its recycle count made its entries uninteresting,
    # and Hypothesis deleted them from the worker's database: classes found, never shrunk.
    # Planted fault (the check before this fix): 1 of 3 classes found was never shrunk.
    proc = fuzz("--backend", "conformance.backends.faulty:perturbs_outputs", "--seconds", "40", "--workers", "1",
                "--explore", "0.25", "--shrink-seconds", "2", "--recycle-after", "3",
                "--report-dir", str(tmp_path), "--seed", "7")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert summary(tmp_path)["workers"][0]["restarts"] >= 5
    events = json.loads((tmp_path / "findings" / "classes.json").read_text())
    found = {e["class"] for e in events if e["kind"] == "found"}
    shrunk = {e["class"] for e in events if e["kind"] == "shrink"}
    assert found and found <= shrunk, found - shrunk


def test_a_baseline_signature_not_reported_tonight_is_replayed_though_its_class_was():
    # One class (one symptom) can be two bugs: night 51's int-unary dtype bug and the empty
    # inputs' aliases both show as `outputs.dtype | first call`. Tonight's report of one must
    # not make the other count as seen: it is replayed at the end, and reported fixed or
    # still there. Planted fault (the code before): matched by class, nothing is replayed.
    shown = "outputs.dtype | first call @ inplace"
    other = "outputs.dtype | first call @ @enable_grad inplace torch.set_grad_enabled(True)"
    baseline = {"mismatches": [{"signature": shown}, {"signature": other}]}
    assert [m["signature"] for m in fuzz_mod._unseen(baseline, [{"signature": shown}])] == [other]
    assert fuzz_mod._unseen(baseline, [{"signature": shown}, {"signature": other}]) == []


def test_a_known_issue_first_met_behind_another_class_gets_a_look_while_exploring(tmp_path):
    # A class found behind others is shrunk after them, and those are often a dozen variants
    # of known issues the night never finishes (night 64 found inplace-through-alias-of-grad-
    # tensor-lost so at 147 s and missed the issue). hides_a_consequence's flags mismatch only
    # ever shows behind its outputs one; named by a known issue, it gets a look as soon as it
    # is met so, while the night explores. Fails on the code before (no look while exploring:
    # the class waited for the replay).
    from conformance.program import Program, TensorInput
    from conformance.serialize import dumps

    program = dumps(Program((TensorInput("a", (2,), requires_grad=True),), (), ("a",)))
    known = tmp_path / "known_issues.toml"
    known.write_text("[[issue]]\nid = 'consequence'\ntitle = 'consequence'\noracle = 'flags'\nbackends = ['*']\n"
                     "signatures = ['flags.requires_grad | eager True, backend False | *']\n"
                     f"program = '{program}'\n")
    folder = tmp_path / "night"
    proc = fuzz("--backend", "tests.fake_backends:hides_a_consequence", "--seconds", "40", "--workers", "1",
                "--shrink-seconds", "5", "--report-dir", str(folder), "--seed", "3", "--known-issues", str(known))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    events = json.loads((folder / "findings" / "classes.json").read_text())
    looks = [e for e in events if e["kind"] == "look" and e["looked_for"] == "consequence"]
    assert any(e["during"] == "explore" and e["issue"] == "consequence" for e in looks), looks
    assert "consequence" in {m["known_issue"] for m in summary(folder)["mismatches"]}
    seconds = summary(folder)["workers"][0]["seconds"]
    assert seconds.get("looks for an issue found behind others", 0) > 0, seconds


def test_a_night_first_sweeps_the_one_op_programs(tmp_path):
    # one_op_bug's bug shows only in a function that does nothing but relu of a NaN: one
    # point of the sweep's domain, and a program that random draws seldom make.
    def night(folder, sweep):
        proc = fuzz("--backend", "tests.fake_backends:one_op_bug", "--seconds", "30", "--workers", "1",
                    "--shrink-seconds", "2", "--report-dir", str(folder), "--seed", "1", sweep=sweep, small=True)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        return summary(folder)

    swept = night(tmp_path / "sweep", sweep=True)
    (found,) = [m for m in swept["mismatches"] if m["oracle"] == "outputs"]
    source = (tmp_path / "sweep" / found["repro"]).read_text()
    assert found["statements"] == 2 and "t0 = torch.relu(a)" in source, source  # the op and its return
    assert found["found_after_seconds"] < 25, found
    assert all("sweeping small programs" in w["seconds"] for w in swept["workers"]), swept["workers"]
    # Planted fault: without the sweep, the same night's random programs do not meet it.
    assert not [m for m in night(tmp_path / "no-sweep", sweep=False)["mismatches"] if m["oracle"] == "outputs"]
