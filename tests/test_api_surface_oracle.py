"""Oracle tests for the everyday API surface (issue 18): the names tutorials use beside the ops.

dtype information, the tensor predicates, cuda/backends of a CPU build, the nn modules composed of existing
ops (loaded from a torch state_dict, outputs and gradients compared), nn.utils, the optimizers and
schedulers (trajectories and lr sequences), and autograd.functional, each against torch 2.13.0.
"""
from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import course_lib as cl


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def close(a, b, rtol=1e-7, atol=1e-9):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def outcome(fn):
    """What a call did: ('ok', value) or (exception type name, message with 'course_lib' spelt 'torch')."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001  (the type and message are what is compared)
        return (type(e).__name__, str(e).replace("course_lib", "torch"))


# ---------------------------------------------------------------------------
# dtype information, predicates, cuda and backends
# ---------------------------------------------------------------------------
def test_finfo_iinfo_promote_can_cast(torch):
    names = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]
    for n in names:
        dc, dt = getattr(cl, n), getattr(torch, n)
        for info in ("finfo", "iinfo"):
            got = outcome(lambda: repr(getattr(cl, info)(dc)))
            want = outcome(lambda: repr(getattr(torch, info)(dt)))
            assert got == want, (n, info)
        if dc.is_floating_point:
            fc, ft = cl.finfo(dc), torch.finfo(dt)
            assert [getattr(fc, k) for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                                            "dtype")] == \
                   [getattr(ft, k) for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                                            "dtype")]
        for m in names:
            assert cl.can_cast(dc, getattr(cl, m)) == torch.can_cast(dt, getattr(torch, m)), (n, m)
            assert cl.promote_types(dc, getattr(cl, m)).name == str(torch.promote_types(dt, getattr(torch, m)))[6:]
    assert repr(cl.finfo()) == repr(torch.finfo())
    for fn in ("finfo", "iinfo", "promote_types", "can_cast"):
        args = (3,) if fn in ("finfo", "iinfo") else (1, "float32")
        assert outcome(lambda: getattr(cl, fn)(*args)) == outcome(lambda: getattr(torch, fn)(*args)), fn


def test_tensor_predicates_and_comparisons(torch):
    def cases(m):
        nan = float("nan")
        return [
            lambda: m.is_tensor(m.ones(1)), lambda: m.is_tensor(m.nn.Parameter(m.ones(1))), lambda: m.is_tensor([1]),
            lambda: m.is_floating_point(m.ones(1)), lambda: m.is_floating_point(m.ones(1, dtype=m.int64)),
            lambda: m.is_floating_point(3), lambda: m.numel(m.ones(2, 3)), lambda: m.numel([1]),
            lambda: m.equal(m.ones(2), m.ones(2)), lambda: m.equal(m.ones(2), m.ones(2, dtype=m.int64)),
            lambda: m.equal(m.ones(2), m.ones(3)), lambda: m.equal(m.ones(2, 1), m.ones(1, 2)),
            lambda: m.equal(m.tensor([nan]), m.tensor([nan])), lambda: m.equal(m.ones(2), 3),
            lambda: m.allclose(m.ones(2), m.ones(2) + 1e-6), lambda: m.allclose(m.ones(2), m.ones(2) + 1e-3),
            lambda: m.allclose(m.ones(2), m.ones(1)), lambda: m.allclose(m.ones(2), m.ones(3)),
            lambda: m.allclose(m.ones(2), m.ones(2, dtype=m.float64)), lambda: m.allclose(m.ones(2), 1.0),
            lambda: m.allclose(m.tensor([nan]), m.tensor([nan])),
            lambda: m.allclose(m.tensor([nan]), m.tensor([nan]), equal_nan=True),
            lambda: m.allclose(m.tensor([1.0]), m.tensor([1.1]), rtol=0.2),
            lambda: m.ones(2).equal(m.ones(2)), lambda: m.ones(2).equal(m.zeros(2)),
            lambda: m.ones(2).allclose(m.ones(2) + 1e-6), lambda: m.ones(2).allclose(m.ones(3)),
            lambda: m.onnx.export.__name__,
        ]
    for i, (c, t) in enumerate(zip(cases(cl), cases(torch))):
        assert outcome(c) == outcome(t), i


def test_cuda_and_backends_answer_as_a_cpu_build(torch):
    import subprocess
    import sys
    code = ("import course_lib as m; print(m.cuda.is_available(), m.cuda.device_count(),"
            " m.backends.cudnn.is_available(),"
            " m.backends.mps.is_available(), m.backends.mps.is_built(), m.utils.data.DataLoader.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(torch.cuda.is_available()), str(torch.cuda.device_count()),
                           str(torch.backends.cudnn.is_available()), str(torch.backends.mps.is_available()),
                           str(torch.backends.mps.is_built()), "DataLoader"]
    for fn in ("current_device", "get_device_name", "synchronize"):
        assert outcome(getattr(cl.cuda, fn)) == outcome(getattr(torch.cuda, fn)), fn
    cl.backends.cudnn.benchmark = True  # the tutorials' flags are accepted
    cl.backends.cudnn.benchmark = False


# ---------------------------------------------------------------------------
# nn modules: torch's state_dict loaded, outputs and gradients compared (float64)
# ---------------------------------------------------------------------------
def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [] if out is None else [out]


MODULES = [
    # (id, constructor taking the library, input shapes, forward kwargs builder taking the library)
    ("ConvTranspose2d", lambda m: m.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
                                                        dilation=2), [(2, 4, 5, 4)], None),
    ("ConvTranspose2d-plain", lambda m: m.nn.ConvTranspose2d(3, 2, (2, 3), bias=False), [(3, 4, 5)], None),
    ("ConvTranspose2d-pad", lambda m: m.nn.ConvTranspose2d(2, 2, 3, stride=(1, 3), padding=(2, 0)),
     [(1, 2, 4, 3)], None),
    ("PReLU", lambda m: m.nn.PReLU(3, init=0.1), [(2, 3, 4)], None),
    ("PReLU-shared", lambda m: m.nn.PReLU(), [(5,)], None),
    ("MaxPool1d", lambda m: m.nn.MaxPool1d(3, stride=2, padding=1, dilation=1), [(2, 3, 9)], None),
    ("AvgPool1d", lambda m: m.nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
     [(2, 3, 8)], None),
    ("Upsample-nearest", lambda m: m.nn.Upsample(scale_factor=2.5), [(1, 2, 3, 4)], None),
    ("Upsample-nearest-size", lambda m: m.nn.Upsample(size=(5, 3)), [(1, 2, 3, 4)], None),
    ("Upsample-bilinear", lambda m: m.nn.Upsample(size=(5, 7), mode="bilinear"), [(1, 2, 3, 4)], None),
    ("Upsample-bilinear-ac", lambda m: m.nn.Upsample(scale_factor=1.7, mode="bilinear", align_corners=True),
     [(2, 1, 3, 4)], None),
    ("Upsample-linear", lambda m: m.nn.Upsample(scale_factor=3, mode="linear"), [(2, 1, 4)], None),
    ("Upsample-nearest-exact", lambda m: m.nn.Upsample(scale_factor=(1.7, 0.6), mode="nearest-exact"),
     [(1, 2, 5, 7)], None),
    ("Upsample-area", lambda m: m.nn.Upsample(size=(2, 3), mode="area"), [(1, 2, 5, 7)], None),
    ("Upsample-nearest-1d", lambda m: m.nn.Upsample(size=11), [(1, 2, 4)], None),
    ("activations", lambda m: m.nn.Sequential(
        m.nn.Softmin(1), m.nn.Mish(), m.nn.Hardswish(), m.nn.SELU(), m.nn.CELU(0.7), m.nn.Softsign(), m.nn.GLU(1),
        m.nn.Tanhshrink(), m.nn.Threshold(0.05, -1.0), m.nn.Softshrink(0.1), m.nn.Hardshrink(0.02),
        m.nn.Hardsigmoid(), m.nn.LogSigmoid()), [(2, 4, 5)], None),
    *[(f"{name}-inplace", lambda m, name=name, args=args: m.nn.Sequential(
        m.nn.Linear(5, 5), getattr(m.nn, name)(*args, inplace=True)), [(3, 5)], None)
      for name, args in [("Mish", ()), ("SELU", ()), ("CELU", (0.5,)), ("Hardswish", ()), ("Hardsigmoid", ()),
                         ("Threshold", (0.1, 2.0))]],
    ("Softmax2d", lambda m: m.nn.Softmax2d(), [(2, 3, 2, 2)], None),
    ("CosineSimilarity", lambda m: m.nn.CosineSimilarity(dim=-1), [(3, 4), (1, 4)], None),
    ("PairwiseDistance", lambda m: m.nn.PairwiseDistance(p=3.0, keepdim=True), [(3, 4), (3, 4)], None),
    ("AdaptiveAvgPool1d", lambda m: m.nn.AdaptiveAvgPool1d(3), [(2, 3, 7)], None),
    ("pads-shuffles", lambda m: m.nn.Sequential(
        m.nn.ZeroPad2d((1, 1, 0, 1)), m.nn.ConstantPad2d(1, 0.5), m.nn.PixelUnshuffle(2), m.nn.PixelShuffle(2),
        m.nn.ConstantPad1d(2, -1.0), m.nn.ZeroPad1d((0, 1))), [(2, 2, 3, 4)], None),
    ("RNN", lambda m: m.nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True), [(5, 2, 3)], None),
    ("RNN-unbatched", lambda m: m.nn.RNN(3, 4, bias=False), [(5, 3)], None),
    ("LSTM", lambda m: m.nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True), [(2, 5, 3)], None),
    ("LSTM-hx", lambda m: m.nn.LSTM(3, 4), [(5, 2, 3), (1, 2, 4), (1, 2, 4)], "lstm_hx"),
    ("GRU", lambda m: m.nn.GRU(3, 4, num_layers=2, batch_first=True), [(2, 5, 3), (2, 2, 4)], "hx"),
    ("GRU-bi", lambda m: m.nn.GRU(3, 4, bidirectional=True), [(5, 2, 3)], None),
    ("RNNCell", lambda m: m.nn.RNNCell(3, 4, nonlinearity="relu"), [(2, 3), (2, 4)], "hx"),
    ("LSTMCell", lambda m: m.nn.LSTMCell(3, 4), [(2, 3), (2, 4), (2, 4)], "lstm_hx"),
    ("GRUCell-unbatched", lambda m: m.nn.GRUCell(3, 4, bias=False), [(3,)], None),
    ("MHA", lambda m: m.nn.MultiheadAttention(8, 2), [(4, 2, 8), (5, 2, 8), (5, 2, 8)], "mha"),
    ("MHA-batch-first-masks", lambda m: m.nn.MultiheadAttention(8, 2, batch_first=True), [(2, 4, 8)] * 3,
     "mha_masks"),
    ("MHA-kdim-bias-kv", lambda m: m.nn.MultiheadAttention(6, 3, kdim=4, vdim=5, add_bias_kv=True,
                                                            add_zero_attn=True),
     [(3, 2, 6), (4, 2, 4), (4, 2, 5)], "mha_per_head"),
    ("TransformerEncoderLayer", lambda m: m.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16),
     [(5, 2, 8)], "src_mask"),
    ("Transformer", lambda m: m.nn.Transformer(8, 2, 1, 2, 16, batch_first=True), [(2, 5, 8), (2, 4, 8)],
     "transformer"),
    ("TransformerDecoderLayer-norm-first", lambda m: m.nn.TransformerDecoderLayer(
        8, 2, 16, batch_first=False, norm_first=True, activation="gelu"), [(4, 2, 8), (5, 2, 8)], "decoder"),
    ("TransformerEncoderLayer-norm-first", lambda m: m.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, activation="gelu", batch_first=True, norm_first=True), [(2, 5, 8)], "pad_mask"),
]


def _call(m, mod, inputs, kind):
    if kind is None:
        return mod(*inputs)
    if kind == "hx":
        return mod(inputs[0], inputs[1])
    if kind == "lstm_hx":
        return mod(inputs[0], (inputs[1], inputs[2]))
    if kind == "mha":
        return mod(*inputs)
    if kind == "mha_masks":
        causal = m.ones(4, 4, dtype=m.bool).triu(1)
        pad = m.tensor([[False, False, False, True], [False, False, False, False]])
        return mod(*inputs, key_padding_mask=pad, attn_mask=causal)
    if kind == "mha_per_head":
        return mod(*inputs, average_attn_weights=False)
    if kind == "src_mask":
        return mod(inputs[0], src_mask=m.ones(5, 5, dtype=m.float64).triu(1) * -1e9)
    if kind == "transformer":
        return mod(*inputs, tgt_mask=m.nn.Transformer.generate_square_subsequent_mask(4, dtype=m.float64),
                   src_key_padding_mask=m.tensor([[False] * 4 + [True], [False] * 5]),
                   memory_key_padding_mask=m.tensor([[False] * 4 + [True], [False] * 5]))
    if kind == "decoder":
        return mod(*inputs, tgt_mask=m.ones(4, 4, dtype=m.bool).triu(1),
                   memory_key_padding_mask=m.tensor([[False] * 5, [True] + [False] * 4]))
    if kind == "pad_mask":
        return mod(inputs[0], src_key_padding_mask=m.tensor([[False] * 4 + [True], [False] * 5]))
    raise AssertionError(kind)


@pytest.mark.parametrize("name,make,shapes,kind", MODULES, ids=[c[0] for c in MODULES])
def test_modules_load_torch_state_dict_and_match(torch, name, make, shapes, kind):
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    mt = make(torch).double().eval()
    mc = make(cl).double().eval()
    sd = mt.state_dict()
    assert list(mc.state_dict()) == list(sd)
    assert [tuple(v.shape) for v in mc.state_dict().values()] == [tuple(v.shape) for v in sd.values()]
    mc.load_state_dict({k: cl.tensor(v.numpy()) for k, v in sd.items()})
    arrays = [rng.standard_normal(s) for s in shapes]
    xt = [torch.tensor(a, requires_grad=True) for a in arrays]
    xc = [cl.tensor(a, requires_grad=True) for a in arrays]
    out_t, out_c = _flat(_call(torch, mt, xt, kind)), _flat(_call(cl, mc, xc, kind))
    assert len(out_t) == len(out_c)
    tol = dict(rtol=1e-6, atol=1e-7) if name.endswith("norm-first") else {}  # the gelu: course_lib erf to ~1e-7
    for a, b in zip(out_c, out_t):
        close(a, b, **tol)
    weights = [rng.standard_normal(tuple(o.shape)) for o in out_t]
    sum(((o * torch.tensor(w)).sum() for o, w in zip(out_t, weights)), torch.zeros(())).backward()
    sum(((o * cl.tensor(w)).sum() for o, w in zip(out_c, weights)), cl.zeros((), dtype=cl.float64)).backward()
    for a, b in zip(xc, xt):
        close(a.grad, b.grad, **tol)
    for (k, p), (_, q) in zip(mc.named_parameters(), mt.named_parameters()):
        assert (p.grad is None) == (q.grad is None), k
        if q.grad is not None:
            close(p.grad, q.grad, **tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
def test_huber_and_kl_div_losses(torch, reduction):
    import warnings
    rng = np.random.default_rng(1)
    x, t = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)) * 2
    p = rng.random((3, 4))
    p[0, 0] = 0.0  # a zero target probability contributes 0
    cases = [("huber_loss", (x, t), dict(delta=0.7)), ("huber_loss", (x, t), dict(weight=np.abs(t))),
             ("kl_div", (x, p), {}), ("kl_div", (x, t), dict(log_target=True))]
    for fn, arrays, kw in cases:
        if fn == "huber_loss" and reduction == "batchmean":
            continue
        res = []
        for m in (torch, cl):
            args = [m.tensor(a, requires_grad=i == 0) for i, a in enumerate(arrays)]  # the target's: nan at 0
            kw_m = {k: (m.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                out = getattr(m.nn.functional, fn)(*args, reduction=reduction, **kw_m)
            out.sum().backward()
            res.append((out, [args[0].grad], [str(x.message) for x in w]))
        (ot, gt, wt), (oc, gc, wc) = res
        close(oc, ot)
        for a, b in zip(gc, gt):
            close(a, b)
        assert wc == wt, (fn, kw)
    mt, mc = torch.nn.KLDivLoss(reduction="batchmean", log_target=True), cl.nn.KLDivLoss(reduction="batchmean",
                                                                                       log_target=True)
    close(mc(cl.tensor(x), cl.tensor(t)), mt(torch.tensor(x), torch.tensor(t)))
    close(cl.nn.HuberLoss(delta=2.0)(cl.tensor(x), cl.tensor(t)), torch.nn.HuberLoss(delta=2.0)(torch.tensor(x),
                                                                                             torch.tensor(t)))


def test_functional_pieces_and_errors(torch):
    import warnings
    x = np.random.default_rng(2).standard_normal((2, 3, 8))
    for m in (torch, cl):
        _, idx = m.nn.functional.max_pool1d(m.tensor(x), 3, 2, return_indices=True)
        assert idx.tolist() == torch.nn.functional.max_pool1d(torch.tensor(x), 3, 2, return_indices=True)[1].tolist()
    # dropout2d zeroes whole channels and scales the rest; 3-d input warns as torch does
    xc = cl.ones(4, 6, 5, 5)
    out = cl.nn.functional.dropout2d(xc, 0.5)
    per_channel = out.numpy().reshape(4, 6, -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0} and (per_channel.min(-1) == per_channel.max(-1)).all()
    assert cl.nn.Dropout2d(0.3).eval()(xc) is xc
    for m in (torch, cl):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.nn.functional.dropout2d(m.ones(2, 3, 4))
        assert len(w) == 1 and "Received a 3D input to dropout2d" in str(w[0].message)
    F_t, F_c = torch.nn.functional, cl.nn.functional
    cases = [
        lambda m, F: F.interpolate(m.ones(1, 1, 2, 2)),
        lambda m, F: F.interpolate(m.ones(1, 1, 2, 2), size=3, scale_factor=2.0),
        lambda m, F: F.interpolate(m.ones(1, 1, 2, 2), size=3, align_corners=True),
        lambda m, F: F.interpolate(m.ones(1, 1, 2, 2), size=(3, 3, 3)),
        lambda m, F: F.interpolate(m.ones(1, 1, 2), size=3, mode="bilinear"),
        lambda m, F: F.prelu(m.ones(2, 4, 3), m.ones(3)),
        lambda m, F: F.huber_loss(m.ones(2), m.ones(2), reduction="batchmean"),
        lambda m, F: m.nn.RNN(3, 4, nonlinearity="sigmoid"),
        lambda m, F: m.nn.MultiheadAttention(6, 4),
        lambda m, F: m.nn.TransformerEncoderLayer(4, 2, activation="tanh"),
        lambda m, F: m.nn.GRU(3, 4)(m.ones(2, 2, 5)),
        lambda m, F: m.nn.LSTM(3, 4)(m.ones(5, 2, 3), (m.ones(1, 3, 4), m.ones(1, 2, 4))),
        lambda m, F: m.nn.LSTM(3, 4)(m.ones(5, 2, 3), (m.ones(1, 2, 4), m.ones(1, 3, 4))),
        lambda m, F: m.nn.LSTM(3, 4)(m.ones(5, 2, 3), (m.ones(1, 2, 4), m.ones(2, 4))),
        lambda m, F: m.nn.GRU(3, 4)(m.ones(5, 2, 3), m.ones(2, 4)),
        lambda m, F: m.nn.GRU(3, 4)(m.ones(5, 3), m.ones(1, 1, 4)),
        lambda m, F: m.nn.RNN(3, 4)(m.ones(5, 2, 3), m.ones(2, 2, 4)),
        lambda m, F: F.conv_transpose2d(m.ones(1, 2, 3, 3), m.ones(2, 1, 2, 2), stride=2, output_padding=2),
        lambda m, F: F.glu(m.ones(2, 3), 1), lambda m, F: F.glu(m.ones(())), lambda m, F: F.softshrink(m.ones(2), -1.0),
        lambda m, F: F.pixel_shuffle(m.ones(1, 3, 2, 2), 2), lambda m, F: F.pixel_unshuffle(m.ones(1, 1, 3, 4), 2),
        lambda m, F: F.pixel_unshuffle(m.ones(1, 1, 4, 3), 2), lambda m, F: F.dropout1d(m.ones(1, 2, 3, 4)),
        lambda m, F: m.nn.Softmax2d()(m.ones(2, 2)), lambda m, F: F.dropout1d(m.ones(2, 3), 0.0).shape,
    ]
    for i, case in enumerate(cases):
        got, want = outcome(lambda: case(cl, F_c)), outcome(lambda: case(torch, F_t))
        assert got[0] == want[0] and (got[0] == "ok" or got[1] == want[1]), (i, got, want)


def test_nn_functional_has_no_stray_public_names(torch):
    import course_lib.nn.functional as F
    stray = {"D", "OPS", "Tensor", "math", "warnings", "annotations", "dispatch"}
    assert not stray & set(dir(F))
    assert all(hasattr(F, n) for n in F.__all__)
    assert all(hasattr(torch.nn.functional, n) for n in F.__all__ if n != "flatten")


# ---------------------------------------------------------------------------
# nn.utils
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1, float("inf")])
def test_nn_utils_clipping_and_vectors(torch, norm_type):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) * 3 for s in [(3, 4), (4,), (2, 2, 2)]]
    results = []
    for m in (torch, cl):
        ps = [m.nn.Parameter(m.tensor(a)) for a in arrays]
        for p, a in zip(ps, arrays):
            p.grad = m.tensor(a * 2)
        ps.append(m.nn.Parameter(m.ones(2, dtype=m.float64)))  # no grad: skipped
        total = m.nn.utils.clip_grad_norm_(ps, 1.5, norm_type=norm_type)
        grads_norm = [p.grad.clone() for p in ps[:3]]
        m.nn.utils.clip_grad_value_(ps, 0.1)
        vec = m.nn.utils.parameters_to_vector(ps)
        m.nn.utils.vector_to_parameters(vec * 2, ps)
        seqs = [m.tensor(a.reshape(-1, 2)) for a in arrays]
        padded = [m.nn.utils.rnn.pad_sequence(seqs, batch_first=bf, padding_value=-1.0, padding_side=side)
                  for bf in (False, True) for side in ("right", "left")]
        padded += m.nn.utils.rnn.unpad_sequence(padded[0].clone(),  # torch's transposes its argument in place
                                                m.tensor([s.shape[0] for s in seqs]))
        padded += m.nn.utils.rnn.unpad_sequence(padded[2], m.tensor([s.shape[0] for s in seqs]), batch_first=True)
        m.nn.utils.clip_grads_with_norm_(ps, 0.5, m.nn.utils.get_total_norm([p.grad for p in ps[:3]], norm_type))
        results.append([total, *grads_norm, *[p.grad for p in ps[:3]], vec, *ps, *padded])
    for a, b in zip(results[1], results[0]):
        close(a, b)
    assert outcome(lambda: cl.nn.utils.clip_grad_norm_([cl.nn.Parameter(cl.ones(1))], 1.0)) == ("ok", cl.tensor(0.))
    for m in (torch, cl):
        p = m.nn.Parameter(m.ones(2))
        p.grad = m.tensor([float("inf"), 1.0])
        got = outcome(lambda: m.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True))
        assert got[0] == "RuntimeError" and "is non-finite, so it cannot be clipped" in got[1]


# ---------------------------------------------------------------------------
# optimizers and schedulers
# ---------------------------------------------------------------------------
OPTIMIZERS = [
    ("RMSprop", {}), ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"alpha": 0.9, "eps": 1e-3, "maximize": True, "momentum": 0.5}),
    ("Adagrad", {}), ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.2}),
    ("Adagrad", {"eps": 1e-3, "maximize": True}),
    ("Adadelta", {}), ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {}), ("Adamax", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1}),
    ("NAdam", {}), ("NAdam", {"lr": 0.01, "momentum_decay": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {}), ("RAdam", {"lr": 0.01, "betas": (0.5, 0.6), "weight_decay": 0.1}),
    ("RAdam", {"betas": (0.5, 0.6), "weight_decay": 0.1, "decoupled_weight_decay": True}),
]


# every configuration in float64 (the algorithm, to rounding), the defaults in float32 too (the dtypes)
OPTIMIZER_RUNS = [(n, k, "float64") for n, k in OPTIMIZERS] + [(n, k, "float32") for n, k in OPTIMIZERS if not k]


@pytest.mark.parametrize("name,kw,dtype", OPTIMIZER_RUNS, ids=[f"{n}{k}-{d}" for n, k, d in OPTIMIZER_RUNS])
def test_optimizer_trajectories_and_state(torch, name, kw, dtype):
    rng = np.random.default_rng(4)
    w0, x, y = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
    runs = []
    for m in (torch, cl):
        w = m.nn.Parameter(m.tensor(w0, dtype=getattr(m, dtype)))
        spare = m.nn.Parameter(m.ones(2, dtype=getattr(m, dtype)))  # never gets a gradient
        opt = getattr(m.optim, name)([w, spare], **kw)
        traj = []
        for _ in range(7):  # RAdam rectifies from step 6
            opt.zero_grad()
            loss = ((m.tensor(x, dtype=w.dtype) @ w.t() - m.tensor(y, dtype=w.dtype)) ** 2).mean()
            loss.backward()
            opt.step()
            traj.append(w.detach().clone())
        sd = opt.state_dict()
        runs.append((traj, sd, spare))
    (tt, sdt, _), (tc, sdc, spare) = runs
    rtol = 1e-6 if dtype == "float32" else 1e-12
    for a, b in zip(tc, tt):
        close(a, b, rtol=rtol, atol=rtol)
    assert sdc["param_groups"] == sdt["param_groups"]
    assert list(sdc["state"]) == list(sdt["state"])
    for k in sdt["state"]:
        assert list(sdc["state"][k]) == list(sdt["state"][k])
        for n, v in sdt["state"][k].items():
            assert str(sdc["state"][k][n].dtype)[11:] == str(v.dtype)[6:], n
            close(sdc["state"][k][n], v, rtol=rtol, atol=rtol)
    # a fresh optimizer loaded with the state continues identically
    w2 = cl.nn.Parameter(tc[-1].clone())
    opt2 = getattr(cl.optim, name)([w2, spare], **kw)
    opt2.load_state_dict(sdc)
    assert opt2.state_dict()["param_groups"] == sdc["param_groups"]


def _lr_sequence(m, make, steps, metrics=None):
    ps = [m.nn.Parameter(m.ones(1))]
    opt = m.optim.SGD([{"params": ps}, {"params": [m.nn.Parameter(m.ones(1))], "lr": 0.5}], lr=1.0,
                      momentum=0.9)
    sched = make(m, opt)
    seq = [list(sched.get_last_lr()) + [g.get("momentum") for g in opt.param_groups]]
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        seq.append(list(sched.get_last_lr()) + [g.get("momentum") for g in opt.param_groups])
    return seq, sched, opt


SCHEDULERS = [
    ("MultiStepLR", lambda m, o: m.optim.lr_scheduler.MultiStepLR(o, [2, 5, 5, 7], gamma=0.5), None),
    ("LinearLR", lambda m, o: m.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=4), None),
    ("LinearLR-decay", lambda m, o: m.optim.lr_scheduler.LinearLR(o, 1.0, 0.1, total_iters=6), None),
    ("LambdaLR", lambda m, o: m.optim.lr_scheduler.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]), None),
    ("OneCycleLR", lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=11), None),
    ("OneCycleLR-linear-3phase", lambda m, o: m.optim.lr_scheduler.OneCycleLR(
        o, max_lr=0.3, epochs=2, steps_per_epoch=6, anneal_strategy="linear", three_phase=True, pct_start=0.25), None),
    ("SequentialLR", lambda m, o: m.optim.lr_scheduler.SequentialLR(o, [
        m.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
        m.optim.lr_scheduler.StepLR(o, 2, gamma=0.5),
        m.optim.lr_scheduler.ExponentialLR(o, 0.9)], milestones=[3, 6]), None),
    ("MultiplicativeLR", lambda m, o: m.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 1.1),
     None),
    ("ConstantLR", lambda m, o: m.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3), None),
    ("PolynomialLR", lambda m, o: m.optim.lr_scheduler.PolynomialLR(o, total_iters=7, power=2.0), None),
    ("CosineAnnealingWarmRestarts", lambda m, o: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=2, T_mult=2, eta_min=0.01), None),
    ("ChainedScheduler", lambda m, o: m.optim.lr_scheduler.ChainedScheduler([
        m.optim.lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2),
        m.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)]), None),
    ("ReduceLROnPlateau", lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, cooldown=1,
                                                                             min_lr=[0.1, 0.2]),
     [5, 4, 4, 4, 4, 3.9999, 4, 4, 2, 2]),
    ("ReduceLROnPlateau-max-abs", lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(
        o, "max", factor=0.5, patience=0, threshold=0.5, threshold_mode="abs"), [1, 1.2, 2, 2.4, 3, 3, 3, 3, 3, 3]),
]


@pytest.mark.parametrize("name,make,metrics", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_scheduler_lr_sequences_and_state_dicts(torch, name, make, metrics):
    seq_t, sched_t, _ = _lr_sequence(torch, make, 10, metrics)
    seq_c, sched_c, _ = _lr_sequence(cl, make, 10, metrics)
    np.testing.assert_allclose(np.array(seq_c, dtype=float), np.array(seq_t, dtype=float), rtol=1e-12)
    sd_t, sd_c = sched_t.state_dict(), sched_c.state_dict()
    skip = {"_get_lr_called_within_step", "_is_initial", "_schedulers"}  # torch's bookkeeping flags
    assert sorted(set(sd_c) - skip) == sorted(set(sd_t) - skip)
    # round trip: a new scheduler loaded from the state dict continues as the original does
    first, sched2, opt2 = _lr_sequence(cl, make, 3, metrics)
    sched2.load_state_dict(sd_c)
    for g, lr in zip(opt2.param_groups, sched_c.get_last_lr()):
        g["lr"] = lr
    if metrics is None:
        sched_c.step(), sched2.step()
    else:
        sched_c.step(1.0), sched2.step(1.0)
    assert sched2.get_last_lr() == sched_c.get_last_lr()


# ---------------------------------------------------------------------------
# autograd.functional
# ---------------------------------------------------------------------------
def _af_cases(m):
    """(name, fn, args, kwargs) in library ``m``; the functions mix ops with first and second derivatives."""
    def f(x):
        return (x.sin() * x).sum(-1)

    def g(x, y):
        return (x * y.exp()).tanh(), x.sum() * y

    def s(x, y):
        return (x * x * y.sum()).sum() + (y ** 3).sum()

    def lin(x, y):
        return x * 2

    x = m.tensor([[0.3, -1.2, 2.0], [0.5, 0.1, -0.7]], dtype=m.float64)
    y = m.tensor([0.4, -0.2, 1.1], dtype=m.float64)
    v2 = m.tensor([1.0, -2.0], dtype=m.float64)
    return [
        ("vjp", f, (x, v2), {}), ("vjp", g, ((x, y), (m.ones(2, 3, dtype=m.float64), y)), {}),
        ("jvp", f, (x, x * 0.5), {}), ("jvp", g, ((x, y), (x, y)), {}),
        ("jacobian", f, (x,), {}), ("jacobian", g, ((x, y),), {}), ("jacobian", g, ((x, y),), {"vectorize": True}),
        ("hessian", lambda t: f(t).sum(), (x,), {}), ("hessian", s, ((x, y),), {}),
        ("hvp", s, ((x, y), (x, y)), {}), ("vhp", s, ((x, y), (x, y)), {}),
        ("jacobian", lin, ((x, y),), {}),
        ("hessian", lambda a, b: (a * 2).sum() + b.sum(), ((x, y),), {}),
        # errors
        ("vjp", lambda t: t * 2, (x,), {}), ("jvp", f, (x, y), {}), ("vjp", lin, ((x, y), x), {"strict": True}),
        ("jacobian", lin, ((x, y),), {"strict": True}), ("hvp", g, ((x, y), (x, y)), {}),
        ("hessian", lambda a: a.sum() * 2, (x,), {"strict": True}), ("vjp", f, ([1.0],), {}),
    ]


def test_autograd_functional_matches_torch(torch):
    for i, ((name, fc, ac, kc), (_, ft, at, kt)) in enumerate(zip(_af_cases(cl), _af_cases(torch))):
        got = outcome(lambda: getattr(cl.autograd.functional, name)(fc, *ac, **kc))
        want = outcome(lambda: getattr(torch.autograd.functional, name)(ft, *at, **kt))
        assert got[0] == want[0], (i, name, got, want)
        if want[0] != "ok":
            assert got[1] == want[1], (i, name)
            continue
        flat_c, flat_t = _flat(got[1]), _flat(want[1])
        assert len(flat_c) == len(flat_t), (i, name)
        for a, b in zip(flat_c, flat_t):
            assert not a.requires_grad
            close(a, b, rtol=1e-12, atol=1e-12)


def test_autograd_functional_create_graph(torch):
    res = []
    for m in (torch, cl):
        x = m.tensor([0.3, -1.2, 2.0], dtype=m.float64, requires_grad=True)
        _, jv = m.autograd.functional.jvp(lambda t: t.sin() * t, x, x.detach() + 1, create_graph=True)
        h = m.autograd.functional.hessian(lambda t: (t ** 3).sum(), x, create_graph=True)
        _, hv = m.autograd.functional.hvp(lambda t: (t.exp() * t).sum(), x, m.ones(3, dtype=m.float64),
                                          create_graph=True)
        assert jv.requires_grad and h.requires_grad and hv.requires_grad
        (jv.sum() + h.sum() + hv.sum()).backward()
        res.append(x.grad)
    close(res[1], res[0], rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# a tutorial-style program, run with `torch` bound to each library, prints the same
# ---------------------------------------------------------------------------
def _tutorial_program(torch) -> str:
    import io
    from contextlib import redirect_stdout

    nn, F = torch.nn, torch.nn.functional  # noqa: N806  (``torch`` is either library)
    DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset  # noqa: N806

    def det_init(model):  # deterministic weights (the two libraries' random streams differ)
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (-1) ** i)

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(3, 5, batch_first=True, bidirectional=True)
            self.attn = nn.TransformerEncoderLayer(10, 2, dim_feedforward=12, dropout=0.0, batch_first=True)
            self.head = nn.Sequential(nn.Linear(10, 4), nn.PReLU(), nn.Dropout(0.0), nn.Linear(4, 2))

        def forward(self, x):
            h, _ = self.rnn(x)
            return self.head(self.attn(h))

    out = io.StringIO()
    torch.set_default_dtype(torch.float64)  # float32 rounding, amplified by training, would differ in print
    with redirect_stdout(out):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        print(f"Using {device} device; eps {torch.finfo(torch.float32).eps}; int8 max {torch.iinfo(torch.int8).max}")
        X = torch.sin(torch.arange(48.0)).reshape(4, 4, 3)
        y = (X.sum(-1) > 0).long()
        loader = DataLoader(TensorDataset(X, y), batch_size=2)
        model = Tagger().to(device)
        det_init(model)
        opt = torch.optim.RMSprop(model.parameters(), lr=0.01, momentum=0.5)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=6)
        for epoch in range(3):
            for xb, yb in loader:
                logits = model(xb)
                loss = F.cross_entropy(logits.reshape(-1, 2), yb.reshape(-1))
                opt.zero_grad()
                loss.backward()
                norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
            print(f"epoch {epoch}: loss {loss.item():.5f} grad norm {norm.item():.5f} lr {sched.get_last_lr()[0]:.5f}")
        with torch.no_grad():
            pred = model(X).argmax(-1)
        print("accuracy", (pred == y).float().mean().item(), torch.equal(pred, pred.clone()), torch.is_tensor(pred))
        vec = nn.utils.parameters_to_vector(model.parameters())
        print("parameters", torch.numel(vec), f"{vec.abs().sum().item():.4f}")
        jac = torch.autograd.functional.jacobian(lambda t: t.tanh() * t, torch.tensor([0.5, -1.0]))
        print(jac)
        up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)(torch.arange(4.0).reshape(1, 1, 2, 2))
        print(up[0, 0, 0], torch.allclose(up.mean(), torch.tensor(1.5)))
        seqs = nn.utils.rnn.pad_sequence([torch.ones(2), torch.ones(3) * 2], batch_first=True)
        print(seqs, F.kl_div(F.log_softmax(X[0], -1), F.softmax(X[1], -1), reduction="batchmean"))
    torch.set_default_dtype(torch.float32)
    return out.getvalue()


def test_tutorial_style_program_prints_the_same(torch):
    try:
        assert _tutorial_program(cl) == _tutorial_program(torch)
    finally:
        cl.set_default_dtype(cl.float32)
        torch.set_default_dtype(torch.float32)


def test_new_modules_repr_and_constructor_checks(torch):
    import warnings
    makers = [lambda m: m.nn.Dropout2d(0.2), lambda m: m.nn.HuberLoss(delta=0.5), lambda m: m.nn.KLDivLoss("batchmean"),
              lambda m: m.nn.MaxPool1d(3, 2), lambda m: m.nn.AvgPool1d(3), lambda m: m.nn.PReLU(4),
              lambda m: m.nn.Upsample(scale_factor=2, mode="bilinear"), lambda m: m.nn.Upsample(size=(3, 4)),
              lambda m: m.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=2),
              lambda m: m.nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bidirectional=True, batch_first=True),
              lambda m: m.nn.LSTM(3, 4, bias=False, dropout=0.5), lambda m: m.nn.GRU(3, 4),
              lambda m: m.nn.MultiheadAttention(8, 2), lambda m: m.nn.TransformerEncoderLayer(8, 2, 16),
              lambda m: m.nn.RNN(3, 0), lambda m: m.nn.GRU(3, 4, bias=1), lambda m: m.nn.LSTM(3.0, 4),
              lambda m: m.nn.RNN(3, 4, dropout=1.5), lambda m: m.nn.RNNCell(3, 4, bias=False, nonlinearity="relu"),
              lambda m: m.nn.LSTMCell(3, 4)(m.ones(2, 2, 3)), lambda m: m.nn.GRUCell(3, 4)(m.ones(3), m.ones(1, 1, 4)),
              lambda m: m.nn.RNNCell(3, 4, nonlinearity="gelu")(m.ones(3)),
              lambda m: m.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0), lambda m: m.nn.TransformerDecoderLayer(8, 2),
              lambda m: m.nn.Transformer(8, 2, 1, 1, 16)(m.ones(3, 2, 8), m.ones(3, 1, 8)),
              lambda m: m.nn.Transformer(8, 2, 1, 1, 16)(m.ones(3, 2, 8), m.ones(3, 2, 6)),
              lambda m: m.nn.Transformer.generate_square_subsequent_mask(3).tolist()]
    for i, make in enumerate(makers):
        res = []
        for m in (cl, torch):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                got = outcome(lambda: repr(make(m)))
            res.append((got, [str(x.message) for x in w]))
        assert res[0] == res[1], i


def test_new_layers_run_on_meta_tensors():
    """Shapes only, as the compiler's capture runs them (F.pad's padding used to be made on the CPU)."""
    import warnings
    F = cl.nn.functional  # noqa: N806
    x = cl.empty(2, 3, 4, 5, device="meta")
    cases = [
        (lambda: F.pad(x, (1, 2)), (2, 3, 4, 8)),
        (lambda: F.interpolate(x, scale_factor=2), (2, 3, 8, 10)),
        (lambda: F.interpolate(x, size=(5, 7), mode="bilinear"), (2, 3, 5, 7)),
        (lambda: F.conv_transpose2d(x, cl.empty(3, 2, 3, 3, device="meta"), stride=2), (2, 2, 9, 11)),
        (lambda: cl.nn.LSTM(5, 4, device="meta")(x[0])[0], (3, 4, 4)),
        (lambda: cl.nn.GRU(5, 4, bidirectional=True, device="meta")(x[0])[0], (3, 4, 8)),
        (lambda: cl.nn.MultiheadAttention(5, 1, add_zero_attn=True, device="meta")(
            x[0], x[0], x[0], key_padding_mask=cl.empty(4, 3, dtype=cl.bool, device="meta"))[0], (3, 4, 5)),
        (lambda: cl.nn.TransformerEncoderLayer(5, 1, 8, device="meta")(x[0]), (3, 4, 5)),
        (lambda: F.dropout2d(x), (2, 3, 4, 5)),
        (lambda: F.scaled_dot_product_attention(x, x, x, is_causal=True), (2, 3, 4, 5)),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, (fn, shape) in enumerate(cases):
            out = fn()
            assert out.device.type == "meta" and tuple(out.shape) == shape, i


def test_new_modules_init_distributions(torch):
    """Each parameter's spread (std, max |w|) is torch's, within sampling noise (the random streams differ)."""
    makers = [lambda m: m.nn.LSTM(20, 30, bidirectional=True), lambda m: m.nn.GRU(10, 40),
              lambda m: m.nn.RNN(10, 25), lambda m: m.nn.MultiheadAttention(32, 4, add_bias_kv=True),
              lambda m: m.nn.MultiheadAttention(16, 2, kdim=8, vdim=12),
              lambda m: m.nn.TransformerEncoderLayer(32, 4, 64), lambda m: m.nn.ConvTranspose2d(16, 8, 3, groups=2),
              lambda m: m.nn.Transformer(32, 4, 1, 1, 64, batch_first=True),
              lambda m: m.nn.PReLU(5, init=0.3)]
    torch.manual_seed(0)
    cl.manual_seed(0)  # deterministic: a draw never lands outside the tolerance by chance
    for make in makers:
        mc, mt = make(cl), make(torch)
        for (name, pc), (_, pt) in zip(mc.named_parameters(), mt.named_parameters()):
            a, b = pc.detach().numpy(), pt.detach().numpy()
            assert a.shape == b.shape, name
            sa, sb = np.std(a), np.std(b)  # the sample std's relative error is about 1/sqrt(2n): allow 4 of them
            assert (sa == sb == 0) or abs(sa - sb) <= max(0.05, 4 / np.sqrt(2 * a.size)) * sb, (name, sa, sb)
            if a.size >= 500:  # max |w|: the bound of a uniform init, a few std of a normal one
                ma, mb = np.abs(a).max(), np.abs(b).max()
                assert abs(ma - mb) <= 0.25 * mb, (type(mc).__name__, name, ma, mb)


def test_transformer_encoder(torch):
    import warnings
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 5, 8))
    pad = [[False] * 3 + [True] * 2, [False] * 5]
    for kw, train in (({"batch_first": True}, False), ({"batch_first": True}, True), ({"norm_first": True}, False),
                      ({"nhead": 1, "batch_first": True}, False)):
        res = []
        for m in (torch, cl):
            kw_m = {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0, **kw}
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                enc = m.nn.TransformerEncoder(m.nn.TransformerEncoderLayer(**kw_m), 2, norm=m.nn.LayerNorm(8))
            enc = enc.double().train(train)
            det_src = m.tensor(x if kw.get("batch_first") else x.transpose(1, 0, 2))
            if m is torch:
                sd = enc.state_dict()
            else:
                enc.load_state_dict({k: cl.tensor(v.numpy()) for k, v in sd.items()})
            with m.no_grad(), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*nested tensors is in prototype")
                out = enc(det_src, src_key_padding_mask=m.tensor(pad))
            res.append((out, [str(x.message) for x in w]))
        close(res[1][0], res[0][0], rtol=1e-10, atol=1e-12)
        assert res[1][1] == res[0][1], kw


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(torch, mode):
    w = np.random.default_rng(6).standard_normal((10, 3))
    calls = [  # (input, offsets, kwargs)
        ([1, 2, 4, 5, 4, 3, 2, 9, 0, 0], [0, 4, 4, 7], {}),
        ([1, 2, 4, 5, 4, 3, 2, 9, 0, 0], [0, 4, 4, 7, 10], {"include_last_offset": True, "padding_idx": 4}),
        ([[1, 2, 4], [4, 4, 4], [0, 9, 9]], None, {"padding_idx": -6}),
        ([[1, 2, 4], [4, 4, 4], [0, 9, 9]], None, {}),
    ]
    for i, (inp, offs, kw) in enumerate(calls):
        res = []
        for m in (torch, cl):
            weight = m.tensor(w, requires_grad=True)
            psw = m.tensor(np.linspace(-1, 1, np.size(inp)).reshape(np.shape(inp)), requires_grad=True)
            bag = m.nn.EmbeddingBag(10, 3, mode=mode, _weight=weight.detach().clone(), **kw)
            args = (m.tensor(inp), None if offs is None else m.tensor(offs))
            out = m.nn.functional.embedding_bag(args[0], weight, args[1], mode=mode, **kw,
                                                per_sample_weights=psw if mode == "sum" else None)
            (out * m.tensor(np.arange(out.numel(), dtype=float).reshape(out.shape))).sum().backward()
            res.append([out, weight.grad, psw.grad if mode == "sum" else m.zeros(1), bag(*args)])
        for a, b in zip(res[1], res[0]):
            close(a, b, rtol=1e-12, atol=1e-12)
    F_t, F_c = torch.nn.functional, cl.nn.functional
    errors = [
        lambda m, F: F.embedding_bag(m.tensor([[1, 2]]), m.ones(5, 2), m.tensor([0])),
        lambda m, F: F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2)),
        lambda m, F: F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2), m.tensor([0]), mode="avg"),
        lambda m, F: F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2), m.tensor([0]), mode="mean",
                                     per_sample_weights=m.ones(2)),
        lambda m, F: F.embedding_bag(m.tensor([1, 2]), m.ones(5, 2), m.tensor([0]), per_sample_weights=m.ones(3)),
        lambda m, F: m.nn.EmbeddingBag(5, 2, padding_idx=5),
        lambda m, F: repr(m.nn.EmbeddingBag(5, 2, mode="max", padding_idx=-1, max_norm=1.0)),
    ]
    for i, case in enumerate(errors):
        assert outcome(lambda: case(cl, F_c)) == outcome(lambda: case(torch, F_t)), i


def test_scheduler_constructor_errors(torch):
    cases = [
        lambda m, o: m.optim.lr_scheduler.LambdaLR(o, 3), lambda m, o: m.optim.lr_scheduler.MultiplicativeLR(o, 3),
        lambda m, o: m.optim.lr_scheduler.LambdaLR(o, [lambda e: 1.0] * 2),
        lambda m, o: m.optim.lr_scheduler.ConstantLR(o, factor=2.0),
        lambda m, o: m.optim.lr_scheduler.LinearLR(o, start_factor=0.0),
        lambda m, o: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0),
        lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0),
        lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=5, pct_start=1),
        lambda m, o: m.optim.lr_scheduler.SequentialLR(o, [m.optim.lr_scheduler.ConstantLR(o)], milestones=[2]),
        lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(o, factor=1.0),
        lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(o, mode="avg"),
        lambda m, o: m.optim.lr_scheduler.ChainedScheduler([]),
        lambda m, o: m.optim.RMSprop(o.param_groups[0]["params"], alpha=-1),
        lambda m, o: m.optim.Adagrad(o.param_groups[0]["params"], lr_decay=-1),
        lambda m, o: m.optim.Adagrad(o.param_groups[0]["params"], initial_accumulator_value=-1),
    ]
    for i, case in enumerate(cases):
        got, want = [outcome(lambda m=m: case(m, m.optim.SGD([m.nn.Parameter(m.ones(1))], lr=1.0)))
                     for m in (cl, torch)]
        assert got[0] == want[0] and (got[0] == "ok" or got[1] == want[1]), (i, got, want)


def test_nn_init_orthogonal_dirac_sparse(torch):
    cl.manual_seed(0)
    for shape, gain in (((4, 6), 2.0), ((6, 2, 2), 1.0)):
        w = cl.nn.init.orthogonal_(cl.empty(*shape), gain=gain).numpy().reshape(shape[0], -1)
        gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        np.testing.assert_allclose(gram, gain ** 2 * np.eye(gram.shape[0]), atol=1e-5)
    for shape, groups in (((6, 4, 3, 3), 2), ((3, 5, 4), 1), ((4, 2, 3, 2, 3), 1)):
        np.testing.assert_array_equal(cl.nn.init.dirac_(cl.empty(*shape), groups).numpy(),
                                      torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    w = cl.nn.init.sparse_(cl.empty(10, 3), 0.35, std=0.5).numpy()
    assert ((w == 0).sum(0) == 4).all() and 0.2 < w[w != 0].std() < 1.0
    for fn in (lambda m: m.nn.init.orthogonal_(m.empty(3)), lambda m: m.nn.init.dirac_(m.empty(3, 3)),
               lambda m: m.nn.init.dirac_(m.empty(3, 3, 3), groups=2), lambda m: m.nn.init.sparse_(m.empty(3), 0.1)):
        assert outcome(lambda: fn(cl)) == outcome(lambda: fn(torch))


def test_global_flags(torch):
    import warnings

    def run(m):
        out = [m.get_float32_matmul_precision(), m.are_deterministic_algorithms_enabled()]
        for call in (lambda: m.use_deterministic_algorithms(True, warn_only=True),
                     lambda: m.use_deterministic_algorithms("yes"),
                     lambda: m.use_deterministic_algorithms(True, warn_only=1),
                     lambda: m.set_float32_matmul_precision("high")):
            out.append(outcome(call))
            out += [m.are_deterministic_algorithms_enabled(), m.is_deterministic_algorithms_warn_only_enabled(),
                    m.get_float32_matmul_precision()]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m.set_float32_matmul_precision("low")
        out += [str(x.message).split(" (Triggered internally")[0] for x in w]  # torch names its C++ source
        out.append(m.get_float32_matmul_precision())
        m.use_deterministic_algorithms(False)
        m.set_float32_matmul_precision("highest")
        return out + [m.are_deterministic_algorithms_enabled(), m.is_deterministic_algorithms_warn_only_enabled()]
    assert run(cl) == run(torch)


def test_adam_family_and_scheduler_sequences_refuse_bad_arguments_as_torch(torch):
    """The shared argument checks (check_adam_args, _check_schedulers) give each class torch's type and words."""
    def cases(m):
        w = [m.nn.Parameter(m.ones(2))]
        out = []
        for name in ("Adam", "AdamW", "Adamax", "NAdam", "RAdam"):
            cls = getattr(m.optim, name)
            out += [lambda cls=cls, kw=kw: cls(w, **kw) and None
                    for kw in ({"lr": -1.0}, {"eps": -1e-8}, {"betas": (1.0, 0.9)}, {"betas": (0.9, -0.1)},
                               {"weight_decay": -1.0})]
        opt, other = m.optim.SGD(w, lr=0.1), m.optim.SGD([m.nn.Parameter(m.ones(2))], lr=0.1)
        lr = m.optim.lr_scheduler
        for make in (lambda s: lr.SequentialLR(opt, s, milestones=[1]), lambda s: lr.ChainedScheduler(s)):
            out += [lambda make=make: make([lr.StepLR(opt, 2), lr.StepLR(other, 2)]) and None,
                    lambda make=make: make([lr.StepLR(opt, 2), lr.ReduceLROnPlateau(opt)]) and None,
                    lambda make=make: make([lr.StepLR(opt, 2), object()]) and None]
        return out

    for i, (c, t) in enumerate(zip(cases(cl), cases(torch))):
        o, e = outcome(c), outcome(t)
        assert e[0] != "ok" and o[0] == e[0] and o[1].split(" at 0x")[0] == e[1].split(" at 0x")[0], (i, o, e)
