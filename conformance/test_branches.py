"""Branches on torch.is_grad_enabled(), and the grad mode returned as a value."""

from conformance.suite import assert_no_new, check_area, examples


def test_is_grad_enabled_branches(backend, record_finding, conformance_seed):
    strategy = examples(regions=("no_grad", "enable_grad", "set_grad_enabled"),
                        statements=("op", "if", "region", "set_grad"), modules=False)
    assert_no_new(check_area(backend, "branches", strategy, on_finding=record_finding, seed=conformance_seed))
