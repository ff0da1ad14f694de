"""Arguments that were accepted and not read: Tensor's protocol methods, softmax's _stacklevel.

``__repr__(tensor_contents=...)`` printed the values anyway (compared with torch 2.13 when it is installed);
``__array__(copy=...)`` shared memory when asked for a copy (numpy 2's documented contract).
``F.softmax(_stacklevel=...)`` placed the implicit-dim warning at a fixed depth.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl


def test_repr_tensor_contents_as_torch():
    torch = require_torch()
    for make in (lambda L: L.tensor([1.0, 2.0]), lambda L: L.tensor([1, 2], dtype=L.int32)):
        mine = make(cl).__repr__(tensor_contents="[...]").replace("course_lib.", "torch.")
        assert mine == make(torch).__repr__(tensor_contents="[...]")
    assert repr(cl.tensor([1.0, 2.0])) == "tensor([1., 2.])"


def test_array_copy_contract():
    t = cl.tensor([1.0, 2.0])
    shared = t.__array__()
    copied = t.__array__(copy=True)
    assert np.shares_memory(shared, t.numpy()) and not np.shares_memory(copied, t.numpy())
    assert t.__array__(np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        t.__array__(np.float64, copy=False)
    assert np.shares_memory(t.__array__(np.float32, copy=False), t.numpy())
    assert not np.shares_memory(np.array(t, copy=True), t.numpy())


def test_softmax_stacklevel_places_the_warning():
    import warnings

    import course_lib.nn.functional as F
    for f, where in ((lambda: F.softmax(cl.ones(2, 3)), __file__),
                     (lambda: F.log_softmax(cl.ones(2, 3), _stacklevel=2), F.__file__)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            f()
        assert [x.filename for x in w] == [where]
