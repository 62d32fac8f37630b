"""torch.inference_mode() blocks inside the function, next to no_grad ones, and values made on
one side of such a block and read on the other."""

from conformance.suite import examples


def test_inference_mode_regions(check):
    strategy = examples(regions=("inference_mode", "no_grad"),
                        statements=("op", "region", "crossing", "create", "create_requires_grad"), modules=False)
    check("inference_mode", strategy)
