"""Writes a run's reports: per signature a folder with repro.py and report.html, and for
the run index.html and summary.json (the contract of DESIGN.md; paths relative to DIR)."""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path

import jinja2
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from conformance import text
from conformance.report.records import merge, write_atomic
from conformance.report.issue import issue_markdown, short_script
from conformance.report.repro import _backend_code, render_repro
from conformance.report.signatures import slug

_HTML = jinja2.Environment(
    loader=jinja2.PackageLoader("conformance.report", "templates"),
    autoescape=True,  # exception messages, tensor reprs and source are text, never markup
    finalize=lambda v: text.visible(v) if isinstance(v, str) else v,  # and no control characters
    undefined=jinja2.StrictUndefined,
)


@functools.lru_cache(maxsize=1)
def _registry() -> dict:
    """The known issues by id, for their upstream references in issue.md."""
    from conformance import known_issues

    return {i.id: i for i in known_issues.load()}


def _css() -> str:
    return resources.files("conformance.report").joinpath("templates/base.css").read_text()


def write_signature(folder: Path, record: dict) -> dict:
    """Write <slug>/repro.py and <slug>/report.html; return the summary.json entry."""
    name = slug(record)
    repro = render_repro(record)
    write_atomic(folder / name / "repro.py", repro)
    imp, compile_fn, _ = _backend_code(record)
    known = _registry().get(record["known"]) if record.get("known") else None
    script = short_script(record, imp, f"lambda fn: {compile_fn}")
    write_atomic(folder / name / "issue.md", issue_markdown(record, script, known.upstream if known else None))
    formatter = HtmlFormatter(nowrap=False)
    markup = jinja2.utils.markupsafe.Markup
    html = _HTML.get_template("report.html.j2").render(
        r=record, css=_css(), pygments_css=formatter.get_style_defs(".highlight"),
        repro=repro, repro_html=markup(highlight(repro, PythonLexer(), formatter)),
        script=script or "", script_html=markup(highlight(script, PythonLexer(), formatter)) if script else "",
    )
    write_atomic(folder / name / "report.html", html)
    return {
        "signature": record["signature"],
        "class": record.get("class"),  # the bug's class: what a later night matches its programs by
        "oracle": record["oracle"],
        "aspect": record.get("aspect"),
        "known": record["known"] is not None,
        "known_issue": record["known"],
        "status": record.get("status") or ("known" if record["known"] else "new"),
        "summary": record["summary"],
        "statements": record["statements"],
        "repro": f"{name}/repro.py",
        "report": f"{name}/report.html",
        "found_after_examples": record.get("found_after_examples"),
        "found_after_seconds": record.get("found_after_seconds"),
        "hits": record.get("hits", 1),
        "program": record["program"],
        "schedule": record["schedule"],
        "backend_spec": record.get("backend_spec"),
    }


def write_run(folder: Path, *, backend_name: str, seed, command: str, examples: int | None = None,
              seconds: float | None = None, versions: dict | None = None, records: list[dict] | None = None,
              extra: dict | None = None) -> Path:
    folder = Path(folder)
    records = merge(folder / "findings") if records is None else records
    entries = [write_signature(folder, r) for r in records]
    if versions is None:
        versions = records[0]["versions"] if records else {}
    summary = {"backend": backend_name, "versions": versions, "seed": seed, "examples": examples,
               "seconds": seconds, "mismatches": entries, **(extra or {})}
    write_atomic(folder / "summary.json", json.dumps(summary, indent=1))
    groups: dict[str, list] = {}
    for e, r in zip(entries, records):
        groups.setdefault(e["oracle"], []).append(e | {"hits": r.get("hits", 1)})
    index = _HTML.get_template("index.html.j2").render(
        s=summary, css=_css(), command=command, groups=sorted(groups.items()),
        new=[e for e in entries if not e["known"]], known=[e for e in entries if e["known"]],
    )
    write_atomic(folder / "index.html", index)
    return folder / "index.html"
