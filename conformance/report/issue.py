"""issue.md: a finding as a GitHub issue a compiler engineer can paste upstream.

repro.py is a checker: it re-implements the oracles so that it can say "fixed", which makes it
165 lines long. An upstream report wants the opposite: the shortest script that shows the
difference, the function, its inputs as literals, the calls under their ambient modes, and one
line per observable that differs, eager next to the backend. `short_script` writes that script
from the record's typed parts (program, schedule, mismatches); `issue_markdown` wraps it in the
title, versions, expected and actual, and the known issue with its upstream reference.
"""

from __future__ import annotations

import math

import torch

from conformance import runner, serialize, text
from conformance.grad_mode import AMBIENT_SOURCE
from conformance.generators.schedules import in_eval_mode
from conformance.program import Program, autocast_source, constructs

# Where PyTorch documents what eager does, by the construct a repro has (the first that applies).
DOCS = (
    ("Function.apply", "https://docs.pytorch.org/docs/stable/notes/extending.html#extending-torch-autograd"),
    ("inference_mode", "https://docs.pytorch.org/docs/stable/notes/autograd.html#inference-mode"),
    ("inplace", "https://docs.pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd"),
    ("requires_grad_", "https://docs.pytorch.org/docs/stable/notes/autograd.html#setting-requires-grad"),
    ("", "https://docs.pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation"),
)
MAX_LINES = 25


def _number(x) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return f"float('{x}')"
    return repr(round(x, 4) if isinstance(x, float) else x)


def _values(v) -> str:
    return f"[{', '.join(_values(x) for x in v)}]" if isinstance(v, list) else _number(v)


def tensor_literal(t: torch.Tensor) -> str:
    """`torch.tensor([0.5, 1.25], requires_grad=True)`: the values rounded to 4 digits, which
    keeps the script short; the full values are in repro.py."""
    kwargs = []
    if t.dtype not in (torch.float32, torch.int64, torch.bool):
        kwargs.append(f"dtype={t.dtype}")
    if t.device.type != "cpu":
        kwargs.append(f"device={t.device.type!r}")
    if t.requires_grad:
        kwargs.append("requires_grad=True")
    tail = "".join(", " + k for k in kwargs)
    if t.numel() == 0 and t.dim() != 1:
        return f"torch.empty({list(t.shape)}{tail})"
    return f"torch.tensor({_values(t.detach().cpu().tolist())}{tail})"


def _observable(where: str, aspect: str, single: bool) -> str | None:
    """The expression a user reads for a mismatch's leaf, in the script's `run`; None where
    the leaf is the call itself (an exception: `raised` says it)."""
    if where == "torch.is_grad_enabled()":
        return where
    if where.startswith("return["):
        k = where[len("return["):].split("]")[0]
        leaf = ("out" if single else f"out[{k}]") + where.split("]", 1)[1]
    elif where.endswith(" after call"):
        leaf = where[: -len(" after call")]
    elif where.endswith(".grad"):
        leaf = where
    else:
        return None
    leaf = leaf.replace("self.", "m.")
    return {"requires_grad": f"{leaf}.requires_grad", "grad_fn": f"{leaf}.grad_fn is not None",
            "is_inference": f"{leaf}.is_inference()", "dtype": f"{leaf}.dtype", "shape": f"{leaf}.shape",
            }.get(aspect, leaf)


# The oracles whose leaf a user reads after a call (the others live in traces and caches).
_READABLE = ("outputs", "flags", "gradients", "grad_mode", "exceptions")


def short_script(record: dict, backend_import: str, backend_compile: str) -> str | None:
    """The shortest standalone script that prints what differs; None for a record without a
    program (a crash) or one whose difference lives in the backend's traces or cache only."""
    if record.get("program") is None or record["oracle"] not in _READABLE:
        return None
    program: Program = serialize.decode(record["program"])
    schedule = serialize.decode(record["schedule"])
    mismatches = [m for m in record.get("mismatches") or [] if m["oracle"] in _READABLE]
    last = max((m["call"] for m in mismatches if m.get("call") is not None), default=0)
    if program.is_module and any(spec.step or not spec.zero_grad for spec in schedule[:last]):
        return None  # the calls before it need their backward and step (or gradients): repro.py runs them
    single = len(program.returns) == 1
    now, after_backward = {}, {}  # printed name -> expression, read right after the call / after backward
    for m in mismatches:
        expr = _observable(m["where"], m["aspect"], single)
        if expr is not None and m.get("call") in (None, last):
            (after_backward if m["oracle"] == "gradients" else now).setdefault(_key(expr), expr)
    backward = any(m["oracle"] == "gradients" or "backward" in m["aspect"] + m["eager"] + m["backend"]
                   for m in mismatches)
    lines = ["import torch"] + ([backend_import] if backend_import else []) + [""]
    lines += _compact(record["source"].removeprefix("import torch\n").strip("\n"))
    lines += ["", "def run(compile):"] + _setup(program, now | after_backward, schedule[: last + 1]) + ["    try:"]
    lines += _calls(program, schedule[: last + 1], f"seen = {_dict(now)}")
    if backward:
        cots = _cotangents(program, schedule, last)
        lines += [f"        pairs = [(o, g) for o, g in zip({'(out,)' if single else 'out'}, [{', '.join(cots)}]) if getattr(o, 'requires_grad', False)]",
                  "        torch.autograd.backward(*zip(*pairs)) if pairs else None"]
    if after_backward:
        lines.append(f"        seen |= {_dict(after_backward)}")
    lines += ["    except Exception as e:", "        return {'raised': f'{type(e).__name__}: {e}'}",
              "    return {'raised': None, **seen}", ""]
    lines += [f"eager, backend = run(lambda f: f), run({backend_compile})",
              f"print(*(f'{{k}}: eager {{eager[k]}}, {_label(record.get('backend', ''))} {{backend.get(k)}}' for k in eager), sep='\\n')"]
    return "\n".join(lines) + "\n"


def _label(name: str) -> str:
    """The backend's name as the script prints it: its name is the backend's own text, and this
    is code, so only letters, digits and plain punctuation (no quote, brace or backslash)."""
    safe = "".join(c for c in name if c.isascii() and (c.isalnum() or c in " ._-:[]()=+,"))[:60].strip()
    return safe or "backend"


def _dict(reads: dict[str, str]) -> str:
    """Each read as text at once: a backend's output can change after the call (by backward)."""
    return "{" + ", ".join(f"{k!r}: str({e})" for k, e in reads.items()) + "}"


def _setup(program: Program, reads: dict[str, str], schedule) -> list[str]:
    if not program.is_module:
        return ["    f = compile(fn)"]
    model = f"Model({', '.join(tensor_literal(p) for p in runner.make_parameters(program))})"
    # a parameter is read after the call, or the model is put in eval mode
    if any("m." in e for e in reads.values()) or in_eval_mode(schedule):
        return [f"    m = {model}", "    f = compile(m)"]
    return [f"    f = compile({model})"]


def _calls(program: Program, schedule, read: str) -> list[str]:
    """Each call under its ambient mode, from grad on (as the harness does between calls where
    a call or the program can leave it off), the last one's result bound to `out` and `read`
    right after it, inside its ambient mode (where the harness reads the grad mode)."""
    names = [i.name for i in program.inputs]
    resets = any(c.startswith(("torch.set_grad_enabled", "torch._C._set_grad_enabled")) for c in constructs(program)) \
        or any(spec.ambient == "set_grad_enabled_false" for spec in schedule)
    lines = []
    training = True
    for index, spec in enumerate(schedule):
        lines += ["        torch.set_grad_enabled(True)"] if resets else []
        if spec.training != training:
            training = spec.training
            lines.append(f"        m.{'train' if training else 'eval'}()")
        lines += [f"        {n} = {tensor_literal(t)}" for n, t in zip(names, runner.make_inputs(program, spec))]
        body = [f"f({', '.join(names)})"] if index < len(schedule) - 1 else [f"out = f({', '.join(names)})", read]
        heads = [AMBIENT_SOURCE[spec.ambient]] + ([autocast_source(program)] if spec.autocast else [])
        pad = "        "
        for head in filter(None, heads):
            lines.append(pad + head)
            pad += "    " if head.startswith("with ") else ""
        lines += [pad + b for b in body]
    return lines


def _key(expr: str) -> str:
    """The printed name of a read: the expression, with the output as `return[k]`."""
    return expr.replace("out[", "return[").replace("out.", "return[0].") if expr != "out" else "return[0]"


def _compact(source: str) -> list[str]:
    """The program's source with one blank line between top-level definitions and none inside
    one: the issue's script is read on a web page, where every line counts."""
    chunks = [[line for line in chunk.split("\n") if line.strip()] for chunk in source.split("\n\n\n")]
    return [line for k, chunk in enumerate(chunks) for line in ([""] if k else []) + chunk]


def _cotangents(program: Program, schedule, call: int) -> list[str]:
    """The literal cotangent of each output of eager's call, as the harness used."""
    from conformance.report.repro import eager_cotangents

    _, cotangents = eager_cotangents(program, schedule[: call + 1])
    return ["None" if c is None else tensor_literal(c) for c in cotangents[call]]


def docs_link(program: Program) -> str:
    have = constructs(program) | {"Function.apply" for h in program.helpers if h.is_function}
    return next(url for c, url in DOCS if not c or c in have)


def title(record: dict) -> str:
    """In the compiler's words: the known issue's title, or what differs and where."""
    if record.get("known_title"):
        return text.printable(record["known_title"], 200)
    m = (record.get("mismatches") or [{}])[0]
    return text.printable(f"{record['backend']}: {m.get('where', 'a call')} {m.get('aspect', 'differs')}: "
                          f"eager {m.get('eager')}, {record['backend']} {m.get('backend')}", 200)


def issue_markdown(record: dict, script: str | None, upstream: str | None = None) -> str:
    """The whole issue: title, versions, the short script, expected, actual, the known issue."""
    versions = ", ".join(f"{k} {v}" for k, v in sorted(record.get("versions", {}).items()))
    parts = [f"# {title(record)}", "", f"Versions: {text.printable(versions, 300)}", ""]
    if script is not None:
        parts += ["```python", script.rstrip("\n"), "```", ""]
    else:
        parts += ["The difference is in the backend's traces or its cache, or no program was recorded: "
                  "`repro.py` beside this file checks it.", ""]
    lines = [text.printable(m["line"], 300) for m in record.get("mismatches") or [] if "line" in m]
    program = serialize.decode(record["program"]) if record.get("program") else None
    if program is not None:
        parts += [f"**Expected** (eager PyTorch, documented: {docs_link(program)}): the eager column.", ""]
    parts += ["**Actual**:", ""] + [f"- `{line}`" for line in lines[:6]] + [""]
    if record.get("known"):
        parts.append(f"Known issue `{record['known']}` of gradmode-conformance"
                     + (f"; upstream: {text.printable(upstream, 300)}" if upstream else "") + ".")
    parts.append("Found by gradmode-conformance; `repro.py` beside this file checks it and exits 0 once fixed.")
    return "\n".join(parts) + "\n"
