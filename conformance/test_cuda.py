"""The same properties with CUDA tensors (and CPU scalars mixed in). Skipped, with the
reason, where torch.cuda.is_available() is false."""

import pytest
import torch

from conformance.suite import examples

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="CUDA not available here (torch.cuda.is_available() is False)")


def test_cuda_regions_and_calls(check):
    strategy = examples(statements=("op", "region", "set_grad", "create", "create_requires_grad", "inplace"),
                        device="cuda")
    check("cuda", strategy)


def test_cuda_modules(check):
    strategy = examples(regions=("no_grad", "enable_grad"), statements=("op", "inplace", "region"),
                        modules="always", device="cuda")
    check("cuda_modules", strategy)
