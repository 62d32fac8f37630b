"""The user documents stay true: the README fits a reader's minute and names the two commands,
and docs/findings.md is what known_issues.toml says today."""

from pathlib import Path

from conformance.known_issues import load
from conformance.report.findings import findings_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_is_short_and_names_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert "make test" in readme and "make conformance" in readme and "python -m conformance fuzz" in readme


def test_the_findings_page_is_generated_from_the_registry():
    # Planted fault: an issue the page does not list.
    issues = load()
    page = (ROOT / "docs" / "findings.md").read_text()
    assert page == findings_markdown(issues), "run `python -m conformance findings`"
    assert findings_markdown(issues[1:]) != page
    assert all(f"### {i.id}" in page for i in issues)
