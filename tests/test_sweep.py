"""The sweep of small programs (generators.sweep) and the small examples (engine.examples)."""

from hypothesis import given, settings

from conformance import engine
from conformance.backends import get
from conformance.check import run_example
from conformance.generators.schedules import SINGLE_CALL
from conformance.generators.sweep import (boundary_programs, promotion_programs, single_op_programs, sweep_examples,
                                          view_update_programs)
from conformance.ops import BINARY, UNARY
from conformance.program import Assign, Call, render_body


def test_the_sweep_has_one_op_per_program_on_float_inputs_that_require_grad():
    programs = single_op_programs()
    assert len(programs) == len(set(programs)) > 500
    for p in programs:
        (statement,) = p.body
        assert isinstance(statement, Assign) and isinstance(statement.value, Call), p
        assert p.returns == ("t0",) and all(i.dtype == "float32" and i.requires_grad for i in p.inputs), p


def test_the_sweep_holds_the_one_op_points_that_random_programs_seldom_make():
    def has(source, *inputs):
        return any(render_body(p).startswith(source) and [(i.shape, i.special) for i in p.inputs] == list(inputs)
                   for p in single_op_programs())

    assert has("t0 = a @ b", ((1,), ""), ((1, 3), ""))  # matmul-size-one-vector-backward-grad-shape
    assert has("t0 = a[:1]", ((3, 0), ""))  # slice-backward-pads-size-zero-dim
    assert has("t0 = torch.relu(a)", ((3,), "nan"))  # relu-of-nan-is-zero-with-grad
    assert has("t0 = a @ b", ((2, 0, 3), ""), ((3, 1), ""))  # a batched matmul with a size-0 dim
    # Planted fault: a point outside the domain is not there.
    assert not has("t0 = a @ b", ((4,), ""), ((4, 3), ""))


def test_the_motifs_hold_the_programs_of_two_issues_random_programs_seldom_make():
    def has(programs, source, *inputs):
        return any(render_body(p).startswith(source) and [(i.shape, i.dtype) for i in p.inputs] == list(inputs)
                   for p in programs)

    promotion, view_update = promotion_programs(), view_update_programs()
    assert len(set(promotion)) == len(promotion) and len(set(view_update)) == len(view_update)
    # int-unary-then-double-scalar-with-grad-promotes-to-double
    assert has(promotion, "t0 = torch.sin(a)\nt1 = t0 + b", ((3,), "int64"), ((), "float64"))
    # inplace-on-view-of-zero-dim-backward-zeros-typeerror
    assert has(view_update, "t0 = a * 2\nt1 = t0.unsqueeze(0)\nt1.add_(b)\nt2 = torch.sin(t1)", ((), "float32"),
               ((), "float32"))
    # the base updated through its view (inplace-through-alias-of-grad-tensor-lost)
    assert has(view_update, "t0 = a * 2\nt1 = t0[:1]\nt1.mul_(b)\nreturn t0", ((3,), "float32"), ((), "float32"))
    # Planted faults: a dtype and a view the motifs do not take.
    assert not has(promotion, "t0 = torch.sin(a)\nt1 = t0 + b", ((3,), "int32"), ((), "float64"))
    assert not has(view_update, "t0 = a * 2\nt1 = t0.expand", ((), "float32"), ((), "float32"))


def _showing(fake: str, aspect: str, programs, oracle: str = "outputs") -> list:
    """The programs whose run through a fake backend of tests/fake_backends.py shows a
    mismatch of this oracle and aspect."""
    bug = get(f"tests.fake_backends:{fake}")
    return [p for p in programs if any(m.oracle == oracle and m.aspect == aspect
                                       for m in run_example(p, bug, SINGLE_CALL).mismatches)]


def test_the_boundary_motif_puts_every_op_in_a_region_and_shows_a_tagging_fault_of_one():
    programs = boundary_programs()
    assert len(set(programs)) == len(programs)
    assert {p.body[0].body[0].value.op for p in programs} == {op for op, _ in UNARY + BINARY}
    assert not set(programs) & {p for p, _ in sweep_examples()}  # run first, as probes (generators.probes)
    # A backend whose no_grad keeps grad on for cumsum alone: the motif's cumsum program shows
    # it (t1 requires grad); no one-op program can, as none has a region (the planted fault).
    found = _showing("cumsum_keeps_grad_under_no_grad", "requires_grad", programs, "flags")
    assert [render_body(p).splitlines()[1].strip() for p in found] == ["t0 = a.cumsum(0)"], found
    assert not _showing("cumsum_keeps_grad_under_no_grad", "requires_grad", single_op_programs(), "flags")


def test_the_promotion_motif_shows_a_promotion_bug_the_one_op_programs_do_not():
    # A backend that makes outputs float64 beside a float64 input requiring grad (thunder's
    # bug, in general): the motif's programs show it as an output dtype, and the one-op
    # programs, all float32, cannot (the planted fault: the motif is what finds it).
    found = _showing("promotes_to_double", "dtype", promotion_programs())
    assert found and {p.inputs[0].dtype for p in found} == {"bool", "int64", "float32"}, found[:3]
    assert not _showing("promotes_to_double", "dtype", single_op_programs())


def test_the_view_update_motif_shows_an_update_lost_through_a_view_the_one_op_programs_do_not():
    # A backend whose views are copies: an update through a view misses its base, which the
    # motif returns (outputs.value); a one-op program returns the view itself, equal either way.
    found = _showing("views_copy", "value", view_update_programs())
    assert found and all(p.returns == ("t0",) for p in found), found[:3]
    assert {p.body[1].value.op for p in found} == {"unsqueeze", "reshape", "transpose", "slice"}
    assert not _showing("views_copy", "value", single_op_programs())


def test_no_swept_program_mismatches_on_eager_itself():
    # The sweep's values (NaN, infinities, empty tensors, integers) must not make a false alarm.
    eager = get("eager")
    found = [(render_body(p), p.inputs) for p, schedule in sweep_examples()
             if run_example(p, eager, schedule).mismatches]
    assert not found, found[:3]


def _limits(monkeypatch, examples=200):
    """The limits examples() drew each program and schedule under: (max_depth, max_statements,
    max_calls) of each of 200 examples."""
    drawn = []
    programs, schedules = engine.programs, engine.schedules

    def recording_programs(*args, **limits):
        drawn.append([limits["max_depth"], limits["max_statements"]])
        return programs(*args, **limits)

    def recording_schedules(n_inputs, max_calls, module=False):
        drawn[-1].append(max_calls)
        return schedules(n_inputs, max_calls, module)

    monkeypatch.setattr(engine, "programs", recording_programs)
    monkeypatch.setattr(engine, "schedules", recording_schedules)

    @settings(max_examples=examples, database=None)
    @given(engine.examples())
    def draw(example):
        pass

    draw()
    return [tuple(x) for x in drawn if len(x) == 3]  # (a draw that overran has no schedule)


def test_half_the_examples_are_small(monkeypatch):
    limits = _limits(monkeypatch)
    small = limits.count((1, 3, 3))
    # Half by the draw, but Hypothesis's sampler is not uniform: its mutations copy earlier draws,
    # and the share in one derandomized sample of 200 moves with every draw the generator gains
    # (30-73 % seen), so the band is wide; the planted fault below is what the test catches.
    assert small + limits.count((3, 4, 6)) == len(limits) and 0.15 < small / len(limits) < 0.85, limits
    # Planted fault: every example full-size.
    monkeypatch.setattr(engine, "SCOPES", ("full",))
    assert (1, 3, 3) not in _limits(monkeypatch)
