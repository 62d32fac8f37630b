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

from conformance import serialize, text
from conformance.night.baseline import shows


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


def _run_script(repro: Path) -> tuple[str, str]:
    """(verdict, output): the repro's own verdict, "reproduces" (exit 1, saying so) or
    "fixed" (exit 0), or "cannot run" when the script itself failed (a missing file, an
    exception before its check), which must not pass for a bug that reproduces."""
    repro = repro.resolve()  # it runs in its own folder, as a person would run it
    proc = subprocess.run([sys.executable, str(repro)], cwd=repro.parent, capture_output=True, text=True)
    said = proc.stdout.strip().splitlines()[-1:]
    if proc.returncode == 1 and said == ["reproduces"]:
        verdict = "reproduces"
    elif proc.returncode == 0:
        verdict = "fixed"
    else:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        verdict = f"cannot run (exit {proc.returncode}: {last[:160]})"
    return verdict, proc.stdout[-2000:] + proc.stderr[-2000:]


# Exit status of replay: 0 all fixed, 1 something still reproduces, 2 a repro could not run.
_SAID = {"reproduces": "still reproduces", "fixed": "fixed"}


def replay(path: Path, backend_spec: str | None = None, out=None, scripts: bool = False) -> int:
    out = out or sys.stdout  # read at the call: a default argument would keep the stream of the import
    path = Path(path)
    if path.is_dir() and (path / "repro.py").is_file() and not (path / "summary.json").exists():
        verdict, output = _run_script(path / "repro.py")
        out.write(f"{_SAID.get(verdict, verdict)}: {path}\n{text.visible(output)}")
        return {"reproduces": 1, "fixed": 0}.get(verdict, 2)
    summary_path = path / "summary.json" if path.is_dir() else path
    if not summary_path.exists():
        raise ReplayError(f"{path} holds neither a summary.json nor a repro.py")
    summary = _load_summary(summary_path)
    if scripts:
        return _replay_scripts(summary, summary_path.parent, out)
    from conformance.backends import BackendUnavailable, get
    from conformance.check import run_example

    spec = backend_spec or summary["mismatches"][0].get("backend_spec") if summary["mismatches"] else summary["backend"]
    try:
        backend = get(spec or summary["backend"])
    except BackendUnavailable as exc:
        raise ReplayError(str(exc)) from None
    still = 0
    for m in summary["mismatches"]:
        if not m.get("program"):
            out.write(f"cannot replay (no program recorded): {text.printable(m['signature'])}\n")
            continue
        try:
            program, schedule = serialize.decode(m["program"]), serialize.decode(m["schedule"])
        except serialize.BadProgram as exc:
            raise ReplayError(f"{summary_path}: mismatch {m.get('signature')!r} has a bad program ({exc})") from None
        if shows(m, run_example(program, backend, schedule)):
            still += 1
            out.write(f"still reproduces: {text.printable(m['signature'])}\n")
        else:
            out.write(f"fixed:            {text.printable(m['signature'])}\n")
    out.write(f"{still} of {len(summary['mismatches'])} still reproduce on {backend.name}\n")
    return 1 if still else 0


def _replay_scripts(summary: dict, folder: Path, out) -> int:
    still = broken = 0
    for m in summary["mismatches"]:
        repro = folder / m["repro"] if m.get("repro") else None
        if repro is None or not repro.is_file():
            out.write(f"cannot replay (no repro.py): {text.printable(m['signature'])}\n")
            continue
        verdict, _ = _run_script(repro)
        still += verdict == "reproduces"
        broken += verdict not in _SAID
        size = f"{m.get('statements', '?')} statements"
        out.write(f"{_SAID.get(verdict, verdict):<17} {size:>14}  {m['repro']}\n")
    out.write(f"{still} of {len(summary['mismatches'])} repro scripts still reproduce"
              + (f"; {broken} could not be run\n" if broken else "\n"))
    return 2 if broken else 1 if still else 0
