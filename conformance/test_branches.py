"""Branches on torch.is_grad_enabled(), and the grad mode returned as a value."""

from conformance.suite import examples


def test_is_grad_enabled_branches(check):
    strategy = examples(regions=("no_grad", "enable_grad", "set_grad_enabled"),
                        statements=("op", "if", "region", "set_grad"), modules=False)
    check("branches", strategy)
