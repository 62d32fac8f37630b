"""Helpers decorated with @torch.no_grad() / @torch.enable_grad(), called from the body."""

from conformance.suite import assert_no_new, check_area, examples


def test_decorated_helpers(backend, record_finding, conformance_seed):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "helper", "region"), modules=False)
    assert_no_new(check_area(backend, "decorators", strategy, on_finding=record_finding, seed=conformance_seed))
