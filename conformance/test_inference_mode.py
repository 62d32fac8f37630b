"""torch.inference_mode() blocks inside the function, next to no_grad ones."""

from conformance.suite import assert_no_new, check_area, examples


def test_inference_mode_regions(backend, record_finding, conformance_seed):
    strategy = examples(regions=("inference_mode", "no_grad"), statements=("op", "region", "create"),
                        modules=False)
    assert_no_new(check_area(backend, "inference_mode", strategy, on_finding=record_finding, seed=conformance_seed))
