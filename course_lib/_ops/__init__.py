"""Ops: the registry, the dispatcher, the bindings and the kernels (CPU and meta).

* ``registry.py``: every op declared once by its schema (PyTorch's ``native_functions.yaml``);
* ``dispatcher.py``: the one path every call takes (modes -> Autograd -> backend);
* ``python_variable_methods.py`` and ``python_torch_functions.py``: the bindings, generated from
  the registry by ``python -m course_lib._ops.bindings`` and checked in; ``python_methods.py``:
  the hand-written ones;
* ``kernels.py``: imports every kernel module (``pointwise.py``, ``views.py``, ...), which
  registers the ops.

Importing the package itself imports nothing: ``Tensor`` (``course_lib/_tensor.py``) is built
from the bindings, which need only the registry and the dispatcher, and the kernels make
``Tensor`` objects, so ``course_lib/__init__.py`` imports ``Tensor`` first and the kernels after.
"""
