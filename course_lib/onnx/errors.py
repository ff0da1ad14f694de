"""The exporter's exceptions, with PyTorch's names and messages.

In PyTorch: ``torch/onnx/errors.py``.
"""
from __future__ import annotations

__all__ = ["OnnxExporterWarning", "OnnxExporterError", "UnsupportedOperatorError", "SymbolicValueError"]


class OnnxExporterWarning(UserWarning):
    """Warnings in the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter. This is the base class for all exporter errors."""


class UnsupportedOperatorError(OnnxExporterError):
    """Raised when an operator is unsupported by the exporter (``name`` such as ``'aten::erfinv'``)."""

    def __init__(self, name: str, version: int, supported_version: int | None = None) -> None:
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not supported. "
                   f"Support for this operator was added in version {supported_version}, try exporting with "
                   "this version")
        else:
            msg = f"Exporting the operator '{name}' to ONNX opset version {version} is not supported"
        super().__init__(msg)


class SymbolicValueError(OnnxExporterError):
    """An op is supported, but not with these arguments (``value`` names the graph node)."""

    def __init__(self, msg: str, value: str) -> None:
        super().__init__(f"{msg}  [Caused by the value '{value}' in the captured graph.]")
