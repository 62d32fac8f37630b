"""Repros run standalone and exit 1 while the mismatch reproduces, 0 once it is gone;
HTML reports show hostile strings as text; summary.json follows the DESIGN.md contract."""

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import grad_mode
from conformance.backends import get
from conformance.check import run_example
from conformance.generators.schedules import CallSpec
from conformance.program import Assign, Call, GradRegion, InPlace, Program, Read, SetGradMode, TensorInput
from conformance.report.records import record_of, save
from conformance.report.repro import render_repro
from conformance.report.write import write_run
from conformance.suite import finding_of

A = TensorInput("a", (2,), requires_grad=True)
PROGRAM = Program((A,), (GradRegion("no_grad", (Assign("t0", Call("sin", ("a",))),)),
                         Assign("t1", Call("mul", ("a", "t0")))), ("t1",))
LEAVES_GRAD_OFF = Program((A,), (SetGradMode("torch.set_grad_enabled", False), Assign("t0", Call("sin", ("a",)))),
                          ("t0",))


def record_for(program, spec, schedule=(CallSpec(),)):
    backend = get(spec)
    backend.spec = spec
    result = run_example(program, backend, schedule)
    assert result.mismatches, "the planted fault should show on this program"
    return record_of(finding_of(result, backend.name, []), backend, command="test")


def run_repro_here(record, spec=None) -> subprocess.CompletedProcess:
    """The repro's main() in this process, its output captured: 3-5 s of imports fewer than a
    fresh interpreter (test_a_repro_runs_standalone_from_an_empty_folder runs one apart)."""
    if spec is not None:
        record = record | {"backend_spec": spec, "backend": spec}
    namespace, out = {"__name__": "repro"}, io.StringIO()
    with grad_mode.isolated(), contextlib.redirect_stdout(out):
        exec(compile(render_repro(record), "repro.py", "exec"), namespace)  # noqa: S102 - our own repro
        code = namespace["main"]()
    return subprocess.CompletedProcess(["repro.py"], code, out.getvalue(), "")


def run_repro(tmp_path, record, spec=None):
    if spec is not None:
        record = record | {"backend_spec": spec, "backend": spec}
    path = tmp_path / "repro.py"
    path.write_text(render_repro(record))
    # Standalone: run from an empty folder, with only what the script imports (a backend of
    # tests/ is found as a user's own backend module would be, on PYTHONPATH).
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)


RUNNING = Program((A,), (GradRegion("no_grad", (InPlace("self.w0", "add_", "a"),)),), ("a",),
                  parameters=(TensorInput("w0", (2,)),))  # w0 does not require grad: a buffer
LINEAR = Program((A,), (Assign("t0", Call("mul", ("a", "self.w0"))),), ("t0",),
                 parameters=(TensorInput("w0", (2,), requires_grad=True),))
TRAINING = Program((A,), (Assign("t0", Read("training")),), ("t0",), parameters=(TensorInput("w0", (2,), requires_grad=True),))
# `self.w0.grad is None`, then `a * self.w0`: the gradient of the first call is kept for the second
GRAD_READ = Program((A,), (Assign("t0", Read("grad_is_none", "self.w0")), Assign("t1", Call("mul", ("a", "self.w0")))),
                    ("t0", "t1"), parameters=(TensorInput("w0", (2,), requires_grad=True),))
PRODUCT = Program((A,), (Assign("t0", Call("dot_self", ("a",))),), ("t0",))
# Eager raises: an in-place update of a leaf that requires grad, with grad enabled.
RAISES = Program((A,), (InPlace("a", "add_", "a"),), ("a",))
# An input with a NaN: pprint writes it `nan`, which the repro must define; eager and eager agree.
NAN = Program((TensorInput("a", (2,), requires_grad=True, special="nan"),), (Assign("t0", Call("relu", ("a",))),),
              ("t0",))


@pytest.mark.parametrize("fault, program, schedule", [
    ("perturbs_outputs", PROGRAM, (CallSpec(),)),
    ("perturbs_outputs", NAN, (CallSpec(),)),
    ("tests.fake_backends:masks_errors", RAISES, (CallSpec(),)),  # both raise, the backend its own AssertionError
    # raised at another stage in the harness; the repro, which has no cotangent for an output
    # eager never made, sees the call raise on one side only
    ("tests.fake_backends:defers_errors", RAISES, (CallSpec(),)),
    ("forgets_grad_mode_change", LEAVES_GRAD_OFF, (CallSpec(),)),
    ("stale_grad_mode_cache", PROGRAM, (CallSpec("grad"), CallSpec("no_grad", values_seed=1))),
    # the caller's autocast: the repro makes the call inside torch.autocast, as the harness did
    ("ignores_ambient_autocast", PRODUCT, (CallSpec("no_grad", autocast=True),)),
    ("stale_autocast_cache", PRODUCT, (CallSpec(), CallSpec(autocast=True, values_seed=1))),
    # a module's buffer, updated under no_grad: the repro reads it after each call
    ("drops_buffer_updates", RUNNING, (CallSpec(),)),
    # the caller's optimizer step between calls: the repro takes it too
    ("stale_parameter_values", LINEAR, (CallSpec(step=True), CallSpec(values_seed=1))),
    # `model.eval()` before the second call: the repro puts the model in eval mode too
    ("stale_training_mode", TRAINING, (CallSpec(), CallSpec(training=False, values_seed=1))),
    # the caller keeps the gradients of the first call: the repro does not set them to None
    ("stale_gradient_reads", GRAD_READ, (CallSpec(zero_grad=False), CallSpec(values_seed=1))),
    # the backend breaks the run outside a call: it reproduces (exit 1), not a script that cannot run
    ("tests.fake_backends:fails_to_compile", PROGRAM, (CallSpec(),)),
])
def test_repro_exits_1_while_it_reproduces_and_0_once_fixed(tmp_path, fault, program, schedule):
    spec = fault if ":" in fault else f"conformance.backends.faulty:{fault}"
    record = record_for(program, spec, schedule)
    bad = run_repro_here(record)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "MISMATCH" in bad.stdout
    fixed = run_repro_here(record, spec="eager")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fixed" in fixed.stdout


def test_a_repro_runs_standalone_from_an_empty_folder(tmp_path):
    # with only what it imports: torch and the backend (one of tests/ is found on PYTHONPATH,
    # as a user's own backend module would be)
    record = record_for(LINEAR, "conformance.backends.faulty:stale_parameter_values",
                        (CallSpec(step=True), CallSpec(values_seed=1)))
    bad = run_repro(tmp_path, record)
    assert bad.returncode == 1 and "MISMATCH" in bad.stdout, bad.stdout + bad.stderr
    fixed = run_repro(tmp_path, record, spec="eager")
    assert fixed.returncode == 0 and "fixed" in fixed.stdout, fixed.stdout + fixed.stderr


def test_repro_is_readable_and_imports_only_torch_and_the_backend(tmp_path):
    text = render_repro(record_for(PROGRAM, "conformance.backends.faulty:perturbs_outputs"))
    imports = {line.split()[1] for line in text.splitlines() if line.startswith(("import ", "from "))}
    assert imports <= {"contextlib", "sys", "torch", "conformance.backends.faulty"}
    assert "    with torch.no_grad():\n        t0 = torch.sin(a)\n" in text
    compile(text, "repro.py", "exec")


def test_repro_inputs_are_fresh_tensors_like_the_harness_inputs():
    # thunder treats a view input differently from a fresh one: a repro that passed views
    # did not reproduce what the harness saw.
    namespace = {"__name__": "repro"}
    exec(render_repro(record_for(PROGRAM, "conformance.backends.faulty:perturbs_outputs")), namespace)
    for values, shape in [(-2.0, []), ([[1.0, 2.0]], [1, 2]), ([], [2, 0])]:
        t = namespace["make"](values, "float32", shape, "cpu", True)
        assert t._base is None and t.is_leaf and t.requires_grad and list(t.shape) == shape


HOSTILE = '<script>alert(1)</script> & </script><b>'


def test_html_shows_hostile_strings_as_text(tmp_path):
    record = record_for(PROGRAM, "conformance.backends.faulty:perturbs_outputs")
    record["summary"] = HOSTILE
    record["mismatches"][0]["eager"] = HOSTILE
    record["body"] = HOSTILE
    record["traces"] = {"first": HOSTILE, "execution": "", "backward": ""}
    save(record, tmp_path / "findings", "main")
    index = write_run(tmp_path, backend_name="x<y>", seed=1, command=HOSTILE)
    for page in [index, *tmp_path.glob("*/report.html")]:
        html = page.read_text()
        assert HOSTILE not in html and "<script>" not in html and "</script><b>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp;" in html


def test_summary_follows_the_contract(tmp_path):
    record = record_for(PROGRAM, "conformance.backends.faulty:perturbs_outputs")
    record |= {"found_after_examples": 3, "found_after_seconds": 1.5}
    save(record, tmp_path / "findings", "main")
    write_run(tmp_path, backend_name="faulty", seed=7, command="c", examples=10, seconds=2.0, versions={"torch": "x"})
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {"backend", "versions", "seed", "examples", "seconds", "mismatches"} <= set(summary)
    m = summary["mismatches"][0]
    assert {"signature", "oracle", "known", "summary", "statements", "repro", "report",
            "found_after_examples", "found_after_seconds"} <= set(m)
    assert (tmp_path / m["repro"]).is_file() and (tmp_path / m["report"]).is_file()
    assert not Path(m["repro"]).is_absolute()
    assert m["found_after_examples"] == 3 and m["known"] is False


def test_workers_records_merge_to_the_smallest_program(tmp_path):
    from conformance.report.records import merge

    small = record_for(PROGRAM, "conformance.backends.faulty:perturbs_outputs")
    big = dict(small, statements=9, source=small["source"] + "# more\n")
    save(big, tmp_path, "gw0")
    save(small, tmp_path, "gw1")
    save(small, tmp_path, "gw1")
    (merged,) = merge(tmp_path)
    assert merged["statements"] == small["statements"] and merged["hits"] == 3


def test_records_of_one_signature_and_two_bugs_are_both_kept(tmp_path):
    # One signature can be two bugs (every one-op program of the sweep is `@ plain ops`):
    # records merge per signature and known issue, so a new bug is never merged into the
    # known one beside it, nor one known issue into another. Planted fault: the same issue
    # twice, and the two merge.
    from conformance.report.records import merge
    from conformance.report.write import write_run

    small = dict(record_for(PROGRAM, "conformance.backends.faulty:perturbs_outputs"), known="some-issue")
    new = dict(small, known=None, statements=small["statements"] + 2, source=small["source"] + "# more\n")
    for rec, worker in ((small, "gw0"), (new, "gw1"), (dict(small, known="other-issue"), "gw1")):
        save(rec, tmp_path / "run" / "findings", worker)
    merged = merge(tmp_path / "run" / "findings")
    assert sorted(str(r["known"]) for r in merged) == ["None", "other-issue", "some-issue"]
    write_run(tmp_path / "run", backend_name="faulty", seed=1, command="c", examples=3, seconds=1.0)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert len({m["repro"] for m in summary["mismatches"]}) == 3  # a folder each
    save(small, tmp_path / "same", "gw0")
    save(small, tmp_path / "same", "gw1")
    assert len(merge(tmp_path / "same")) == 1
