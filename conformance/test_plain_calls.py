"""torch.set_grad_enabled(b) and torch._C._set_grad_enabled(b) as plain calls: toggles
mid-body, and grad left disabled at return (which eager keeps after the call)."""

from conformance.suite import assert_no_new, check_area, examples


def test_plain_grad_mode_calls(backend, record_finding, conformance_seed):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "set_grad", "region"), modules=False)
    assert_no_new(check_area(backend, "plain_calls", strategy, on_finding=record_finding, seed=conformance_seed))
