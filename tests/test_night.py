"""The nightly job on fast fake backends, bounded by example counts and seeds, never by the clock:
a hang, a crash, Ctrl-C, recycling, triage against a baseline, and what the engine shrinks."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.night.messages import Beat, Shrunk
from conformance.night.settled import Settled
from conformance.night.signals import StopSignals
from conformance.oracles.mismatch import BugClass
from conformance.night.supervisor import Slot

ROOT = Path(__file__).resolve().parents[1]
# Shrinking counted in candidate runs, and a night far longer than any test: every night here
# ends at its --max-examples, so a seed gives the same night on a fast machine and a loaded one.
BOUNDED = ("--seconds", "600", "--shrink-calls", "30", "--workers", "1")


def fuzz(*args, sweep=False, timeout=300, env=None):
    args = BOUNDED + args + (() if sweep else ("--no-sweep",))
    return subprocess.run([sys.executable, "-m", "conformance", "fuzz", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def fuzz_here(*args, sweep=False) -> subprocess.CompletedProcess:
    """`fuzz` as main() in this process: the fork server it starts serves every night of this
    pytest worker, 5-8 s of imports fewer a night. Not for a backend that reads the test's
    environment: a fork server keeps the one it was started with (`fuzz` runs it apart)."""
    from tests.test_cli import cli_here

    return cli_here("fuzz", *BOUNDED, *args, *(() if sweep else ("--no-sweep",)))


def night(folder: Path, spec: str, examples: int, seed: int, *extra, sweep=False, apart=False) -> dict:
    run = fuzz if apart else fuzz_here
    proc = run("--backend", spec, "--max-examples", str(examples), "--seed", str(seed), "--report-dir",
               str(folder), *extra, sweep=sweep)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return summary(folder)


def _as_in_a_terminal():
    # A background job of a shell ignores SIGINT, and a child inherits that; Python keeps
    # it (as Unix tools do): pytest itself may have been started so. Ctrl-C at a terminal
    # reaches a foreground run, whose SIGINT has its default action.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _records(folder: Path) -> list[Path]:
    return [p for p in folder.glob("**/*.json") if p.name != "current.json"] if folder.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("signals", [(signal.SIGTERM,), (signal.SIGINT, signal.SIGINT)], ids=["sigterm", "ctrl-c twice"])
def test_a_stop_signal_stops_the_night_and_keeps_what_was_found(tmp_path, signals):
    # SIGTERM: what a CI runner sends a job it cancels. Twice: the workers are killed at once,
    # mid-shrink, and the reports are still written. A baseline bug not hit tonight is not
    # replayed after a stop (replays take up to a minute).
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"mismatches": [{"signature": "outputs.value | x @ never | on", "program": None}]}))
    folder, db = tmp_path / "night", tmp_path / "db"
    proc = subprocess.Popen([sys.executable, "-m", "conformance", "fuzz", *BOUNDED, "--backend",
                             "conformance.backends.faulty:perturbs_outputs", "--report-dir", str(folder),
                             "--seed", "3", "--baseline", str(baseline), "--db", str(db)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_in_a_terminal)
    while proc.poll() is None and not _records(folder / "findings"):
        time.sleep(0.2)
    for sig in signals:
        proc.send_signal(sig)
        time.sleep(0.1)
    out, err = proc.communicate(timeout=120)  # a safety net: the night itself would run 600 s
    s = summary(folder)
    assert s["interrupted"] is True
    assert any(m["oracle"] == "outputs" for m in s["mismatches"]), out + err
    assert s["baseline_not_replayed"] == ["outputs.value | x @ never | on"]
    assert (folder / "index.html").exists()
    if len(signals) > 1:  # killed mid-shrink, the example database is whole: the next night replays it
        assert night(tmp_path / "next", "conformance.backends.faulty:perturbs_outputs", 10, 4, "--db", str(db))


def test_a_first_signal_sets_a_flag_a_second_hurries_a_third_quits():
    # A KeyboardInterrupt raised wherever the first signal lands could cut a queue message
    # in half and leave the supervisor blocked; the flags are read by the loop instead.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a foreground run
    with StopSignals() as stopped:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert stopped.received == "SIGINT" and not stopped.hurried
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert stopped.hurried
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # a third SIGTERM kills
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # Ignored when the run starts (a shell's background job): stays ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with StopSignals():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    signal.signal(signal.SIGINT, before)


@pytest.mark.slow
def test_a_grad_mode_fault_is_caught_by_the_nights_first_programs(tmp_path):
    # A grad-mode fault needs a grad-mode construct, which no sweep program has: the night's
    # first programs are the probes (each construct alone), then random ones.
    s = night(tmp_path, "conformance.backends.faulty:raises_on_grad_mode_calls", 40, 1, sweep=True)
    assert min(m["found_after_examples"] for m in s["mismatches"]) <= 3, s["mismatches"]


@pytest.mark.slow
def test_a_tagging_fault_of_one_op_is_caught_by_its_batch_and_recorded_as_its_one_op_program(tmp_path):
    # cumsum's outputs under no_grad keep grad: random programs seldom put cumsum in a region;
    # its probe batch shows it within the probes, and the record is cumsum's own program.
    from conformance.generators.probes import probes

    s = night(tmp_path, "tests.fake_backends:cumsum_keeps_grad_under_no_grad", len(probes()) + 10, 1, sweep=True)
    caught = [m for m in s["mismatches"] if m["oracle"] == "flags"]
    assert caught and min(m["found_after_examples"] for m in caught) <= len(probes()), s["mismatches"]
    from conformance import serialize
    from conformance.generators.sweep import boundary_programs

    (cumsum,) = [p for p in boundary_programs() if p.body[0].body[0].value.op == "cumsum"]
    assert all(serialize.decode(m["program"]) == cumsum for m in caught), caught


@pytest.mark.slow
def test_the_sweep_is_interleaved_and_finds_a_bug_of_one_op(tmp_path):
    from conformance.generators.sweep import sweep_examples

    # The sweep program that shows the bug (torch.relu of a NaN), and a budget that reaches it
    # while the sweep gets half the examples.
    from conformance import serialize
    from conformance.program import count_statements

    index, program = next((i, p) for i, (p, _) in enumerate(sweep_examples())
                          if "relu" in repr(p.body) and any(x.special == "nan" for x in p.inputs))
    from conformance.generators.probes import probes

    s = night(tmp_path, "tests.fake_backends:one_op_bug", len(probes()) + 2 * (index + 1) + 20, 2, sweep=True)
    assert [m["statements"] for m in s["mismatches"]] == [count_statements(program)], s["mismatches"]
    assert s["mismatches"][0]["program"] == serialize.encode(program)  # the sweep's, not a random one


@pytest.mark.slow
def test_the_same_seed_gives_the_same_night_across_recycles_and_the_next_night_reports_it_first(tmp_path):
    spec, db = "conformance.backends.faulty:perturbs_outputs", tmp_path / "db"

    def seen(s):
        return s["examples"], [(m["signature"], m["statements"], m["found_after_examples"]) for m in s["mismatches"]]

    # Recycled every 10 examples: what a worker found before its recycle is kept, and a new
    # incarnation draws from seeds of its own, the same ones on the same seed. (A worker checks
    # its count between examples it searches, not while it shrinks a finding: 30 runs here.)
    recycled = ("--recycle-after", "10")
    first = night(tmp_path / "n1", spec, 60, 5, "--db", str(db), *recycled)
    assert first["mismatches"] and all(m["status"] == "new" for m in first["mismatches"])
    assert first["workers"][0]["restarts"] >= 1 and first["examples"] >= 60
    assert min(m["found_after_examples"] for m in first["mismatches"]) < 25
    assert seen(night(tmp_path / "again", spec, 60, 5, *recycled)) == seen(first)
    second = night(tmp_path / "n2", spec, 60, 6, "--db", str(db), "--baseline", str(tmp_path / "n1" / "summary.json"))
    still = [m for m in second["mismatches"] if m["status"] == "still there"]
    assert still, second["mismatches"]
    # replayed before any new program: found within the first examples, one per baseline entry
    assert min(m["found_after_examples"] for m in still) <= len(first["mismatches"])


@pytest.mark.slow
def test_a_baseline_bug_the_draws_do_not_make_is_replayed_first(tmp_path):
    from conformance import serialize
    from conformance.backends import get
    from conformance.check import run_example
    from conformance.generators.schedules import SINGLE_CALL
    from conformance.program import Assign, Call, Program, TensorInput
    from conformance.report.signatures import signature

    spec = "tests.fake_backends:rare_bug"
    program = Program((TensorInput("a", (2,)),), (Assign("t0", Call("hypot", ("a", "a"))),
                                                  Assign("t1", Call("atan2", ("t0", "a"))),
                                                  Assign("t2", Call("cumsum", ("t1",))),
                                                  Assign("t3", Call("flip", ("t2",))),
                                                  Assign("t4", Call("erf", ("t3",)))), ("t4",))
    result = run_example(program, get(spec), SINGLE_CALL)
    sig = str(signature(result.mismatches[0], program, SINGLE_CALL))
    baseline = tmp_path / "baseline.json"  # as written before entries had a class: matched by signature
    baseline.write_text(json.dumps({"mismatches": [{"signature": sig, "oracle": result.mismatches[0].oracle,
                                                    "program": serialize.encode(program),
                                                    "schedule": serialize.encode(SINGLE_CALL)}]}))
    s = night(tmp_path / "n2", spec, 60, 4, "--baseline", str(baseline))
    hit = [m for m in s["mismatches"] if m["signature"] == sig]
    assert hit and hit[0]["status"] == "still there" and hit[0]["found_after_examples"] == 1, s["mismatches"]
    assert not s["still_there_on_replay"]
    assert not night(tmp_path / "alone", spec, 60, 4)["mismatches"]  # the control: the draws do not make it


@pytest.mark.slow
def test_a_bug_behind_another_is_reported(tmp_path):
    # hides_a_bug: the outputs bug's mismatch comes first wherever both show; once that class
    # is settled, the flags bug is still reported (an example fails on its first mismatch of a
    # class not settled, engine.focus, and the flags bug shows alone too).
    two = night(tmp_path, "tests.fake_backends:hides_a_bug", 200, 7)
    assert {m["oracle"] for m in two["mismatches"]} >= {"outputs", "flags"}, two["mismatches"]


KNOWN_NO_GRAD = """
[[issue]]
id = "off-by-half-after-grad-mode-change"
title = "outputs off by 0.5 in a function that changes the grad mode"
oracle = "outputs"
backends = ["faulty"]
notes = "A planted fault of tests.fake_backends:one_class_two_bugs."
schedule = '{schedule}'
program = '{program}'
[[issue.shows]]
oracle = "outputs"
any_of = ["no_grad", "enable_grad", "inference_mode", "set_grad_enabled(False)", "set_grad_enabled(True)",
          "torch.set_grad_enabled(False)", "torch.set_grad_enabled(True)", "torch._C._set_grad_enabled(False)",
          "torch._C._set_grad_enabled(True)", "@no_grad", "@enable_grad", "@inference_mode"]
"""


def test_a_second_bug_of_a_settled_class_gets_a_second_look(tmp_path):
    # one_class_two_bugs: the grad-mode bug (known here) and the shape-op bug show one class,
    # outputs.value. Once the first settles it with a short repro, a hit of the class in a
    # program without grad-mode change (what that repro has) gets a second look and is recorded
    # as the bug it is. Run on the worker itself, so that no draw's luck decides it.
    import queue
    import threading

    from conformance import serialize
    from conformance.generators.schedules import SINGLE_CALL
    from conformance.night.config import NightConfig
    from conformance.night.worker import Worker
    from conformance.program import Assign, Call, GradRegion, Program, TensorInput

    a = (TensorInput("a", (2,)),)
    grad_mode = Program(a, (GradRegion("no_grad", (Assign("t0", Call("exp", ("a",))),)),), ("t0",))
    shape = Program(a, (Assign("t0", Call("exp", ("a",))), Assign("t1", Call("flip", ("t0",)))), ("t1",))
    registry = tmp_path / "known.toml"
    registry.write_text(KNOWN_NO_GRAD.format(program=json.dumps(serialize.encode(grad_mode)),
                                             schedule=json.dumps(serialize.encode(SINGLE_CALL))))
    cfg = NightConfig(backend="tests.fake_backends:one_class_two_bugs", seconds=600, report_dir=tmp_path,
                      known_issues=registry, shrink_seconds=None, shrink_calls=30)
    worker = Worker(cfg, 0, 0, queue.Queue(), queue.Queue(), threading.Event(), time.time(), [])
    worker.conclude(worker.check(grad_mode, SINGLE_CALL), (1, 0.0))  # found, reduced, recorded: settled
    assert worker.check(grad_mode, SINGLE_CALL) is None and not worker.to_look  # explained by its repro
    assert worker.check(shape, SINGLE_CALL) is None and worker.to_look  # settled, but not explained
    worker.look_again()
    records = [json.loads(p.read_text()) for p in worker.folder.glob("*.w.json")]
    assert sorted(r["known"] or "new" for r in records) == ["new", "off-by-half-after-grad-mode-change"], records
    (new,) = [r for r in records if r["known"] is None]
    assert new["class"] == records[0]["class"] == records[1]["class"] and new["statements"] <= 2
    assert "flip" in new["body"] and "no_grad" not in new["body"], new["body"]


def test_a_class_is_settled_by_a_short_repro_or_after_its_shrinks():
    a, b = BugClass("outputs", "value"), BugClass("flags", "requires_grad", "True", "False", True)
    settled = Settled(shrinks_per_class=2)
    settled.learn(Shrunk(0, a, f"{a} @ plain ops", None, 3))
    assert a in settled
    settled.learn(Shrunk(0, b, f"{b} @ no_grad", None, 12))
    assert b not in settled  # too long: shrunk again on a later hit
    settled.learn(Shrunk(1, b, f"{b} @ no_grad", None, None))  # shown only behind another: not recorded
    assert b in settled and settled.shrinks == Counter({a: 1, b: 2})


def test_a_settled_class_explains_the_programs_that_have_what_a_repro_of_it_has():
    from conformance.night.messages import Needs
    from conformance.program import Assign, Call, GradRegion, Program, TensorInput

    def program(*body):
        return Program((TensorInput("a", (2,)),), body, (body[-1].target if isinstance(body[-1], Assign) else "a",))

    flip_under_no_grad = program(GradRegion("no_grad", (Assign("t0", Call("flip", ("a",))),)))
    a = BugClass("outputs", "value")
    settled = Settled(shrinks_per_class=3)
    assert settled.explains(a, Needs.of(flip_under_no_grad))  # nothing recorded: nothing to look again at
    settled.learn(Shrunk(0, a, f"{a} @ no_grad", "some-known-issue", 2, Needs.of(flip_under_no_grad)))
    assert settled.has(a, "some-known-issue") and not settled.has(a, None)
    assert settled.has(a, "some-known-issue", 2) and not settled.has(a, "some-known-issue", 1)  # shorter: record it
    bigger = program(Assign("t1", Call("exp", ("a",))),
                     GradRegion("no_grad", (Assign("t0", Call("flip", ("t1",))),)))
    assert settled.explains(a, Needs.of(bigger))
    assert not settled.explains(a, Needs.of(program(Assign("t0", Call("flip", ("a",))))))  # no no_grad
    assert not settled.explains(a, Needs.of(program(GradRegion("no_grad", (Assign("t0", Call("exp", ("a",))),)))))  # no flip
    assert settled.explains(BugClass("flags", "requires_grad"), Needs.of(bigger))  # another class: not ours to judge


def test_a_hit_is_unexplained_by_the_part_of_the_program_its_mismatch_can_come_from():
    # The value bug's repro is a flip under no_grad; the flag bug's a reshape. A hit of both
    # classes: the wrong value is explained (what it reads has both); the flag behind it reads
    # only an in-place update, which the reshape repro does not explain, though the whole
    # program has a reshape: the flag is the class to look at.
    from conformance.check import Result
    from conformance.generators.schedules import SINGLE_CALL
    from conformance.night.messages import Needs
    from conformance.oracles.mismatch import Mismatch
    from conformance.outcome import SideOutcome
    from conformance.program import Assign, Call, GradRegion, InPlace, Program, TensorInput

    inputs = (TensorInput("a", (2,), requires_grad=True), TensorInput("b", (2,)))
    flip = Program(inputs, (GradRegion("no_grad", (Assign("t0", Call("flip", ("a",))),)),), ("t0",))
    reshape = Program(inputs, (Assign("t0", Call("reshape", ("a",))),), ("t0",))
    hit = Program(inputs, (GradRegion("no_grad", (Assign("t0", Call("flip", ("a",))),)),
                           Assign("t1", Call("reshape", ("t0",))),
                           Assign("t2", Call("exp", ("b",))), InPlace("t2", "add_", "a")), ("t1", "t2"))
    value, flag = BugClass("outputs", "value"), BugClass("flags", "requires_grad", "True", "False")
    settled = Settled(shrinks_per_class=3)
    settled.learn(Shrunk(0, value, str(value), None, 2, Needs.of(flip)))
    settled.learn(Shrunk(0, flag, str(flag), None, 2, Needs.of(reshape)))
    mismatches = [Mismatch("outputs", "value", "return[0]", "1", "2", 0, "grad"),
                  Mismatch("flags", "requires_grad", "return[1]", "True", "False", 0, "grad")]
    result = Result(hit, SINGLE_CALL, "", SideOutcome("eager"), SideOutcome("b"), mismatches)
    assert settled.unexplained(result) == [flag]
    on_the_view = [mismatches[0], replace(mismatches[1], where="return[0]")]  # the flag of t1: reshape
    assert settled.unexplained(replace(result, mismatches=on_the_view)) == []


def test_a_slot_counts_examples_over_its_incarnations():
    slot = Slot(0)
    slot.take(Beat(0, 30, 100.0, {"no_grad": 5}, {"searching": 2.0}))
    slot.take(Beat(0, 50, 120.0, {"no_grad": 9}, {"searching": 3.0}))
    slot.close_incarnation()  # recycled
    slot.take(Beat(0, 20, 90.0, {"inplace": 1}, {}))
    assert slot.examples == 70 and slot.peak_rss_mb == 120.0
    assert slot.constructs == Counter({"no_grad": 9}) and slot.now.constructs == {"inplace": 1}


def test_a_worker_that_dies_between_examples_is_reported_without_a_program(tmp_path):
    from conformance.night.config import NightConfig
    from conformance.night.crash import DIED, RunFailure, crash_record
    from conformance.report.write import write_run

    cfg = NightConfig(backend="eager", seconds=1, report_dir=tmp_path)  # no current.json
    rec = crash_record(cfg, 0, RunFailure(*DIED, "exit code -11 (signal 11)"), "", 1.0, 10)
    assert rec["program"] is None and rec["statements"] == 0
    write_run(tmp_path, backend_name="eager", seed=None, command="", examples=10, seconds=5.0, records=[rec])
    repro = next(tmp_path.glob("*/repro.py"))
    proc = subprocess.run([sys.executable, str(repro)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr  # a repro that cannot run, not a pass


@pytest.mark.slow
def test_a_backend_that_breaks_its_process_is_a_finding_and_the_night_goes_on(tmp_path, monkeypatch):
    # It segfaults, calls os._exit(0), writes past 64 MB, allocates past its memory, blocks in C and
    # sleeps, one after the other: each is a finding with its program, the worker is restarted
    # (but for the sleep, which SIGALRM stops), and the night keeps its other findings.
    monkeypatch.setenv("BREAKS_COUNTER", str(tmp_path / "breaks"))
    s = night(tmp_path / "night", "tests.fake_backends:breaks_every_way", 60, 1, "--example-timeout", "2",
              "--max-rss-mb", "1000", apart=True)
    broke = {m["signature"]: m for m in s["mismatches"] if m["oracle"] in ("crash", "hang")}
    killed = {"crash.worker died | exit code -11 (signal 11)", "crash.worker died | exit code 0",
              "crash.output flood | worker wrote more than 64 MB; killed",
              "crash.out of memory | worker past 2000 MB; killed",
              "hang.example timed out | no progress where SIGALRM cannot stop it; worker killed"}
    alarmed = set(broke) - killed  # the sleep, stopped in the worker: a hang with its constructs
    assert killed < set(broke) and len(alarmed) == 1 and " @ " in alarmed.pop(), broke
    grad_off = {"no_grad", "set_grad_enabled_false", "inference_mode"}
    assert all(m["program"] and grad_off & {c["ambient"] for c in m["schedule"]} for m in broke.values())
    assert any(m["oracle"] == "outputs" for m in s["mismatches"]), s["mismatches"]
    assert s["workers"][0]["restarts"] == 5 and s["workers"][0]["crashes"] == 2  # killed ones are not crashes
    repro = tmp_path / "night" / broke["crash.worker died | exit code 0"]["repro"]
    assert "compile_with_backend" in repro.read_text()  # the example it died on, as a repro


@pytest.mark.slow
def test_an_example_that_leaves_torch_broken_is_recorded_and_the_worker_starts_afresh(tmp_path, monkeypatch):
    # After it every op raises, eager's too: the example that broke torch is the finding (not the
    # next one, which fails in the harness), and a fresh process goes on with the night.
    monkeypatch.setenv("BREAKS_COUNTER", str(tmp_path / "broken"))
    s = night(tmp_path / "night", "tests.fake_backends:breaks_torch_under_inference_mode", 20, 1, apart=True)
    crashes = [m for m in s["mismatches"] if m["oracle"] == "crash"]
    assert [m["signature"] for m in crashes] == ["crash.torch left broken | every op raised after this example; "
                                                  "worker restarted"], s["mismatches"]
    assert "inference_mode" in {c["ambient"] for c in crashes[0]["schedule"]}  # the call that broke it
    assert s["workers"][0]["restarts"] == 1 and s["examples"] >= 20


def test_a_class_met_only_while_another_shrank_gets_its_last_pass(tmp_path, monkeypatch):
    # A worker meets a class in a candidate of another class's shrink: it saves the program raw
    # and goes on shrinking the other. If no later draw meets the class again, its repro would be
    # that raw program; after the round, the class gets the last pass alone.
    import queue
    import threading

    from conformance import shrinking
    from conformance.generators.schedules import CallSpec
    from conformance.night.config import NightConfig
    from conformance.night.worker import Worker
    from conformance.program import Assign, Call, GradRegion, Program, TensorInput

    cfg = NightConfig(backend="conformance.backends.faulty:perturbs_outputs", seconds=600, report_dir=tmp_path,
                      shrink_seconds=None, shrink_calls=30)
    worker = Worker(cfg, 0, 0, queue.Queue(), queue.Queue(), threading.Event(), time.time(), [])
    dead = tuple(Assign(f"t{i}", Call("sin", ("a",))) for i in range(4))
    program = Program((TensorInput("a", (2,)),), dead + (GradRegion("no_grad", (Assign("t4", Call("cos", ("a",))),)),),
                      ("t4",))
    monkeypatch.setattr(shrinking, "shrinking_class", lambda: BugClass("flags", "requires_grad"))  # another one
    assert worker.check(program, (CallSpec("grad"),)) is None  # not this class's turn
    monkeypatch.undo()
    assert list(worker.folder.glob("raw/*.json")) and not list(worker.folder.glob("*.w.json"))

    worker.shrink_the_unshrunk()
    (record,) = [json.loads(p.read_text()) for p in worker.folder.glob("*.w.json")]
    assert record["shrunk"] and record["statements"] == 1, record  # `return a`: a float output is off by 0.5
    assert not list(worker.folder.glob("raw/*.json")) and not worker.unshrunk


def test_a_silent_worker_whose_memory_grows_is_not_stuck_until_it_stops_growing(tmp_path, monkeypatch):
    # A loaded machine fills 2.5 GB slowly: the worker is silent past the stuck limit before it
    # is past the memory limit. Which verdict it gets must not depend on how fast it allocates.
    from types import SimpleNamespace

    from conformance.night import supervisor as S
    from conformance.night.config import NightConfig

    cfg = NightConfig(backend="eager", seconds=60, report_dir=tmp_path, example_timeout=2, max_rss_mb=1000)
    sup = S.Supervisor(cfg)
    slot = S.Slot(0, process=SimpleNamespace(pid=0), started=True, last_beat=time.monotonic() - 60)  # silent 60 s
    rss = iter([500, 900, 1500, 1500, 2100])
    monkeypatch.setattr(S, "rss_mb", lambda pid: next(rss))
    verdicts = [sup.misbehaving(slot) for _ in range(3)]
    assert verdicts == [None, None, None]  # growing: on its way to a limit
    assert sup.misbehaving(slot)[0].aspect == S.STUCK[1]  # 1500 again: stuck
    slot.growth = (0.0, 0)
    assert sup.misbehaving(slot)[0].aspect == S.OUT_OF_MEMORY[1]  # 2100: past twice the limit


def test_a_sweep_program_of_a_settled_class_that_no_known_issue_explains_is_recorded_once(tmp_path):
    # A class settled by a known issue's repros (here one made up) hides no new bug of the same
    # symptom: a sweep program that shows the class and is no known issue is recorded, once.
    # Planted fault: once a record of the class without a known issue exists, the next is a hit.
    import queue
    import threading

    from conformance.check import run_example
    from conformance.generators.schedules import CallSpec
    from conformance.night.config import NightConfig
    from conformance.night.messages import Shrunk
    from conformance.night.worker import Worker
    from conformance.oracles.mismatch import class_key
    from conformance.program import Assign, Call, Program, TensorInput

    spec = "conformance.backends.faulty:perturbs_outputs"
    cfg = NightConfig(backend=spec, seconds=600, report_dir=tmp_path, shrink_seconds=None, shrink_calls=30)
    worker = Worker(cfg, 0, 0, queue.Queue(), queue.Queue(), threading.Event(), time.time(), [])
    programs = [(Program((TensorInput("a", (2,)),), (Assign("t0", Call(op, ("a",))),), ("t0",)), (CallSpec(),))
                for op in ("sin", "cos")]
    key = class_key(run_example(programs[0][0], worker.backend, programs[0][1]).mismatches[0])
    worker.settled.learn(Shrunk(1, key, "sig", "some-known-issue", 2))
    assert worker.is_settled(key)
    worker.sweep(programs[:1])
    (record,) = [json.loads(p.read_text()) for p in worker.folder.glob("*.w.json")]
    assert record["known"] is None and "sin" in record["source"], record
    worker.settled.learn(Shrunk(0, key, record["signature"], None, record["statements"]))
    worker.sweep(programs[1:])
    (again,) = [json.loads(p.read_text()) for p in worker.folder.glob("*.w.json")]
    assert "sin" in again["source"]  # cos: a hit of a class that has its record, not a record
    hits = []
    while not worker.outbox.empty():
        hits.append(worker.outbox.get())
    assert [type(h).__name__ for h in hits if getattr(h, "bug", None) == key][-1:] == ["Hit"], hits


def test_the_fork_server_imports_a_built_in_compiler_but_never_a_users_backend_module():
    # A built-in backend's compiler is imported once, before any worker is forked; a user's
    # module (`package.module:factory`) may do anything at import, so only its worker imports it.
    from conformance.night.forkserver import ENGINE, preloaded

    assert preloaded("thunder[cache=no caching]") == [*ENGINE, "thunder"]
    assert "thunder.dynamo" in preloaded("thunderfx") and "torch._dynamo" in preloaded("torch.compile[backend=eager]")
    assert preloaded("tests.fake_backends:breaks_every_way") == list(ENGINE) == preloaded("eager")
