"""Module backward hooks: gradients with respect to a module's inputs and outputs.

In PyTorch: ``torch/utils/hooks.py`` (``BackwardHook``).  The trick: wrap the
module's inputs and its outputs in identity nodes.  When backward reaches the
output identity, its incoming gradients are ``grad_output``; when it reaches
the input identity, they are ``grad_input``.  Pre-hooks run at the first,
full hooks at the second.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

from ..._tensor import Tensor
from ...autograd.function import Function


class _BackwardHookFunction(Function):
    """Identity on any number of tensors; gives us one node to hook."""

    @staticmethod
    def forward(ctx, *args):
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_positions = None

    def _wrap(self, values, hook):
        positions = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
        if not positions:
            return values, None
        from ...autograd.grad_mode import is_grad_enabled
        if not is_grad_enabled():
            return values, None
        wrapped = _BackwardHookFunction.apply(*[values[i] for i in positions])
        node = wrapped[0].grad_fn
        if node._pre_hooks is None:
            node._pre_hooks = OrderedDict()  # weak-referenceable, for RemovableHandle
        node.register_prehook(hook)
        values = list(values)
        for i, w in zip(positions, wrapped):
            values[i] = w
        return values, positions

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        new, self.input_positions = self._wrap(args, self._input_hook)
        return tuple(new)

    def setup_output_hook(self, result):
        single = isinstance(result, Tensor)
        values = (result,) if single else result
        if not isinstance(values, (tuple, list)):
            return result
        new, pos = self._wrap(values, self._output_hook)
        if pos is None:
            return result
        return new[0] if single else type(values)(new) if isinstance(values, tuple) else new

    def _output_hook(self, grads):
        grads = tuple(grads)
        for hook in self.user_pre_hooks:
            r = hook(self.module, grads)
            if r is not None:
                grads = tuple(r)
        self.grad_outputs = grads
        if self.input_positions is None and self.user_hooks:
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module outputs since "
                "no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module."
                "html#torch.nn.Module.register_full_backward_hook for more details.", UserWarning, stacklevel=2)
            for hook in self.user_hooks:
                hook(self.module, (None,), self.grad_outputs)
        return grads

    def _input_hook(self, grads):
        grads = tuple(grads)
        for hook in self.user_hooks:
            r = hook(self.module, grads, self.grad_outputs)
            if r is not None:
                if len(r) != len(grads):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(r)}, but "
                                       f"expected {len(grads)}")
                grads = tuple(r)
        return grads
