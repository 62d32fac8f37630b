"""no_grad, enable_grad and set_grad_enabled(b) blocks, nested in each other to any depth."""

from conformance.suite import assert_no_new, check_area, examples


def test_nested_grad_mode_regions(backend, record_finding, conformance_seed):
    strategy = examples(regions=("no_grad", "enable_grad", "set_grad_enabled"),
                        statements=("op", "region", "create"), modules=False)
    assert_no_new(check_area(backend, "regions", strategy, on_finding=record_finding, seed=conformance_seed))
