"""pytest plugin for the conformance suite: options, Hypothesis profiles, the backend
under test, and the reports written at the end of `pytest -n auto conformance`.

Options (all have defaults, so the plain contract command works):
    --backend SPEC                 backend under test (default: thunder)
    --conformance-profile NAME     dev (default), ci (deterministic, small) or nightly
    --conformance-seed N           seed for every area test (ci: 0)
    --conformance-report-dir DIR   where findings and reports go (default: reports/conformance)
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

_COMMON = dict(
    deadline=None,  # one compile takes longer than Hypothesis's default 200 ms
    report_multiple_bugs=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.large_base_example],
)
# CI=true makes Hypothesis load its own "ci" profile; we always load ours explicitly.
settings.register_profile("dev", max_examples=40, **_COMMON)
# ci is deterministic through a fixed seed (see --conformance-seed) rather than derandomize,
# which would forbid the in-memory database that lets shrinking resume for a second pass.
settings.register_profile("ci", max_examples=25, database=None, **_COMMON)
settings.register_profile("nightly", max_examples=1500, **_COMMON)
PROFILES = ("dev", "ci", "nightly")
# Shrink budgets. ci counts candidate runs, not seconds, so that its minimal programs (and
# their signatures) do not depend on how fast the machine is: what passes on a clean clone
# here passes in CI. Per class, and per Hypothesis run: an area finds up to ~60 classes, most
# of them second symptoms of a few bugs, and the suite resumes the ones left too long.
CI_SHRINK_CALLS = 150
CI_SHRINK_RUN_CALLS = 600


def pytest_addoption(parser):
    group = parser.getgroup("gradmode-conformance")
    group.addoption("--backend", default="thunder", help="backend under test (SPEC; default thunder)")
    group.addoption("--conformance-profile", default="dev", choices=PROFILES,
                    help="Hypothesis profile: dev, ci (deterministic, small) or nightly")
    group.addoption("--conformance-seed", type=int, default=None,
                    help="seed every area test (default: random; 0 under the ci profile)")
    group.addoption("--conformance-report-dir", default="reports/conformance",
                    help="where findings, repros and index.html go")


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _runs_suite(config) -> bool:
    """Whether this session runs the conformance suite (not only the harness's own tests)."""
    suite = Path(__file__).parent.resolve()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        if path == suite or suite in path.parents:
            return True
    return False


def pytest_configure(config):
    # Only for the suite: the plugin is installed, so it is loaded in every pytest session, and
    # the harness's own tests load a derandomized profile of theirs (tests/conftest.py).
    if _runs_suite(config):
        settings.load_profile(config.getoption("--conformance-profile"))
    report_dir = Path(config.getoption("--conformance-report-dir"))
    config._conformance_report_dir = report_dir
    if not _is_worker(config) and _runs_suite(config):
        from conformance.backends import BackendUnavailable, get

        try:
            config._conformance_backend = get(config.getoption("--backend"))
        except BackendUnavailable as exc:
            pytest.exit(f"gradmode-conformance: {exc}", returncode=2)
        shutil.rmtree(report_dir / "findings", ignore_errors=True)
        try:
            (report_dir / "findings").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            pytest.exit(f"gradmode-conformance: report folder {report_dir} is not writable ({exc.strerror})",
                        returncode=2)


@pytest.fixture(scope="session")
def backend(pytestconfig):
    existing = getattr(pytestconfig, "_conformance_backend", None)
    if existing is not None:
        return existing
    from conformance.backends import get

    return get(pytestconfig.getoption("--backend"))


@pytest.fixture(scope="session")
def conformance_seed(pytestconfig):
    seed = pytestconfig.getoption("--conformance-seed")
    if seed is None and pytestconfig.getoption("--conformance-profile") == "ci":
        return 0
    return seed


@pytest.fixture(scope="session")
def conformance_shrink(pytestconfig):
    from conformance.shrinking import DEFAULT_SHRINK_SECONDS, Budget

    if pytestconfig.getoption("--conformance-profile") == "ci":
        return Budget(seconds=None, calls=CI_SHRINK_CALLS, run_seconds=None, run_calls=CI_SHRINK_RUN_CALLS)
    return Budget(seconds=DEFAULT_SHRINK_SECONDS)


@pytest.fixture
def check(backend, record_finding, conformance_seed, conformance_shrink):
    """`check(area, strategy)`: fuzz one area of the suite against the backend under test,
    record every finding, and fail on the ones that are not known issues."""
    from conformance.suite import assert_no_new, check_area

    def run(name: str, strategy) -> None:
        # The warnings of known issues point at the area test's line, not at this helper.
        assert_no_new(check_area(backend, name, strategy, on_finding=record_finding, seed=conformance_seed,
                                 shrink=conformance_shrink), stacklevel=3)

    return run


@pytest.fixture(scope="session")
def record_finding(pytestconfig, backend):
    """Saves each finding as a record under the report folder, per worker."""
    from conformance.report.records import record_of, save

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    folder = pytestconfig._conformance_report_dir / "findings"
    command = " ".join(["pytest"] + sys.argv[1:])

    def record(finding):
        save(record_of(finding, backend, command=command), folder, worker)

    return record


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if _is_worker(config) or not hasattr(config, "_conformance_backend"):
        return
    folder = config._conformance_report_dir
    if not (folder / "findings").exists() or not any((folder / "findings").glob("*.json")):
        return
    from conformance.report.write import write_run

    index = write_run(folder, backend_name=config._conformance_backend.name, seed=None,
                      command="pytest " + " ".join(sys.argv[1:]))
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"gradmode-conformance: reports in {index}")
