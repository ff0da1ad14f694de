"""Ops: the registry, the dispatcher and the kernels (CPU and meta).

Importing this package registers every op.  ``install`` then generates the
bindings (``course_lib.add``, ``Tensor.add``, ...) from the registry.
"""
from . import registry, dispatcher, common  # noqa: F401
from . import pointwise, reductions, views, linalg  # noqa: F401
from . import copies, inplace, fill, joins, advanced_indexing, transformations, softmax, indexing  # noqa: F401
from . import nn_ops, normalization  # noqa: F401
from .registry import OPS


def _register_inplace_variants() -> None:
    for op in list(OPS.values()):
        if op.inplace and op.inplace not in OPS:
            inplace.make_inplace(op)


def install(tensor_cls, namespace: dict) -> None:
    """Finish the registry (in-place variants) and generate the Python bindings."""
    from . import bindings, python_methods
    for mod in (pointwise, reductions, views, linalg, copies, inplace, fill, advanced_indexing, indexing, nn_ops,
                normalization):
        mod._install(tensor_cls)
    _register_inplace_variants()
    bindings.generate(namespace, tensor_cls)
    python_methods.install(tensor_cls, namespace)
