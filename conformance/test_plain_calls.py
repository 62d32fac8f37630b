"""torch.set_grad_enabled(b) and torch._C._set_grad_enabled(b) as plain calls: toggles
mid-body, and grad left disabled at return (which eager keeps after the call)."""

from conformance.suite import examples


def test_plain_grad_mode_calls(check):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "set_grad", "region"), modules=False)
    check("plain_calls", strategy)
