"""`python -m conformance merge DIR... --report-dir OUT`: one report from the report folders of
many shards (`fuzz --shard K/N`), as one night writes it from its workers' records.

Records are merged by bug (signature and known issue) with the smallest repro kept
(records.merge), examples, seconds and hits summed; the baseline's triage is done once over
the merged records, where `--baseline` is given, else each bug keeps the status its shards gave
it. The merged records are kept in OUT/findings/, so that a merge of merges, `report` and
`triage` read OUT as they read a night's folder.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from conformance.night import baseline as baselines
from conformance.night.summary import print_table
from conformance.report.records import merge, save


class MergeError(Exception):
    """Folders that cannot be merged (the CLI exits 2 with this line)."""


@dataclass(frozen=True)
class Part:
    folder: Path
    summary: dict


def load_part(folder: Path) -> Part:
    path = folder / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except FileNotFoundError:
        raise MergeError(f"{folder} has no summary.json: give the report folders of fuzz runs") from None
    except (OSError, ValueError) as exc:
        raise MergeError(f"{path} cannot be read ({exc})") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("mismatches"), list):
        raise MergeError(f"{path} is not a gradmode-conformance summary.json (no 'mismatches' list)")
    if not (folder / "findings").is_dir():
        raise MergeError(f"{folder} has no findings/ folder: its records are gone, and a merge needs them")
    return Part(folder, summary)


def load_parts(folders: list[Path], out: Path) -> list[Part]:
    """The folders' reports, refused where two are one night, or of two backends, or OUT."""
    parts, runs = [], {}
    for folder in folders:
        if folder.resolve() == out.resolve():
            raise MergeError(f"{folder} is also --report-dir: write the merged report to a folder of its own")
        part = load_part(folder)
        key = part.summary.get("run") or str(folder.resolve())
        if key in runs:
            raise MergeError(f"{runs[key]} and {folder} are the same night's report: give each shard once")
        runs[key] = folder
        if parts and part.summary.get("backend") != parts[0].summary.get("backend"):
            raise MergeError(f"{parts[0].folder} is a report of backend {parts[0].summary.get('backend')!r} and "
                             f"{folder} of {part.summary.get('backend')!r}: merge the reports of one backend")
        parts.append(part)
    return parts


def statuses(records: list[dict], parts: list[Part], baseline: dict | None) -> list[dict]:
    """Triage once against the baseline where one is given; else as the shards had it."""
    if baseline is not None:
        return baselines.with_status(records, baseline)
    still = {m["signature"] for p in parts for m in p.summary["mismatches"] if m.get("status") == "still there"}
    for r in records:
        r["status"] = "still there" if r["signature"] in still else ("known" if r.get("known") else "new")
    return records


def _union(parts: list[Part], field: str) -> list[str]:
    return sorted({s for p in parts for s in p.summary.get(field) or []})


def merged_extra(parts: list[Part], records: list[dict]) -> dict:
    """summary.json's fields past the contract's, joined over the shards."""
    seen = {r["signature"] for r in records}
    still = [s for s in _union(parts, "still_there_on_replay") if s not in seen]
    counters = {field: sum((Counter(p.summary.get(field) or {}) for p in parts), Counter())
                for field in ("construct_examples", "unshrunk_hits", "shown_only_behind")}
    lost = [loss | {"shard": p.summary.get("shard")} for p in parts
            for loss in (p.summary.get("database") or {}).get("lost", [])]
    redis = next((p.summary["database"]["redis"] for p in parts if p.summary.get("database")), None)
    return {
        "workers": [w | {"shard": p.summary.get("shard")} for p in parts for w in p.summary.get("workers", [])],
        "fixed_since_baseline": [s for s in _union(parts, "fixed_since_baseline") if s not in seen and s not in still],
        "still_there_on_replay": still,
        "interrupted": any(p.summary.get("interrupted") for p in parts),
        "baseline_not_replayed": _union(parts, "baseline_not_replayed"),
        **{field: dict(c) for field, c in counters.items()},
        "merged_from": [{"folder": str(p.folder), "run": p.summary.get("run"), "shard": p.summary.get("shard"),
                         "seed": p.summary.get("seed"), "examples": p.summary.get("examples"),
                         "seconds": p.summary.get("seconds")} for p in parts],
        **({"database": {"redis": redis, "lost": lost}} if redis else {}),
    }


def merge_reports(folders: list[Path], out: Path, baseline_path: Path | None = None, stream=sys.stdout) -> int:
    """Write OUT's reports from the folders'; 1 where a bug is new, as a night's exit."""
    from conformance.report.write import write_run

    parts = load_parts(folders, out)
    try:
        baseline = baselines.load_baseline(baseline_path)
    except ValueError as exc:
        raise MergeError(str(exc)) from None
    records = statuses(merge(*(p.folder / "findings" for p in parts)), parts, baseline)
    extra = merged_extra(parts, records)
    for r in records:
        r["unshrunk_hits"] = extra["unshrunk_hits"].get(r.get("class", ""), 0)
    shutil.rmtree(out / "findings", ignore_errors=True)
    for r in records:
        save(r, out / "findings" / "merged", "m")
    examples = sum(p.summary.get("examples") or 0 for p in parts)
    seconds = round(sum(p.summary.get("seconds") or 0 for p in parts), 1)
    first = parts[0].summary
    index = write_run(out, backend_name=first.get("backend"), seed=[p.summary.get("seed") for p in parts],
                      command="python -m conformance merge " + " ".join(str(f) for f in folders),
                      examples=examples, seconds=seconds, versions=first.get("versions"), records=records,
                      extra=extra)
    print_table(records, [], examples, seconds, index, stream)
    return 1 if any(r["status"] == "new" for r in records) else 0
