"""Reads of autograd state (`t.requires_grad`, `t.is_leaf`, `t.grad_fn is None`,
`t.is_inference()`, `torch.is_inference_mode_enabled()`), returned and branched on, around
grad-mode regions and plain calls."""

from conformance.suite import examples


def test_autograd_state_reads(check):
    strategy = examples(regions=("no_grad", "enable_grad", "set_grad_enabled", "inference_mode"),
                        statements=("op", "read", "if", "region", "set_grad"), modules=False)
    check("reads", strategy)
