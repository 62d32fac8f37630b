"""Every construct of the generator at once, under call schedules of every ambient mode."""

from conformance.suite import assert_no_new, check_area, examples


def test_all_constructs(backend, record_finding, conformance_seed):
    assert_no_new(check_area(backend, "everything", examples(), on_finding=record_finding, seed=conformance_seed))
