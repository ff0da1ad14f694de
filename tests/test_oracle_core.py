"""Oracle tests for the core: course_lib against real torch 2.13.0.

Each case is one expression, evaluated with ``M = torch`` and ``M = course_lib``;
results must agree in shape, dtype and values (and layout for view cases),
errors in type and exact message, and warnings in text.  Skipped with a visible
reason without torch; ``COURSE_REQUIRE_ORACLE=1`` turns the skip into a failure.
"""
from __future__ import annotations

import itertools
import math
import os

import pytest
from core_compare import fmt, outcome, same
from hypothesis import HealthCheck, given, settings
from oracle import require_torch

import course_lib as cl

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def namespace(M):
    """Names an expression may use: ``M`` (the library) and ``A(*shape, dtype=...)``, a tensor of
    distinct values (0, 1, 2, ... minus half the count, so some are negative)."""
    def A(*shape, dtype="float32", start=None):
        n = math.prod(shape)
        s = -(n // 2) if start is None else start
        return M.arange(s, s + n).to(getattr(M, dtype)).reshape(shape)
    return {"M": M, "A": A, "math": math}


def run_both(torch, expr, layout=False):
    t = outcome(lambda: eval(expr, namespace(torch)), layout)  # noqa: S307 - test expressions
    c = outcome(lambda: eval(expr, namespace(cl)), layout)  # noqa: S307
    return t, c


def check(torch, expr, layout=False, rtol=1e-5, atol=1e-6):
    t, c = run_both(torch, expr, layout)
    assert same(t, c, rtol, atol), f"{expr}\n torch:      {fmt(t)}\n course_lib: {fmt(c)}"


# ---------------------------------------------------------------------------
# the fact sheet's error table, word for word
# ---------------------------------------------------------------------------
FACT_SHEET_ERRORS = [
    ("A(2,3).T.view(6)", "RuntimeError",
     "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
     "contiguous subspaces). Use .reshape(...) instead."),
    ("A(6).view(4)", "RuntimeError", "shape '[4]' is invalid for input of size 6"),
    ("A(6).view(-1, -1)", "RuntimeError", "only one dimension can be inferred"),
    ("A(2,3).expand(4, 3)", "RuntimeError",
     "The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 0.  "
     "Target sizes: [4, 3].  Tensor sizes: [2, 3]"),
    ("A(2,3).expand(3)", "RuntimeError",
     "expand(torch.FloatTensor{[2, 3]}, size=[3]): the number of sizes provided (1) must be greater or equal to "
     "the number of dimensions in the tensor (2)"),
    ("A(2,3) + A(4)", "RuntimeError",
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("A(2,3) @ A(4,5)", "RuntimeError", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("M.mm(A(2,3), A(4,5))", "RuntimeError", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("A(3) @ A(4)", "RuntimeError",
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 "
     "and 4 elements respectively"),
    ("A(2,3) @ A(4)", "RuntimeError", "size mismatch, got input (2), mat (2x3), vec (4)"),
    ("A(2,2,3) @ A(3,3,4)", "RuntimeError",
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    ("M.tensor(1.) @ M.tensor(2.)", "RuntimeError",
     "both arguments to matmul need to be at least 1D, but they are 0D and 0D"),
    ("M.tensor([[1, 2], [3]])", "ValueError", "expected sequence of length 2 at dim 1 (got 1)"),
    ("M.tensor([[1, 2], 3])", "TypeError", "not a sequence"),
    ("M.tensor([1, [2, 3]])", "TypeError", "'list' object cannot be interpreted as an integer"),
    ("M.tensor([1, 2], requires_grad=True)", "RuntimeError",
     "Only Tensors of floating point and complex dtype can require gradients"),
    ("A(3, dtype='int64').add_(A(3))", "RuntimeError",
     "result type Float can't be cast to the desired output type Long"),
    ("A(2,3).sum(2)", "IndexError", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("A(3, dtype='int64').mean()", "RuntimeError",
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"),
    ("A(3, dtype='bool') - A(3, dtype='bool')", "RuntimeError",
     "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
     "operator instead."),
    ("A(3)[::-1]", "ValueError", "step must be greater than zero"),
]


@pytest.mark.parametrize("expr,exc,msg", FACT_SHEET_ERRORS, ids=[e for e, _, _ in FACT_SHEET_ERRORS])
def test_fact_sheet_errors(torch, expr, exc, msg):
    t, c = run_both(torch, expr)
    assert t[0] == ("error", exc, msg), f"the fact sheet is out of date for {expr}: torch gives {t[0]}"
    assert c[0] == ("error", exc, msg), f"{expr}: course_lib gives {c[0]}"


# ---------------------------------------------------------------------------
# more errors and results: every case must agree with torch exactly
# ---------------------------------------------------------------------------
ERRORS = """
A(2,3) + A(3,2)
A(4,2,3) + A(5,3,2)
A(2,3) * A(2,3, dtype='float64').t()
M.where(A(2,3) > 0, A(3,2), A(3))
A(2,3).clamp(min=A(4))
A(2,3).masked_fill(A(3,2) > 0, 1.)
A(3, dtype='bool') - 1
A(3, dtype='bool') - True
1 - A(3, dtype='bool')
True - A(3, dtype='bool')
-A(3, dtype='bool')
A(3, dtype='bool').sub(A(3, dtype='bool'))
A(3) ^ A(3)
A(3) & A(3)
~A(3)
A(3).bitwise_not()
A(2,3).permute(0)
A(2,3).permute(0, 0)
A(2,3).permute(0, 2)
A(2,3).permute(0, 1, 2)
A(2,3).transpose(0, 2)
A(2,3).transpose(0, -3)
A(2,3).squeeze(3)
A(2,3).unsqueeze(3)
A(2,3).unsqueeze(-4)
A(2,3).view(-2, 3)
A(2,3).view(2, -3)
A(2,3).view(2, -1, 0)
A(0,3).view(-1, 0)
A(2,3).reshape(4)
A(2,3).reshape(-1, -1)
A(2,3).flatten(1, 0)
A(2,3).flatten(0, 5)
M.tensor(1.).flatten(0, 1)
A(2,3).unflatten(1, (2, 2))
A(2,3).unflatten(1, ())
A(2,3).unflatten(5, (1, 3))
A(2,3).expand(-1, -1, 3)
A(2,3).expand(2, -2)
A(2,3).expand(1, -1, -1, 3)
A(2,3).narrow(1, 2, 2)
A(2,3).narrow(1, 4, 0)
A(2,3).narrow(1, -4, 1)
A(2,3).narrow(1, 0, -1)
A(2,3).narrow(1, 1, 5)
M.tensor(1.).narrow(0, 0, 1)
A(2,3).select(1, 3)
A(2,3).select(2, 0)
A(2,3).select(1, -4)
M.tensor(1.).select(0, 0)
A(2,3).diagonal(0, 0, 0)
A(2,3).diagonal(0, 0, 2)
A(2,3).unfold(1, 4, 1)
A(2,3).unfold(1, 2, 0)
A(2,3).unfold(5, 1, 1)
M.tensor(1.).unfold(0, 2, 1)
A(2,3).as_strided((2, 3), (3,))
A(2,3).as_strided((2, 4), (3, 1))
A(2,3).as_strided((2, 3), (-1, 1))
A(2,3).as_strided((2, 3), (1, 1), 100)
A(2,3).split(-1)
A(2,3).split(0)
A(2,3).split([1, 1])
A(2,3).split(2, 5)
A(2,3).chunk(0)
A(2,3).chunk(2, 5)
M.tensor(1.).unbind()
M.tensor(1.).split(1)
M.tensor(1.).chunk(1)
A(2,3).unbind(2)
A(2,3,4).t()
A(3).mT
A(2,3).movedim(0, 2)
M.tensor(1.).squeeze(1)
A(2,3)[5]
A(3)[5]
A(3)[-4]
A(3)[0, 0]
A(2,3)[:, 5]
A(2,3)[0, 0, 0]
A(2,3)[1.5]
A(2,3)['a']
M.tensor(1.)[0]
M.tensor(1.)[:]
A(2,3)[M.tensor([True, False, True])]
A(2,3)[M.tensor([[True, False, True]])]
A(2,3)[M.tensor([5])]
A(2,3)[M.tensor([-3])]
A(2,3)[M.tensor([1.0])]
A(2,3)[M.tensor(1.5)]
A(2,3)[[0, 1], [0, 1, 2]]
A(5)[M.tensor([-6])]
A(2,3).max(2)
A(0,3).max()
A(0,3).max(0)
A(0,3).min(0)
A(0,3).argmax()
A(0,3).argmax(0)
A(0,3).amax()
A(0,3).amax(0)
A(0,3).amin((0, 1))
A(2,3).sum((0, 0))
A(2,3).sum((0, -2))
A(2,3).sum(dim=(0, 1, 2))
A(2,3).argmax(2)
A(2,3).cumsum(2)
A(2,3).softmax(2)
A(2,3, dtype='int64').var()
A(2,3, dtype='int64').std()
A(2,3, dtype='int64').softmax(0)
A(2,3, dtype='int64').softmax(1)
A(2,3, dtype='int64').log_softmax(0)
A(2,3, dtype='int64').log_softmax(1)
M.cat([A(2,3), A(2,4)])
M.cat([A(2,3), A(2)])
M.cat([M.tensor(1.), M.tensor(2.)])
M.cat([])
M.cat([A(2,3), A(2,3)], 2)
M.stack([A(2), A(3)])
M.stack([])
M.stack([A(2), A(2)], 2)
M.where(A(2), A(2), A(2))
A(2,3).clamp()
A(3, dtype='int64') ** -1
A(3, dtype='int64') // 0
A(3, dtype='int64') % 0
A(3, dtype='int64').fmod(0)
A(3, dtype='int64').fmod(A(3, dtype='int64') * 0)
A(3, dtype='int64').remainder(A(3, dtype='int64') * 0)
A(3, dtype='int64') // (A(3, dtype='int64') * 0)
A(3, dtype='int64').div(A(3, dtype='int64') * 0, rounding_mode='trunc')
A(3, dtype='int64').div(0, rounding_mode='floor')
A(3).div(1, rounding_mode='foo')
A(3, dtype='int64').add(1, alpha=0.5)
A(3).mul_(A(2,3))
A(3, dtype='bool').add_(1)
A(3, dtype='int32').mul_(1.5)
A(3, dtype='int64').div_(2)
A(3, dtype='bool').add_(A(3, dtype='int64'))
A(3).copy_(A(4))
A(3).fill_(A(2))
A(2,3).masked_fill(A(2,3), 1)
A(2,3).masked_fill(A(2,3, dtype='int64'), 1)
A(2,3).masked_fill(A(2,3, dtype='uint8'), 1)
A(2,3).masked_fill(A(2,3) > 0, A(2))
A(2,3).lerp(A(2,3, dtype='float64'), 0.5)
A(2,3).item()
A(0).item()
bool(A(2))
bool(A(0))
len(M.tensor(1.))
A(2,3).flip(0, 0)
A(2,3).index_select(0, M.tensor([2]))
A(2,3).gather(0, M.tensor([[2]]))
M.dot(A(3), A(3, dtype='float64'))
M.mm(A(2,3), A(3,2, dtype='float64'))
A(2,3) @ A(3,2, dtype='float64')
M.mv(A(2,3), A(2))
A(2,3, dtype='float64').mv(A(3))
A(2,3, dtype='int64').mv(A(3))
M.bmm(A(2,2,3), A(3,3,2))
M.bmm(A(2,3), A(3,3,2))
A(2,2,3).bmm(A(2,3,2, dtype='float64'))
M.mm(A(3), A(3,2))
A(2,3, dtype='bool').mm(A(3,2, dtype='bool'))
A(2,3).repeat(2)
A(2,3).to('cuda')
A(2,3).requires_grad_().to(M.int64).requires_grad_()
A(2).to(M.int64).requires_grad_()
A(2,3).new_zeros(-1)
A(2,3).to('meta') + A(2,3)
A(2,3) + A(2,3).to('meta')
A(2,3).unsqueeze(5)
A(2,3).softmax(5)
A(2,3).log_softmax(-3)
A(2,3).cumsum(-3)
A(2,3).logsumexp(3)
A(2,3).max(-3)
A(2,3).all(2)
A(2,3).std(2)
A(2,3).movedim(0, 3)
A(2,3).flatten(2)
A(2,3).select(-3, 0)
A(2,3).squeeze(-3)
A(2,3).split(1, -3)
A(2,3).flip(5)
A(2,3).index_select(2, M.tensor([0]))
A(2,3).gather(5, M.tensor([[0]]))
M.cat([A(2,3), A(3,3)], 1)
M.cat([A(2,3), A(2,3,1)])
M.cat([A(2,3), A(2,3)], -3)
M.stack([A(2,3), A(2,3)], 3)
M.stack([A(2,3), A(2,3)], -4)
M.stack([A(2,3), A(3,2)])
A(0,3).reshape(0, -1)
A(6).view(-1, 4)
A(2,3).view(7, -1)
A(2,3).view(2, 3.0)
A(2,3).reshape(2, 3.0)
int(A(2))
float(A(2))
int(A(0))
A(2,3).to('meta').item()
A(2,3).to('meta').tolist()
A(2,3).to('meta').numpy()
A(2).requires_grad_().numpy()
A(2,3) @ 2
2 @ A(2,3)
A(2,3) + 'a'
A(2,3)[M.tensor([[0, 1], [1, 2]]), M.tensor([0, 1, 2])]
A(2,3).unfold(1, -1, 1)
A(2,3).as_strided((2,), (1, 1))
A(2,3).as_strided((-1,), (1,))
A(2,3).split([3, -1], 1)
A(2,3).chunk(-1)
A(2,3).repeat(2, 1, 0)
A(2,3).repeat(-1, 1)
A(2,3).repeat(1)
A(2,3).expand_as(A(3))
A(2,3).view_as(A(4))
"""

RESULTS = """
A(2,3) + A(3)
A(2,1) * A(1,3)
A(3) - A(2,3, dtype='int64')
A(2,3, dtype='int64') / 2
A(2,3, dtype='int64') // 2
-A(5, dtype='int64') // 2
A(5, dtype='int64') % 3
A(5) % -3
A(5).fmod(-3)
A(5, dtype='int64').fmod(3)
A(5, dtype='int8') + 1000
A(5, dtype='uint8') + 300
A(5, dtype='int8') * 1000
A(5, dtype='uint8') - A(5, dtype='int8')
A(5, dtype='int32') + 5
A(5, dtype='int64') + 2.5
A(5, dtype='bool') + A(5, dtype='bool')
A(5, dtype='bool') * 2
A(5, dtype='bool') + True
A(5, dtype='uint8') + M.tensor(300)
A(5) + M.tensor(1., dtype=M.float64)
A(5, dtype='int64') + M.tensor(1., dtype=M.float64)
A(5, dtype='float16') + A(5, dtype='int64')
A(5, dtype='int64') / A(5, dtype='int64')
A(5, dtype='int64').div(3, rounding_mode='trunc')
A(5, dtype='int64').div(3, rounding_mode='floor')
A(5).div(3, rounding_mode='trunc')
A(5).div(3, rounding_mode='floor')
A(5, dtype='bool') / 2
A(5) ** 2
A(5) ** 0.5
A(5, dtype='int64') ** 2
A(5, dtype='int64') ** 2.5
2 ** A(5, dtype='int64')
2.0 ** A(5, dtype='int64')
M.tensor([2, 3, -2, 1, -1]) ** M.tensor([-1, -2, -1, -3, -3])
M.tensor([2, 3, -2, 1, -1]).pow(M.tensor(-1))
M.tensor(2) ** M.tensor(-1)
A(5, dtype='int64') ** -1.0
1 / A(5)
1 - A(5)
1 - A(5, dtype='int64')
2 * A(5, dtype='int32')
A(5, dtype='int64') < 1.5
A(5) == A(5, dtype='int64')
A(5, dtype='uint8') > -1
A(5) != 0
A(5, dtype='int64') & 3
A(5, dtype='bool') | True
A(5, dtype='int16') ^ A(5, dtype='int8')
~A(5, dtype='int64')
~(A(5) > 0)
-A(5, dtype='uint8')
abs(A(5, dtype='int8'))
A(5).exp()
A(5, dtype='int64').exp()
A(5, dtype='bool').sin()
A(5, dtype='float64').log()
A(5).sqrt()
A(5, dtype='int64').rsqrt()
A(5).sigmoid()
A(5, dtype='int32').sigmoid()
A(5).tanh()
A(5).relu()
A(5, dtype='int64').relu()
A(5).abs()
A(5).neg()
A(5).clamp(-1, 1)
A(5, dtype='int64').clamp(-1, 1)
A(5, dtype='int64').clamp(0.5)
A(5, dtype='int64').clamp(max=1.5)
A(5).clamp(2, 1)
A(5).clamp(min=A(5) * 0)
M.where(A(5) > 0, A(5), 0.)
M.where(A(5) > 0, A(5, dtype='int64'), 0.5)
M.where(A(5) > 0, 1, 0)
M.where(A(5) > 0, A(5, dtype='int32'), A(5, dtype='int64'))
M.maximum(A(5), A(5, dtype='int64') * 0)
M.minimum(A(2,1), A(3))
A(2,3).sum()
A(2,3).sum(0)
A(2,3).sum(-1, keepdim=True)
A(2,3).sum((0, 1))
A(2,3).sum(())
A(2,3).sum([])
A(2,3, dtype='int32').sum()
A(2,3, dtype='bool').sum(0)
A(2,3, dtype='uint8').sum(1)
A(2,3).sum(dtype=M.int8)
A(2,3).mean()
A(2,3).mean((0, 1), keepdim=True)
A(2,3).mean(())
A(2,3, dtype='int64').mean(dtype=M.float64)
A(2,3).prod(1)
A(2,3, dtype='int32').prod()
M.tensor([1, 2]).prod(0, dtype=M.float32)
A(2,3).var()
A(2,3).var(0)
A(2,3).var(0, keepdim=True)
A(2,3).var(1, unbiased=False)
A(2,3).std(correction=2)
A(2,3).std(0, True)
A(2,3).std(())
A(2,3).max()
A(2,3).max(0)
A(2,3).max(1, True)
A(2,3).min(-1)
A(2,3).amax()
A(2,3).amax((0, 1))
A(2,3).amin(0, keepdim=True)
A(2,3).amax(())
A(2,3, dtype='bool').amax()
A(2,3).argmax()
A(2,3).argmax(0)
A(2,3).argmin(1, keepdim=True)
A(2,3).argmax(keepdim=True)
A(2,3).logsumexp(1)
A(2,3).logsumexp((0, 1))
A(2,3, dtype='int64').logsumexp(0)
A(2,3).all()
A(2,3).any(1)
A(2,3).all(())
A(2,3).all((0, 1))
A(2,3, dtype='uint8').all()
A(2,3, dtype='uint8').any(0)
A(0,3).sum(0)
A(0,3).sum()
A(0,3).prod()
A(0,3).mean()
A(0,3).mean(0)
A(0,3).max(1)
A(0,3).argmax(1)
A(0,3).logsumexp(0)
A(0,3).std(0)
A(0,3).var()
A(0,3).all()
A(0,3).any(1)
A(0,3).amax(1)
A(2,3).cumsum(1)
A(2,3, dtype='int32').cumsum(0)
A(2,3).softmax(1)
A(2,3).softmax(0)
A(2,3).log_softmax(-1)
A(2,3, dtype='int64').softmax(0, dtype=M.float64)
M.tensor(1.).sum(0)
M.tensor(1.).sum(-1)
M.tensor(1.).sum(1)
M.tensor(1.).sum((0,))
M.tensor(1.).max(0)
M.tensor(1.).argmax(0)
M.tensor(1.).softmax(0)
M.tensor(1.).logsumexp(0)
M.tensor(1.).std(0)
M.tensor(1.).var()
M.tensor(1.).mean(0)
M.tensor(1.).prod(0)
M.tensor(1.).cumsum(0)
M.tensor(1.).amax(0)
M.tensor(1.).all(0)
A(3) @ A(3)
A(2,3) @ A(3)
A(3) @ A(3,2)
A(2,3) @ A(3,4)
A(2,2,3) @ A(3)
A(3) @ A(2,3,4)
A(2,2,3) @ A(3,4)
A(2,3) @ A(2,3,4)
A(2,2,3) @ A(2,3,4)
A(1,2,3) @ A(4,3,2)
A(2,1,2,3) @ A(4,3,5)
A(2,4,5) @ A(5)
A(4) @ A(2,4,5)
A(5,2,3) @ A(4,3)
A(2,3, dtype='int64') @ A(3,4, dtype='int64')
A(2,3, dtype='float64') @ A(3, dtype='float64')
A(0,3) @ A(3,4)
A(2,0) @ A(0,4)
A(2,3).t() @ A(2,3)
A(2,3).mm(A(3,2))
A(2,3).mv(A(3))
A(3).dot(A(3))
M.bmm(A(2,2,3), A(2,3,2))
M.cat([A(2,3), A(2,3)])
M.cat([A(2,3), A(2,3)], 1)
M.cat([A(2,3), A(2,3, dtype='int64')], -1)
M.cat([A(2,3), A(0)])
M.cat([A(0), A(0)])
M.cat([A(2,3, dtype='int32'), A(1,3, dtype='bool')])
M.cat([A(2,3).t(), A(1,2)])
M.stack([A(2,3), A(2,3)])
M.stack([A(2,3), A(2,3)], 2)
M.stack([A(2,3), A(2,3, dtype='float64')], -1)
M.stack([M.tensor(1.), M.tensor(2.)])
A(2,3).clone()
A(2,3).t().clone()
A(2,3).t().contiguous()
A(2,3).expand(2,2,3).contiguous()
A(2,3).to(M.int32)
A(2,3).to(M.float64)
A(2,3).double()
A(2,3).long()
(A(2,3) * 1.5).int()
A(2,3).bool()
A(2,3).half()
A(2,3).type()
A(2,3, dtype='int8').type()
A(2,3).flip(0)
A(2,3).flip((0, 1))
A(2,3).tril()
A(2,3).triu(1)
A(2,3).index_select(1, M.tensor([2, 0]))
A(2,3).gather(1, M.tensor([[2], [0]]))
A(2,3).masked_fill(A(2,3) > 0, -1.)
A(2,3).masked_fill(A(3) > 0, 7)
A(2,3).repeat(2, 1)
A(2,3).repeat(2, 1, 2)
A(2,3).nonzero()
A(2,3).lerp(A(2,3) * 2, 0.25)
A(2,3).isclose(A(2,3) + 1e-9)
A(2,3).tolist()
A(2,3, dtype='int64').tolist()
M.tensor(2.5).item()
M.tensor(7).item()
M.tensor(True).item()
float(M.tensor(2.5))
int(A(1, dtype='int64'))
A(2,3).element_size()
A(2,3, dtype='float16').element_size()
A(2,3).dim()
A(2,3).numel()
A(2,3).ndim
A(2,3).size()
A(2,3).size(-1)
A(2,3).shape
A(2,3).stride()
A(2,3).stride(0)
A(2,3).nbytes
A(2,3).itemsize
A(2,3).is_floating_point()
A(2,3, dtype='int64').is_floating_point()
A(2,3).dtype
(A(2,3, dtype='int64') + 0.5).dtype
A(2,3).untyped_storage().nbytes()
A(2,3)[1:].untyped_storage().nbytes()
"""


def _lines(block: str) -> list[str]:
    return [ln.strip() for ln in block.strip().splitlines() if ln.strip() and not ln.strip().startswith("#")]


# Python numbers meeting integer and half tensors: arithmetic wraps, Scalar arguments are checked
SCALARS = """
M.tensor([4,2,-2],dtype=M.int8)**1000
M.tensor([4,2,-2],dtype=M.int8)**100
M.tensor([4,2],dtype=M.uint8)**256
M.tensor(5,dtype=M.uint8).clamp(-1)
M.tensor([5,0],dtype=M.uint8).clamp(max=-1)
M.tensor([5,0],dtype=M.uint8).clamp(300)
M.tensor([5,0],dtype=M.int8).clamp(-200, 1000)
M.tensor([5,0],dtype=M.uint8) < 300
M.tensor([5,0],dtype=M.uint8) + 300
M.tensor([5,0],dtype=M.uint8) == 261
M.tensor([5,0],dtype=M.int8) * 1000
M.tensor([5,0],dtype=M.int8) % 1000
M.tensor([5,0],dtype=M.int8) // 1000
M.where(M.tensor([True,False]), M.tensor([5,0],dtype=M.int8), 1000)
M.tensor([5,0],dtype=M.int8).masked_fill(M.tensor([True,False]), 1000)
M.tensor([5,0],dtype=M.int8).fill_(1000)
M.tensor([5,0],dtype=M.int8).add(1, alpha=1000)
M.tensor([5,0],dtype=M.int8).maximum(M.tensor(1000))
M.tensor([5,0],dtype=M.int8).remainder(-1000)
M.zeros(2,dtype=M.int16).fill_(40000)
M.zeros(2,dtype=M.int32).fill_(2**31)
M.zeros(2,dtype=M.int64).fill_(2**63)
M.zeros(2,dtype=M.float16).fill_(1e6)
M.zeros(2,dtype=M.float32).fill_(1e300)
M.zeros(2,dtype=M.float64).fill_(1e300)
M.zeros(2,dtype=M.bool).fill_(5)
M.zeros(2,dtype=M.uint8).fill_(-1)
M.zeros(2,dtype=M.uint8).fill_(-256)
M.zeros(2,dtype=M.int8).fill_(127.9)
M.zeros(2,dtype=M.int8).fill_(float('inf'))
M.zeros(2,dtype=M.float16).fill_(float('inf'))
M.zeros(2,dtype=M.int8).clamp(0.5)
M.zeros(2,dtype=M.int8).clamp(200.5)
M.tensor([2,3],dtype=M.int8) ** 127
M.tensor([2,3],dtype=M.int8) ** 128
M.tensor([2,3],dtype=M.uint8) ** -1
M.tensor([2,3],dtype=M.int8).add(M.tensor([1,1],dtype=M.int8), alpha=200)
M.tensor([2,3],dtype=M.int8).sub(1, alpha=200)
M.tensor([2.,3.],dtype=M.float16).add(1, alpha=1e6)
M.tensor([2.,3.],dtype=M.float16) + 1e6
M.where(M.tensor([True,False]), M.tensor([5,0],dtype=M.uint8), -1)
M.where(M.tensor([True,False]), 1000, M.tensor([5,0],dtype=M.int8))
M.tensor([5,0],dtype=M.int8).masked_fill(M.tensor([True,False]), -129)
M.tensor([5,0],dtype=M.bool).masked_fill(M.tensor([True,False]), 2)
M.tensor([5,0],dtype=M.bool).fill_(0.5)
"""


@pytest.mark.parametrize("expr", _lines(SCALARS))
def test_scalar_conversions_match_torch(torch, expr):
    check(torch, expr)


@pytest.mark.parametrize("expr", _lines(ERRORS))
def test_errors_match_torch(torch, expr):
    check(torch, expr)


@pytest.mark.parametrize("expr", _lines(RESULTS))
def test_results_match_torch(torch, expr):
    check(torch, expr, rtol=1e-4, atol=1e-5)


VIEWS = """
A(2,3,4).view(6, 4)
A(2,3,4).view(-1)
A(2,3,4).view(4, -1)
A(2,3,4)[:, ::2].view(2, 8)
A(2,3,4).transpose(0, 1).view(3, 2, 2, 2)
A(4,6)[::2].reshape(2, 3, 2)
A(4,6)[::2].reshape(12)
A(2,3,4).transpose(0, 1).reshape(6, 4)
A(2,3,4).reshape(2, 12)
A(2,3,4).flatten()
A(2,3,4).flatten(1)
A(2,3,4).transpose(1, 2).flatten(1)
A(2,3,4).unflatten(2, (2, 2))
A(2,3,4).unflatten(-1, (-1, 2))
A(2,3,4).transpose(0, 2)
A(2,3,4).permute(2, 0, 1)
A(2,3,4).permute(-1, 0, 1)
A(2,3,4).unsqueeze(1)
A(2,3,4).unsqueeze(-1)
A(2,3,4).unsqueeze(0)
A(2,3,4).transpose(0, 2).unsqueeze(1)
A(2,1,4).squeeze()
A(2,1,4).squeeze(1)
A(2,1,4).squeeze(0)
A(2,1,1).squeeze((1, 2))
A(1,3,1).squeeze(-1)
A(2,3,4).narrow(2, 1, 2)
A(2,3,4).narrow(-1, -3, 2)
A(2,3,4).select(1, 2)
A(2,3,4).select(-1, -1)
A(2,3,4)[0]
A(2,3,4)[1, 2]
A(2,3,4)[:, ::2, 1:]
A(2,3,4)[..., 1]
A(2,3,4)[None]
A(2,3,4)[:, None, :, None]
A(2,3,4)[1, ..., None]
A(2,3,4)[1:1]
A(2,3,4)[5:]
A(2,3,4)[-1:, -2:]
A(2,3,4)[:, 1:100:3]
A(2,3,4)[True]
A(2,3,4)[False]
A(2,3,4)[...]
A(2,3,4)[:]
A(2,3,4).diagonal(dim1=1, dim2=2)
A(2,3,4).diagonal(1, 1, 2)
A(2,3,4).diagonal(-1, 1, 2)
A(2,3,4).diagonal(5, 1, 2)
A(2,3,4).diagonal(0, 2, 0)
A(2,3,4).unfold(2, 2, 1)
A(2,3,4).unfold(1, 2, 2)
A(2,3,4).unfold(0, 1, 3)
A(2,3,4).as_strided((2, 2), (1, 2))
A(2,3,4).as_strided((3,), (5,), 2)
A(2,3,4).mT
A(3,4).T
A(3,4).t()
A(4).t()
A(2,3,4).T
A(3,1).expand(3, 4)
A(3).expand(2, 3)
A(3).expand(2, -1)
A(1,3).expand(0, 3)
A(3).expand_as(A(2,3))
A(2,3).broadcast_to((4, 2, 3))
A(2,3,4).split(2, 2)
A(2,3,4).split([1, 2], 1)
A(2,3,4).chunk(2, 2)
A(2,3,4).chunk(3, 2)
A(5).chunk(3)
A(2,3,4).unbind(1)
A(2,3,4).movedim(0, 2)
A(2,3,4).movedim((0, 1), (2, 0))
A(2,3,4).swapaxes(0, 2)
A(2,3,4).detach()
A(2,3,4).contiguous()
A(2,3,4).view_as(A(6, 4))
A(2,3,4).reshape_as(A(4, 6))
A(2,3).view(M.int32)
A(2,3, dtype='int32').view(M.float32)
A(2,4).view(M.float64)
A(2,3).view(M.int16)
A(2,3).ravel()
A(2,3).t().ravel()
M.tensor(1.).unsqueeze(0)
M.tensor(1.).squeeze(0)
M.tensor(1.).transpose(0, 0)
M.tensor(1.).transpose(0, -1)
M.tensor(1.).t()
M.tensor(1.).view(1, 1)
M.tensor(1.).reshape(-1)
M.tensor(1.).expand(3, 2)
M.tensor(1.).flatten()
M.tensor(1.).movedim(0, 0)
M.tensor(1.)[None]
M.tensor(1.)[...]
M.tensor(1.)[M.tensor(True)]
M.tensor(1.).unfold(0, 1, 1)
M.tensor(1.).diagonal(0, 0, -1) if False else M.tensor(1.).permute(())
A(0,3).view(3, 0)
A(0,3).reshape(-1)
A(0,3).t()
A(2,0,3).transpose(0, 2)
A(2,0,3)[1]
A(2,0,3).flatten()
A(2,0,3).unbind(1)
"""


@pytest.mark.parametrize("expr", _lines(VIEWS))
def test_views_match_torch_layout(torch, expr):
    check(torch, expr, layout=True)


ADVANCED = """
A(2,3)[[0, 1]]
A(2,3)[M.tensor([1, 0, 1])]
A(2,3)[[0, 1], [2, 0]]
A(2,3)[A(2,3) > 0]
A(2,3)[M.tensor([True, False])]
A(2,3)[M.tensor([True, False]), 1]
A(2,3)[1, M.tensor([True, False, True])]
A(2,3)[M.tensor([True, False]), M.tensor([True, False, True])]
A(2,3,4)[M.tensor([0, 1]), :, M.tensor([0, 1])]
A(2,3,4)[:, M.tensor([0, 1]), M.tensor([0, 1])]
A(2,3,4)[M.tensor([0, 1]), 1, M.tensor([0, 1])]
A(2,3,4)[..., M.tensor([0, 1])]
A(2,3,4)[None, M.tensor([0, 1]), None]
A(2,3,4)[M.tensor(True)]
A(2,3,4)[M.tensor(False)]
A(2,3,4)[False, 0]
A(2,3,4)[[0, 1], [0, 1]]
A(2,3,4)[(0, 1)]
A(2,3,4)[[[0, 1]]]
A(2,3,4)[[[0, 1], [1, 0]]]
A(2,3,4)[[True, False]]
A(2,3,4)[M.tensor([[0, 1], [1, 0]])]
A(2,3,4)[1:, [0, 2]]
A(2,3,4)[1:, [0, 2], ::2]
A(2,3,4)[[0], ..., [1, 2]]
A(5)[M.tensor([], dtype=M.int64)]
A(5)[[]]
A(5)[M.tensor([-5, 4])]
A(5)[M.tensor([0, 1]).to(M.int32)]
A(2,3)[M.tensor([0, 1]).to(M.uint8)]
A(3)[M.tensor([0, 1, 1]).to(M.uint8)]
A(2,3)[M.tensor(1)]
A(2,3)[M.tensor(-1), 1]
A(2,3)[A(2,3) > 100]
"""


@pytest.mark.parametrize("expr", _lines(ADVANCED))
def test_advanced_indexing_matches_torch(torch, expr):
    check(torch, expr, layout=True)


SETITEM = """
x = A(2,3); x[0] = 5.; x
x = A(2,3); x[:, 1] = A(2) * 10; x
x = A(2,3); x[:, ::2] = M.tensor(-1.); x
x = A(2,3); x[x > 0] = 0.; x
x = A(2,3); x[[0, 1], [1, 2]] = M.tensor([7., 8.]); x
x = A(2,3); x[M.tensor([1, 1])] = 9.; x
x = A(2,3); x[...] = A(3); x
x = A(2,3); x[None, 1] = 3; x
x = A(2,3); x[0] = A(4); x
x = A(2,3); x[0] = A(2, 3); x
x = A(2,3, dtype='int64'); x[0] = 2.7; x
x = A(2,3, dtype='int64'); x[0] = A(3); x
x = A(2,3); v = x.t(); v[1] = 100.; x
x = A(2,3); v = x[:, 1:]; v += 1; x
x = A(2,3); v = x.view(6); v.mul_(2); x
x = A(2,3); v = x.unsqueeze(0).expand(2, 2, 3); v[0, 0, 0]; x
x = A(2,3); x[1][2] = -9.; x
x = A(2,3); x[x > 0] = A(2); x
x = A(2,3); x[[0]] = A(1, 3); x
x = A(5); x[1:].copy_(x[:-1]); x
x = A(5); x.copy_(x); x
x = A(5); x[1:].add_(x[:-1]); x
x = A(5); x.add_(x); x
x = A(5); x[:2].copy_(x[3:]); x
x = A(5); x[1:] = x[:-1]; x
x = A(2,2); x.add_(x.t()); x
x = A(3); x.expand(2, 3).add_(1); x
x = A(3); x.expand(2, 3).fill_(1); x
x = A(3); x.expand(2, 3).zero_(); x
x = A(3); x.expand(2, 3).copy_(A(2, 3)); x
x = A(3); x.expand(2, 3)[0].add_(1); x
x = A(3); x.expand(2, 3).masked_fill_(A(2, 3) > 0, 1.); x
x = A(3); x.expand(2, 3).exp_(); x
x = A(3); x.expand(2, 3).index_put_((M.tensor([0]),), A(3)); x
x = A(3); x[None].expand(2, 3).mul_(2); x
x = A(3); y = x.view(3); y.add_(1); (x._version, y._version)
x = A(2,3); y = x[0]; y.mul_(2); x[1] = 5.; (x._version, y._version)
x = A(2,3); y = x.t(); x.zero_(); (y._version, y)
x = A(3, dtype='int64'); x.add_(A(3)); x
x = A(3, dtype='int64'); x += 1.5; x
x = A(3, dtype='int64'); x *= 2; x
x = A(3); x /= 2; x
x = A(3, dtype='int64'); x /= 2; x
x = A(3, dtype='int64'); x //= 2; x
x = A(3, dtype='bool'); x |= True; x
x = A(2,3); x += A(3); x
x = A(3); x += A(2,3); x
x = A(3); x.clamp_(0, 1); x
x = A(3); x.copy_(A(3, dtype='int64') * 2); x
x = A(3, dtype='int64'); x.copy_(A(3) * 1.5); x
x = A(2,3); x.fill_(M.tensor(2.)); x
x = A(2,3); x.fill_(True); x
x = A(2,3, dtype='int64'); x.fill_(2.9); x
"""


def _exec_expr(M, code: str):
    ns = namespace(M)
    *stmts, last = code.split("; ")
    exec("\n".join(stmts), ns)  # noqa: S102
    return eval(last, ns)  # noqa: S307


@pytest.mark.parametrize("code", _lines(SETITEM))
def test_setitem_matches_torch(torch, code):
    t = outcome(lambda: _exec_expr(torch, code))
    c = outcome(lambda: _exec_expr(cl, code))
    assert same(t, c), f"{code}\n torch:      {fmt(t)}\n course_lib: {fmt(c)}"


# ---------------------------------------------------------------------------
# type promotion
# ---------------------------------------------------------------------------
DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
SCALARS = [True, 3, -2, 2.5]


def _operands(M, dt, kind):
    d = getattr(M, dt)
    if kind == "dim":
        return M.ones(2, dtype=d)
    return M.ones((), dtype=d)


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_result_type_all_pairs(torch, a, b):
    for ka, kb in itertools.product(("dim", "zero"), repeat=2):
        want = torch.result_type(_operands(torch, a, ka), _operands(torch, b, kb))
        got = cl.result_type(_operands(cl, a, ka), _operands(cl, b, kb))
        assert got.name == str(want).split(".")[-1], (a, ka, b, kb)
    assert cl.promote_types(getattr(cl, a), getattr(cl, b)).name == \
        str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("s", SCALARS, ids=repr)
def test_result_type_with_python_scalars(torch, a, s):
    for kind in ("dim", "zero"):
        want = torch.result_type(_operands(torch, a, kind), s)
        got = cl.result_type(_operands(cl, a, kind), s)
        assert got.name == str(want).split(".")[-1], (a, kind, s)


BINARY = ["add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "eq", "lt",
          "bitwise_and", "atan2", "fmod"]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("a,b", list(itertools.combinations_with_replacement(DTYPES, 2)))
def test_binary_op_dtypes_and_values(torch, op, a, b):
    """Every binary op on every dtype pair: same result dtype and values (or the same error)."""
    def run(M):
        x = M.tensor([[3, 1, 2], [1, 2, 3]]).to(getattr(M, a))
        y = M.tensor([2, 1, 1]).to(getattr(M, b))
        return getattr(M, op)(x, y)
    t = outcome(lambda: run(torch))
    c = outcome(lambda: run(cl))
    assert same(t, c, rtol=2e-3, atol=1e-3), f"{op}({a}, {b})\n torch:      {fmt(t)}\n course_lib: {fmt(c)}"


UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "floor", "ceil",
         "round", "trunc", "sign", "reciprocal", "square", "logical_not", "isnan", "bitwise_not", "expm1", "log1p"]


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("a", DTYPES)
def test_unary_op_dtypes_and_values(torch, op, a):
    def run(M):
        x = M.tensor([[3, 1, 2], [1, 0, 3]]).to(getattr(M, a))
        return getattr(M, op)(x)
    t = outcome(lambda: run(torch))
    c = outcome(lambda: run(cl))
    assert same(t, c, rtol=2e-3, atol=1e-3), f"{op}({a})\n torch:      {fmt(t)}\n course_lib: {fmt(c)}"


REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "all", "any", "logsumexp", "var", "std",
              "max", "min", "softmax", "log_softmax", "cumsum"]


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("a", DTYPES)
def test_reduction_dtypes_and_values(torch, op, a):
    def run(M):
        x = M.tensor([[3, 1, 2], [1, 0, 3]]).to(getattr(M, a))
        f = getattr(M, op)
        if op in ("softmax", "log_softmax", "cumsum", "logsumexp"):
            return f(x, 1)
        if op in ("max", "min"):
            return f(x, 1), f(x)
        return f(x, 0), f(x)
    t = outcome(lambda: run(torch))
    c = outcome(lambda: run(cl))
    assert same(t, c, rtol=2e-3, atol=1e-3), f"{op}({a})\n torch:      {fmt(t)}\n course_lib: {fmt(c)}"


# ---------------------------------------------------------------------------
# random view chains: layout (strides, offset, contiguity, _is_view) as torch
# ---------------------------------------------------------------------------
from view_chains import view_chains  # noqa: E402


@settings(max_examples=int(os.environ.get("COURSE_HYPOTHESIS_EXAMPLES", 300)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(view_chains(max_steps=6))
def test_random_view_chains_match_torch(torch, chain):
    shape, steps = chain
    n = math.prod(shape)
    xt = torch.arange(n, dtype=torch.float32).reshape(shape)
    xc = cl.arange(n, dtype=cl.float32).reshape(shape)
    trail = str(shape)
    for step in steps:
        trail += step.text
        t = outcome(lambda: step.tensor(xt), layout=True)
        c = outcome(lambda: step.tensor(xc), layout=True)
        assert same(t, c), f"{trail}\n torch:      {fmt(t)}\n course_lib: {fmt(c)}"
        if t[0][0] == "error":
            return
        xt, xc = step.tensor(xt), step.tensor(xc)


INPLACE_BINARY = ["add_", "sub_", "mul_", "div_", "floor_divide_", "remainder_", "pow_", "bitwise_and_", "lt_"]


@pytest.mark.parametrize("op", INPLACE_BINARY)
@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_inplace_op_casts_like_torch(torch, op, a, b):
    """``x.op_(y)`` for every dtype pair: the same values, or the same cast error."""
    def run(M):
        x = M.tensor([[3, 1, 2], [1, 2, 3]]).to(getattr(M, a))
        y = M.tensor([2, 1, 1]).to(getattr(M, b))
        r = getattr(x, op)(y)
        assert r is x
        return x
    t = outcome(lambda: run(torch))
    c = outcome(lambda: run(cl))
    assert same(t, c, rtol=2e-3, atol=1e-3), f"{op}({a}, {b})\n torch:      {fmt(t)}\n course_lib: {fmt(c)}"


INPLACE_UNARY = ["exp_", "sqrt_", "neg_", "abs_", "floor_", "sigmoid_", "relu_", "clamp_", "zero_", "square_",
                 "bitwise_not_", "round_"]


@pytest.mark.parametrize("op", INPLACE_UNARY)
@pytest.mark.parametrize("a", DTYPES)
def test_inplace_unary_like_torch(torch, op, a):
    def run(M):
        x = M.tensor([[3, 1, 2], [1, 0, 3]]).to(getattr(M, a))
        r = getattr(x, op)(*((0, 2) if op == "clamp_" else ()))
        assert r is x
        return x
    t = outcome(lambda: run(torch))
    c = outcome(lambda: run(cl))
    assert same(t, c, rtol=2e-3, atol=1e-3), f"{op}({a})\n torch:      {fmt(t)}\n course_lib: {fmt(c)}"


@pytest.mark.parametrize("expr", [
    "A(3, dtype='bool').clamp(False, True)",
    "A(3, dtype='bool').clamp(True)",
    "A(3, dtype='bool').clamp(max=False)",
    "A(3, dtype='bool').clamp(max=1)",
    "A(3, dtype='bool').clamp(min=M.tensor(True))",
    "A(3, dtype='int64').clamp_(0.5)",
    "A(3, dtype='int64').clamp_(max=0.5)",
    "A(3, dtype='uint8').clamp_(0.5, 1)",
    "A(3, dtype='int64').clamp_(min=M.tensor(0.5))",
    "A(3, dtype='bool').square_()",
])
def test_clamp_and_square_edge_cases(torch, expr):
    check(torch, expr)
