"""A Mismatch (one difference a user could observe) and the exception classes that carry them.

Each (oracle, aspect) pair raises its own exception class: Hypothesis tells bugs apart by
exception type and raise site, so distinct classes keep distinct bugs from being merged
into one during shrinking, and let `report_multiple_bugs` report them side by side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conformance import text

ORACLES = ("exceptions", "outputs", "flags", "gradients", "grad_mode", "recompiles", "traces")
# Not comparisons but what the fuzzer reports when an example never returns or kills its worker.
RUN_FAILURES = ("hang", "crash")


@dataclass(frozen=True)
class Mismatch:
    oracle: str
    aspect: str  # what differs, e.g. "requires_grad" or "missing gradient"
    where: str  # the leaf: "return[0]", "a.grad", "grad mode after call"
    eager: str
    backend: str
    call: int | None = None  # index in the call schedule
    ambient: str | None = None  # the ambient grad mode of that call

    @property
    def kind(self) -> str:
        return f"{self.oracle}.{self.aspect}"

    @property
    def symptom(self) -> str:
        return class_key(self).symptom

    @property
    def returned(self) -> int | None:
        """The index of the returned value that differs (`where` is "return[k]"), or None."""
        k = self.where[len("return["):-1] if self.where.startswith("return[") and self.where.endswith("]") else ""
        return int(k) if k.isdigit() else None

    def line(self) -> str:
        at = f"call {self.call} ({self.ambient}): " if self.call is not None else ""
        # One line, whatever the backend's message holds: it is shown in terminals and reports.
        return text.printable(f"[{self.kind}] {at}{self.where}: eager {self.eager}, backend {self.backend}")


class ConformanceMismatch(AssertionError):
    """Base of every mismatch exception; carries the mismatches and what produced them."""

    oracle = "conformance"

    def __init__(self, mismatches: list[Mismatch], report: str = ""):
        self.mismatches = mismatches
        super().__init__(report or "\n".join(m.line() for m in mismatches))


_CLASSES: dict = {}  # BugClass -> its exception class


def _normal(text: str) -> str:
    # Exception messages carry names, shapes and numbers of one program; keep the words.
    # The type again, qualified or not ("torch._dynamo.exc.TorchRuntimeError: ..."): once is enough.
    text = re.sub(r"\b(during (call|backward|setup)): [\w.]+: ", r"\1: ", text)
    text = re.sub(r"0x[0-9a-f]+|\d+(\.\d+)?", "N", text)
    text = re.sub(r"\((N(, N)*,?)?\)", "(…)", text)  # shapes
    text = re.sub(r"(float|bfloat|int|uint|complex)N", r"\1", text)  # dtypes
    text = re.sub(r"(['\"]).*?\1", "'…'", text)
    text = text.replace("backend='…' raised: ", "")  # Dynamo's wrapper: its cause says what failed
    return text[:90]


@dataclass(frozen=True)
class BugClass:
    """What tells two raw (unshrunk) failures apart before shrinking: oracle, aspect, symptom,
    and whether a later call differed (that points at the cache). Shrinking keeps the class,
    so distinct classes stay distinct bugs. Made once per mismatch (`class_key`); its text
    (`str`) is how records and summary.json write it, and nothing reads that text back."""

    oracle: str
    aspect: str
    # What each side shows, without the particulars of one program: the exception raised (its
    # words: names, shapes and numbers dropped), or the flag or Python value; empty where the
    # aspect says it all (values).
    eager: str = ""
    backend: str = ""
    later_call: bool = False

    @property
    def kind(self) -> str:
        return f"{self.oracle}.{self.aspect}"

    @property
    def symptom(self) -> str:
        if self.oracle == "exceptions":
            return f"{self.eager} / {self.backend}"
        return f"eager {self.eager}, backend {self.backend}" if self.eager or self.backend else ""

    def __str__(self) -> str:
        when = "later call" if self.later_call else "first call"
        return f"{self.kind} | {self.symptom} | {when}" if self.symptom else f"{self.kind} | {when}"


def class_key(m: Mismatch) -> BugClass:
    later = m.call not in (0, None)
    if m.oracle == "exceptions":
        return BugClass(m.oracle, m.aspect, _normal(m.eager), _normal(m.backend), later)
    if m.oracle in ("flags", "grad_mode") or m.aspect == "python value":
        return BugClass(m.oracle, m.aspect, m.eager, m.backend, later)
    return BugClass(m.oracle, m.aspect, later_call=later)


def exception_class(m: Mismatch) -> type[ConformanceMismatch]:
    """One class per BugClass, e.g. `FlagsMismatch_requires_grad__eager_True__backend_False`."""
    key = class_key(m)
    if key not in _CLASSES:
        base = _oracle_base(m.oracle)
        words = f"{key.aspect} {key.symptom} {'later' if key.later_call else 'first'}"
        name = f"{base.__name__}_{''.join(c if c.isalnum() else '_' for c in words)[:80]}"
        _CLASSES[key] = type(name, (base,), {"oracle": m.oracle, "class_key": key, "__module__": __name__})
    return _CLASSES[key]


_BASES: dict[str, type[ConformanceMismatch]] = {}


def _oracle_base(oracle: str) -> type[ConformanceMismatch]:
    if oracle not in _BASES:
        name = "".join(p.capitalize() for p in oracle.split("_")) + "Mismatch"
        _BASES[oracle] = type(name, (ConformanceMismatch,), {"oracle": oracle, "__module__": __name__})
    return _BASES[oracle]


for _o in ORACLES:
    globals()[_oracle_base(_o).__name__] = _oracle_base(_o)
