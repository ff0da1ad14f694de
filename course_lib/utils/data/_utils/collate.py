"""Collate: merge a list of samples into a batch.

In PyTorch: ``torch/utils/data/_utils/collate.py``.  The rules, by the type of
the first sample (``batch[0]``):

==========================  =====================================================
sample                      batch
==========================  =====================================================
Tensor                      ``stack(batch, 0)``: a new leading batch dimension
numpy array                 each made a tensor, then stacked (dtype kept)
numpy scalar                ``as_tensor(batch)``
float                       float64 tensor (not the default float32!)
int (and bool)              int64 (bool) tensor
str, bytes                  the list, unchanged
Mapping                     same mapping type, each key collated
namedtuple                  same namedtuple type, each field collated
tuple, list, Sequence       *transposed*: a list of the collated columns
anything else               ``TypeError``
==========================  =====================================================

``default_convert`` is what ``DataLoader(batch_size=None)`` applies to each
sample: numpy arrays become tensors, containers are walked, nothing is stacked.
"""
from __future__ import annotations

import collections
import copy
import re
from typing import Callable

import numpy as np

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _cl():
    import course_lib
    return course_lib


def _Tensor():
    from ...._tensor import Tensor
    return Tensor


def default_convert(data):
    """Convert numpy arrays (also inside lists, tuples, dicts) to tensors; leave the rest.

    >>> default_convert(np.array([0, 1]))
    tensor([0, 1])
    >>> default_convert((1, np.array(2.5)))
    [1, tensor(2.5000, dtype=course_lib.float64)]
    """
    elem_type = type(data)
    if isinstance(data, _Tensor()):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        # numpy arrays of strings or objects are left alone
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _cl().as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:  # the mapping type cannot be built from a dict
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # a list, as PyTorch does
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate containers recursively; leaves are handed to ``collate_fn_map[type]``.

    ``collate_fn_map`` maps a type (or a tuple of types) to a function
    ``fn(batch, *, collate_fn_map)``.  The exact type of ``batch[0]`` is looked
    up first, then each key in order with ``isinstance``.
    """
    elem = batch[0]
    elem_type = type(elem)

    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                              for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        # every sample must have the same length: [(x, y), (x, y), ...] -> [xs, ys]
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(elem) == elem_size for elem in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]

    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map: dict | None = None):
    """Stack tensors along a new dimension 0.

    In a worker process the result is allocated straight in shared memory, so
    that it can reach the main process without another copy (see
    ``shared_memory.py``).
    """
    from . import shared_memory

    elem = batch[0]
    if shared_memory._pool is not None and _stackable(batch):
        out = shared_memory.empty_shared((len(batch), *elem._shape), elem.dtype)
        np.stack([t._np() for t in batch], axis=0, out=out._np())
        return out
    return _cl().stack(batch, 0)


def _stackable(batch) -> bool:
    """Same shape and dtype everywhere and no autograd: then a plain copy into ``out`` is exact."""
    elem = batch[0]
    return all(t._shape == elem._shape and t.dtype is elem.dtype and not t.requires_grad for t in batch)


def collate_numpy_array_fn(batch, *, collate_fn_map: dict | None = None):
    """Numpy arrays: like making each a tensor and stacking those, dtype kept."""
    from . import shared_memory

    elem = batch[0]
    # arrays of strings and objects cannot become tensors
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    if all(type(b) is np.ndarray and b.shape == elem.shape and b.dtype == elem.dtype for b in batch):
        # The common case, done in one step: stack the arrays straight into the result's storage
        # (in shared memory inside a worker) instead of wrapping each array as a tensor first.
        cl = _cl()
        dtype = cl.as_tensor(elem).dtype  # the dtype, or PyTorch's error for an unsupported one
        shape = (len(batch), *elem.shape)
        out = shared_memory.empty_shared(shape, dtype) if shared_memory._pool is not None else None
        if out is None:
            out = cl.empty(shape, dtype=dtype)
        np.stack(batch, axis=0, out=out._np())
        return out
    return collate([_cl().as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map: dict | None = None):
    return _cl().as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map: dict | None = None):
    return _cl().tensor(batch, dtype=_cl().float64)


def collate_int_fn(batch, *, collate_fn_map: dict | None = None):
    return _cl().tensor(batch)


def collate_str_fn(batch, *, collate_fn_map: dict | None = None):
    return batch


def _default_collate_fn_map() -> dict:
    return {
        _Tensor(): collate_tensor_fn,
        np.ndarray: collate_numpy_array_fn,
        (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
        float: collate_float_fn,
        int: collate_int_fn,
        str: collate_str_fn,
        bytes: collate_str_fn,
    }


default_collate_fn_map: dict[type | tuple, Callable] = _default_collate_fn_map()
"""Leaf type -> collate function.  Add your own types here (PyTorch's extension point)."""


def default_collate(batch):
    """Merge a list of samples into a batch (the table at the top of this module).

    >>> default_collate([0, 1, 2, 3])
    tensor([0, 1, 2, 3])
    >>> default_collate([(1, "a", 2.0), (3, "b", 4.0)])
    [tensor([1, 3]), ('a', 'b'), tensor([2., 4.], dtype=course_lib.float64)]
    >>> default_collate([{"x": 0, "y": 1}, {"x": 100, "y": 100}])
    {'x': tensor([  0, 100]), 'y': tensor([  1, 100])}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
