"""In-place methods on intermediates, views and inputs, under and outside no_grad."""

from conformance.suite import assert_no_new, check_area, examples


def test_inplace_updates(backend, record_finding, conformance_seed):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "inplace", "region", "set_grad"),
                        modules=False)
    assert_no_new(check_area(backend, "inplace", strategy, on_finding=record_finding, seed=conformance_seed))
