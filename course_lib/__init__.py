"""course_lib: a small PyTorch on numpy, built to be read.

The layout mirrors PyTorch's: ``course_lib/_tensor.py`` beside
``torch/_tensor.py``, ``course_lib/nn/modules/module.py`` beside
``torch/nn/modules/module.py``, and so on.

>>> import course_lib as cl
>>> x = cl.tensor([[1., 2.], [3., 4.]])
>>> (x @ x).sum()
tensor(54.)
"""
from __future__ import annotations

from . import _dtype
from ._device import device
from ._dtype import (bool, bool_, double, dtype, float, float16, float32, float64, get_default_dtype, half,  # noqa: A004
                     int, int8, int16, int32, int64, long, promote_types, set_default_dtype, short, uint8)
from ._size import Size
from ._storage import Storage, UntypedStorage
from ._tensor import Tensor  # TensorBase + the generated and the hand-written methods
from ._ops import kernels as _kernels  # registers every op (the kernels make Tensors: after the class)
from . import _ops, memory
from ._parallel import get_num_threads, set_num_threads
from ._ops.common import broadcast_shapes, result_type
from ._ops.dispatcher import dispatch
from ._ops.registry import OPS
from ._ops.python_torch_functions import *  # noqa: F401,F403  (course_lib.add, course_lib.sum, ...)
from ._ops.python_methods import *  # noqa: F401,F403  (course_lib.var, course_lib.clip, ...)
from ._creation import *  # noqa: F401,F403
from ._creation import __all__ as _creation_all
from ._random import *  # noqa: F401,F403
from ._random import __all__ as _random_all
from ._tensor_str import set_printoptions

from . import autograd  # noqa: E402
from .autograd import nn_derivatives as _nn_derivatives  # noqa: E402,F401
from .autograd.grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402

from . import nn, optim  # noqa: E402

__version__ = "0.1.0"

from . import serialization  # noqa: E402
from .serialization import load, save  # noqa: E402
