"""repro.py: a standalone script per signature (imports torch and the backend only)."""

from __future__ import annotations

import jinja2
import torch

from conformance import grad_mode, runner, serialize, slicing, text
from conformance.backends.base import Declaration
from conformance.generators.schedules import in_eval_mode, keeps_gradients
from conformance.oracles.recompiles import compilation_range
from conformance.program import Program, device, render_entry

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("conformance.report", "templates"),
    autoescape=False,  # Python source, not HTML
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)


def _literal(t) -> tuple:
    return (t.detach().cpu().tolist(), str(t.dtype).removeprefix("torch."), list(t.shape), t.device.type,
            bool(t.requires_grad))


def _backend_code(record: dict) -> tuple[str, str, str | None]:
    """(import line, compile expression, compile-count expression) for the record's backend."""
    spec: str = record.get("backend_spec") or record["backend"]
    if spec == "thunderfx":
        return "from thunder.dynamo import thunderfx", "thunderfx(fn)", None
    if spec.startswith("thunder"):
        opts = []
        if "cache=" in spec:
            opts.append(f"cache={spec.split('cache=')[1].split(',')[0].rstrip(']')!r}")
        if "executors=" in spec:
            names = spec.split("executors=")[1].split(",")[0].rstrip("]").split("+")
            opts.append(f"executors={names!r}")
        return "import thunder", f"thunder.jit(fn{''.join(', ' + o for o in opts)})", "thunder.cache_misses(compiled)"
    if spec.startswith("torch.compile"):
        be = spec.split("backend=")[1].split(",")[0].rstrip("]") if "backend=" in spec else "aot_eager"
        return "", f"torch.compile(fn, backend={be!r})", None
    if spec == "eager":
        return "", "fn", None
    module, _, factory = spec.partition(":")
    if not (all(part.isidentifier() for part in module.split(".")) and factory.isidentifier()):
        # A record is data, and this line is code: never write a spec that is not a plain import path.
        raise ValueError(f"backend spec {text.printable(spec, 200)!r} is not package.module:factory")
    return f"import {module}", f"{module}.{factory}().compile(fn)", None


def _header(record: dict) -> str:
    """The repro's opening comment: the signature, the summary, the known issue and the backend,
    each escaped (they hold the backend's own text: exception messages, its name, versions)."""
    versions = ", ".join(f"{k} {v}" for k, v in sorted(record.get("versions", {}).items()))
    lines = [f"signature: {record['signature']}", "", record["summary"]]
    if record.get("known"):
        lines.append(f"Known issue {record['known']}: {record.get('known_title')}")
    lines += ["", f"Found with {record['backend']} ({versions})."]
    return text.comment("\n".join(lines))


# A worker that died between examples (or whose example could not be read back) leaves a
# crash record without a program: its repro says so, and exits 2 as a repro that cannot run.
UNRECOVERED = '''"""gradmode-conformance: no program to replay.

The worker was not running an example when this happened, or its example could not be read
back. The job's log has the worker's traceback.
"""
{summary}

import sys

sys.exit(2)
'''


def eager_cotangents(program: Program, schedule) -> tuple[runner.SideOutcome, list[list[torch.Tensor | None]]]:
    """Eager's run of the schedule, and per call the cotangent the harness gives each output in
    backward (None where an output is not a floating tensor)."""
    with grad_mode.clean():
        eager = runner.run(program, None, schedule)
    per_call = []
    for index in range(len(schedule)):
        outs = eager.calls[index].outputs if index < len(eager.calls) else ()
        cots = []
        for k, leaf in enumerate(outs):
            if leaf.kind == "tensor" and leaf.dtype.startswith(("float", "bfloat", "complex")):
                fake = torch.empty(leaf.shape, dtype=getattr(torch, leaf.dtype), device=leaf.device)
                cots.append(runner.cotangent(fake, program, index, k))
            else:
                cots.append(None)
        per_call.append(cots)
    return eager, per_call


def render_repro(record: dict) -> str:
    if record.get("program") is None:
        return UNRECOVERED.format(summary=text.comment(record["summary"]))
    program: Program = serialize.decode(record["program"])
    schedule = serialize.decode(record["schedule"])
    declared = set(record.get("declarations") or ())
    # The same rules as the oracles': eager's reference is the live program where the backend
    # may remove dead code (check.run_example), and a backward error may come from its call.
    live = (slicing.dead_code_reference(program, tuple(c.ambient for c in schedule))
            if Declaration.DEAD_CODE_REMOVED.name in declared else program)
    eager, cotangents = eager_cotangents(live, schedule)
    calls = [(spec.caller(), [_literal(t) for t in runner.make_inputs(program, spec)],
              [None if c is None else _literal(c) for c in cots])
             for spec, cots in zip(schedule, cotangents)]
    params = [_literal(t) for t in runner.make_parameters(program)] if program.is_module else []
    imp, comp, count = _backend_code(record)
    expected = None
    if record["oracle"] == "recompiles" and count:
        keys = [c.cache_key for c in eager.calls]
        expected = compilation_range("every call" if "no caching" in record["backend"] else "per key", keys)
    names = [i.name for i in program.inputs] + [f"self.{p.name}" for p in program.parameters]
    source = record["source"].removeprefix("import torch\n").strip("\n")
    reference = f"{program.entry_point}_reference" if live != program else program.entry_point
    if live != program:
        why = "Eager's reference: the program without what nothing reads (the backend declares it may remove dead code)."
        source += "\n\n\n" + text.comment(why) + "\n" + render_entry(live, reference)
    return _ENV.get_template("repro.py.j2").render(
        header=_header(record), backend_import=imp, backend_compile=comp, program=source,
        calls=_pretty(calls), parameters=_pretty(params) if params else "", entry=program.entry_point,
        reference=reference, backward_errors_at_call=Declaration.BACKWARD_ERRORS_AT_CALL.name in declared,
        # A run that killed or hung its worker: the backend's calls run in a child process first.
        isolate=record["oracle"] in ("crash", "hang"),
        names=repr(names), expected_compilations=expected,
        autocast=device(program) if any(spec.autocast for spec in schedule) else "",
        steps=[spec.step for spec in schedule] if program.is_module and any(spec.step for spec in schedule) else None,
        training=[spec.training for spec in schedule] if in_eval_mode(schedule) else None,
        zero_grad=[spec.zero_grad for spec in schedule] if keeps_gradients(schedule) else None,
        count_compilations=count,
        # White-box: only where the mismatch is in thunder's traces, so other repros stay plain.
        thunder_traces=record["oracle"] == "traces" and imp == "import thunder",
        # pprint writes a non-finite float as the bare name `nan` or `inf`
        non_finite=any(i.special for i in program.inputs + program.parameters),
    )


def _pretty(value) -> str:
    import pprint

    return pprint.pformat(value, width=100, sort_dicts=False)
