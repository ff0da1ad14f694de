"""Exporting models to ONNX: ``course_lib.onnx.export(model, args, "model.onnx")``.

In PyTorch: ``torch/onnx/__init__.py``; ``torch.onnx.export(..., dynamo=False)`` is the exporter
this package mirrors (:mod:`course_lib.onnx.utils`, with its symbolic functions in
:mod:`course_lib.onnx.symbolic_opset` and its exceptions in :mod:`course_lib.onnx.errors`).
The ``onnx`` package writes and checks the file (``pip install onnx==1.23.2``, the course's
``onnx`` extra); it is imported only when ``export`` runs.  Open the file in Netron to see the
graph, or run it with onnxruntime.
"""
from __future__ import annotations

from .errors import OnnxExporterError, OnnxExporterWarning, SymbolicValueError, UnsupportedOperatorError
from .utils import ONNX_DEFAULT_OPSET, export

__all__ = ["export", "OnnxExporterError", "OnnxExporterWarning", "SymbolicValueError", "UnsupportedOperatorError",
           "ONNX_DEFAULT_OPSET"]
