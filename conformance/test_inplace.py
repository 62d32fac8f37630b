"""In-place methods on intermediates, views and inputs, under and outside no_grad."""

from conformance.suite import examples


def test_inplace_updates(check):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "inplace", "region", "set_grad"),
                        modules=False)
    check("inplace", strategy)
