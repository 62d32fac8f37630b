""".detach(), .requires_grad_() and creation ops with requires_grad=True, inside regions."""

from conformance.suite import examples


def test_detach_and_requires_grad(check):
    strategy = examples(regions=("no_grad", "enable_grad"),
                        statements=("op", "requires_grad_", "create", "create_requires_grad", "region"), modules=False)
    check("detach_requires_grad", strategy)
