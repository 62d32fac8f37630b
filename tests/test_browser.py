"""The HTML reports open in a real browser (headless Chromium), offline, and show the repro
and the diff. Screenshots are saved under reports/screenshots/ to look at."""

import shutil
import subprocess
from pathlib import Path

import pytest

from conformance.report.records import save
from conformance.report.write import write_run
from tests.test_report import PROGRAM, record_for

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (apt-get install chromium; .ci/run does)")
SHOTS = Path(__file__).resolve().parents[1] / "reports" / "screenshots"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(tmp_path, *args):
    profile = tmp_path / "profile"
    proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=120)
    return proc


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "run"
    save(record_for(PROGRAM, "conformance.backends.faulty:perturbs_outputs"), folder / "findings", "main")
    write_run(folder, backend_name="faulty[floating outputs off by 0.5]", seed=1, command="python -m conformance fuzz")
    return folder


def test_report_renders_with_repro_and_diff(tmp_path, run_dir):
    page = next(run_dir.glob("*/report.html"))
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    assert "What differs" in dom and "return[0]" in dom
    assert "def fn(a):" in dom and "compile_with_backend" in dom  # the repro, highlighted
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri())
    assert shot.stat().st_size > 10_000


def test_index_lists_the_signature_and_links_to_it(tmp_path, run_dir):
    dom = chromium(tmp_path, "--dump-dom", (run_dir / "index.html").as_uri()).stdout
    assert "outputs.value" in dom and "report.html" in dom and "1 new" in dom
    shot = SHOTS / "index.png"
    SHOTS.mkdir(parents=True, exist_ok=True)
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,900", (run_dir / "index.html").as_uri())
    assert shot.stat().st_size > 5_000
