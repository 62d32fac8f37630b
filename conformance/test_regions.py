"""no_grad, enable_grad and set_grad_enabled(b) blocks, nested in each other to any depth, and
values made on one side of a block and read on the other."""

from conformance.suite import examples


def test_nested_grad_mode_regions(check):
    strategy = examples(regions=("no_grad", "enable_grad", "set_grad_enabled"),
                        statements=("op", "region", "crossing", "create", "create_requires_grad"), modules=False)
    check("regions", strategy)
