"""``GradScaler``: scale the loss so that small float16 gradients do not flush to zero, then unscale.

In PyTorch: ``torch/amp/grad_scaler.py`` with the kernels ``_amp_foreach_non_finite_check_and_unscale_``
and ``_amp_update_scale_``.  Each iteration::

    scaler.scale(loss).backward()   # gradients come out multiplied by the scale
    scaler.step(optimizer)          # unscale them; step only if none is inf or NaN
    scaler.update()                 # halve the scale after an overflow, double it after
                                    # growth_interval clean steps

The scale starts at 2**16.  A skipped step leaves the parameters untouched, which is the point: an
overflow at a scale too high for float16 costs one step, not the weights.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from .. import _dtype
from .._tensor_base import TensorBase

__all__ = ["GradScaler", "OptState"]


class OptState:
    """Where an optimizer is in the current iteration (PyTorch's ``OptState`` enum)."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Dynamic loss scaling; ``enabled=False`` makes every method a pass-through."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            import warnings
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = float(init_scale)
            self._scale: Any = None            # a 0-d float32 tensor once ``scale`` was first called
            self._growth_factor = float(growth_factor)
            self._backoff_factor = float(backoff_factor)
            self._growth_interval = int(growth_interval)
            self._init_growth_tracker = 0
            self._growth_tracker = 0
            self._per_optimizer_states: dict[int, dict] = {}

    # -- scaling -----------------------------------------------------------------------------
    def _lazy_init_scale_growth_tracker(self) -> None:
        from .._creation import full
        self._scale = full((), self._init_scale, dtype=_dtype.float32)
        self._growth_tracker = self._init_growth_tracker

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or tensors nested in lists and tuples) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, TensorBase):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker()
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, Iterable):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _check_scale(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did "
                                 "not use scaler.scale(loss or outputs) earlier in the iteration.")

    # -- unscaling and stepping ------------------------------------------------------------
    def _unscale_grads_(self, optimizer: Any, inv_scale: np.float32, allow_fp16: bool) -> bool:
        """Multiply every gradient by ``inv_scale`` in place; whether any was inf or NaN."""
        from ..autograd.grad_mode import no_grad
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is _dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    a = g._np()
                    if not found and not np.isfinite(a).all():
                        found = True
                    g.mul_(float(inv_scale))
        return found

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale (once per iteration), so that
        they can be inspected or clipped before ``step``."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._per_optimizer_states.setdefault(id(optimizer), _refresh_per_optimizer_state())
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = np.float32(1.0 / np.float64(self._scale._np()))   # in double, then float, as PyTorch
        state["found_inf"] = self._unscale_grads_(optimizer, inv_scale, allow_fp16=False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless ``unscale_`` did) and call ``optimizer.step`` unless a gradient was inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        state = self._per_optimizer_states.setdefault(id(optimizer), _refresh_per_optimizer_state())
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert state["found_inf"] is not None, "No inf checks were recorded for this optimizer."
        retval = None
        if not state["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: Any = None) -> None:
        """Set the scale for the next iteration: ``new_scale``, or the dynamic rule."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                assert isinstance(new_scale, TensorBase), reason
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            scale = float(self._scale._np())
            if any(found_infs):           # PyTorch's _amp_update_scale_
                scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                successful = self._growth_tracker + 1
                if successful == self._growth_interval:
                    with np.errstate(over="ignore"):      # overflowing to inf is how growth is refused
                        grown = float(np.float32(scale * self._growth_factor))
                    if math.isfinite(grown):
                        scale = grown
                    self._growth_tracker = 0
                else:
                    self._growth_tracker = successful
            self._scale.fill_(float(np.float32(scale)))
        self._per_optimizer_states = {}

    # -- state -----------------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._scale is None else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, the three factors and ``_growth_tracker`` (empty when disabled), as PyTorch's."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._scale is not None:
            self._growth_tracker = self._init_growth_tracker
