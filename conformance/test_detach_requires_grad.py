""".detach(), .requires_grad_() and creation ops with requires_grad=True, inside regions."""

from conformance.suite import assert_no_new, check_area, examples


def test_detach_and_requires_grad(backend, record_finding, conformance_seed):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "requires_grad_", "create", "region"),
                        modules=False)
    assert_no_new(check_area(backend, "detach_requires_grad", strategy, on_finding=record_finding,
                             seed=conformance_seed))
