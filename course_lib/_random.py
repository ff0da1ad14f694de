"""Random numbers: ``Generator``, the default generator, and the sampling functions.

In PyTorch: ``aten/src/ATen/CPUGeneratorImpl.cpp`` (the CPU generator, a
Mersenne Twister), ``torch/random.py`` (``manual_seed``, ``get_rng_state``) and
``aten/src/ATen/native/Distributions.cpp`` (``normal``, ``bernoulli``,
``multinomial``, the in-place ``uniform_`` / ``normal_`` / ``random_`` ...).

course_lib's generator is numpy's PCG64 bit generator.  It keeps PyTorch's
*contract*: the same seed gives the same numbers on every run, a generator's
state can be saved and restored exactly (``get_state``/``set_state``), and each
function accepts ``generator=``.  It does not give PyTorch's *numbers*:
``course_lib.manual_seed(0); course_lib.rand(3)`` and
``torch.manual_seed(0); torch.rand(3)`` draw from different streams.

Every function here is vectorised numpy: one call into the bit generator per
tensor, never a Python loop over elements.
"""
from __future__ import annotations

import builtins
import os
import warnings

import numpy as np

from . import _dtype
from ._creation import (
    _check_pin_memory,
    _check_requires_grad,
    _check_sizes,
    _empty_like_layout,
    _fmt_scalar,
    _parse_device,
    _parse_dtype,
    _parse_size,
    _tp_name,
    _with_out,
)
from ._device import device as _device_cls
from ._ops import common as _common
from ._ops.dispatcher import dispatch as _dispatch
from ._ops.out_arg import DEPRECATED_RESIZE, check_out, float_kernel_dtype, resize_output, write_out
from ._ops.registry import OPS as _OPS
from ._ops.registry import register as _register
from ._tensor import Tensor

__all__ = [
    "Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
    "set_rng_state", "rand", "randn", "randint", "randperm", "randint_like", "normal", "multinomial",
    "bernoulli", "poisson",
]

_DEFAULT_SEED = 67280421310721     # what a fresh torch.Generator() starts from
_STATE_SIZE = 48                   # bytes in get_state(): PCG64 state, increment, buffered word, seed


class Generator:
    """A source of random numbers with its own state (``torch.Generator``).

    >>> g = Generator().manual_seed(42)
    >>> a = rand(3, generator=g)
    >>> _ = g.manual_seed(42)
    >>> bool((rand(3, generator=g)._np() == a._np()).all())
    True

    Built on numpy's PCG64: same API and reproducibility as PyTorch's CPU
    generator, not the same streams of numbers.
    """

    def __init__(self, device="cpu"):
        self.device = _device_cls(device)
        self._reseed(_DEFAULT_SEED)

    def _reseed(self, seed: int) -> None:
        self._seed = seed
        self._bitgen = np.random.PCG64(seed)
        self._rng = np.random.Generator(self._bitgen)

    def manual_seed(self, seed) -> "Generator":
        """Reset the state from ``seed`` (an int; negative seeds wrap to 64 bits). Returns self."""
        if isinstance(seed, Tensor):
            seed = seed.item()
        if not isinstance(seed, (builtins.int, np.integer)) or isinstance(seed, builtins.bool):
            raise RuntimeError(f"manual_seed expected a long, but got {_tp_name(seed)}")
        seed = builtins.int(seed)
        if seed < -(2 ** 63) or seed >= 2 ** 64:
            raise ValueError("Overflow when unpacking long long")
        self._reseed(seed & (2 ** 64 - 1))
        return self

    def seed(self) -> int:
        """Seed from the operating system's randomness; returns the seed used."""
        s = int.from_bytes(os.urandom(8), "little")
        self._reseed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The full state as a uint8 tensor; ``set_state`` restores it exactly."""
        st = self._bitgen.state
        raw = (st["state"]["state"].to_bytes(16, "little") + st["state"]["inc"].to_bytes(16, "little")
               + builtins.int(st["has_uint32"]).to_bytes(4, "little")
               + builtins.int(st["uinteger"]).to_bytes(4, "little") + self._seed.to_bytes(8, "little"))
        return _common.wrap(np.frombuffer(raw, dtype=np.uint8).copy(), _dtype.uint8)

    def set_state(self, new_state) -> "Generator":
        """Restore a state from ``get_state()`` (a uint8 tensor, or its bytes)."""
        T = Tensor
        if isinstance(new_state, T):
            if new_state.dtype is not _dtype.uint8:
                raise TypeError("RNG state must be a torch.ByteTensor")
            raw = np.ascontiguousarray(new_state._np()).tobytes()
        elif isinstance(new_state, (bytes, bytearray, memoryview)):
            raw = bytes(new_state)
        else:
            raise TypeError(f"expected a torch.ByteTensor, but got {_tp_name(new_state)}")
        if len(raw) != _STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but found the "
                               f"input RNG state size to be {len(raw)}")
        seed = int.from_bytes(raw[40:48], "little")
        self._reseed(seed)
        self._bitgen.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(raw[0:16], "little"), "inc": int.from_bytes(raw[16:32], "little")},
            "has_uint32": int.from_bytes(raw[32:36], "little"),
            "uinteger": int.from_bytes(raw[36:40], "little"),
        }
        return self

    def __reduce__(self):
        return (_rebuild_generator, (str(self.device), self.get_state()._np().tobytes()))

    def __repr__(self) -> str:
        return f"<course_lib.Generator object at {hex(id(self))}>"


def _rebuild_generator(device, raw):
    return Generator(device).set_state(raw)


default_generator = Generator()
default_generator.seed()             # like PyTorch: the default generator starts from a random seed


def manual_seed(seed) -> Generator:
    """Seed the default generator (``torch.manual_seed``); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from OS randomness; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state (a uint8 tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state."""
    default_generator.set_state(new_state)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _rng(generator) -> np.random.Generator:
    return (generator if generator is not None else default_generator)._rng


def _not_implemented(kernel: str, dtype: _dtype.dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype._tensor_name}'")


def _float_dtype(dtype, kernel: str) -> _dtype.dtype:
    d = dtype or _dtype.get_default_dtype()
    if not d.is_floating_point:
        raise _not_implemented(kernel, d)
    return d


def _uniform01(rng, shape, dtype: _dtype.dtype) -> np.ndarray:
    """Uniform [0, 1) numbers of ``dtype`` (float16 drawn in float32, kept below 1)."""
    if dtype is _dtype.float16:
        x = rng.random(shape, dtype=np.float32).astype(np.float16)
        return np.minimum(x, np.float16(0.99951171875))
    return rng.random(shape, dtype=dtype.np.type)


def _std_normal(rng, shape, dtype: _dtype.dtype) -> np.ndarray:
    if dtype is _dtype.float16:
        return rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
    return rng.standard_normal(shape, dtype=dtype.np.type)


def _result(arr, shape, dtype, device):
    if device == "meta":
        return _common.empty_meta(shape, dtype)
    return _common.wrap(arr, dtype)


# ---------------------------------------------------------------------------
# sampling functions: each is an op of kind "random" (the Python function parses the arguments,
# dispatches, then applies requires_grad and out=; see _creation.py's factories)
# ---------------------------------------------------------------------------
def _rand_kernel(size, generator=None, dtype=None, device=None):
    """The ``rand`` op."""
    shape = tuple(size)
    _check_sizes(shape)
    dtype = _float_dtype(dtype, "check_uniform_bounds")
    arr = None if device == "meta" else _uniform01(_rng(generator), shape, dtype)
    return _result(arr, shape, dtype, device)


def _randn_kernel(size, generator=None, dtype=None, device=None):
    """The ``randn`` op."""
    shape = tuple(size)
    _check_sizes(shape)
    dtype = _float_dtype(dtype, "normal_kernel_cpu")
    arr = None if device == "meta" else _std_normal(_rng(generator), shape, dtype)
    return _result(arr, shape, dtype, device)


def _call(fname: str, args: tuple, dtype, device, requires_grad: bool, out, pin_memory: bool):
    """Dispatch the op ``fname`` on ``args`` + (dtype, device), or write it into ``out``."""
    _check_pin_memory(pin_memory)
    op = _OPS[fname]
    dtype, dev = _parse_dtype(dtype, fname), _parse_device(device)
    if out is not None:
        return _with_out(out, fname, op, args, dtype, dev, requires_grad)
    return _check_requires_grad(_dispatch(op, args + (dtype, dev)), requires_grad)


def rand(*size, generator: Generator | None = None, out=None, dtype=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False):
    """Uniform random numbers in [0, 1): ``rand(2, 3)`` or ``rand((2, 3))``."""
    return _call("rand", (_parse_size(size, "rand"), generator), dtype, device, requires_grad, out, pin_memory)


def randn(*size, generator: Generator | None = None, out=None, dtype=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False):
    """Standard normal random numbers (mean 0, variance 1)."""
    return _call("randn", (_parse_size(size, "randn"), generator), dtype, device, requires_grad, out, pin_memory)


# Each floating dtype's range of exactly representable integers (its significand's bits).
_DIGITS = {"float32": 24, "float64": 53, "float16": 11}


def _int_range(dtype: _dtype.dtype) -> tuple:
    if dtype is _dtype.bool_:
        return 0, 1
    info = np.iinfo(dtype.np)
    return builtins.int(info.min), builtins.int(info.max)


def _check_from_to(frm: int, to: int, dtype: _dtype.dtype) -> None:
    """``random_from_to``'s checks (``aten/src/ATen/native/DistributionTemplates.h``)."""
    if frm >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
    name = _dtype.c_type_name(dtype, "demangled")
    if dtype.is_floating_point:
        fmax = builtins.float(np.finfo(dtype.np).max)  # only float16's is inside int64's range
        for what, v in (("from", frm), ("to - 1", to - 1)):
            if v < -fmax or v > fmax:
                raise RuntimeError(f"{what} is out of bounds for {name}")
        d = _DIGITS[dtype.name]
        lim = 2 ** d
        for what, v in (("from", frm), ("to - 1", to - 1)):
            if v < -lim or v > lim:
                warnings.warn(
                    f"{what} is out of bounds [-(2^{d}), 2^{d}]. Due to precision limitations {name} can "
                    f"support discrete uniform distribution only within this range. This warning will "
                    f"become an error in version 1.7 release, please fix the code in advance",
                    UserWarning, stacklevel=3)
        return
    lo, hi = _int_range(dtype)
    if frm < lo or frm > hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if to - 1 < lo or to - 1 > hi:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")


def _randint_array(rng, low: int, high: int, shape, dtype: _dtype.dtype) -> np.ndarray:
    """Integers in [low, high) as ``dtype`` (drawn in int64; the range fits by the checks)."""
    if high - 1 > 2 ** 63 - 1 or low < -(2 ** 63):
        raise RuntimeError(f"to - 1 is out of bounds for {_dtype.c_type_name(dtype, 'demangled')}")
    return rng.integers(low, high, size=shape, dtype=np.int64).astype(dtype.np)


def _as_int_arg(v, name: str, pos: int, fname: str) -> int:
    if isinstance(v, Tensor):
        v = v.item()
    if isinstance(v, (builtins.float, np.floating)) or not isinstance(v, (builtins.int, np.integer)):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be int, not {_tp_name(v)}")
    return builtins.int(v)


def randint(*args, size=None, low=None, high=None, generator: Generator | None = None, out=None, dtype=None,
            device=None, requires_grad: bool = False, pin_memory: bool = False):
    """Random integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``.

    int64 unless ``dtype`` says otherwise.

    >>> randint(10, (2, 3)).shape
    course_lib.Size([2, 3])
    """
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if size is None and len(args) == 2 and high is None:
        raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not "
                        f"{_tp_name(args[1])}")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError("randint() received an invalid combination of arguments")
    if high is None or size is None:
        raise TypeError("randint() received an invalid combination of arguments - expected "
                        "(int high, tuple of ints size) or (int low, int high, tuple of ints size)")
    pos_high = 2 if len(args) == 2 else 1
    low = 0 if low is None else _as_int_arg(low, "low", 1, "randint")
    high = _as_int_arg(high, "high", pos_high, "randint")
    shape = _parse_size((size,), "randint")
    return _call("randint", (low, high, shape, generator), dtype, device, requires_grad, out, pin_memory)


def _randint_kernel(low, high, size, generator=None, dtype=None, device=None):
    """The ``randint`` op (``randint(high, size)`` arrives as ``randint(0, high, size)``)."""
    shape = tuple(size)
    _check_sizes(shape)
    dtype = dtype or _dtype.int64
    _check_from_to(low, high, dtype)
    arr = None if device == "meta" else _randint_array(_rng(generator), low, high, shape, dtype)
    return _result(arr, shape, dtype, device)


def randperm(n: int, *, generator: Generator | None = None, out=None, dtype=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False):
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` says otherwise)."""
    n = _as_int_arg(n, "n", 1, "randperm")
    return _call("randperm", (n, generator), dtype, device, requires_grad, out, pin_memory)


def _randperm_kernel(n, generator=None, dtype=None, device=None):
    """The ``randperm`` op."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = dtype or _dtype.int64
    if dtype is _dtype.bool_:
        raise _not_implemented("randperm", dtype)
    if not dtype.is_floating_point and n > 0 and n - 1 > _int_range(dtype)[1]:
        raise RuntimeError(f"value cannot be converted to type {_dtype.c_type_name(dtype, 'checked')} without overflow")
    arr = None if device == "meta" else _rng(generator).permutation(n).astype(dtype.np)
    return _result(arr, (n,), dtype, device)


def _like_call(fname: str, input, args: tuple, generator, dtype, device, requires_grad: bool, memory_format,
               pin_memory: bool):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {_tp_name(input)}")
    _check_pin_memory(pin_memory)
    r = _dispatch(_OPS[fname], (input,) + args + (generator, _parse_dtype(dtype, fname), _parse_device(device),
                                                  memory_format))
    return _check_requires_grad(r, requires_grad)


def _like_result(self, dtype, device, memory_format, fname):
    return _empty_like_layout(self, dtype or self.dtype, device or self._storage.device, memory_format, fname)


def _rand_like_kernel(self, generator=None, dtype=None, device=None, memory_format=None):
    """The ``rand_like`` op."""
    r = _like_result(self, dtype, device, memory_format, "rand_like")
    if not r.dtype.is_floating_point:
        raise _not_implemented("check_uniform_bounds", r.dtype)
    if r._storage.data is not None:
        r._np()[...] = _uniform01(_rng(generator), r._shape, r.dtype)
    return r


def _randn_like_kernel(self, generator=None, dtype=None, device=None, memory_format=None):
    """The ``randn_like`` op."""
    r = _like_result(self, dtype, device, memory_format, "randn_like")
    if not r.dtype.is_floating_point:
        raise _not_implemented("normal_kernel_cpu", r.dtype)
    if r._storage.data is not None:
        r._np()[...] = _std_normal(_rng(generator), r._shape, r.dtype)
    return r


def _randint_like_kernel(self, low, high, generator=None, dtype=None, device=None, memory_format=None):
    """The ``randint_like`` op."""
    r = _like_result(self, dtype, device, memory_format, "randint_like")
    _check_from_to(low, high, r.dtype)
    if r._storage.data is not None:
        r._np()[...] = _randint_array(_rng(generator), low, high, r._shape, r.dtype)
    return r


def rand_like(input, *, generator: Generator | None = None, dtype=None, device=None,
              requires_grad: bool = False, memory_format=None, pin_memory: bool = False):
    """``rand`` with ``input``'s shape, dtype and device."""
    return _like_call("rand_like", input, (), generator, dtype, device, requires_grad, memory_format, pin_memory)


def randn_like(input, *, generator: Generator | None = None, dtype=None, device=None,
               requires_grad: bool = False, memory_format=None, pin_memory: bool = False):
    """``randn`` with ``input``'s shape, dtype and device."""
    return _like_call("randn_like", input, (), generator, dtype, device, requires_grad, memory_format, pin_memory)


def randint_like(input, low=0, high=None, *, generator: Generator | None = None, dtype=None,
                 device=None, requires_grad: bool = False, memory_format=None, pin_memory: bool = False):
    """``randint`` with ``input``'s shape, dtype and device: ``randint_like(x, high)`` or
    ``randint_like(x, low, high)``."""
    if high is None:
        low, high = 0, low
    low = _as_int_arg(low, "low", 2, "randint_like")
    high = _as_int_arg(high, "high", 3, "randint_like")
    return _like_call("randint_like", input, (low, high), generator, dtype, device, requires_grad, memory_format,
                      pin_memory)


def _check_std(std) -> None:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt_scalar(std)}")


_NORMAL_SIGNATURES = (
    " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
    " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, Tensor out = None, "
    "torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, bool pin_memory = False, "
    "bool requires_grad = False)\n")


def _arg_type(v) -> str:
    if isinstance(v, Tensor):
        return "Tensor"
    return _tp_name(v)


def normal(mean, std=1.0, size=None, *, generator: Generator | None = None, out=None, dtype=None, device=None,
           requires_grad: bool = False, pin_memory: bool = False):
    """Normal random numbers: ``normal(mean, std, size)`` for numbers, or element-wise
    means and/or standard deviations given as tensors (broadcast together).

    ``size``, ``dtype``, ``device``, ``requires_grad`` and ``pin_memory`` belong to the numbers form only,
    as in PyTorch (its other forms take their dtype from the tensors)."""
    T = Tensor
    mt, stt = isinstance(mean, T), isinstance(std, T)
    op = _OPS["normal"]
    if not mt and not stt:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float), "
                            "but expected one of: (Tensor mean, Tensor std), (Tensor mean, float std), "
                            "(float mean, Tensor std), (float mean, float std, tuple of ints size)")
        _check_pin_memory(pin_memory)
        shape = _parse_size((size,), "normal")
        dtype, dev = _parse_dtype(dtype, "normal"), _parse_device(device)
        if out is not None:
            return _with_out(out, "normal", op, (mean, std, shape, generator), dtype, dev, requires_grad,
                             autograd_name="aten::normal")
        return _check_requires_grad(_dispatch(op, (mean, std, shape, generator, dtype, dev)), requires_grad)
    extra = [k for k, v in (("dtype", dtype), ("device", device), ("requires_grad", requires_grad),
                            ("pin_memory", pin_memory)) if v is not None and v is not False]
    if size is not None or extra:
        got = [_arg_type(mean), _arg_type(std)] + ([_arg_type(size)] if size is not None else [])
        got += [f"{k}={_arg_type(v) if k != 'dtype' else 'torch.dtype'}" for k, v in
                (("dtype", dtype), ("device", device), ("requires_grad", requires_grad),
                 ("pin_memory", pin_memory)) if k in extra]
        raise TypeError(f"normal() received an invalid combination of arguments - got ({', '.join(got)}), "
                        f"but expected one of:\n{_NORMAL_SIGNATURES}")
    if out is None:
        return _dispatch(op, (mean, std, None, generator, None, None))
    check_out(out, "normal", "normal", (mean, std))
    dtype = float_kernel_dtype(out, "normal_kernel_cpu")
    shape = _common.broadcast_shapes(*(x._shape for x in (mean, std) if isinstance(x, T)), out._shape) \
        if not stt else _common.broadcast_shapes(*(x._shape for x in (mean, std) if isinstance(x, T)))
    resize_output(out, shape, DEPRECATED_RESIZE)
    if mt and not stt and mean._shape != shape:
        mean = mean.expand(shape)     # normal(Tensor mean, float std, out=): out's shape broadcast with mean's
    return write_out(out, _dispatch(op, (mean, std, None, generator, dtype, None)))


def _normal_kernel(mean, std=1.0, size=None, generator=None, dtype=None, device=None):
    """The ``normal`` op: ``mean`` and ``std`` are numbers (then ``size`` is the shape) or tensors.

    ``dtype`` is the result's dtype (numbers: default float dtype; tensors: their promoted dtype)."""
    T = Tensor
    mt, stt = isinstance(mean, T), isinstance(std, T)
    rng = _rng(generator)
    if not mt and not stt:
        _check_std(std)
        shape = tuple(size)
        _check_sizes(shape)
        dtype = _float_dtype(dtype, "normal_kernel_cpu")
        arr = None
        if device != "meta":
            arr = _std_normal(rng, shape, dtype)
            arr *= arr.dtype.type(std)
            arr += arr.dtype.type(mean)
        return _result(arr, shape, dtype, device)
    tensors = [x for x in (mean, std) if isinstance(x, T)]
    for x in tensors:
        if not x.dtype.is_floating_point:
            raise _not_implemented("normal_kernel_cpu", x.dtype)
    out_dtype = dtype or (tensors[0].dtype if len(tensors) == 1 else _dtype.promote_types(mean.dtype, std.dtype))
    shape = _common.broadcast_shapes(*(x._shape for x in tensors))
    if stt:
        if std.is_meta is False and std.numel() and (std._np() < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    else:
        _check_std(std)
    if any(x.is_meta for x in tensors):
        return _common.empty_meta(shape, out_dtype)
    m = mean._np() if mt else mean
    s = std._np() if stt else std
    z = _std_normal(rng, shape, out_dtype)
    with np.errstate(all="ignore"):
        arr = (z * s + m).astype(out_dtype.np)
    return _common.wrap(arr, out_dtype)


def multinomial(input, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None, out=None):
    """Sample category indices from the weights in each row of ``input`` (1-D or 2-D).

    Weights need not sum to one.  Without replacement each row gives distinct
    indices (categories of weight 0 come last, only once the others are used up).
    Used by ``WeightedRandomSampler``.

    >>> import course_lib as cl
    >>> cl.multinomial(cl.tensor([0., 1., 0.]), 2, replacement=True).tolist()
    [1, 1]
    """
    T = Tensor
    if not isinstance(input, T):
        raise TypeError(f"multinomial(): argument 'input' (position 1) must be Tensor, not {_tp_name(input)}")
    num_samples = _as_int_arg(num_samples, "num_samples", 2, "multinomial")
    op = _OPS["multinomial"]
    if out is None:
        return _dispatch(op, (input, num_samples, replacement, generator))
    check_out(out, "multinomial", "multinomial")
    if out.dtype is not _dtype.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {out.dtype._tensor_name}")
    return write_out(out, _dispatch(op, (input, num_samples, replacement, generator)))


def _multinomial_kernel(input, num_samples, replacement=False, generator=None):
    """The ``multinomial`` op."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype._tensor_name}")
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n_cat = input._shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    out_shape = input._shape[:-1] + (num_samples,)
    if input.is_meta:
        return _common.empty_meta(out_shape, _dtype.int64)
    w = np.asarray(input._np(), dtype=np.float64).reshape(-1, n_cat)
    if not np.isfinite(w).all() or (w < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = w.sum(axis=1)
    if (total <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _rng(generator)
    rows = w.shape[0]
    if replacement:
        # Inverse CDF, all rows in one searchsorted: row r's CDF lives in [2r, 2r + 1].
        cdf = np.cumsum(w, axis=1)
        cdf /= cdf[:, -1:]
        offs = 2.0 * np.arange(rows)[:, None]
        u = rng.random((rows, num_samples)) + offs
        idx = np.searchsorted((cdf + offs).ravel(), u.ravel(), side="right").reshape(rows, num_samples)
        idx -= n_cat * np.arange(rows)[:, None]
        last_pos = n_cat - 1 - np.argmax((w > 0)[:, ::-1], axis=1)
        idx = np.minimum(idx, last_pos[:, None])
    else:
        # Exponential race: the k smallest E/w (E ~ Exp(1)) are a weighted sample without replacement.
        e = rng.exponential(size=w.shape)
        with np.errstate(divide="ignore"):
            keys = np.where(w > 0, e / w, np.inf)
        idx = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    return _common.wrap(idx.astype(np.int64).reshape(out_shape), _dtype.int64)


_BERNOULLI_P_MSG = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                    "message be improved?  If so, please report an enhancement request to PyTorch.)")


def _check_p(p) -> None:
    if not (0 <= p <= 1):
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_fmt_scalar(p)}")


def bernoulli(input, p=None, *, generator: Generator | None = None, out=None):
    """0/1 draws: each element is 1 with probability ``input[i]`` (or ``p`` for all).
    The result has ``input``'s dtype."""
    op = _OPS["bernoulli"]
    if out is None:
        return _dispatch(op, (input, p, generator))
    if p is not None:
        raise TypeError(
            f"bernoulli() received an invalid combination of arguments - got ({_arg_type(input)}, {_arg_type(p)}, "
            f"out=Tensor), but expected one of:\n"
            f" * (Tensor input, *, torch.Generator generator = None, Tensor out = None)\n"
            f" * (Tensor input, float p, *, torch.Generator generator = None)\n")
    check_out(out, "bernoulli", "bernoulli", (input,))
    return write_out(out, _dispatch(op, (input, None, generator)))


def _bernoulli_kernel(input, p=None, generator=None):
    """The ``bernoulli`` op."""
    if p is None:
        if not input.dtype.is_floating_point:
            raise _not_implemented("bernoulli_tensor_cpu_p_", input.dtype)
        if input.is_meta:
            return _common.empty_meta(input._shape, input.dtype)
        probs = input._np()
        if probs.size and not ((probs >= 0) & (probs <= 1)).all():
            raise RuntimeError(_BERNOULLI_P_MSG)
        u = _rng(generator).random(input._shape)
        return _common.wrap((u < probs).astype(input.dtype.np), input.dtype)
    r = _empty_like_layout(input, input.dtype, input.device.type)
    return _bernoulli__kernel(r, p, generator)


def poisson(input, generator: Generator | None = None):
    """Poisson draws with rates ``input`` (a float tensor); result has ``input``'s dtype."""
    return _dispatch(_OPS["poisson"], (input, generator))


def _poisson_kernel(input, generator=None):
    """The ``poisson`` op."""
    if not input.dtype.is_floating_point:
        raise _not_implemented("poisson_cpu", input.dtype)
    if input.is_meta:
        return _common.empty_meta(input._shape, input.dtype)
    lam = input._np()
    if lam.size and not (lam >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _common.wrap(_rng(generator).poisson(lam).astype(input.dtype.np), input.dtype)


# ---------------------------------------------------------------------------
# in-place fills: Tensor.uniform_, Tensor.normal_, ... (course_lib/_tensor.py)
# ---------------------------------------------------------------------------
def _write(t, values) -> "object":
    """Write ``values`` through ``t``'s numpy view (shared storage) and bump the version."""
    with np.errstate(all="ignore"):
        t._np()[...] = values
    t._bump_version()
    return t


def _uniform__kernel(self, from_: float = 0.0, to: float = 1.0, generator=None):
    """Fill with uniform random numbers in [from, to)."""
    if not self.dtype.is_floating_point:
        raise _not_implemented("check_uniform_bounds", self.dtype)
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_fmt_scalar(from_)} > to={_fmt_scalar(to)}")
    fmax = builtins.float(np.finfo(self.dtype.np).max)
    for name, v in (("from", from_), ("to", to)):
        if not (-fmax <= v <= fmax):
            raise RuntimeError(f"{name} is out of bounds for {_dtype.c_type_name(self.dtype, 'demangled')}")
    if to - from_ > fmax:
        raise RuntimeError("uniform_ expects to-from <= "
                           f"std::numeric_limits<{self.dtype._tensor_name}>::max(), but found "
                           f"to={_fmt_scalar(to)} and from={_fmt_scalar(from_)} which "
                           f"result in to-from to exceed the limit")
    if self._storage.data is None:
        return self
    u = _uniform01(_rng(generator), self._shape, self.dtype)
    return _write(self, u * u.dtype.type(to - from_) + u.dtype.type(from_))


def _normal__kernel(self, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with normal random numbers."""
    if not self.dtype.is_floating_point:
        raise _not_implemented("normal_kernel_cpu", self.dtype)
    _check_std(std)
    if self._storage.data is None:
        return self
    z = _std_normal(_rng(generator), self._shape, self.dtype)
    return _write(self, z * z.dtype.type(std) + z.dtype.type(mean))


def _random__kernel(self, from_=None, to=None, generator=None):
    """The ``random_`` op: ``(None, None)`` draws from [0, the largest integer the dtype holds exactly],
    ``(None, to)`` from [0, to), ``(from, to)`` from [from, to) and ``(from, None)`` from [from, that largest
    integer] (PyTorch's ``random_``, ``random_.to`` and ``random_.from``)."""
    dtype = self.dtype
    if to is None:
        if dtype.is_floating_point:
            lo, hi = 0, 2 ** _DIGITS[dtype.name]
        else:
            lo, hi = 0, _int_range(dtype)[1]
        if from_ is not None:
            lo = builtins.int(from_)
            _check_from_to(lo, hi + 1, dtype)
        if self._storage.data is None:
            return self
        return _write(self, _rng(generator).integers(lo, hi, size=self._shape, endpoint=True))
    from_ = 0 if from_ is None else builtins.int(from_)
    to = builtins.int(to)
    _check_from_to(from_, to, dtype)
    if self._storage.data is None:
        return self
    return _write(self, _randint_array(_rng(generator), from_, to, self._shape, _dtype.int64))


def _bernoulli__kernel(self, p=0.5, generator=None):
    """Fill with 0/1 draws that are 1 with probability ``p`` (a number or a tensor)."""
    T = Tensor
    if isinstance(p, T):
        probs = p._np() if not p.is_meta else None
        if probs is not None and probs.size and not ((probs >= 0) & (probs <= 1)).all():
            raise RuntimeError(_BERNOULLI_P_MSG)
    else:
        _check_p(p)
        probs = p
    if self._storage.data is None:
        return self
    u = _rng(generator).random(self._shape)
    return _write(self, u < probs)


def _exponential__kernel(self, lambd: float = 1.0, generator=None):
    """Fill with exponential random numbers of rate ``lambd``."""
    if not self.dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must "
                           f"be a floating point but you specified {self.dtype._tensor_name}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt_scalar(lambd)}")
    if self._storage.data is None:
        return self
    return _write(self, _rng(generator).exponential(1.0 / lambd, size=self._shape))


def _geometric__kernel(self, p: float, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if not (0 < p < 1):
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt_scalar(p)}")
    if self._storage.data is None:
        return self
    return _write(self, _rng(generator).geometric(p, size=self._shape))


def _log_normal__kernel(self, mean: float = 1.0, std: float = 2.0, generator=None):
    """Fill with ``exp`` of normal(mean, std) numbers."""
    if not self.dtype.is_floating_point:
        raise _not_implemented("log_normal_cpu", self.dtype)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt_scalar(std)}")
    if self._storage.data is None:
        return self
    return _write(self, _rng(generator).lognormal(mean, std, size=self._shape))


def _cauchy__kernel(self, median: float = 0.0, sigma: float = 1.0, generator=None):
    """Fill with Cauchy random numbers."""
    if not self.dtype.is_floating_point:
        raise _not_implemented("cauchy_cpu", self.dtype)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt_scalar(sigma)}")
    if self._storage.data is None:
        return self
    return _write(self, median + sigma * _rng(generator).standard_cauchy(size=self._shape))


# The Tensor methods (course_lib/_tensor.py) call these, which go through the dispatcher.
def _uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator: Generator | None = None):
    """Fill with uniform random numbers in [from, to)."""
    return _dispatch(_OPS["uniform_"], (self, from_, to, generator))


def _normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None):
    """Fill with normal random numbers."""
    return _dispatch(_OPS["normal_"], (self, mean, std, generator))


def _random_(self, from_=None, to=None, *, generator: Generator | None = None):
    """Fill with random integers: ``random_(to)``, ``random_(from, to)`` or ``random_()``."""
    if to is None and from_ is not None:
        from_, to = None, from_
    return _dispatch(_OPS["random_"], (self, from_, to, generator))


def _bernoulli_(self, p=0.5, *, generator: Generator | None = None):
    """Fill with 0/1 draws that are 1 with probability ``p`` (a number or a tensor)."""
    return _dispatch(_OPS["bernoulli_"], (self, p, generator))


def _exponential_(self, lambd: float = 1.0, *, generator: Generator | None = None):
    """Fill with exponential random numbers of rate ``lambd``."""
    return _dispatch(_OPS["exponential_"], (self, lambd, generator))


def _geometric_(self, p: float, *, generator: Generator | None = None):
    """Fill with the number of Bernoulli(p) trials up to the first success."""
    return _dispatch(_OPS["geometric_"], (self, p, generator))


def _log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None):
    """Fill with ``exp`` of normal(mean, std) numbers."""
    return _dispatch(_OPS["log_normal_"], (self, mean, std, generator))


def _cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None):
    """Fill with Cauchy random numbers."""
    return _dispatch(_OPS["cauchy_"], (self, median, sigma, generator))


# ---------------------------------------------------------------------------
# the registry entries (kind "random"); the Python functions above and the Tensor methods are written
# by hand, and each kernel reads its device argument or its input's device, so it is its meta kernel too
# ---------------------------------------------------------------------------
_OPTIONS = "ScalarType? dtype=None, Device? device=None"
_LIKE = f"Generator? generator=None, {_OPTIONS}, MemoryFormat? memory_format=None"
for _schema, _kernel, _variants in (
        (f"rand(SymInt[] size, *, Generator? generator=None, {_OPTIONS}) -> Tensor", _rand_kernel, ("function",)),
        (f"randn(SymInt[] size, *, Generator? generator=None, {_OPTIONS}) -> Tensor", _randn_kernel, ("function",)),
        (f"randint(SymInt low, SymInt high, SymInt[] size, *, Generator? generator=None, {_OPTIONS}) -> Tensor",
         _randint_kernel, ("function",)),
        (f"randperm(SymInt n, *, Generator? generator=None, {_OPTIONS}) -> Tensor", _randperm_kernel, ("function",)),
        (f"rand_like(Tensor self, *, {_LIKE}) -> Tensor", _rand_like_kernel, ("function",)),
        (f"randn_like(Tensor self, *, {_LIKE}) -> Tensor", _randn_like_kernel, ("function",)),
        (f"randint_like(Tensor self, SymInt low, SymInt high, *, {_LIKE}) -> Tensor", _randint_like_kernel,
         ("function",)),
        # mean and std are each a tensor or a number (PyTorch's four overloads in one op)
        (f"normal(Tensor mean, Tensor std=1, SymInt[]? size=None, *, Generator? generator=None, {_OPTIONS}) -> Tensor",
         _normal_kernel, ("function",)),
        ("multinomial(Tensor self, int num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor",
         _multinomial_kernel, ("function",)),
        ("bernoulli(Tensor self, float? p=None, *, Generator? generator=None) -> Tensor", _bernoulli_kernel,
         ("function",)),
        ("poisson(Tensor self, Generator? generator=None) -> Tensor", _poisson_kernel, ("function",))):
    _register(_schema, variants=_variants, kind="random", manual_binding=True)(_kernel)

for _schema, _kernel in (
        ("uniform_(Tensor(a!) self, float from=0, float to=1, *, Generator? generator=None) -> Tensor(a!)",
         _uniform__kernel),
        ("normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? generator=None) -> Tensor(a!)",
         _normal__kernel),
        ("random_(Tensor(a!) self, int? from=None, int? to=None, *, Generator? generator=None) -> Tensor(a!)",
         _random__kernel),
        # p is a tensor or a number (PyTorch's bernoulli_.Tensor and bernoulli_.float)
        ("bernoulli_(Tensor(a!) self, Tensor p=0.5, *, Generator? generator=None) -> Tensor(a!)", _bernoulli__kernel),
        ("exponential_(Tensor(a!) self, float lambd=1, *, Generator? generator=None) -> Tensor(a!)",
         _exponential__kernel),
        ("geometric_(Tensor(a!) self, float p, *, Generator? generator=None) -> Tensor(a!)", _geometric__kernel),
        ("log_normal_(Tensor(a!) self, float mean=1, float std=2, *, Generator? generator=None) -> Tensor(a!)",
         _log_normal__kernel),
        ("cauchy_(Tensor(a!) self, float median=0, float sigma=1, *, Generator? generator=None) -> Tensor(a!)",
         _cauchy__kernel)):
    _register(_schema, variants=("method",), kind="random", is_inplace=True, manual_binding=True)(_kernel)
