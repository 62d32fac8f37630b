"""`python -m conformance replay PATH`: which recorded mismatches still reproduce.

PATH is a summary.json, a report folder holding one, or one mismatch's folder holding
repro.py. A summary's mismatches are re-run through the harness, or with `scripts=True`
by running each one's standalone repro.py, as a compiler engineer would. Replay writes
nothing: a corrupt or foreign summary is an error, not overwritten.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conformance import serialize


class ReplayError(Exception):
    pass


def _load_summary(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ReplayError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); is it a summary.json?") from None
    if not isinstance(data, dict) or not isinstance(data.get("mismatches"), list) or "backend" not in data:
        raise ReplayError(f"{path} is not a gradmode-conformance summary.json (needs 'backend' and 'mismatches')")
    return data


def _run_script(repro: Path) -> tuple[bool, str]:
    """(still reproduces, its output): the repro's own verdict, by its exit status."""
    proc = subprocess.run([sys.executable, str(repro)], cwd=repro.parent, capture_output=True, text=True)
    return proc.returncode != 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def replay(path: Path, backend_spec: str | None = None, out=sys.stdout, scripts: bool = False) -> int:
    path = Path(path)
    if path.is_dir() and (path / "repro.py").is_file() and not (path / "summary.json").exists():
        reproduces, output = _run_script(path / "repro.py")
        out.write(f"{'still reproduces' if reproduces else 'fixed'}: {path}\n{output}")
        return 1 if reproduces else 0
    summary_path = path / "summary.json" if path.is_dir() else path
    if not summary_path.exists():
        raise ReplayError(f"{path} holds neither a summary.json nor a repro.py")
    summary = _load_summary(summary_path)
    if scripts:
        return _replay_scripts(summary, summary_path.parent, out)
    from conformance.backends import BackendUnavailable, get
    from conformance.check import run_example
    from conformance.report.signatures import signature

    spec = backend_spec or summary["mismatches"][0].get("backend_spec") if summary["mismatches"] else summary["backend"]
    try:
        backend = get(spec or summary["backend"])
    except BackendUnavailable as exc:
        raise ReplayError(str(exc)) from None
    still = 0
    for m in summary["mismatches"]:
        if not m.get("program"):
            out.write(f"cannot replay (no program recorded): {m['signature']}\n")
            continue
        try:
            program, schedule = serialize.decode(m["program"]), serialize.decode(m["schedule"])
        except serialize.BadProgram as exc:
            raise ReplayError(f"{summary_path}: mismatch {m.get('signature')!r} has a bad program ({exc})") from None
        result = run_example(program, backend, schedule)
        # The same bug: the same class key (kind, symptom, first or later call); the
        # constructs after " @ " may shrink differently on another run.
        now = {signature(x, program, schedule).split(" @ ")[0] for x in result.mismatches}
        if m["signature"].split(" @ ")[0] in now:
            still += 1
            out.write(f"still reproduces: {m['signature']}\n")
        else:
            out.write(f"fixed:            {m['signature']}\n")
    out.write(f"{still} of {len(summary['mismatches'])} still reproduce on {backend.name}\n")
    return 1 if still else 0


def _replay_scripts(summary: dict, folder: Path, out) -> int:
    still = 0
    for m in summary["mismatches"]:
        repro = folder / m["repro"] if m.get("repro") else None
        if repro is None or not repro.is_file():
            out.write(f"cannot replay (no repro.py): {m['signature']}\n")
            continue
        reproduces, _ = _run_script(repro)
        still += reproduces
        size = f"{m.get('statements', '?')} statements"
        out.write(f"{'still reproduces' if reproduces else 'fixed':<17} {size:>14}  {m['repro']}\n")
    out.write(f"{still} of {len(summary['mismatches'])} repro scripts still reproduce\n")
    return 1 if still else 0
