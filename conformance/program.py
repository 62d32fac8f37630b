"""The Program IR: a generated test program as plain, frozen data.

A Program is what Hypothesis draws and shrinks, what the runner executes (after
`render` turns it into source) and what a repro prints. Nothing about a program lives
in a closure: two equal Programs render to the same source and behave the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator, Union

from conformance.ops import INPLACE_UNARY, OPS

DTYPES = ("float32", "float64", "bfloat16", "float16", "int64", "bool")
FLOAT_DTYPES = ("float32", "float64", "bfloat16", "float16")

# The four ways of changing grad mode for a block, and autocast, which real code nests with them
# (a no_grad region in an autocast one, autocast(enabled=False) inside an enabled one): it
# changes the dtype a matmul computes in, and autocast's cache of cast leaves outlives a grad-mode
# region inside it.
REGION_KINDS = ("no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "autocast")
# The dtype autocast computes in, by device type: the defaults of torch.autocast.
AUTOCAST_DTYPES = {"cpu": "bfloat16", "cuda": "float16"}
# The two plain calls that flip grad mode for the rest of the function.
SET_GRAD_APIS = ("torch.set_grad_enabled", "torch._C._set_grad_enabled")
# `@torch.autocast(...)` too: a decorated function runs its body in an enabled autocast region.
HELPER_DECORATORS = ("no_grad", "enable_grad", "autocast")
# A helper that is a torch.autograd.Function subclass, called as `Fn0.apply(...)`: its body is
# the forward, which saves its inputs; its backward is not the forward's derivative (each
# input's gradient is the input times the sum of the output's), so that a backend that
# differentiates the forward itself instead shows.
FUNCTION = "Function"

# A return value that is not a variable but the grad mode at the return statement.
GRAD_ENABLED = "torch.is_grad_enabled()"


@dataclass(frozen=True)
class TensorInput:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    device: str = "cpu"
    requires_grad: bool = False
    # A non-finite value that one element holds ("nan", "inf", "-inf"; floats only), where
    # a backend's decomposition of an op can differ from eager (`torch.relu` of a NaN).
    special: str = ""


@dataclass(frozen=True)
class Call:
    """An op from the catalogue applied to variables."""

    op: str
    args: tuple[str, ...]

    def render(self) -> str:
        return OPS[self.op].render(*self.args)


@dataclass(frozen=True)
class Create:
    """A creation op (`torch.ones((2, 3))`, `torch.arange(3.0)`, `torch.empty((2,)).fill_(2.0)`),
    maybe requiring grad."""

    op: str
    shape: tuple[int, ...]
    device: str = "cpu"
    requires_grad: bool = False

    def render(self) -> str:
        kwargs = []
        if self.device != "cpu":
            kwargs.append(f"device={self.device!r}")
        if self.requires_grad:
            kwargs.append("requires_grad=True")
        tail = "".join(", " + k for k in kwargs)
        if self.op == "arange":
            n = self.shape[0] if self.shape else 1
            return f"torch.arange({float(n)}{tail})"
        size = repr(self.shape)
        if self.op == "empty_fill":
            where = f"device={self.device!r}" if self.device != "cpu" else ""
            return f"torch.empty({size}{', ' + where if where else ''}).fill_(2.0)" \
                + (".requires_grad_()" if self.requires_grad else "")
        if self.op == "full":
            return f"torch.full({size}, 2.0{tail})"
        return f"torch.{self.op}({size}{tail})"


@dataclass(frozen=True)
class HelperCall:
    helper: str
    args: tuple[str, ...]

    def render(self, function: bool = False) -> str:
        """`helper0(a)`, or `Fn0.apply(a)` where the helper is a torch.autograd.Function."""
        return f"{self.helper}{'.apply' if function else ''}({', '.join(self.args)})"


# Reads of autograd state, each a Python bool bound to a name (returned, or branched on): how
# each renders, `{0}` standing for the tensor read.
READS = {
    "requires_grad": "{0}.requires_grad",
    "is_leaf": "{0}.is_leaf",
    "grad_fn_is_none": "{0}.grad_fn is None",
    "is_inference": "{0}.is_inference()",
    "inference_mode_enabled": "torch.is_inference_mode_enabled()",
    # A module's forward only: `model.eval()` turns the first off; the second, of a parameter,
    # is False once a backward left a gradient the caller kept (CallSpec.zero_grad).
    "training": "self.training",
    "grad_is_none": "{0}.grad is None",
}
MODULE_READS = ("training", "grad_is_none")
# The reads of no tensor.
READS_OF_NOTHING = ("inference_mode_enabled", "training")


@dataclass(frozen=True)
class Read:
    """`t = a.requires_grad` and the other READS: a bool, not a tensor."""

    attr: str
    of: str = ""  # the tensor read; "" for READS_OF_NOTHING

    @property
    def args(self) -> tuple[str, ...]:
        return (self.of,) if self.of else ()

    def render(self) -> str:
        return READS[self.attr].format(self.of)


@dataclass(frozen=True)
class Grad:
    """`torch.autograd.grad(t1.sum(), a)[0]`: the gradient of a value with respect to an input
    or a parameter, taken inside the function (a gradient penalty, a force from an energy),
    maybe with `create_graph=True` (then it can be differentiated again)."""

    args: tuple[str, str]  # the value differentiated (summed), and the input or parameter
    create_graph: bool = False

    def render(self) -> str:
        y, x = self.args
        return f"torch.autograd.grad({y}.sum(), {x}{', create_graph=True' if self.create_graph else ''})[0]"


Value = Union[Call, Create, HelperCall, Read, Grad]


@dataclass(frozen=True)
class Assign:
    target: str
    value: Value


@dataclass(frozen=True)
class InPlace:
    """`target.add_(arg)` and friends: mutates target (maybe an input, a parameter or a view);
    without `arg`, a method of the target alone (`target.relu_()`: ops.INPLACE_UNARY)."""

    target: str
    method: str
    arg: str | None = None

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.target,) if self.arg is None else (self.target, self.arg)

    def render(self) -> str:
        if self.arg is None:
            return INPLACE_UNARY[self.method].format(self.target)
        return f"{self.target}.{self.method}({self.arg})"


@dataclass(frozen=True)
class RequiresGrad:
    """`target.requires_grad_()`."""

    target: str


@dataclass(frozen=True)
class GradRegion:
    """`with torch.no_grad():` and the other grad-mode context managers."""

    kind: str
    body: tuple["Statement", ...]
    enabled: bool = False  # only for set_grad_enabled and autocast
    device: str = "cpu"  # only for autocast: its device type

    def header(self) -> str:
        if self.kind == "set_grad_enabled":
            return f"with torch.set_grad_enabled({self.enabled}):"
        if self.kind == "autocast" and self.enabled:
            return f'with torch.autocast("{self.device}", dtype=torch.{AUTOCAST_DTYPES[self.device]}):'
        if self.kind == "autocast":
            return f'with torch.autocast("{self.device}", enabled=False):'
        return f"with torch.{self.kind}():"


@dataclass(frozen=True)
class SetGradMode:
    """A plain call that changes grad mode until the next change, even past `return`."""

    api: str
    enabled: bool


@dataclass(frozen=True)
class IfGradEnabled:
    """`if torch.is_grad_enabled(): ... else: ...`, or `if t3:` on a Read's bool (`condition`);
    both branches end by assigning the same target."""

    then: tuple["Statement", ...]
    orelse: tuple["Statement", ...]
    condition: str = ""  # a name bound to a Read; "": torch.is_grad_enabled()

    def header(self) -> str:
        return f"if {self.condition or GRAD_ENABLED}:"


Statement = Union[Assign, InPlace, RequiresGrad, GradRegion, SetGradMode, IfGradEnabled]


@dataclass(frozen=True)
class Helper:
    """A module-level function decorated with `@torch.no_grad()`, `@torch.enable_grad()` or
    `@torch.autocast(...)`, or a torch.autograd.Function (decorator FUNCTION) whose forward is
    the body."""

    name: str
    decorator: str
    params: tuple[str, ...]
    body: tuple[Statement, ...]
    result: str
    # A Function's forward calls `ctx.mark_non_differentiable(result)`.
    non_differentiable: bool = False
    device: str = "cpu"  # only for autocast: its device type

    @property
    def is_function(self) -> bool:
        return self.decorator == FUNCTION

    def region(self, body: tuple[Statement, ...]) -> GradRegion:
        """The region a decorated function's body runs in (`@torch.no_grad()` on a function is
        `with torch.no_grad():` around its body)."""
        return GradRegion(self.decorator, body, self.decorator == "autocast", self.device)

    def decorator_line(self) -> str:
        return "@" + self.region(()).header().removeprefix("with ").removesuffix(":") if self.decorator == "autocast" \
            else f"@torch.{self.decorator}()"


@dataclass(frozen=True)
class Program:
    inputs: tuple[TensorInput, ...]
    body: tuple[Statement, ...]
    returns: tuple[str, ...]
    helpers: tuple[Helper, ...] = ()
    # Non-empty: the body is the forward of an nn.Module owning these, referred to in the body
    # as `self.<name>`: an nn.Parameter where it requires grad, else a registered buffer (running
    # statistics, updated in place under no_grad).
    parameters: tuple[TensorInput, ...] = ()
    # Seeds the input values and the cotangents; 0 is as good as any, so it shrinks there.
    seed: int = 0
    # Statistics labels, not semantics.
    labels: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def is_module(self) -> bool:
        return bool(self.parameters)

    @property
    def functions(self) -> frozenset[str]:
        """The names of the helpers that are torch.autograd.Functions."""
        return frozenset(h.name for h in self.helpers if h.is_function)

    @property
    def entry_point(self) -> str:
        return "Model" if self.is_module else "fn"


# -- rendering ------------------------------------------------------------------------

INDENT = "    "


def _render_block(stmts: tuple[Statement, ...], depth: int, functions: frozenset[str] = frozenset()) -> list[str]:
    """The block's lines; `functions` names the helpers that are torch.autograd.Functions."""
    pad = INDENT * depth
    if not stmts:
        return [pad + "pass"]
    lines: list[str] = []
    for s in stmts:
        if isinstance(s, Assign) and isinstance(s.value, HelperCall):
            lines.append(f"{pad}{s.target} = {s.value.render(s.value.helper in functions)}")
        elif isinstance(s, Assign):
            lines.append(f"{pad}{s.target} = {s.value.render()}")
        elif isinstance(s, InPlace):
            lines.append(pad + s.render())
        elif isinstance(s, RequiresGrad):
            lines.append(f"{pad}{s.target}.requires_grad_()")
        elif isinstance(s, GradRegion):
            lines.append(pad + s.header())
            lines.extend(_render_block(s.body, depth + 1, functions))
        elif isinstance(s, SetGradMode):
            lines.append(f"{pad}{s.api}({s.enabled})")
        elif isinstance(s, IfGradEnabled):
            lines.append(pad + s.header())
            lines.extend(_render_block(s.then, depth + 1, functions))
            lines.append(f"{pad}else:")
            lines.extend(_render_block(s.orelse, depth + 1, functions))
        else:  # pragma: no cover - a new statement kind without a renderer is a harness bug
            raise TypeError(f"cannot render statement {s!r}")
    return lines


def _render_return(returns: tuple[str, ...], depth: int) -> str:
    pad = INDENT * depth
    if len(returns) == 1:
        return f"{pad}return {returns[0]}"
    return f"{pad}return {', '.join(returns)}"


def render_helper(h: Helper) -> str:
    if h.is_function:
        return _render_function(h)
    lines = [h.decorator_line(), f"def {h.name}({', '.join(h.params)}):"]
    lines += _render_block(h.body, 1)
    lines.append(f"{INDENT}return {h.result}")
    return "\n".join(lines)


def _render_function(h: Helper) -> str:
    params = ", ".join(h.params)
    lines = [f"class {h.name}(torch.autograd.Function):", f"{INDENT}@staticmethod",
             f"{INDENT}def forward(ctx, {params}):", f"{INDENT * 2}ctx.save_for_backward({params})"]
    lines += [line for line in _render_block(h.body, 2) if line.strip() != "pass"]
    if h.non_differentiable:
        lines.append(f"{INDENT * 2}ctx.mark_non_differentiable({h.result})")
    lines += [f"{INDENT * 2}return {h.result}", "", f"{INDENT}@staticmethod", f"{INDENT}def backward(ctx, grad):",
              f"{INDENT * 2}{params}{',' if len(h.params) == 1 else ''} = ctx.saved_tensors",
              f"{INDENT * 2}return {', '.join(f'{p} * grad.sum()' for p in h.params)}"]
    return "\n".join(lines)


def render_body(program: Program) -> str:
    """Only the statements of the function body: what a mismatch report calls 'the program'."""
    depth = 2 if program.is_module else 1
    lines = [line for line in _render_block(program.body, depth, program.functions) if line.strip() != "pass"]
    lines.append(_render_return(program.returns, depth))
    return "\n".join(line[len(INDENT) * depth :] for line in lines)


def render(program: Program) -> str:
    """The program as a person would write it: `import torch`, helpers, then `fn` or `Model`."""
    parts = ["import torch"]
    parts += [render_helper(h) for h in program.helpers]
    parts.append(render_entry(program))
    return "\n\n\n".join(parts) + "\n"


def render_entry(program: Program, name: str | None = None) -> str:
    """The function `fn` (or the class `Model`) alone, under another name where one is given."""
    params = ", ".join(i.name for i in program.inputs)
    if program.is_module:
        names = [p.name for p in program.parameters]
        init = [
            f"class {name or 'Model'}(torch.nn.Module):",
            f"{INDENT}def __init__(self, {', '.join(names)}):",
            f"{INDENT * 2}super().__init__()",
        ]
        init += [f"{INDENT * 2}self.{p.name} = torch.nn.Parameter({p.name})" if p.requires_grad
                 else f'{INDENT * 2}self.register_buffer("{p.name}", {p.name})' for p in program.parameters]
        fwd = [f"{INDENT}def forward(self{', ' if params else ''}{params}):"]
        fwd += _render_block(program.body, 2, program.functions)
        fwd.append(_render_return(program.returns, 2))
        return "\n".join(init + [""] + fwd)
    lines = [f"def {name or 'fn'}({params}):"]
    lines += _render_block(program.body, 1, program.functions)
    lines.append(_render_return(program.returns, 1))
    return "\n".join(lines)


def device(program: Program) -> str:
    """The device type the program computes on (where the caller's autocast applies)."""
    return next((t.device for t in program.inputs + program.parameters if t.device != "cpu"), "cpu")


def autocast_source(program: Program) -> str:
    """The caller's `with torch.autocast(...)`, as a person would write it around a call."""
    return GradRegion("autocast", (), True, device(program)).header()


def statements_in(block: tuple[Statement, ...]) -> Iterator[Statement]:
    """The statements of a block, nested ones included (not those of helpers it calls)."""
    for s in block:
        yield s
        if isinstance(s, GradRegion):
            yield from statements_in(s.body)
        elif isinstance(s, IfGradEnabled):
            yield from statements_in(s.then)
            yield from statements_in(s.orelse)


def reads(block: tuple[Statement, ...]) -> Iterator[str]:
    """The variables the statements of a block read (an in-place update reads its target)."""
    for s in statements_in(block):
        if isinstance(s, Assign):
            yield from getattr(s.value, "args", ())
        elif isinstance(s, InPlace):
            yield from s.reads
        elif isinstance(s, RequiresGrad):
            yield s.target
        elif isinstance(s, IfGradEnabled) and s.condition:
            yield s.condition


def without_uncalled_helpers(program: Program) -> Program:
    """`program` without the helpers its function no longer calls."""
    called = {s.value.helper for s in statements_in(program.body)
              if isinstance(s, Assign) and isinstance(s.value, HelperCall)}
    return replace(program, helpers=tuple(h for h in program.helpers if h.name in called))


def count_statements(program: Program) -> int:
    """Statements in the body, nested ones included, plus the return: the repro's size."""

    def count(stmts) -> int:
        n = 0
        for s in stmts:
            n += 1
            if isinstance(s, GradRegion):
                n += count(s.body)
            elif isinstance(s, IfGradEnabled):
                n += count(s.then) + count(s.orelse) + 1
        return n

    return count(program.body) + sum(count(h.body) + 1 for h in program.helpers) + 1


def ops_called(program: Program) -> frozenset[str]:
    """The ops, creation ops and in-place methods the function and its helpers call."""
    body = program.body + tuple(t for h in program.helpers for t in h.body)
    return frozenset(s.value.op if isinstance(s, Assign) else s.method for s in statements_in(body)
                     if (isinstance(s, Assign) and isinstance(s.value, (Call, Create))) or isinstance(s, InPlace))


def constructs(program: Program) -> frozenset[str]:
    """The grad-mode constructs and statement kinds a program uses (for signatures, stats)."""
    found: set[str] = set()

    def walk(stmts) -> None:
        for s in stmts:
            if isinstance(s, GradRegion):
                named_by_mode = s.kind == "set_grad_enabled" or (s.kind == "autocast" and not s.enabled)
                found.add(f"{s.kind}({s.enabled})" if named_by_mode else s.kind)
                walk(s.body)
            elif isinstance(s, SetGradMode):
                found.add(f"{s.api}({s.enabled})")
            elif isinstance(s, IfGradEnabled):
                found.add("if_read" if s.condition else "if_is_grad_enabled")
                walk(s.then)
                walk(s.orelse)
            elif isinstance(s, InPlace):
                found.add("inplace")
            elif isinstance(s, RequiresGrad):
                found.add("requires_grad_")
            elif isinstance(s, Assign):
                v = s.value
                if isinstance(v, Create):
                    found.add("create_requires_grad" if v.requires_grad else "create")
                elif isinstance(v, Call) and v.op == "detach":
                    found.add("detach")
                elif isinstance(v, Read):
                    found.add(f"read_{v.attr}")
                elif isinstance(v, Grad):
                    found.add("autograd.grad(create_graph)" if v.create_graph else "autograd.grad")

    walk(program.body)
    for h in program.helpers:
        found.add(f"@{h.decorator}" if not h.is_function else "Function.apply")
        if h.non_differentiable:
            found.add("mark_non_differentiable")
        walk(h.body)
    if program.is_module:
        found.add("module")
    if any(not p.requires_grad for p in program.parameters):
        found.add("buffer")
    if GRAD_ENABLED in program.returns:
        found.add("return_is_grad_enabled")
    return frozenset(found)
