"""docs/findings.md: what the harness found, one section per known issue, made from
known_issues.toml (`python -m conformance findings`), so the page and the registry never differ."""

from __future__ import annotations

from conformance.check import describe_call, describe_inputs
from conformance.program import render_body

HEADER = """# What gradmode-conformance found

Every known issue of the reference stack (torch 2.9.1, lightning-thunder 0.2.6), by backend,
generated from `conformance/known_issues.toml` by `python -m conformance findings`: do not edit
by hand. Each of thunder's minimal programs still reproduces on thunder main of 2026-01-29;
`pytest conformance -k known_issues --backend B` re-runs those of backend B and fails on one
that no longer reproduces.
"""


def findings_markdown(issues) -> str:
    by_oracle: dict[str, list] = {}
    for issue in issues:
        by_oracle.setdefault(issue.oracle, []).append(issue)
    counts = {}
    for issue in issues:
        for b in issue.backends:
            counts[b] = counts.get(b, 0) + 1
    lines = [HEADER, f"{len(issues)} issues: " + ", ".join(f"{n} of {b}" for b, n in sorted(counts.items())) + ".", "",
             "| issue | backend | oracle | what happens |", "|---|---|---|---|"]
    for oracle, group in sorted(by_oracle.items()):
        for i in group:
            lines.append(f"| [{i.id}](#{i.id}) | {', '.join(i.backends)} | {oracle} | {_cell(i.title)} |")
    for oracle, group in sorted(by_oracle.items()):
        lines += ["", f"## {oracle}"]
        for i in group:
            lines += ["", f"### {i.id}", "", i.title, "", "```python", render_body(i.program).rstrip(), "```",
                      f"Inputs: {describe_inputs(i.program) or 'none'}. "
                      f"Called under: {'; '.join(describe_call(c) for c in i.schedule)}."]
            if i.notes:
                lines += ["", f"Why eager is right: {i.notes}"]
            if i.upstream:
                lines += ["", f"Upstream: {i.upstream}"]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
