"""Helpers decorated with @torch.no_grad() / @torch.enable_grad(), called from the body."""

from conformance.suite import examples


def test_decorated_helpers(check):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "helper", "region"), modules=False)
    check("decorators", strategy)
