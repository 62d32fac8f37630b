"""The conformance matrix reads each cell off a summary: mismatch, unsupported, agree, not run."""

from conformance.matrix import cells, needed_constructs, write_matrix
from conformance.program import (Assign, Call, GradRegion, Program, RequiresGrad, SetGradMode, TensorInput,
                                 constructs)


def summary(mismatches, seen):
    return {"mismatches": mismatches, "construct_examples": seen, "examples": 10, "seconds": 1.0,
            "versions": {"torch": "x"}}


def mm(program, aspect="value", oracle="outputs", repro="a/repro.py"):
    from conformance import serialize
    from conformance.generators.schedules import CallSpec

    return {"signature": f"{oracle}.{aspect} | {id(program)}", "oracle": oracle, "aspect": aspect, "repro": repro,
            "program": serialize.encode(program), "schedule": serialize.encode((CallSpec(),)), "class": None}


A = TensorInput("a", (2,), requires_grad=True)
DETACH = Program((A,), (Assign("t0", Call("detach", ("a",))),), ("t0",))
REQUIRES_GRAD = Program((TensorInput("a", (1,)),), (RequiresGrad("a"), Assign("t0", Call("sin", ("a",)))), ("t0",))


def test_cells():
    s = summary([mm(DETACH, "requires_grad", "flags"), mm(REQUIRES_GRAD, "backend raised during call", "exceptions")],
                {"detach": 3, "no_grad": 5, "plain ops": 2, "requires_grad_": 4})
    c = cells(s)
    assert c[".detach()"][0] == "mismatch"
    assert c[".requires_grad_()"][0] == "unsupported"  # the backend raised, and eager did not
    assert c["with torch.no_grad()"][0] == "agree"
    assert c["with torch.inference_mode()"][0] == "not run"
    assert cells(None)["plain ops"][0] == "not run"


def test_a_construct_counts_only_where_the_mismatch_needs_it():
    from conformance import serialize
    from conformance.backends import get
    from conformance.check import run_example
    from conformance.generators.schedules import CallSpec
    from conformance.oracles.mismatch import class_key

    # The fault perturbs outputs whatever the program does: the region around a statement that
    # nothing returns is not needed. Planted fault: a backend that forgets a plain grad-mode
    # call needs the call, which stays.
    region = Program((A,), (GradRegion("no_grad", (Assign("t1", Call("cos", ("a",))),)),
                            Assign("t0", Call("sin", ("a",)))), ("t0",))
    plain = Program((A,), (SetGradMode("torch.set_grad_enabled", False), Assign("t0", Call("sin", ("a",)))), ("t0",))
    for program, spec, needed in [(region, "perturbs_outputs", frozenset()),
                                  (plain, "forgets_grad_mode_change", {"torch.set_grad_enabled(False)"})]:
        backend = get(f"conformance.backends.faulty:{spec}")
        m = mm(program)
        m["class"] = str(class_key(run_example(program, backend, (CallSpec(),)).mismatches[0]))
        assert needed_constructs(m, backend) == needed, spec
        assert needed_constructs(m, None) == constructs(program)  # not measured: all it has
        assert serialize.decode(m["program"]) == program


def test_write_matrix_links_each_mismatch_to_a_checked_in_repro(tmp_path):
    run = tmp_path / "run"
    (run / "a").mkdir(parents=True)
    (run / "a" / "repro.py").write_text("print('repro')\n")
    s = summary([mm(DETACH, "requires_grad", "flags")], {"detach": 1})
    path = write_matrix({"thunder": s, "other": None}, {"thunder": run, "other": run}, tmp_path / "docs")
    text = path.read_text()
    assert "| .detach() | mismatch [new](matrix/thunder/a.py" in text and "| not run |" in text
    row = next(line for line in text.splitlines() if line.startswith("| .detach()"))
    assert len(row.replace("\\|", "").split("|")) == 5, row  # 3 cells: the signature's bar does not split one
    assert (tmp_path / "docs" / "matrix" / "thunder" / "a.py").read_text() == "print('repro')\n"


def test_a_cell_links_one_repro_per_root_cause_the_shortest():
    from conformance.matrix import by_root_cause

    long, short, other = ({"signature": s, "known_issue": "x", "statements": n} for s, n in (("s1", 4), ("s2", 2), ("s3", 1)))
    new = {"signature": "s4", "known_issue": None, "statements": 1}
    assert by_root_cause([long, new, short, other | {"known_issue": "w"}]) == [("w", other | {"known_issue": "w"}),
                                                                              ("x", short), (None, new)]


def test_the_root_cause_is_the_registrys_word_now_not_the_nights():
    import pytest

    from conformance.backends import get
    from conformance.check import run_example
    from conformance.generators.schedules import CallSpec
    from conformance.matrix import root_cause
    from conformance.oracles.mismatch import class_key

    pytest.importorskip("thunder", reason="thunder is not installed")
    thunder = get("thunder")
    m = mm(REQUIRES_GRAD, "backend raised during call", "exceptions") | {"known_issue": None}
    m["class"] = str(class_key(run_example(REQUIRES_GRAD, thunder, (CallSpec(),)).mismatches[0]))
    from conformance import known_issues

    issues = known_issues.load()
    assert root_cause(m, thunder, issues) == "requires-grad-method-unsupported"  # the night had called it new
    # Planted fault: a summary that calls a backend's own fault a known issue is not believed.
    faulty = get("conformance.backends.faulty:perturbs_outputs")
    m = mm(DETACH) | {"known_issue": "requires-grad-method-unsupported"}
    m["class"] = str(class_key(run_example(DETACH, faulty, (CallSpec(),)).mismatches[0]))
    assert root_cause(m, faulty, issues) is None
    # A record whose class the backend no longer shows (fixed, or declared) is gone.
    from conformance.matrix import GONE

    assert root_cause(m, get("eager"), issues) == GONE


def test_a_crash_or_hang_record_is_never_run_in_the_matrixs_process():
    # Its program killed, hung or broke a worker. Planted fault: running it with this backend
    # (no `name`, no `compile`) raises.
    from conformance.matrix import root_cause

    for oracle in ("crash", "hang"):
        m = mm(DETACH, "worker died", oracle) | {"class": f"{oracle}.x", "known_issue": None}
        assert needed_constructs(m, object()) == constructs(DETACH)
        assert root_cause(m, object(), []) is None


def test_a_crash_record_is_classified_by_its_program_without_running_it():
    # The registry's word now: a crash entry (oracle "crash") claims a record the night called new.
    from types import SimpleNamespace

    from conformance import known_issues
    from conformance.matrix import root_cause

    region = GradRegion("inference_mode", (Assign("t0", Call("unsqueeze", ("a",))),))
    m = mm(Program((TensorInput("a", ()),), (region,), ("t0",)), "torch left broken", "crash") | {"known_issue": None}
    compile_ = SimpleNamespace(name="torch.compile")  # no compile(): running it would raise
    assert root_cause(m, compile_, known_issues.load()) == "compile-view-in-inference-mode-region-breaks-torch"
    assert root_cause(m, SimpleNamespace(name="thunder"), known_issues.load()) is None


def test_a_column_from_another_venvs_night_keeps_its_own_verdicts():
    # thunder main's night beside this venv's thunder 0.2.6: its records cannot be re-run here.
    import torch

    from conformance.matrix import _same_backend_here

    night = summary([], {}) | {"backend": "eager", "versions": {"torch": "0.0.1"}}
    assert _same_backend_here(night) is None
    assert _same_backend_here(night | {"versions": {"torch": torch.__version__}}).name == "eager"
    assert _same_backend_here(night | {"backend": "no-such-backend"}) is None
