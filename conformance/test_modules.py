"""nn.Module forwards with regions, whose parameters are updated in place under no_grad
(as an EMA or an optimizer step does)."""

from conformance.suite import assert_no_new, check_area, examples


def test_module_forward_with_parameter_updates(backend, record_finding, conformance_seed):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "inplace", "region"),
                        modules="always")
    assert_no_new(check_area(backend, "modules", strategy, on_finding=record_finding, seed=conformance_seed))
