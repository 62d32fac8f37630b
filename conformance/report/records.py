"""A finding as a JSON record: what a worker writes, what the controller merges, what the
repro, the HTML report and summary.json are made from. Written atomically, one file per
worker and signature, so parallel workers never clobber each other."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from conformance import serialize
from conformance.check import describe_call, describe_inputs
from conformance.program import count_statements, render_body


def record_of(finding, backend, *, examples: int | None = None, seconds: float | None = None,
              command: str = "", seed: Any = None) -> dict:
    r = finding.result
    m = r.mismatches[0]
    traces = next((c.traces for c in reversed(r.backend.calls) if c.traces is not None), None)
    return {
        "signature": str(finding.signature),
        "oracle": m.oracle,
        "aspect": m.aspect,
        "known": finding.known.id if finding.known else None,
        "known_title": finding.known.title if finding.known else None,
        "class": str(finding.signature.bug),
        "summary": m.line(),
        "mismatches": [vars(x) | {"line": x.line()} for x in r.mismatches],
        "statements": count_statements(r.program),
        "body": render_body(r.program),
        "inputs": describe_inputs(r.program),
        "calls": [describe_call(c) for c in r.schedule],
        "source": r.source,
        "program": serialize.encode(r.program),
        "schedule": serialize.encode(r.schedule),
        "backend": backend.name,
        "backend_spec": getattr(backend, "spec", backend.name),
        "declarations": sorted(d.name for d in getattr(backend, "declarations", ())),
        "versions": _versions(backend),
        "hits": 1,
        "found_after_examples": examples,
        "found_after_seconds": seconds,
        "seed": seed,
        "command": command,
        "traces": {"first": traces.first, "execution": traces.execution, "backward": traces.backward}
        if traces else None,
    }


def _versions(backend) -> dict:
    import platform

    from conformance import __version__

    v = {"python": platform.python_version(), "gradmode-conformance": __version__}
    try:
        v.update(backend.versions() or {})
    except Exception:  # a plug-in's versions() failing must not lose the finding
        pass
    return v


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports are for everyone to read
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(record: dict, folder: Path, worker: str) -> Path:
    from conformance.report.signatures import slug

    path = folder / f"{slug(record)}.{worker}.json"
    if path.exists():  # the same worker found the same bug again: keep the smaller
        old = json.loads(path.read_text())
        record = merge_pair(old, record)
    write_atomic(path, json.dumps(record, indent=1))
    return path


def merge_pair(a: dict, b: dict) -> dict:
    keep = dict(min(a, b, key=lambda r: (r["statements"], len(r["source"]))))
    keep["hits"] = a.get("hits", 1) + b.get("hits", 1)
    for key in ("found_after_examples", "found_after_seconds"):
        vals = [r[key] for r in (a, b) if r.get(key) is not None]
        keep[key] = min(vals) if vals else None
    return keep


def merge(*folders: Path) -> list[dict]:
    """All records under the folders, one per signature and known issue (one signature can be two
    bugs: every one-op program of the sweep is `@ plain ops`, and sigmoid's, clamp's and a
    broadcast's gradient bugs are all `gradients.value | first call @ plain ops`): the
    smallest program, hits summed. A raw
    record (saved before shrinking, `shrunk: false`) counts only where no shrunk record of
    its class exists: then shrinking never finished, and the raw one is all there is."""
    records = _merge_all(folders)
    classes = {r.get("class") for r in records if r.get("shrunk", True)}
    return [r for r in records if r.get("shrunk", True) or r.get("class") not in classes]


def _merge_all(folders) -> list[dict]:
    by_bug: dict[tuple[str, str | None], dict] = {}  # (signature, known issue)
    for path in (p for folder in folders for p in sorted(Path(folder).glob("**/*.json"))):
        try:
            rec = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # a torn file cannot happen with write_atomic; a foreign one is skipped
        if "signature" not in rec:
            continue
        bug = rec["signature"], rec.get("known")
        by_bug[bug] = merge_pair(by_bug[bug], rec) if bug in by_bug else rec
    return sorted(by_bug.values(), key=lambda r: (r["known"] is not None, r["oracle"], r["signature"]))
