"""The night's first programs (generators.probes): what they hold, that eager agrees with itself
on them, and that a fault of one grad-mode part, or of one op's tagging, shows in them."""

from conformance.backends import get
from conformance.check import run_example
from conformance.generators.probes import PROBE_SCHEDULE, boundary_batches, construct_programs, probes
from conformance.generators.schedules import SINGLE_CALL
from conformance.generators.sweep import boundary_programs
from conformance.oracles.mismatch import class_key
from conformance.program import SET_GRAD_APIS, constructs, render_body


def test_the_probes_hold_each_way_to_change_grad_mode_and_every_op_once():
    held = set().union(*(constructs(p) for p in construct_programs()))
    assert {"no_grad", "enable_grad", "set_grad_enabled(False)", "if_is_grad_enabled"} <= held, held
    plain = {s.api for p in construct_programs() for s in p.body if hasattr(s, "api")}
    assert plain == set(SET_GRAD_APIS)
    assert {h.decorator for p in construct_programs() for h in p.helpers} == {"no_grad", "enable_grad"}
    parts = [q for _, batch in boundary_batches() for q in batch]
    assert sorted(parts, key=repr) == sorted(boundary_programs(), key=repr)  # each op's program, once


def test_a_batch_returns_each_op_of_it_in_order_so_a_value_names_its_op():
    for batch, parts in boundary_batches():
        region = batch.body[0]
        assert [s.value for s in region.body] == [p.body[0].body[0].value for p in parts]
        assert len(batch.returns) == len(parts)


def test_no_probe_mismatches_on_eager_itself():
    eager = get("eager")
    found = [render_body(p.program) for p in probes() if run_example(p.program, eager, p.schedule).mismatches]
    assert not found, found


def test_a_tagging_fault_of_one_op_shows_in_its_batch_and_its_part_is_the_repro():
    # A backend whose no_grad keeps grad on in a function that calls cumsum (a compiler that
    # forgot to tag one symbol's outputs): only the batch that holds cumsum shows it, at
    # cumsum's value, and the batch's part for that value is cumsum's one-op program.
    fault = get("tests.fake_backends:cumsum_keeps_grad_under_no_grad")
    showing = []
    for probe in probes():
        found = [m for m in run_example(probe.program, fault, probe.schedule).mismatches
                 if m.oracle == "flags" and m.aspect == "requires_grad"]
        showing += [(probe, m) for m in found]
    assert {id(p) for p, _ in showing} and len({id(p) for p, _ in showing}) == 1, showing
    probe, m = showing[0]
    part = probe.part_for(m)
    assert render_body(part).splitlines()[1].strip() == "t0 = a.cumsum(0)"
    single = run_example(part, fault, probe.schedule).mismatches
    assert class_key(m) in {class_key(x) for x in single}


def test_a_vjp_fault_of_one_op_shows_in_the_readers_batch_and_its_part_is_the_repro():
    # maximum's backward gives `a` a gradient through the constant t0 as well: only the readers'
    # batch reads a constant with a binary op; its gradient names no op, so the parts are tried
    # in turn and maximum's alone shows it.
    fault = get("tests.fake_backends:maximum_differentiates_constants")
    showing = [p for p in probes() if any(m.oracle == "gradients" for m in
                                          run_example(p.program, fault, p.schedule).mismatches)]
    assert len(showing) == 1 and showing[0].program.body[1].value.op == "add", showing
    parts = [q for q in showing[0].parts if run_example(q, fault, SINGLE_CALL).mismatches]
    assert [render_body(q).splitlines()[-2].strip() for q in parts] == ["t1 = torch.maximum(t0, a)"]


def test_a_fault_of_the_write_back_shows_in_a_construct_program():
    # A backend that restores the caller's grad mode after every call: a plain
    # set_grad_enabled(False) left in effect is lost, which one construct program reads.
    fault = get("conformance.backends.faulty:forgets_grad_mode_change")
    found = {m.aspect for p in construct_programs() for m in run_example(p, fault, PROBE_SCHEDULE).mismatches}
    assert "grad enabled after call" in found, found
