"""Planted wrong answers for chapter 03 (autograd): implementations its checks must reject.

``WRONG`` maps each exercise id to them. tests/test_checks.py asserts that every exercise of the
chapter has at least one and that its check fails on each (CheckFailure, not NotAttempted).
"""
from __future__ import annotations


# ------------------------------------------------------------------ 03.1 mul_backward
def mul_backward_swapped(grad, x, y):
    return grad * x, grad * y


def mul_backward_no_grad(grad, x, y):
    return y, x


# ------------------------------------------------------------------ 03.2 div_backward
def div_backward_wrong_sign(grad, x, y):
    return grad / y, grad * x / (y * y)


def div_backward_missing_x(grad, x, y):
    return grad / y, -grad / (y * y)


# ------------------------------------------------------------------ 03.3 log_backward
def log_backward_times_x(grad, x):
    return grad * x


def log_backward_ignores_grad(grad, x):
    return 1 / x


# ------------------------------------------------------------------ 03.4 unbroadcast
def unbroadcast_leading_only(grad, shape):
    lead = grad.dim() - len(shape)
    return grad.sum(tuple(range(lead))) if lead > 0 else grad


def unbroadcast_drops_ones(grad, shape):
    lead = grad.dim() - len(shape)
    if lead > 0:
        grad = grad.sum(tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and grad.shape[i] != 1)
    return grad.sum(dims) if dims else grad


def unbroadcast_mean(grad, shape):
    lead = grad.dim() - len(shape)
    if lead > 0:
        grad = grad.mean(tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and grad.shape[i] != 1)
    return grad.mean(dims, keepdim=True) if dims else grad


# ------------------------------------------------------------------ 03.5 sum_backward
def sum_backward_no_unsqueeze(grad, input_shape, dim, keepdim):
    return grad.expand(tuple(input_shape))


def sum_backward_unsorted_dims(grad, input_shape, dim, keepdim):
    n = len(input_shape)
    dims = tuple(range(n)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    if not keepdim:
        for d in dims:  # not sorted: dim=(2, 0) unsqueezes at 2 first, past the end
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(input_shape))


def sum_backward_divides(grad, input_shape, dim, keepdim):
    n = len(input_shape)
    dims = tuple(range(n)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    dims = tuple(sorted(d % n for d in dims))
    count = 1
    for d in dims:
        count *= input_shape[d]
    if not keepdim:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(input_shape)) / count  # that is mean's backward


def sum_backward_tuple_dims_unwrapped(grad, input_shape, dim, keepdim):
    # wraps a single negative dim, but sorts a tuple's dims as given: (-3, -1) unsqueezes at -3 first
    n = len(input_shape)
    if dim is None:
        dims = tuple(range(n))
    elif isinstance(dim, int):
        dims = (dim % n,)
    else:
        dims = tuple(sorted(dim))
    if not keepdim:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(input_shape))


# ------------------------------------------------------------------ 03.6 matmul_backward
def matmul_backward_no_transpose(grad, a, b):
    return grad @ b, a @ grad


def matmul_backward_swapped(grad, a, b):
    return a.t() @ grad, grad @ b.t()


# ------------------------------------------------------------------ 03.7 topological_sort
def topological_sort_dfs_preorder(root):
    order, stack, seen = [], [root], {root}
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return order


def topological_sort_bfs(root):
    order, queue, seen = [], [root], {root}
    while queue:
        node = queue.pop(0)
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order


def topological_sort_recursive(root):
    order, seen = [], set()

    def visit(node):
        seen.add(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                visit(nxt)
        order.append(node)
    visit(root)
    return order[::-1]  # right order, but a 3000-deep chain overflows the stack


def topological_sort_duplicates(root):
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return order


# ------------------------------------------------------------------ 03.8 run_backward
def run_backward_dfs_pushes_total(root):
    # propagates node.grad (everything accumulated so far) at every visit: counts paths twice
    root.grad += 1.0
    stack = [root]
    while stack:
        node = stack.pop()
        for p, local in zip(node.parents, node.local_grads):
            p.grad += local * node.grad
            stack.append(p)


def run_backward_visit_once(root):
    # each node passes its gradient on the first time it is reached, before all users added theirs
    root.grad += 1.0
    stack, seen = [root], {id(root)}
    while stack:
        node = stack.pop()
        for p, local in zip(node.parents, node.local_grads):
            p.grad += local * node.grad
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)


def run_backward_resets(root):
    users = {}
    stack, seen = [root], {id(root)}
    while stack:
        node = stack.pop()
        for p in node.parents:
            users[id(p)] = users.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    pending = {id(root): 1.0}
    ready = [root]
    while ready:
        node = ready.pop()
        node.grad = pending.pop(id(node), 0.0)  # overwrites: no accumulation across calls
        for p, local in zip(node.parents, node.local_grads):
            pending[id(p)] = pending.get(id(p), 0.0) + local * node.grad
            users[id(p)] -= 1
            if users[id(p)] == 0:
                ready.append(p)


def run_backward_every_path(root):
    # right values, no dependency counting: each node passes on every partial gradient it receives, so the
    # work grows with the number of paths (2**40 for y = y + y repeated 40 times)
    stack = [(root, 1.0)]
    while stack:
        node, g = stack.pop()
        node.grad += g
        for p, local in zip(node.parents, node.local_grads):
            stack.append((p, local * g))


def run_backward_root_not_credited(root):
    # propagates correctly, but only nodes below the root get their gradient: root.grad stays as it was
    users = {}
    stack, seen = [root], {id(root)}
    while stack:
        node = stack.pop()
        for p in node.parents:
            users[id(p)] = users.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    pending = {id(root): 1.0}
    ready = [root]
    while ready:
        node = ready.pop()
        g = pending.pop(id(node), 0.0)
        if node is not root:
            node.grad += g
        for p, local in zip(node.parents, node.local_grads):
            pending[id(p)] = pending.get(id(p), 0.0) + local * g
            users[id(p)] -= 1
            if users[id(p)] == 0:
                ready.append(p)


# ------------------------------------------------------------------ 03.9 numerical_jacobian
def _nj(fn, x, eps, transpose=False, denom=2.0, restore=True):
    import numpy as np

    import course_lib as cl
    xc = x.detach().clone()
    flat = xc.view(-1)
    cols = []
    with cl.no_grad():
        for j in range(xc.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            plus = fn(xc).detach().numpy().reshape(-1).copy()
            flat[j] = orig - eps
            minus = fn(xc).detach().numpy().reshape(-1).copy()
            if restore:
                flat[j] = orig
            cols.append((plus - minus) / (denom * eps))
    j = np.stack(cols, axis=1)
    return j.T if transpose else j


def numerical_jacobian_transposed(fn, x, eps=1e-6):
    return _nj(fn, x, eps, transpose=True)


def numerical_jacobian_divides_by_eps(fn, x, eps=1e-6):
    return _nj(fn, x, eps, denom=1.0)


def numerical_jacobian_no_restore(fn, x, eps=1e-6):
    return _nj(fn, x, 1e-3, restore=False)


def numerical_jacobian_forward_difference(fn, x, eps=1e-6):
    # (f(x + eps) - f(x)) / eps: first-order accurate only
    import numpy as np

    import course_lib as cl
    xc = x.detach().clone()
    flat = xc.view(-1)
    cols = []
    with cl.no_grad():
        f0 = fn(xc).detach().numpy().reshape(-1).copy()
        for j in range(xc.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            cols.append((fn(xc).detach().numpy().reshape(-1) - f0) / eps)
            flat[j] = orig
    return np.stack(cols, axis=1)


def numerical_jacobian_nudges_x(fn, x, eps=1e-6):
    # nudges x itself (through a detached view of it) and puts every value back: the values come back
    # exactly, but x was written in place, and its version counter shows it
    import numpy as np

    import course_lib as cl
    flat = x.detach().view(-1)
    cols = []
    with cl.no_grad():
        for j in range(flat.numel()):
            orig = flat[j].item()
            flat[j] = orig + eps
            plus = fn(x.detach()).numpy().reshape(-1).copy()
            flat[j] = orig - eps
            minus = fn(x.detach()).numpy().reshape(-1).copy()
            flat[j] = orig
            cols.append((plus - minus) / (2 * eps))
    return np.stack(cols, axis=1)


def numerical_jacobian_records_graph(fn, x, eps=1e-6):
    # never touches x, but evaluates fn on x +- a nudge with grad mode on: every call records a graph
    import numpy as np

    import course_lib as cl
    cols = []
    for j in range(x.numel()):
        e = cl.zeros(x.numel(), dtype=x.dtype)
        e[j] = eps
        e = e.view(tuple(x.shape))
        plus = fn(x + e).detach().numpy().reshape(-1)
        minus = fn(x - e).detach().numpy().reshape(-1)
        cols.append((plus - minus) / (2 * eps))
    return np.stack(cols, axis=1)


# ------------------------------------------------------------------ 03.10 Softplus
def _softplus_classes():
    from course_lib.autograd import Function

    class SoftplusWrongBackward(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x.exp() + 1).log()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (-x).sigmoid()

    class SoftplusNoSave(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return (x.exp() + 1).log()

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.x.sigmoid()

    class SoftplusWrongForward(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp().log1p() if False else x.relu()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.sigmoid()

    class SoftplusNotAFunction:
        @staticmethod
        def apply(x):
            return (x.exp() + 1).log()

    return [SoftplusWrongBackward, SoftplusNoSave, SoftplusWrongForward, SoftplusNotAFunction]


WRONG = {
    "03.1": [mul_backward_swapped, mul_backward_no_grad],
    "03.2": [div_backward_wrong_sign, div_backward_missing_x],
    "03.3": [log_backward_times_x, log_backward_ignores_grad],
    "03.4": [unbroadcast_leading_only, unbroadcast_drops_ones, unbroadcast_mean],
    "03.5": [sum_backward_no_unsqueeze, sum_backward_unsorted_dims, sum_backward_divides,
             sum_backward_tuple_dims_unwrapped],
    "03.6": [matmul_backward_no_transpose, matmul_backward_swapped],
    "03.7": [topological_sort_dfs_preorder, topological_sort_bfs, topological_sort_recursive,
             topological_sort_duplicates],
    "03.8": [run_backward_dfs_pushes_total, run_backward_visit_once, run_backward_resets, run_backward_every_path,
             run_backward_root_not_credited],
    "03.9": [numerical_jacobian_transposed, numerical_jacobian_divides_by_eps, numerical_jacobian_no_restore,
             numerical_jacobian_forward_difference, numerical_jacobian_nudges_x, numerical_jacobian_records_graph],
    "03.10": _softplus_classes(),
}
