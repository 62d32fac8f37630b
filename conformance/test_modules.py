"""nn.Module forwards with regions, whose parameters are updated in place under no_grad
(as an EMA or an optimizer step does)."""

from conformance.suite import examples


def test_module_forward_with_parameter_updates(check):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "inplace", "region"),
                        modules="always")
    check("modules", strategy)
