"""The same properties with CUDA tensors (and CPU scalars mixed in). Skipped, with the
reason, where torch.cuda.is_available() is false."""

import pytest
import torch

from conformance.suite import assert_no_new, check_area, examples

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="CUDA not available here (torch.cuda.is_available() is False)")


def test_cuda_regions_and_calls(backend, record_finding, conformance_seed):
    strategy = examples(statements=("op", "region", "set_grad", "create", "inplace"), device="cuda")
    assert_no_new(check_area(backend, "cuda", strategy, on_finding=record_finding, seed=conformance_seed))


def test_cuda_modules(backend, record_finding, conformance_seed):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "inplace", "region"),
                        modules="always", device="cuda")
    assert_no_new(check_area(backend, "cuda_modules", strategy, on_finding=record_finding, seed=conformance_seed))
