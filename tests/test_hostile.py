"""A hostile backend's text (exception messages, its name, its versions) reaches every file the
harness writes as data, never as code or markup: repro.py parses and runs nothing but the check,
the HTML shows it as text in a real browser, and the terminal gets no control characters."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import text
from conformance.generators.schedules import CallSpec
from conformance.report.records import save
from conformance.report.write import write_run
from tests.fake_backends import HOSTILE
from tests.test_browser import CHROMIUM, chromium
from tests.test_report import PROGRAM, record_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    record = record_for(PROGRAM, "tests.fake_backends:hostile", (CallSpec("no_grad"),))
    assert text.printable(HOSTILE.splitlines()[0]) in record["summary"]  # the message reached the record, escaped
    save(record, folder / "findings", "main")
    write_run(folder, backend_name=HOSTILE, seed=1, command="python -m conformance fuzz " + HOSTILE)
    return folder


def written(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and "findings" not in p.parts]


def test_every_written_file_is_free_of_control_characters_and_cut_to_size(run_dir):
    files = written(run_dir)
    assert {p.name for p in files} >= {"repro.py", "report.html", "index.html", "summary.json"}
    for p in files:
        content = p.read_text()
        assert all(c.isprintable() or c == "\n" for c in content), p
        # the 1 MB message is cut to a stated length (each file holds it a few times at most)
        assert len(content) < 20 * text.MAX_CHARS + 60_000, (p, len(content))
    assert "more characters cut" in next(run_dir.glob("*/report.html")).read_text()
    json.loads((run_dir / "summary.json").read_text())


def test_the_repro_parses_and_runs_nothing_but_the_check(run_dir, tmp_path):
    repro = next(run_dir.glob("*/repro.py"))
    source = repro.read_text()
    ast.parse(source)
    # Only the harness's own statements at the top: the hostile text is in comments and literals.
    assert source.splitlines()[0].startswith('"""gradmode-conformance repro')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(repro)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]  # the mismatch reproduces: the check ran
    assert not (tmp_path / "pwned").exists() and not (repro.parent / "pwned").exists()
    assert "\x1b" not in proc.stdout and "\\x1b" in proc.stdout  # the message shown, its ESC escaped


def test_the_issue_script_runs_nothing_the_backend_said(run_dir, tmp_path):
    issue = next(run_dir.glob("*/issue.md")).read_text()
    script = issue.split("```python\n", 1)[1].split("```", 1)[0]
    ast.parse(script)
    (tmp_path / "short.py").write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "short.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (tmp_path / "pwned").exists() and "raised: eager None" in proc.stdout


def test_text_helpers_escape_what_would_end_a_line_or_a_comment():
    for c in "\n\r\x00\x1b\x0b\x0c\x1c\x85\u2028\u2029":
        assert c not in text.printable(f"a{c}b")
    lines = text.comment('x\ny"""\r\n# -*- coding: utf-7 -*-').split("\n")
    assert all(line.startswith("# ") for line in lines) and len(lines) == 3
    assert text.cut("x" * 10, 4) == "xxxx [... 6 more characters cut]"


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (apt-get install chromium; .ci/run does)")
@pytest.mark.parametrize("page", ["index.html", "*/report.html"])
def test_the_html_shows_hostile_text_as_text_in_a_browser(run_dir, tmp_path, page):
    path = next(run_dir.glob(page))
    dom = chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    assert "<title>" in dom and "pwned</title>" not in dom  # no script ran
    assert "&lt;script&gt;" in dom and '<script>document' not in dom and "<img src" not in dom
