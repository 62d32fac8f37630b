"""`python -m conformance fuzz|replay|report|bench|selfcheck|matrix|triage|findings|soak`.

Exit codes: 0 nothing new; 1 new mismatches (or, for replay, some still reproduce);
2 bad usage, or a backend that cannot be loaded, always with a one-line reason.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from conformance.text import printable


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit code 2."""


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seconds must be a number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--seconds must be more than 0, got {text}")
    return value


def _whole_number(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected a number more than 0, got {text}" if least == 1
                                         else f"expected a number of {least} or more, got {text}")
    return value


def _positive_int(text: str) -> int:
    return _whole_number(text, 1)


def _count(text: str) -> int:
    return _whole_number(text, 0)


def _database(text: str):
    from conformance.night.database import parse

    return parse(text)


def _shard(text: str):
    from conformance.night.config import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _workers(text: str) -> int:
    if text == "auto":
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    return _positive_int(text)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, as argparse does, but without the usage wall
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _add_fuzz(sub) -> None:
    fz = sub.add_parser("fuzz", help="fuzz a backend for a time budget and write reports")
    fz.add_argument("--backend", default="thunder", help="SPEC: thunder, torch.compile, eager, "
                    "thunder[cache=no caching] or package.module:factory (default thunder)")
    fz.add_argument("--seconds", type=_positive_seconds, required=True, help="time budget")
    fz.add_argument("--max-examples", type=_positive_int, help="stop after this many examples in all")
    fz.add_argument("--seed", type=int, help="seed for a reproducible run (default: random)")
    fz.add_argument("--workers", type=_workers, default=1, help="worker processes, or auto (one per core)")
    fz.add_argument("--report-dir", type=Path, default=Path("reports/fuzz"), help="where reports go")
    fz.add_argument("--db", type=_database, help="Hypothesis example database, kept across nights: a folder, "
                    "or redis://HOST:PORT/N shared by every machine")
    fz.add_argument("--shard", type=_shard, help="K/N: this machine is shard K of N (its own seeds, its share "
                    "of the sweep and baseline); join the shards' reports with `merge`")
    fz.add_argument("--baseline", type=Path, help="the previous night's summary.json, for triage")
    fz.add_argument("--known-issues", type=Path,
                    help="the known issues to triage against (default: conformance/known_issues.toml)")
    fz.add_argument("--example-timeout", type=_positive_seconds, default=60.0,
                    help="an example running longer is reported as a hang (default 60)")
    fz.add_argument("--no-sweep", dest="sweep", action="store_false",
                    help="leave out the enumerated programs: the probes that open a night (each grad-mode construct "
                         "alone, every op's grad-mode boundary: conformance/generators/probes.py) and the sweep "
                         "interleaved with the random programs (every op on a few small shapes and non-finite "
                         "values, and two motifs: conformance/generators/sweep.py)")
    fz.add_argument("--no-small-examples", dest="small_examples", action="store_false",
                    help="draw every example full-size (by default half are small: regions one level deep, "
                         "3 statements a block, 3 calls)")
    fz.add_argument("--shrinks-per-class", type=_positive_int, default=3,
                    help="shrink a class of mismatch whose repro stays long at most this often in all workers "
                         "(default 3)")
    fz.add_argument("--shrink-seconds", type=_positive_seconds, default=60.0,
                    help="shrinking budget per class of mismatch and shrink, in seconds (default 60)")
    fz.add_argument("--shrink-calls", type=_positive_int,
                    help="shrinking budget per class in candidate runs instead of seconds: with --seed and "
                         "--max-examples, the night is the same on any machine")
    fz.add_argument("--recycle-after", type=_positive_int, default=2000,
                    help="restart a worker after this many examples (default 2000)")
    fz.add_argument("--max-rss-mb", type=_positive_int, default=3000,
                    help="restart a worker whose peak RSS passes this (default 3000)")
    fz.add_argument("--chunk", type=_positive_int, default=10, help=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m conformance", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    _add_fuzz(sub)

    rp = sub.add_parser("replay", help="re-run a repro folder or a summary.json's mismatches")
    rp.add_argument("path", type=Path, help="a summary.json, a report folder, or one mismatch's folder")
    rp.add_argument("--backend", help="backend SPEC to replay against (default: the one recorded)")
    rp.add_argument("--scripts", action="store_true",
                    help="run each mismatch's standalone repro.py instead of replaying through the harness")

    bn = sub.add_parser("bench", help="time each phase of an example, or shrinking (--shrink)")
    bn.add_argument("--backend", default="thunder")
    bn.add_argument("--examples", type=_positive_int, default=100)
    bn.add_argument("--workers", type=_workers, default=1)
    bn.add_argument("--seed", type=int, default=0)
    bn.add_argument("--shrink", action="store_true", help="time from first failure to minimal, per known issue")
    bn.add_argument("--shrink-seconds", type=_positive_seconds, default=60.0)
    bn.add_argument("--issues", help="with --shrink: only these known issue ids, comma separated")
    bn.add_argument("--json", type=Path, help="also write the figures here as JSON")

    sc = sub.add_parser("selfcheck", help="prove every planted fault is caught, and by which oracle")
    sc.add_argument("--examples", type=_positive_int, default=200, help="budget per mutant and seed")
    sc.add_argument("--seeds", type=_positive_int, default=1)
    sc.add_argument("--mutants", help="only these, comma separated")
    sc.add_argument("--json", type=Path)

    mx = sub.add_parser("matrix", help="fuzz each backend and write docs/matrix.md: constructs x backends")
    mx.add_argument("--backends", default="thunder,torch.compile", help="comma-separated SPECs")
    mx.add_argument("--seconds", type=_positive_seconds, required=True, help="fuzzing budget per backend")
    mx.add_argument("--workers", type=_workers, default=1)
    mx.add_argument("--seed", type=int)
    mx.add_argument("--report-dir", type=Path, default=Path("reports/matrix"))
    mx.add_argument("--docs", type=Path, default=Path("docs"))
    mx.add_argument("--use", action="append", default=[], metavar="SPEC=DIR",
                    help="take an existing fuzz report folder for this backend instead of fuzzing it")

    tr = sub.add_parser("triage", help="print known_issues.toml entries for a run's new signatures")
    tr.add_argument("report_dir", type=Path, help="a report folder (with findings/) of fuzz or the suite")

    sk = sub.add_parser("soak", help="count examples after which a hostile backend left global state changed")
    sk.add_argument("--examples", type=_positive_int, default=10_000)
    sk.add_argument("--seed", type=int, default=0)

    fd = sub.add_parser("findings", help="write docs/findings.md from known_issues.toml")
    fd.add_argument("--out", type=Path, default=Path("docs/findings.md"))

    mg = sub.add_parser("merge", help="one report from many shards' report folders (fuzz --shard K/N)")
    mg.add_argument("folders", type=Path, nargs="+", metavar="DIR", help="the shards' report folders")
    mg.add_argument("--report-dir", type=Path, required=True, help="where the merged report goes")
    mg.add_argument("--baseline", type=Path, help="the previous night's summary.json, to triage against once")

    rep = sub.add_parser("report", help="rewrite index.html and summary.json from a report folder's findings")
    rep.add_argument("report_dir", type=Path)
    rep.add_argument("--backend", default="thunder")
    return parser


def _check_report_dir(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise UsageError(f"report folder {path} is a file; give a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"report folder {path} is not writable ({exc.strerror or exc})") from None


def _load_backend(spec: str):
    from conformance.backends import BackendUnavailable, get

    try:
        return get(spec)
    except BackendUnavailable as exc:
        raise UsageError(str(exc)) from None


def cmd_fuzz(args) -> int:
    from conformance.night import forkserver
    from conformance.night import NightConfig, run_night
    from conformance.night.baseline import load_baseline

    _check_report_dir(args.report_dir)
    if args.db is not None:
        from conformance.night.database import Unreachable, check

        try:
            check(args.db)
        except Unreachable as exc:
            raise UsageError(str(exc)) from None
    forkserver.start(args.backend)  # before the checks below, which import torch and the backend
    try:
        load_baseline(args.baseline)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.known_issues is not None:
        from conformance.known_issues import BadKnownIssues, load

        try:
            load(args.known_issues)
        except BadKnownIssues as exc:
            raise UsageError(f"--known-issues: {exc}") from None
    _load_backend(args.backend)  # fail fast, once, in the parent
    cfg = NightConfig(
        backend=args.backend, seconds=args.seconds, max_examples=args.max_examples, seed=args.seed,
        workers=args.workers, report_dir=args.report_dir, db=args.db, shard=args.shard, baseline=args.baseline,
        known_issues=args.known_issues, chunk=args.chunk, example_timeout=args.example_timeout,
        shrinks_per_class=args.shrinks_per_class, sweep=args.sweep, small_examples=args.small_examples,
        shrink_seconds=None if args.shrink_calls else args.shrink_seconds, shrink_calls=args.shrink_calls,
        recycle_after=args.recycle_after, max_rss_mb=args.max_rss_mb,
        command="python -m conformance " + " ".join(sys.argv[1:]),
    )
    return run_night(cfg)


def cmd_replay(args) -> int:
    from conformance.replay import ReplayError, replay

    try:
        return replay(args.path, args.backend, scripts=args.scripts)
    except ReplayError as exc:
        raise UsageError(str(exc)) from None


def cmd_report(args) -> int:
    from conformance.report.write import write_run

    if not (args.report_dir / "findings").is_dir():
        raise UsageError(f"{args.report_dir} has no findings/ folder to build reports from")
    index = write_run(args.report_dir, backend_name=args.backend, seed=None, command="")
    print(f"report: {index}")
    return 0


def cmd_bench(args) -> int:
    from conformance.bench import SHRINK_HEADER, format_report, format_shrink_row, run_bench, run_shrink_bench, write_json

    _load_backend(args.backend)
    if args.shrink:
        only = args.issues.split(",") if args.issues else None
        print(SHRINK_HEADER, file=sys.stderr, flush=True)
        result = run_shrink_bench(args.backend, args.examples, args.shrink_seconds, only,
                                  on_row=lambda row: print(format_shrink_row(row), file=sys.stderr, flush=True))
    else:
        result = run_bench(args.backend, args.examples, args.workers, args.seed)
    print(format_report(result))
    if args.json:
        write_json(result, args.json)
    return 0


def cmd_selfcheck(args) -> int:
    from conformance.selfcheck import ALL, format_rows, selfcheck

    only = args.mutants.split(",") if args.mutants else None
    unknown = sorted(set(only or []) - {name for name, _, _ in ALL})
    if unknown:
        raise UsageError(f"unknown mutant(s) {', '.join(unknown)}; known: {', '.join(n for n, _, _ in ALL)}")
    _load_backend("thunder") if not only or any(n in only for n, _, b in ALL if b) else None
    rows = selfcheck(args.examples, args.seeds, only)
    print(format_rows(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(r["caught"] for r in rows) else 1


def _spec_and_folder(item: str) -> tuple[str, str, str]:
    """`SPEC=DIR`, where SPEC may hold `=` in its options: `torch.compile[backend=eager]=DIR`."""
    after = item.index("]") + 1 if "]" in item else 0
    spec, sep, folder = item[after:].partition("=")
    return item[:after] + spec, sep, folder


def cmd_matrix(args) -> int:
    from conformance.matrix import run_matrix

    _check_report_dir(args.report_dir)
    use = {}
    for item in args.use:
        spec, sep, folder = _spec_and_folder(item)
        if not sep or not (Path(folder) / "summary.json").is_file():
            raise UsageError(f"--use {item!r}: expected SPEC=DIR with DIR/summary.json from a fuzz run")
        use[spec] = Path(folder)
    path = run_matrix([b.strip() for b in args.backends.split(",") if b.strip()], args.seconds, args.workers,
                      args.seed, args.report_dir, args.docs, use)
    print(f"matrix: {path}")
    return 0


def cmd_triage(args) -> int:
    from conformance.report.records import merge
    from conformance.known_issues import stub

    if not (args.report_dir / "findings").is_dir():
        raise UsageError(f"{args.report_dir} has no findings/ folder")
    new = [r for r in merge(args.report_dir / "findings") if not r.get("known") and r.get("program")]
    for r in new:
        print(stub(r))
    print(f"# {len(new)} new signature(s); give each a title and notes, merge those with one cause", file=sys.stderr)
    return 0




def cmd_findings(args) -> int:
    from conformance.known_issues import load
    from conformance.report.findings import findings_markdown

    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(findings_markdown(load()))
    except OSError as exc:
        raise UsageError(f"cannot write {args.out} ({exc.strerror or exc})") from None
    print(f"findings: {args.out}")
    return 0


def cmd_merge(args) -> int:
    from conformance.night.merge import MergeError, merge_reports

    _check_report_dir(args.report_dir)
    try:
        return merge_reports(args.folders, args.report_dir, args.baseline)
    except MergeError as exc:
        raise UsageError(str(exc)) from None


def cmd_soak(args) -> int:
    from conformance.soak import soak

    result = soak(args.examples, args.seed)
    print(result.line())
    return 1 if result.leaks else 0


COMMANDS = {"triage": cmd_triage, "matrix": cmd_matrix, "selfcheck": cmd_selfcheck, "fuzz": cmd_fuzz,
            "replay": cmd_replay, "report": cmd_report, "bench": cmd_bench, "findings": cmd_findings,
            "soak": cmd_soak, "merge": cmd_merge}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"python -m conformance {args.command}: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        print(f"python -m conformance {args.command}: error: missing dependency {exc.name!r}; "
              "run `make venv` (or pip install -e . -c constraints.txt)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
