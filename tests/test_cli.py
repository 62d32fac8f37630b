"""Bad input gets one clear line and exit code 2; nothing is overwritten."""

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args, cwd=ROOT, timeout=120):
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def cli_here(*args) -> subprocess.CompletedProcess:
    """`python -m conformance ARGS` as main() in this process (3-5 s of imports fewer than a
    fresh interpreter), for a command that ends before a night begins: `fuzz` starts its fork
    server first, and this worker's nights share it (tests/test_night.py). The options that
    argparse refuses are tried through `python -m conformance` itself (`cli`)."""
    from conformance.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    return subprocess.CompletedProcess(["conformance", *args], code, out.getvalue(), err.getvalue())


def one_line_error(proc, *words):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("seconds", ["0", "-5", "soon"])
def test_seconds_must_be_positive(seconds):
    one_line_error(cli("fuzz", "--seconds", seconds), "--seconds")


@pytest.mark.parametrize("calls", ["0", "-5", "many"])
def test_shrink_calls_must_be_a_positive_count(calls):
    one_line_error(cli("fuzz", "--seconds", "1", "--shrink-calls", calls), "--shrink-calls")


def test_an_option_of_the_old_engine_is_refused_in_one_line():
    one_line_error(cli("fuzz", "--seconds", "1", "--explore", "0.5"), "--explore")


def test_unknown_backend():
    one_line_error(cli_here("fuzz", "--backend", "nope", "--seconds", "1"), "unknown backend 'nope'")


def test_database_that_is_a_file(tmp_path):
    db = tmp_path / "db"
    db.write_text("not a folder")
    one_line_error(cli_here("fuzz", "--backend", "eager", "--seconds", "1", "--db", str(db)), "is a file")


def test_report_dir_that_is_not_writable(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    one_line_error(cli_here("fuzz", "--backend", "eager", "--seconds", "1", "--report-dir", str(blocker / "sub")),
                   "not writable")
    if os.geteuid() != 0:  # root writes anywhere; a read-only folder only stops others
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        one_line_error(cli("fuzz", "--backend", "eager", "--seconds", "1", "--report-dir", str(ro)), "not writable")


@pytest.mark.parametrize("content, words", [
    ("{not json", ["not valid JSON"]),
    ('{"something": "else"}', ["not a gradmode-conformance summary.json"]),
    ("[1, 2]", ["not a gradmode-conformance summary.json"]),
])
def test_replay_refuses_corrupt_or_foreign_summaries_and_keeps_them(tmp_path, content, words):
    path = tmp_path / "summary.json"
    path.write_text(content)
    one_line_error(cli_here("replay", str(path)), *words)
    assert path.read_text() == content


def test_baseline_must_be_a_summary(tmp_path):
    bad = tmp_path / "base.json"
    bad.write_text("{}")
    one_line_error(cli_here("fuzz", "--backend", "eager", "--seconds", "1", "--baseline", str(bad)), "baseline")


def test_help_lists_the_commands():
    proc = cli("--help")
    assert proc.returncode == 0 and "fuzz" in proc.stdout and "replay" in proc.stdout


@pytest.mark.slow
def test_replay_of_a_summary(tmp_path):
    """A recorded eager-vs-faulty mismatch still reproduces (exit 1), and not on eager (exit 0)."""
    from tests.test_report import PROGRAM, record_for
    from conformance.report.records import save
    from conformance.report.write import write_run

    record = record_for(PROGRAM, "conformance.backends.faulty:perturbs_outputs")
    save(record, tmp_path / "findings", "main")
    write_run(tmp_path, backend_name="faulty", seed=None, command="")
    still = cli_here("replay", str(tmp_path / "summary.json"))
    assert still.returncode == 1 and "still reproduces" in still.stdout, still.stdout + still.stderr
    fixed = cli_here("replay", str(tmp_path), "--backend", "eager")
    assert fixed.returncode == 0 and "fixed" in fixed.stdout, fixed.stdout + fixed.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    one = tmp_path / summary["mismatches"][0]["repro"]
    alone = cli_here("replay", str(one.parent))
    assert alone.returncode == 1 and "still reproduces" in alone.stdout
    # The scripts alone, from a relative path as typed in the report's parent folder: found.
    relative = cli("replay", tmp_path.name, "--scripts", cwd=tmp_path.parent)
    assert relative.returncode == 1 and "1 of 1 repro scripts still reproduce" in relative.stdout, \
        relative.stdout + relative.stderr
    # A repro that cannot run is said so, and is not taken for a bug that reproduces.
    one.write_text("raise SystemExit('this repro is broken')\n")
    broken = cli("replay", str(tmp_path), "--scripts")
    assert broken.returncode == 2, broken.stdout + broken.stderr
    assert "cannot run (exit 1: this repro is broken)" in broken.stdout
    assert "0 of 1 repro scripts still reproduce; 1 could not be run" in broken.stdout


def test_matrix_use_takes_a_spec_with_options():
    from conformance.cli import _spec_and_folder

    assert _spec_and_folder("torch.compile[backend=eager]=/tmp/a=b") == ("torch.compile[backend=eager]", "=", "/tmp/a=b")
    assert _spec_and_folder("thunder=/tmp/x") == ("thunder", "=", "/tmp/x")
    assert _spec_and_folder("thunder")[1] == ""  # no folder: the command says what it expected
