"""course_lib: a small PyTorch on numpy, built to be read.

The layout mirrors PyTorch's: ``course_lib/_tensor.py`` beside
``torch/_tensor.py``, ``course_lib/nn/modules/module.py`` beside
``torch/nn/modules/module.py``, and so on.

>>> import course_lib as cl
>>> x = cl.tensor([[1., 2.], [3., 4.]])
>>> (x @ x).sum()
tensor(54.)
"""
# In this order: the Tensor class (TensorBase + the generated and the hand-written methods), then
# every op's kernel (importing _ops.kernels registers them; the kernels make Tensors), then the rest
# (autograd.derivatives and autograd.nn_derivatives attach derivative formulas to the registered ops).
from ._tensor import Tensor

# isort: split
from ._ops import kernels as _kernels

# isort: split
from . import _ops, autograd, backends, compiler, cuda, linalg, memory, nn, optim, serialization, utils
from ._compare import allclose, equal, is_floating_point, is_tensor, numel
from ._creation import *  # noqa: F403
from ._device import device
from ._dtype import (
    bool,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from ._global_flags import (
    are_deterministic_algorithms_enabled,
    get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled,
    set_float32_matmul_precision,
    use_deterministic_algorithms,
)
from ._ops.combining import broadcast_tensors, einsum, logspace, meshgrid
from ._ops.common import broadcast_shapes, result_type
from ._ops.dispatcher import dispatch
from ._ops.python_methods import *  # noqa: F403  (course_lib.var, course_lib.clip, ...)
from ._ops.python_torch_functions import *  # noqa: F403  (course_lib.add, course_lib.sum, ...)
from ._ops.registry import OPS
from ._parallel import get_num_threads, set_num_threads
from ._random import *  # noqa: F403
from ._size import Size
from ._storage import Storage, UntypedStorage
from ._tensor_str import set_printoptions
from ._type_info import can_cast, finfo, iinfo, promote_types
from .amp import autocast
from .autograd import functional as _autograd_functional  # noqa: F401  (course_lib.autograd.functional)
from .autograd import nn_derivatives as _nn_derivatives
from .autograd.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .serialization import load, save

__version__ = "0.1.0"


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """Compile a function or module with graph capture (``torch.compile``); see ``course_lib._dynamo``."""
    from ._dynamo.eval_frame import compile as _compile
    return _compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                    disable=disable)


def __getattr__(name: str):
    """``course_lib.onnx`` after a bare ``import course_lib`` (as ``torch.onnx``), imported on first use: it
    needs the optional onnx package only when exporting."""
    if name == "onnx":
        import importlib
        return importlib.import_module(f"{__name__}.onnx")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
