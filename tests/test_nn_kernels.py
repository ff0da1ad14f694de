"""The fast paths of the nn kernels against the plain numpy they replace."""
from __future__ import annotations

import numpy as np
import pytest

import course_lib as cl
import course_lib.nn.functional as F
from course_lib._ops import nn_ops


def _argmax_reference(win):
    flat = win.reshape(win.shape[:-2] + (-1,))
    am = flat.argmax(axis=-1)
    return np.take_along_axis(flat, am[..., None], axis=-1)[..., 0], am


@pytest.mark.parametrize("k,s,p,d", [((3, 3), (2, 2), (1, 1), (1, 1)), ((2, 2), (2, 2), (0, 0), (1, 1)),
                                     ((3, 2), (1, 2), (1, 0), (2, 1)), ((1, 1), (1, 1), (0, 0), (1, 1)),
                                     ((12, 12), (1, 1), (0, 0), (1, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_window_max_is_argmax_of_the_windows(k, s, p, d, dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (2, 3, 14, 13)).astype(dtype)        # many ties: the first maximum wins
    if dtype in (np.float32, np.float64):
        x[0, 0, 3, 4] = np.nan                                    # NaN is the maximum, the first NaN its index
        x[0, 0, 3, 6] = np.nan
        x[1, 2] = -np.inf
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    H, W = x.shape[-2:]
    out = tuple(nn_ops._pool_out(n, k[i], s[i], p[i], d[i], False) for i, n in enumerate((H, W)))
    win, _ = nn_ops._pool_windows(x, k, s, p, d, out, fill)
    vals, am = nn_ops._window_max(win, k)
    ref_vals, ref_am = _argmax_reference(win)
    np.testing.assert_array_equal(vals, ref_vals)
    np.testing.assert_array_equal(am, ref_am)


def test_max_pool_indices_with_ties_and_nan_match_the_argmax_rule():
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = 1.0           # tie in the first window: row-major first is (0, 1)
    x[0, 0, 2, 3] = np.nan
    out, idx = F.max_pool2d(cl.tensor(x), 2, return_indices=True)
    assert idx.tolist() == [[[[1, 2], [8, 11]]]]
    assert np.isnan(out.numpy()[0, 0, 1, 1])


@pytest.mark.parametrize("shape", [(3,), (1,), (2, 3), (1, 3), (2, 1), (1, 1), (), (4,), (2, 2), (3, 3), (3, 2, 3)])
def test_addmm_accepts_what_broadcasts_and_words_errors_like_torch(shape):
    # addmm checks the shape of self without building an expanded view when it broadcasts
    torch = pytest.importorskip("torch")
    args = (np.zeros(shape, np.float32), np.ones((2, 5), np.float32), np.ones((5, 3), np.float32))
    try:
        expected = torch.addmm(*(torch.from_numpy(a) for a in args)).numpy()
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            cl.addmm(*(cl.tensor(a) for a in args))
        assert str(got.value) == str(e)
        return
    np.testing.assert_array_equal(cl.addmm(*(cl.tensor(a) for a in args)).numpy(), expected)


@pytest.mark.parametrize("dtype", [cl.float32, cl.float64])
def test_fused_backward_kernels_give_the_formula_values_bit_for_bit(dtype):
    # ReluBackward0 and LogSoftmaxBackward0 run threshold_backward / _log_softmax_backward_data when no
    # graph of the backward is recorded, and the differentiable formula under create_graph=True
    cl.manual_seed(0)
    x = cl.randn(5, 7, dtype=dtype) * 3
    g = cl.randn(5, 7, dtype=dtype)
    for f in (lambda t: t.relu(), lambda t: t.log_softmax(1), lambda t: t.log_softmax(0),
              lambda t: F.cross_entropy(t.relu() * 2, cl.tensor([0, 1, 2, 3, 4])).expand(5, 7)):
        a = x.clone().requires_grad_()
        f(a).backward(g)
        b = x.clone().requires_grad_()
        (gb,) = cl.autograd.grad(f(b), b, g, create_graph=True)
        np.testing.assert_array_equal(a.grad.numpy(), gb.detach().numpy())


def test_backward_kernels_are_the_ops_a_mode_sees():
    from course_lib.utils import LoggingMode
    x = cl.randn(3, 4, requires_grad=True)
    y = F.cross_entropy(x.relu(), cl.tensor([0, 1, 2]))
    seen = []

    class Names(LoggingMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.name)
            return func(*args)

    with Names():
        y.backward()
    assert "_log_softmax_backward_data" in seen and "threshold_backward" in seen
