"""torch.inference_mode() blocks inside the function, next to no_grad ones."""

from conformance.suite import examples


def test_inference_mode_regions(check):
    strategy = examples(regions=("inference_mode", "no_grad"),
                        statements=("op", "region", "create", "create_requires_grad"), modules=False)
    check("inference_mode", strategy)
