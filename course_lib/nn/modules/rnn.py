"""Recurrent layers (``torch/nn/modules/rnn.py``): ``RNN``, ``LSTM``, ``GRU``.

Each is a composite of course_lib ops (one matmul of the whole input sequence with ``weight_ih`` per layer and
direction, then one small matmul with ``weight_hh`` per time step), so autograd comes from the ops.  The
parameters have PyTorch's names, shapes, gate order and init (U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))),
so a PyTorch state_dict loads and gives the same outputs:

- ``weight_ih_l{k}{_reverse}`` (gates * hidden_size, input size), ``weight_hh_l{k}`` (gates * hidden_size,
  hidden_size), ``bias_ih_l{k}``, ``bias_hh_l{k}``;
- gates: LSTM (input, forget, cell, output), GRU (reset, update, new), RNN one.
"""
from __future__ import annotations

import math
import warnings

from ... import _creation as C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# One time step of each cell, from the input part ``gx`` = W_ih x + b_ih (computed for all steps at once).
def _rnn_step(gx, h, w_hh, b_hh, relu: bool):
    pre = gx + F.linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def _lstm_step(gx, h, c, w_hh, b_hh):
    i, f, g, o = (gx + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _gru_step(gx, h, w_hh, b_hh):
    xr, xz, xn = gx.chunk(3, -1)
    hr, hz, hn = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = (xr + hr).sigmoid()
    z = (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return n + z * (h - n)


class RNNBase(Module):
    """The parameters, the layer/direction loop and the batch/sequence layout shared by RNN, LSTM and GRU."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        for name, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(value, int):
                raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size != 0:
            raise NotImplementedError("course_lib's LSTM has no proj_size")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        kw = dict(dtype=dtype, device=device)
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(gate_size, layer_input_size), (gate_size, hidden_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate_size,), (gate_size,)]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(C.empty(shape, **kw)))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self) -> list:
        return [[getattr(self, n) for n in self._flat_weights_names[i:i + (4 if self.bias else 2)]]
                for i in range(0, len(self._flat_weights_names), 4 if self.bias else 2)]

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------------
    def _cell(self, gx, h, c, w_hh, b_hh):
        """One time step from the precomputed input part ``gx`` (N, G); returns (h, c)."""
        raise NotImplementedError

    def _run(self, input, hx, cx):
        """input (L, N, H_in); hx/cx (layers * directions, N, H) -> output (L, N, D*H), h_n, c_n (or None)."""
        from ... import cat, stack
        num_directions = 2 if self.bidirectional else 1
        per = 4 if self.bias else 2
        h_n, c_n = [], []
        layer_input = input
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                idx = layer * num_directions + direction
                params = [getattr(self, n) for n in self._flat_weights_names[idx * per:(idx + 1) * per]]
                w_ih, w_hh = params[0], params[1]
                b_ih, b_hh = (params[2], params[3]) if self.bias else (None, None)
                gx = F.linear(layer_input, w_ih, b_ih)            # every time step's input part at once
                h = hx[idx]
                c = cx[idx] if cx is not None else None
                steps = range(gx.shape[0] - 1, -1, -1) if direction == 1 else range(gx.shape[0])
                seq = [None] * gx.shape[0]
                for t in steps:
                    h, c = self._cell(gx[t], h, c, w_hh, b_hh)
                    seq[t] = h
                outs.append(stack(seq) if seq else C.empty((0, *h.shape), dtype=h.dtype, device=h.device))
                h_n.append(h)
                c_n.append(c)
            layer_input = outs[0] if num_directions == 1 else cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, stack(h_n), (stack(c_n) if cx is not None else None)

    def _forward(self, input, hx, lstm: bool):
        from ... import Tensor
        if not isinstance(input, Tensor):
            raise NotImplementedError("course_lib's recurrent layers take a Tensor (no PackedSequence)")
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        N = input.shape[1]
        shape = (self.num_layers * (2 if self.bidirectional else 1), N, self.hidden_size)
        if hx is None:
            h0 = C.zeros(shape, dtype=input.dtype, device=input.device)
            c0 = C.zeros(shape, dtype=input.dtype, device=input.device) if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
            want = 3 if batched else 2
            kind = "batched 3-D" if batched else "unbatched 2-D"
            if lstm and (h0.dim() != want or c0.dim() != want):
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
            if not lstm and h0.dim() != want:
                raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {h0.dim()}-D tensor")
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            states = ((h0, "hidden[0] "), (c0, "hidden[1] ")) if lstm else ((h0, "hidden "),)
            for t, label in states:
                if tuple(t.shape) != shape:
                    raise RuntimeError(f"Expected {label}size {shape}, got {list(t.shape)}")
        out, h_n, c_n = self._run(input, h0, c0)
        if not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, ((h_n, c_n) if lstm else h_n)


class RNN(RNNBase):
    """h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) (or relu with ``nonlinearity='relu'``)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)

    def _cell(self, gx, h, c, w_hh, b_hh):
        return _rnn_step(gx, h, w_hh, b_hh, self.mode == "RNN_RELU"), None

    def forward(self, input, hx=None):
        return self._forward(input, hx, lstm=False)


class LSTM(RNNBase):
    """i, f, g, o = gates; c_t = f c_{t-1} + i g; h_t = o tanh(c_t).  ``forward`` returns (output, (h_n, c_n))."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)

    def _cell(self, gx, h, c, w_hh, b_hh):
        return _lstm_step(gx, h, c, w_hh, b_hh)

    def forward(self, input, hx=None):
        return self._forward(input, hx, lstm=True)


class GRU(RNNBase):
    """r, z from the gates; n = tanh(x_n + r (W_hn h + b_hn)); h_t = (1 - z) n + z h_{t-1}."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None,
                 dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)

    def _cell(self, gx, h, c, w_hh, b_hh):
        return _gru_step(gx, h, w_hh, b_hh), None

    def forward(self, input, hx=None):
        return self._forward(input, hx, lstm=False)


class RNNCellBase(Module):
    """One step of a recurrent layer: ``weight_ih`` (gates * hidden_size, input_size), ``weight_hh``,
    ``bias_ih``, ``bias_hh``, initialised U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) as in PyTorch."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kw = dict(dtype=dtype, device=device)
        self.weight_ih = Parameter(C.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(C.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(C.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(C.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hx, names: tuple):
        """Checks; the input and the state(s) with a batch dim; whether the input had one."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        states = () if hx is None else (hx if isinstance(hx, tuple) else (hx,))
        for label, value in zip(names, states):
            if value.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = C.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
            states = (zeros,) * len(names)
        elif not is_batched:
            states = tuple(t.unsqueeze(0) for t in states)
        return input, states, is_batched


class RNNCell(RNNCellBase):
    """h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, (h,), is_batched = self._batched(input, hx, ("hidden",))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h = _rnn_step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh,
                      self.nonlinearity == "relu")
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c))`` returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h, c), is_batched = self._batched(input, hx, ("hx[0]", "hx[1]"))
        h, c = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, (h,), is_batched = self._batched(input, hx, ("hidden",))
        h = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if is_batched else h.squeeze(0)
