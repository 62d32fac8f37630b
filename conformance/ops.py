"""The catalogue of tensor operations a generated program may use.

Each op is a source template: the text a person would write. The same template is
evaluated on meta tensors to learn whether an op applies to given arguments and what
it returns, so the catalogue needs no hand-written shape or dtype rules.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

# Arguments are named {0}, {1}. Order matters: Hypothesis shrinks towards the first ops,
# so the simplest, most robust ones come first.
UNARY = (
    ("mul_scalar", "{0} * 2"),
    ("add_scalar", "{0} + 1"),
    ("sin", "torch.sin({0})"),
    ("cos", "torch.cos({0})"),
    ("neg", "-{0}"),
    ("abs", "torch.abs({0})"),
    ("exp", "torch.exp({0})"),
    ("tanh", "torch.tanh({0})"),
    ("sigmoid", "torch.sigmoid({0})"),
    ("relu", "torch.relu({0})"),
    ("square", "torch.square({0})"),
    ("pow", "{0}.pow(2)"),
    ("cube", "{0} ** 3"),
    ("log1p_abs", "torch.log1p(torch.abs({0}))"),
    ("sqrt_abs", "torch.sqrt(torch.abs({0}) + 1)"),
    ("erf", "torch.erf({0})"),
    ("clamp", "torch.clamp({0}, -0.5, 0.5)"),
    ("sum", "{0}.sum()"),
    ("mean", "{0}.mean()"),
    ("sum_last", "{0}.sum(-1)"),
    ("softmax", "torch.softmax({0}, -1)"),
    ("cumsum", "{0}.cumsum(0)"),
    ("reshape", "{0}.reshape(-1)"),
    ("transpose", "{0}.transpose(0, 1)"),
    ("slice", "{0}[:1]"),
    ("unsqueeze", "{0}.unsqueeze(0)"),
    ("flip", "{0}.flip(0)"),
    ("clone", "{0}.clone()"),
    ("to_float", "{0}.float()"),
    ("to_double", "{0}.double()"),
    ("detach", "{0}.detach()"),
    # One output of an op that returns several: a compiler tags, saves and differentiates each
    # output of such a symbol, and a program reads one of them.
    ("chunk", "{0}.chunk(2)[-1]"),
    ("split", "{0}.split(1)[0]"),
    ("unbind", "{0}.unbind(0)[0]"),
    ("max_dim", "{0}.max(-1).values"),
    ("sort", "{0}.sort(-1).values"),
    ("var_mean", "torch.var_mean({0}, correction=0)[0]"),
    ("mean_of_var_mean", "torch.var_mean({0}, correction=0)[1]"),  # a second output, not a view
    # Indexing and filling: gathers whose backward scatters into the source, and fills whose
    # backward masks; `*_like` creations read only their argument's shape and dtype, so their
    # result never requires grad, whatever the mode.
    ("index_select", "{0}.index_select(0, torch.tensor([0]))"),
    ("fancy_index", "{0}[[0, 0]]"),
    ("masked_fill", "{0}.masked_fill({0} > 0, 0.5)"),
    ("where_scalar", "torch.where({0} > 0, {0}, 0.0)"),
    ("to_round_trip", "{0}.to(torch.float64).to({0}.dtype)"),
    ("zeros_like", "torch.zeros_like({0})"),
    ("ones_like", "torch.ones_like({0})"),
    # A product that applies to a tensor of any shape: autocast computes it in bfloat16 (float16
    # on CUDA), as it does matmul, where most pairs of shapes do not multiply.
    ("dot_self", "{0}.flatten() @ {0}.flatten()"),
)
BINARY = (
    ("add", "{0} + {1}"),
    ("mul", "{0} * {1}"),
    ("sub", "{0} - {1}"),
    ("div", "{0} / ({1} * {1} + 1)"),
    ("maximum", "torch.maximum({0}, {1})"),
    ("minimum", "torch.minimum({0}, {1})"),
    ("where", "torch.where({0} > 0, {0}, {1})"),
    ("matmul", "{0} @ {1}"),
    ("atan2", "torch.atan2({0}, {1})"),
    ("hypot", "torch.hypot({0}, {1})"),
)
# Families of ops that behave alike for autograd, for swarm testing (generators.programs):
# a program that draws from a few families uses each op of them more often, and some bugs
# need two ops of one family (a view of a view) or an op next to few others (minimum(a, a)).
FAMILIES = {
    "pointwise": ("mul_scalar", "add_scalar", "sin", "cos", "neg", "abs", "exp", "tanh", "sigmoid", "relu", "square",
                  "pow", "cube", "log1p_abs", "sqrt_abs", "erf", "clamp"),
    "reduction": ("sum", "mean", "sum_last", "softmax", "cumsum"),
    "view": ("reshape", "transpose", "slice", "unsqueeze", "flip", "detach"),
    "copy": ("clone", "to_float", "to_double", "to_round_trip"),
    "binary": ("add", "mul", "sub", "div", "maximum", "minimum", "where", "matmul", "atan2", "hypot", "dot_self"),
    "multi-output": ("chunk", "split", "unbind", "max_dim", "sort", "var_mean", "mean_of_var_mean"),
    "index and fill": ("index_select", "fancy_index", "masked_fill", "where_scalar", "zeros_like", "ones_like"),
}
# In-place methods: `target.<method>(arg)`; the target keeps its shape and dtype.
INPLACE = ("add_", "mul_", "sub_", "copy_")
# In-place methods of the target alone, as users update an activation (`x.relu_()`), a buffer
# (`buf.zero_()`, `buf.fill_(1.5)`) or a parameter (`p.mul_(0.5)`): `method: template`.
INPLACE_UNARY = {"sin_": "{0}.sin_()", "relu_": "{0}.relu_()", "clamp_": "{0}.clamp_(-0.5, 0.5)",
                 "zero_": "{0}.zero_()", "fill_": "{0}.fill_(1.5)", "mul_scalar_": "{0}.mul_(0.5)"}
# Ops whose result may be the tensor itself or share its storage, so that an update of it is
# one of the tensor too: views (chunk, split and unbind give views as well), `detach()`, and
# `float()`/`double()` of a tensor of that dtype. Not flip, which the view family holds but
# which copies.
ALIASES = frozenset({"reshape", "transpose", "slice", "unsqueeze", "detach", "to_float", "to_double", "chunk", "split",
                     "unbind"})
# The ops whose result is a view in autograd's sense (a view made while grad is off of a
# tensor that requires grad still requires grad): not flip (a copy) nor detach.
VIEWS = frozenset({"reshape", "transpose", "slice", "unsqueeze", "chunk", "split", "unbind"})
# "empty_fill": `torch.empty(size).fill_(2.0)`, an in-place fill of a fresh tensor (and
# `.requires_grad_()` after it where the value requires grad: on the empty leaf, the fill raises).
CREATION = ("ones", "zeros", "full", "arange", "empty_fill")
# The ops autocast computes in a lower precision (torch.amp docs, "CPU Ops that can autocast to
# bfloat16"; on CUDA, to float16); it caches the cast of a leaf that requires grad.
AUTOCAST_OPS = ("dot_self", "matmul")


@dataclass(frozen=True)
class Op:
    name: str
    template: str
    arity: int

    def render(self, *args: str) -> str:
        return self.template.format(*args)


OPS: dict[str, Op] = {name: Op(name, t, 1) for name, t in UNARY}
OPS.update({name: Op(name, t, 2) for name, t in BINARY})
assert sorted(OPS) == sorted(op for ops in FAMILIES.values() for op in ops), "every op in one family"


@dataclass(frozen=True)
class Meta:
    """What the generator knows of a value: enough to type-check the next op."""

    shape: tuple[int, ...]
    dtype: str  # torch dtype name without the "torch." prefix
    device: str

    @property
    def is_float(self) -> bool:
        return getattr(torch, self.dtype).is_floating_point

    @classmethod
    def of(cls, tensor) -> "Meta":
        """The Meta of a program's input or parameter (a TensorInput)."""
        return cls(tensor.shape, tensor.dtype, tensor.device)


def _meta_tensor(m: Meta) -> torch.Tensor:
    return torch.empty(m.shape, dtype=getattr(torch, m.dtype), device="meta")


def _devices_compatible(metas: tuple[Meta, ...]) -> bool:
    # Eager mixes devices only when the odd one out is a 0-d CPU tensor.
    devices = {m.device for m in metas if not (m.device == "cpu" and m.shape == ())}
    return len(devices) <= 1


def _result_device(metas: tuple[Meta, ...]) -> str:
    non_scalar_cpu = [m.device for m in metas if not (m.device == "cpu" and m.shape == ())]
    return non_scalar_cpu[0] if non_scalar_cpu else metas[0].device


@functools.lru_cache(maxsize=None)
def _compiled(source: str):
    return compile(source, "<op>", "eval")


@functools.lru_cache(maxsize=65536)
def infer(op_name: str, args: tuple[Meta, ...]) -> Meta | None:
    """The Meta an op returns for these arguments, or None when eager would reject them."""
    op = OPS[op_name]
    if len(args) != op.arity or not _devices_compatible(args):
        return None
    names = [f"_a{i}" for i in range(op.arity)]
    env = {"torch": torch, **{n: _meta_tensor(m) for n, m in zip(names, args)}}
    try:
        out = eval(_compiled(op.render(*names)), env)  # noqa: S307 - our own templates
    except Exception:
        return None
    if not isinstance(out, torch.Tensor) or out.numel() > 4096:
        return None
    return Meta(tuple(out.shape), str(out.dtype).removeprefix("torch."), _result_device(args))


@functools.lru_cache(maxsize=65536)
def inplace_applies(method: str, target: Meta, arg: Meta) -> bool:
    """Whether `target.<method>(arg)` is valid in eager: same shape after, castable dtype."""
    if not _devices_compatible((target, arg)):
        return False
    if target.device != arg.device and arg.shape != ():
        return False
    t = _meta_tensor(target)
    try:
        getattr(t, method)(_meta_tensor(arg))
    except Exception:
        return False
    return tuple(t.shape) == target.shape


@functools.lru_cache(maxsize=65536)
def inplace_unary_applies(method: str, target: Meta) -> bool:
    """Whether the one-tensor in-place `method` (INPLACE_UNARY) is valid in eager on `target`."""
    t = _meta_tensor(target)
    try:
        eval(_compiled(INPLACE_UNARY[method].format("_t")), {"torch": torch, "_t": t})  # noqa: S307 - our own
    except Exception:
        return False
    return True
