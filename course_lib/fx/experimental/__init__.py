"""Tracers beyond ``symbolic_trace`` (PyTorch: ``torch/fx/experimental/``): ``proxy_tensor.make_fx``."""
