"""gradmode-conformance: a differential conformance harness for grad-mode semantics in
PyTorch JIT compilers. See README.md; the design is in ../shared/DESIGN.md."""

__version__ = "0.1.0"
