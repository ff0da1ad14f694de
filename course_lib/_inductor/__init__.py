"""``course_lib._inductor``: a fusing code generator for FX graphs of registry ops.

In PyTorch: ``torch/_inductor`` (``compile_fx``, ``lowering``, ``scheduler``, ``codegen``).
``compile_fx(gm, example_inputs)`` decomposes the graph to a small primitive set, groups
pointwise ops into fused kernels, plans the buffers by liveness and generates one kernel per
group as Python source with an explicit loop over the flattened index, compiled by numba.
Ops it cannot fuse (matmul, convolution, ...) are called through course_lib's own kernels.

numba is needed for this package only (``pip install -e '.[compile]'``); eager course_lib
does not import it.
"""
from __future__ import annotations

try:
    import numba  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised by a subprocess test
    raise ImportError("course_lib._inductor needs numba, which is in course_lib's 'compile' extra: "
                      "pip install -e '.[compile]' (or conda env create -f environment.yml)") from e

from .compile_fx import CompiledFxGraph, compile_fx

__all__ = ["compile_fx", "CompiledFxGraph"]
