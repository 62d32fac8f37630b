"""`python -m conformance matrix`: constructs (rows) x backends (columns).

Runs the fuzz job per backend, then reads each cell off what it found:
- mismatch: a signature whose shrunk program uses the construct (linked to its repro);
- unsupported: every such signature is the backend raising where eager does not;
- agree: examples used the construct and no signature's shrunk program needs it;
- not run: no example used the construct (or the backend could not be loaded).
A signature is attributed to the constructs its shrunk program *needs*: those that no edit of
the reducer can remove while the backend still shows the same class of mismatch
(`needed_constructs`; shrinking leaves some constructs the mismatch does not need, where its
budget ran out). Plain ops are the row for programs that need none.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conformance.program import REGION_KINDS

# Matrix rows: (row label, predicate over a construct name of program.constructs)
ROWS = [
    ("plain ops", lambda c: c == "plain ops"),
    *[({"set_grad_enabled": "with torch.set_grad_enabled(b)", "autocast": "with torch.autocast(...)"}.get(
        k, f"with torch.{k}()"),
       (lambda k: lambda c: c == k or c.startswith(f"{k}("))(k)) for k in REGION_KINDS],
    ("torch.set_grad_enabled(b) call", lambda c: c.startswith("torch.set_grad_enabled(")),
    ("torch._C._set_grad_enabled(b) call", lambda c: c.startswith("torch._C._set_grad_enabled(")),
    ("@torch.no_grad() helper", lambda c: c == "@no_grad"),
    ("@torch.enable_grad() helper", lambda c: c == "@enable_grad"),
    ("torch.autograd.Function", lambda c: c == "Function.apply"),
    ("ctx.mark_non_differentiable", lambda c: c == "mark_non_differentiable"),
    ("if torch.is_grad_enabled()", lambda c: c == "if_is_grad_enabled"),
    ("return torch.is_grad_enabled()", lambda c: c == "return_is_grad_enabled"),
    (".detach()", lambda c: c == "detach"),
    (".requires_grad_()", lambda c: c == "requires_grad_"),
    ("creation op", lambda c: c == "create"),
    ("creation op, requires_grad=True", lambda c: c == "create_requires_grad"),
    ("in-place update", lambda c: c == "inplace"),
    ("nn.Module with parameters", lambda c: c == "module"),
]


# A crash or hang record's program killed, hung or broke its worker: not run in this process.
UNSAFE_TO_RUN = ("crash", "hang")


def needed_constructs(m: dict, backend) -> frozenset[str]:
    """The constructs of a recorded mismatch's program that it needs: each one some edit of the
    reducer removes while `backend` still shows the record's class is left out."""
    from conformance import serialize
    from conformance.check import run_example
    from conformance.oracles.mismatch import class_key
    from conformance.program import constructs
    from conformance.reduction import candidates, well_scoped

    if not m.get("program"):
        return frozenset()
    program, schedule = serialize.decode(m["program"]), serialize.decode(m["schedule"])
    needed = set(constructs(program))
    if backend is None or not m.get("class") or m.get("oracle") in UNSAFE_TO_RUN:
        return frozenset(needed)
    for candidate, calls in candidates(program, schedule):
        lost = needed - constructs(candidate)
        if lost and well_scoped(candidate):
            shown = run_example(candidate, backend, calls).mismatches
            if any(str(class_key(x)) == m["class"] for x in shown):
                needed -= lost
    return frozenset(needed)


# root_cause's word for a record whose class no longer shows when its program runs again (a
# backend now declares the difference, or it was fixed): left out of the matrix.
GONE = "no longer shows"


def root_cause(m: dict, backend, issues) -> str | None:
    """The known issue a recorded mismatch is, by the registry and the backend as they are now
    (a summary's `known_issue` is the registry's word on the night it ran): its program re-run
    on `backend`, its class put first, classified. None: new; GONE: its class does not show."""
    from conformance import serialize
    from conformance.check import run_example
    from conformance.engine import finding_of, focus
    from conformance.oracles.mismatch import class_key

    if m.get("oracle") in UNSAFE_TO_RUN:  # never run here: its program is classified as it stands
        return _known_crash(m, backend, issues)
    if not m.get("program") or not m.get("class"):
        return m.get("known_issue")
    result = run_example(serialize.decode(m["program"]), backend, serialize.decode(m["schedule"]))
    led = focus(result, lambda key: str(key) != m["class"]) if result.mismatches else None
    if led is None:
        return GONE
    known = finding_of(led, backend.name, issues).known
    return known.id if known else None


def _known_crash(m: dict, backend, issues) -> str | None:
    from conformance import serialize
    from conformance.night.crash import RunFailure, known_issue_of

    if not m.get("program") or not issues:
        return m.get("known_issue")
    known = known_issue_of(RunFailure(m["oracle"], m["aspect"], ""), serialize.decode(m["program"]), backend.name,
                           issues)
    return known.id if known else None


def by_root_cause(hits: list[dict]) -> list[tuple[str | None, dict]]:
    """One (known issue, record) per root cause a cell's signatures come from, the record with
    the shortest program standing for its known issue; each new signature stands alone."""
    best: dict[str, dict] = {}
    new = []
    for m in hits:
        issue = m.get("known_issue")
        if not issue:
            new.append((None, m))
        elif issue not in best or m.get("statements", 0) < best[issue].get("statements", 0):
            best[issue] = m
    return sorted(best.items()) + new


def cells(summary: dict | None, needs: dict[str, frozenset[str]] | None = None) -> dict[str, tuple[str, list[dict]]]:
    """Each row's cell; `needs` gives each signature's needed constructs (by default, all its
    shrunk program has)."""
    out = {}
    if summary is not None and needs is None:
        needs = {m["signature"]: needed_constructs(m, None) for m in summary["mismatches"]}
    for label, pred in ROWS:
        if summary is None:
            out[label] = ("not run", [])
            continue
        seen = sum(n for c, n in summary.get("construct_examples", {}).items() if pred(c))
        hits = [m for m in summary["mismatches"] if any(pred(c) for c in (needs[m["signature"]] or {"plain ops"}))]
        if hits:
            unsupported = all(m["oracle"] == "exceptions" and m.get("aspect", "").startswith("backend raised")
                              for m in hits)
            out[label] = ("unsupported" if unsupported else "mismatch", hits)
        else:
            out[label] = ("agree" if seen else "not run", [])
    return out


def write_matrix(summaries: dict[str, dict | None], report_dirs: dict[str, Path], docs: Path,
                 backends: dict | None = None) -> Path:
    """docs/matrix.md; `backends` (spec: backend) lets each signature's needed constructs be
    measured, else a signature counts for every construct of its shrunk program."""
    docs.mkdir(parents=True, exist_ok=True)
    links = docs / "matrix"
    shutil.rmtree(links, ignore_errors=True)
    backends_of = backends or {}
    summaries = {b: s and _retriaged(s, backends_of.get(b)) for b, s in summaries.items()}
    table = {b: cells(s, s and {m["signature"]: needed_constructs(m, backends_of.get(b)) for m in s["mismatches"]})
             for b, s in summaries.items()}
    backends = list(summaries)
    lines = ["# Conformance matrix", "",
             "Constructs (rows) against backends (columns), from `python -m conformance matrix`. "
             "A cell links one repro per root cause whose shrunk program needs the construct "
             "(no edit that removes it keeps the mismatch): the known issue's id "
             "(`conformance/known_issues.toml`, docs/findings.md), or *new* for a signature no known "
             "issue explains; the link's title is the signature.", ""]
    for b in backends:
        s = summaries[b]
        if s:
            causes = {m["known_issue"] for m in s["mismatches"] if m.get("known_issue")}
            new = sum(1 for m in s["mismatches"] if not m.get("known_issue"))
            lines.append(f"- **{b}**: {s['examples']} examples in {s['seconds']:.0f} s, "
                         f"{len(s['mismatches'])} signatures of {len(causes)} known issues and {new} new"
                         + (f" ({s['gone']} more no longer show{'s' if s['gone'] == 1 else ''})"
                            if s.get("gone") else "")
                         + ("" if backends_of.get(b) else " (the night's own verdicts: its backend is not this "
                            "process's)") + "; versions "
                         + ", ".join(f"{k} {v}" for k, v in sorted(s['versions'].items())))
        else:
            lines.append(f"- **{b}**: not run (could not be loaded)")
    lines += ["", "| construct | " + " | ".join(backends) + " |", "|---" * (len(backends) + 1) + "|"]
    for label, _ in ROWS:
        row = [label]
        for b in backends:
            state, hits = table[b][label]
            if hits:
                refs = []
                for issue, m in by_root_cause(hits):
                    folder = links / b.replace(" ", "-")  # a column label ("thunder main"): a link ends at a space
                    target = folder / (Path(m["repro"]).parent.name + ".py")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(report_dirs[b] / m["repro"], target)
                    # A table cell ends at a bare `|`, which every signature holds.
                    title = m["signature"].replace('"', "'").replace("|", "\\|")
                    refs.append(f"[{issue or 'new'}]({target.relative_to(docs).as_posix()} \"{title}\")")
                row.append(f"{state} " + " ".join(refs))
            else:
                row.append(state)
        lines.append("| " + " | ".join(row) + " |")
    path = docs / "matrix.md"
    path.write_text("\n".join(lines) + "\n")
    (docs / "matrix.json").write_text(json.dumps(
        {b: {label: state for label, (state, _) in table[b].items()} for b in backends}, indent=1))
    return path


def _retriaged(summary: dict, backend) -> dict:
    if backend is None:
        return summary
    from conformance import known_issues

    issues = known_issues.holding(known_issues.load(), backend)
    now = [m | {"known_issue": root_cause(m, backend, issues)} for m in summary["mismatches"]]
    return summary | {"mismatches": [m for m in now if m["known_issue"] != GONE],
                      "gone": sum(m["known_issue"] == GONE for m in now)}


def run_matrix(backends: list[str], seconds: float, workers: int, seed: int | None, report_root: Path,
               docs: Path, use: dict[str, Path] | None = None) -> Path:
    """Fuzz each backend (or take the report folder `use` names for it) and write the matrix."""
    from conformance.backends import BackendUnavailable, get
    from conformance.night import NightConfig, run_night

    summaries: dict[str, dict | None] = {}
    dirs: dict[str, Path] = {}
    loaded: dict = {}
    use = use or {}
    for spec in backends:
        if spec in use:  # a column named by a label ("thunder main") or a SPEC
            dirs[spec] = use[spec]
            summaries[spec] = json.loads((use[spec] / "summary.json").read_text())
            loaded[spec] = _same_backend_here(summaries[spec])
            continue
        try:
            loaded[spec] = get(spec)
        except BackendUnavailable as exc:
            print(f"{spec}: not run ({exc})")
            summaries[spec] = None
            continue
        folder = report_root / spec.replace("[", "_").replace("]", "").replace("=", "-").replace(" ", "-")
        dirs[spec] = folder
        run_night(NightConfig(backend=spec, seconds=seconds, workers=workers, seed=seed, report_dir=folder,
                            command=f"python -m conformance matrix --seconds {seconds:g}"))
        summaries[spec] = json.loads((folder / "summary.json").read_text())
    return write_matrix(summaries, dirs, docs, loaded)


def _same_backend_here(summary: dict):
    """The backend a night ran, loaded in this process to re-run its records, where it is the
    same (the packages it names at the versions the night had); None where not (a night of
    thunder main beside this venv's release): then the night's own verdicts stand."""
    from conformance.backends import BackendUnavailable, get

    try:
        backend = get(summary.get("backend_spec") or summary["backend"])
    except BackendUnavailable:
        return None
    here, there = backend.versions(), summary.get("versions", {})
    return backend if all(there.get(k) == v for k, v in here.items()) else None
