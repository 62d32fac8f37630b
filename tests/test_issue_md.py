"""issue.md's short script: standalone, at most 25 lines for a short repro, and it prints the
difference where the backend has the bug and agreement where it has not."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import grad_mode
from conformance.generators.schedules import CallSpec
from conformance.program import Assign, Call, GradRegion, Program, Read, SetGradMode, TensorInput
from conformance.report.issue import issue_markdown, short_script
from conformance.report.repro import _backend_code
from conformance.report.write import write_signature

from tests.test_report import record_for

FAULTY = "conformance.backends.faulty:"
A = TensorInput("a", (3,), requires_grad=True)
REGION = Program((A,), (GradRegion("no_grad", (Assign("t0", Call("exp", ("a",))),)),
                        Assign("t1", Call("mul_scalar", ("t0",)))), ("t1",))
SQUARE = Program((A,), (Assign("t0", Call("square", ("a",))),), ("t0",))
LEAVES_GRAD_OFF = Program((A,), (Assign("t0", Call("sin", ("a",))), SetGradMode("torch.set_grad_enabled", False)),
                          ("t0",))
# A module's forward that reads its training flag, called in training mode and then in eval mode.
TRAINING = Program((A,), (Assign("t0", Read("training")),), ("t0",), parameters=(TensorInput("w0", (3,), requires_grad=True),))
CASES = [
    ("perturbs_outputs", REGION, (CallSpec(),), "return[0]"),
    ("always_grad", SQUARE, (CallSpec("no_grad"),), "return[0].requires_grad"),
    ("scales_gradients", SQUARE, (CallSpec(),), "a.grad"),
    ("forgets_grad_mode_change", LEAVES_GRAD_OFF, (CallSpec(), CallSpec("no_grad")), "torch.is_grad_enabled()"),
    ("stale_training_mode", TRAINING, (CallSpec(), CallSpec(training=False, values_seed=1)), "return[0]"),
]


def printed(tmp_path: Path, script: str, backend: str, apart: bool = False) -> dict[str, tuple[str, str]]:
    """What the script prints: per read, (eager, backend). Run in this process (3-5 s of
    imports fewer), or `apart`, standalone in a fresh interpreter from an empty folder."""
    if apart:
        path = tmp_path / "short.py"
        path.write_text(script)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        out = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        text = out.stdout
    else:
        buffer = io.StringIO()
        with grad_mode.isolated(), contextlib.redirect_stdout(buffer):
            exec(compile(script, "short.py", "exec"), {"__name__": "__main__"})  # noqa: S102 - our own script
        text = buffer.getvalue()
    rows = {}
    for line in text.splitlines():
        key, _, rest = line.partition(": eager ")
        rows[key] = tuple(rest.split(f", {backend} "))
    return rows


@pytest.mark.parametrize("fault,program,schedule,read", CASES, ids=[c[0] for c in CASES])
def test_the_short_script_prints_the_difference_and_agreement_without_the_bug(tmp_path, fault, program, schedule,
                                                                              read):
    record = record_for(program, FAULTY + fault, schedule)
    imp, compile_fn, _ = _backend_code(record)
    script = short_script(record, imp, f"lambda fn: {compile_fn}")
    # a module's class takes four lines a function does not (class, __init__, super, parameter)
    assert len(script.splitlines()) <= 25 + 4 * program.is_module, script
    rows = printed(tmp_path, script, record["backend"], apart=fault == "perturbs_outputs")
    assert rows[read][0] != rows[read][1], rows
    agree = printed(tmp_path, short_script(record, "", "lambda fn: fn"), record["backend"])  # eager as the backend
    assert all(e == b for e, b in agree.values()) and read in agree, agree


def test_issue_md_says_what_differs_with_the_script_first(tmp_path):
    record = record_for(REGION, FAULTY + "perturbs_outputs")
    record |= {"known": "some-issue", "known_title": "outputs off by 0.5 after a no_grad region"}
    write_signature(tmp_path, record)
    (issue,) = tmp_path.glob("*/issue.md")
    text = issue.read_text()
    assert text.startswith("# outputs off by 0.5 after a no_grad region\n")
    assert "```python\nimport torch\n" in text and "Versions: " in text and "torch " in text
    assert "locally-disabling-gradient-computation" in text  # the eager side's documentation
    assert "`some-issue`" in text and "[outputs.value]" in text
    html = (issue.parent / "report.html").read_text()
    assert html.index("The short script") < html.index("The checker: repro.py")


def test_a_difference_in_the_traces_only_has_no_short_script():
    record = record_for(REGION, FAULTY + "perturbs_outputs") | {"oracle": "traces"}
    assert short_script(record, "", "lambda fn: fn") is None
    assert "`repro.py` beside this file checks it" in issue_markdown(record, None)


def test_triage_proposes_an_entry_with_the_issue_texts():
    import tomllib

    from conformance.known_issues import stub
    from conformance.report.issue import title

    record = record_for(REGION, FAULTY + "perturbs_outputs")
    entry = tomllib.loads(stub(record))["issue"][0]
    assert title(record) in entry["title"] and entry["title"].startswith("TODO")
    assert "locally-disabling-gradient-computation" in entry["notes"]
    assert entry["shows"][0]["oracle"] == "outputs"
