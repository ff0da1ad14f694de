"""course_lib.onnx.export: real ONNX files, checked by onnx.checker and run in onnxruntime.

Every exported model is run in onnxruntime and compared with course_lib's own forward pass, at a
batch size other than the traced one when the batch axis is dynamic.  The oracle tests compare the
exported graph and the exporter's messages with ``torch.onnx.export(..., dynamo=False)``.
"""
from __future__ import annotations

import io
import os
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="onnx not installed: pip install onnx==1.23.2 (the 'onnx' extra)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed: pip install onnxruntime==1.32.0 "
                          "(the 'test' extra)")

import course_lib as cl  # noqa: E402
import course_lib.nn.functional as F  # noqa: E402
from course_lib import nn  # noqa: E402
from course_lib.models import mlp, resnet18  # noqa: E402
from course_lib.models.resnet import BasicBlock, ResNet  # noqa: E402
from course_lib.onnx import SymbolicValueError, UnsupportedOperatorError, export  # noqa: E402


def _to_bytes(model, args, **kw) -> bytes:
    buf = io.BytesIO()
    export(model, args, buf, **kw)
    return buf.getvalue()


def _run(data: bytes, *inputs) -> list[np.ndarray]:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)})


def _randomise_batch_norms(model) -> None:
    """Running statistics and affine parameters away from 0/1, so that BatchNorm is not the identity."""
    with cl.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(cl.randn(m.running_mean.shape) * 0.1)
                m.running_var.copy_(cl.rand(m.running_var.shape) + 0.5)
                m.weight.copy_(cl.rand(m.weight.shape) + 0.5)
                m.bias.copy_(cl.randn(m.bias.shape) * 0.1)


def _dims(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_resnet18_folded_dynamic_batch(tmp_path):
    cl.manual_seed(0)
    model = resnet18(num_classes=10)          # chapter 04's network, left in training mode
    _randomise_batch_norms(model)
    stats = {k: v.clone() for k, v in model.state_dict().items()}
    path = tmp_path / "resnet18.onnx"
    export(model, (cl.randn(2, 3, 32, 32),), str(path), input_names=["input"], output_names=["output"],
           dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    # exported in eval semantics, as torch's default training=TrainingMode.EVAL; the mode is restored and
    # the trace did not update the running statistics
    assert model.training
    assert all(cl.equal(stats[k], v) for k, v in model.state_dict().items())
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    ops = {n.op_type for n in proto.graph.node}
    assert ops == {"Conv", "Relu", "MaxPool", "Add", "GlobalAveragePool", "Reshape", "Gemm"}   # BatchNorm folded
    assert _dims(proto.graph.input[0]) == ["batch", 3, 32, 32]
    assert _dims(proto.graph.output[0]) == ["batch", 10]
    inits = {i.name for i in proto.graph.initializer}
    assert {"fc.weight", "fc.bias"} <= inits
    x = cl.randn(3, 3, 32, 32)
    model.eval()
    with cl.no_grad():
        expected = model(x).numpy()
    (got,) = _run(path.read_bytes(), x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_resnet_batch_norm_as_op_keeps_state_dict_names():
    cl.manual_seed(1)
    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=5, small_input=True).eval()
    _randomise_batch_norms(model)
    data = _to_bytes(model, cl.randn(2, 3, 8, 8), input_names=["input"], do_constant_folding=False,
                     dynamic_axes={"input": {0: "batch"}})
    proto = onnx.load_from_string(data)
    assert "BatchNormalization" in {n.op_type for n in proto.graph.node}
    expected_names = {k for k in model.state_dict() if not k.endswith("num_batches_tracked")}
    assert {i.name for i in proto.graph.initializer if not i.name.startswith("onnx::")} == expected_names
    x = cl.randn(4, 3, 8, 8)
    with cl.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(_run(data, x)[0], expected, rtol=1e-4, atol=1e-5)


def test_mlp_dynamic_axes_list_and_default_names():
    cl.manual_seed(2)
    model = nn.Sequential(mlp([6, 16, 16, 4], dropout=0.5), nn.Softmax(-1))   # Dropout: identity in eval
    with pytest.warns(UserWarning, match="^No names were found for specified dynamic axes of provided input."
                      "Automatically generated names will be applied to each dynamic axes of input x$"):
        data = _to_bytes(model, (cl.randn(2, 6),), input_names=["x"], dynamic_axes={"x": [0]})
    proto = onnx.load_from_string(data)
    assert [n.op_type for n in proto.graph.node] == ["Gemm", "Relu", "Gemm", "Relu", "Gemm", "Softmax"]
    assert _dims(proto.graph.input[0]) == ["x_dynamic_axes_1", 6]     # torch's name for a listed axis
    assert _dims(proto.graph.output[0]) == ["x_dynamic_axes_1", 4]
    assert proto.graph.output[0].name == "softmax"                    # the captured node's name
    x = cl.randn(7, 6)
    with cl.no_grad():
        expected = model.eval()(x).numpy()
    np.testing.assert_allclose(_run(data, x)[0], expected, rtol=1e-4, atol=1e-6)


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.ln = nn.LayerNorm(5)
        self.w = nn.Parameter(cl.randn(5, 3))

    def forward(self, *xs):
        return self.fn(self, *xs)


# (name, function, traced input shapes, shapes run in onnxruntime, dynamic axes of the inputs)
CASES = [
    ("cat_mean_scalar_ops", lambda m, x: cl.cat([x - 1.5, x / 2, 3 * x], 1).mean((2, 3), keepdim=True),
     [(2, 4, 3, 5)], [(3, 4, 3, 5)], {0: "b"}),
    ("layer_norm_gelu", lambda m, x: F.gelu(m.ln(x)).sum(-1), [(2, 3, 5)], [(4, 3, 5)], {0: "b"}),
    ("permute_reshape_mm", lambda m, x: (x.permute(0, 2, 1).reshape(-1, 5) @ m.w).tanh(),
     [(2, 5, 4)], [(6, 5, 4)], {0: "b"}),
    ("slice_stack_transpose", lambda m, x: cl.stack([x[:, 1:3], x[:, ::2][:, :2]], 0).transpose(1, 2),
     [(3, 5)], [(3, 5)], {}),
    ("avg_pool_clamp_sigmoid", lambda m, x: F.avg_pool2d(x, 2, 1, 1).clamp(-0.5, 0.5).sigmoid(),
     [(2, 3, 4, 4)], [(5, 3, 4, 4)], {0: "b"}),
    ("adaptive_avg_pool_3", lambda m, x: F.adaptive_avg_pool2d(x, 3), [(2, 2, 5, 4)], [(2, 2, 5, 4)], {}),
    ("unsqueeze_squeeze_log_softmax", lambda m, x: F.log_softmax(x.unsqueeze(1), -1).squeeze(1) + x.exp(),
     [(2, 5)], [(9, 5)], {0: "b"}),
    ("constant_output", lambda m, x: ((m.w.t() * 2).sum(0), x + 1, x + 1), [(2, 3)], [(4, 3)], {0: "b"}),
    ("zero_dim_output", lambda m, x: ((x * 2).sum() - 1, x.select(1, 2)), [(2, 3)], [(4, 3)], {0: "b"}),
    ("two_inputs_two_outputs", lambda m, x, y: (x * y, (x + y).flatten(1)), [(2, 3, 2), (2, 3, 2)],
     [(4, 3, 2), (4, 3, 2)], {0: "b"}),
]


@pytest.mark.parametrize("name, fn, traced, run, axes", CASES, ids=[c[0] for c in CASES])
def test_ops(name, fn, traced, run, axes):
    cl.manual_seed(3)
    model = _Fn(fn).eval()
    names = [f"in{i}" for i in range(len(traced))]
    data = _to_bytes(model, tuple(cl.randn(*s) for s in traced), input_names=names,
                     dynamic_axes={n: axes for n in names})
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    xs = [cl.randn(*s) for s in run]
    with cl.no_grad():
        expected = model(*xs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = _run(data, *xs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == tuple(e.shape)      # (assert_allclose would broadcast a 0-d expectation)
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-5)


LAYERS = [
    ("activations", lambda: nn.Sequential(nn.ReLU6(), nn.LeakyReLU(0.1), nn.ELU(), nn.Hardswish(), nn.SiLU(),
                                          nn.PReLU(), nn.Softplus()), (2, 5)),
    ("identity", lambda: nn.Identity(), (2, 5)),                 # the output is the input: an Identity node
    ("conv1d_pool1d_batchnorm1d", lambda: nn.Sequential(nn.Conv1d(3, 4, 3), nn.BatchNorm1d(4), nn.MaxPool1d(2),
                                                        nn.AdaptiveAvgPool1d(1)), (2, 3, 8)),
    ("upsample_nearest", lambda: nn.Upsample(scale_factor=2), (2, 3, 4, 4)),
    ("group_norm", lambda: nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    ("transformer_encoder_layer", lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
     (2, 5, 8)),
    ("batch_statistics", lambda: nn.Sequential(nn.BatchNorm2d(4, track_running_stats=False), nn.GroupNorm(4, 4)),
     (2, 4, 3, 3)),
]


@pytest.mark.parametrize("name, make, shape", LAYERS, ids=[c[0] for c in LAYERS])
def test_layers(name, make, shape):
    cl.manual_seed(5)
    model = make().eval()
    data = _to_bytes(model, cl.randn(*shape), input_names=["x"], dynamic_axes={"x": {0: "b"}})
    x = cl.randn(3, *shape[1:])
    with cl.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(_run(data, x)[0], expected, rtol=1e-4, atol=1e-5)


def test_embedding_int64_indices():
    cl.manual_seed(6)
    model = nn.Sequential(nn.Embedding(10, 4), nn.Flatten())
    data = _to_bytes(model, cl.tensor([[1, 2, 3], [4, 5, 6]]), input_names=["ids"],
                     dynamic_axes={"ids": {0: "b"}})
    ids = cl.tensor([[9, 0, 1], [2, 2, 2], [7, 8, 3], [1, 1, 0]])
    with cl.no_grad():
        expected = model(ids).numpy()
    np.testing.assert_allclose(_run(data, ids)[0], expected, rtol=1e-6)


def test_lstm_nested_outputs():
    # (output, (h, c)) is written as three outputs, as torch does; the initial state's zeros have the
    # traced batch size, so the batch is not dynamic here
    cl.manual_seed(7)
    model = nn.LSTM(4, 6, batch_first=True).eval()
    x = cl.randn(2, 3, 4)
    data = _to_bytes(model, x)
    with cl.no_grad():
        out, (h, c) = model(x)
    got = _run(data, x)
    assert [g.shape for g in got] == [(2, 3, 6), (1, 2, 6), (1, 2, 6)]
    for g, e in zip(got, (out, h, c)):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-5)


def test_instance_norm_dynamic_batch_through_merged_axes():
    # InstanceNorm2d views (N, C, H, W) as (1, N * C, H, W) and back: the batch is followed as a factor
    # of the merged axis, so both reshapes take -1 where it is.  (With affine=True the weight is repeated
    # N times: a constant of the traced batch size, which a dynamic batch cannot change.)
    model = nn.Sequential(nn.InstanceNorm2d(4), nn.ReLU()).eval()
    data = _to_bytes(model, cl.randn(2, 4, 3, 3), input_names=["x"], dynamic_axes={"x": {0: "b"}})
    x = cl.randn(3, 4, 3, 3)
    with cl.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(_run(data, x)[0], expected, rtol=1e-4, atol=1e-5)


def test_conv_bias_batch_norm_fold_and_names():
    cl.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=True), nn.BatchNorm2d(4), nn.ReLU(), nn.BatchNorm2d(4))
    _randomise_batch_norms(model)
    model.eval()
    x = cl.randn(2, 3, 6, 6)
    with cl.no_grad():
        expected = model(x).numpy()
    # names that the captured graph also uses (relu_ is the ReLU's node) stay the user's
    data = _to_bytes(model, x, input_names=["relu"], output_names=["convolution"],
                     dynamic_axes={"relu": {0: "batch"}})
    proto = onnx.load_from_string(data)
    # the first BatchNorm is folded into the convolution (bias included); the one after the ReLU stays
    assert [n.op_type for n in proto.graph.node] == ["Conv", "Relu", "BatchNormalization"]
    assert proto.graph.input[0].name == "relu" and proto.graph.output[0].name == "convolution"
    np.testing.assert_allclose(_run(data, x)[0], expected, rtol=1e-4, atol=1e-5)
    x = cl.randn(3, 3, 6, 6)
    with cl.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(_run(data, x)[0], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opset", [13, 17])
def test_older_opsets(opset):
    model = _Fn(lambda m, x: (F.softmax(x, 1).mean((2, 3)) + cl.ones(3) * 2).unsqueeze(0).sum(-1)).eval()
    data = _to_bytes(model, cl.randn(2, 3, 4, 4), input_names=["x"], opset_version=opset,
                     dynamic_axes={"x": {0: "b"}})
    proto = onnx.load_from_string(data)
    assert proto.opset_import[0].version == opset
    assert "ReduceMean" in {n.op_type for n in proto.graph.node}
    x = cl.randn(3, 3, 4, 4)
    with cl.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(_run(data, x)[0], expected, rtol=1e-4, atol=1e-6)


def test_failed_export_leaves_the_file_intact(tmp_path):
    class CumMax(nn.Module):
        def forward(self, x):
            return cl.cummax(x, 0)[0]
    path = tmp_path / "model.onnx"
    path.write_bytes(b"previous model")
    with pytest.raises(UnsupportedOperatorError,
                       match="^Exporting the operator 'aten::cummax' to ONNX opset version 20 is not supported$"):
        export(CumMax(), (cl.randn(3),), str(path))
    assert path.read_bytes() == b"previous model"
    assert os.listdir(tmp_path) == ["model.onnx"]        # no temporary file left behind


def test_errors():
    ln = _Fn(lambda m, x: m.ln(x))
    with pytest.raises(UnsupportedOperatorError, match="'aten::native_layer_norm' to ONNX opset version 16 is not "
                       "supported. Support for this operator was added in version 17, try exporting with this"):
        _to_bytes(ln, cl.randn(2, 5), opset_version=16)
    merge = _Fn(lambda m, x: x.reshape(2, -1, 5))     # splits the dynamic axis over two dimensions
    with pytest.raises(SymbolicValueError, match="dynamic axes"):
        _to_bytes(merge, cl.randn(4, 5), input_names=["x"], dynamic_axes={"x": {0: "b"}})
    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 9"):
        _to_bytes(ln, cl.randn(2, 5), opset_version=9)
    with pytest.warns(UserWarning, match="^Provided key inpt for dynamic axes is not a valid input/output name$"):
        _to_bytes(ln, cl.randn(2, 5), input_names=["input"], dynamic_axes={"inpt": {0: "b"}})


def test_without_onnx_package(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)    # import onnx now raises ImportError
    with pytest.raises(ModuleNotFoundError, match=r"needs the onnx package: pip install onnx==1\.23\.2"):
        _to_bytes(_Fn(lambda m, x: x + 1), cl.randn(2))


def test_same_graph_and_messages_as_torch():
    torch = pytest.importorskip("torch", reason="torch==2.13.0 not installed (make oracle): the export is "
                                "compared with torch.onnx.export(dynamo=False)")
    protos, said = [], []
    for lib in (cl, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2), lib.nn.Softmax(-1))
        model.train()
        buf = io.BytesIO()
        kw = dict(input_names=["input"], dynamic_axes={"input": [0]})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if lib is torch:
                torch.onnx.export(model, (torch.randn(2, 3),), buf, dynamo=False, **kw)
            else:
                export(model, (cl.randn(2, 3),), buf, **kw)
        assert model.training
        # torch adds DeprecationWarnings about its legacy exporter
        said.append([str(w.message) for w in caught if w.category is UserWarning])
        protos.append(onnx.load_from_string(buf.getvalue()))
    ours, theirs = protos
    assert said[0] == said[1] and len(said[0]) == 1
    assert [n.op_type for n in ours.graph.node] == [n.op_type for n in theirs.graph.node]
    assert [i.name for i in ours.graph.initializer] == [i.name for i in theirs.graph.initializer]
    assert [list(n.input)[1:] for n in ours.graph.node] == [list(n.input)[1:] for n in theirs.graph.node]
    assert ({(a.name, a.i, a.f) for a in ours.graph.node[0].attribute}
            == {(a.name, a.i, a.f) for a in theirs.graph.node[0].attribute})       # Gemm alpha, beta, transB
    assert _dims(ours.graph.input[0]) == _dims(theirs.graph.input[0]) == ["input_dynamic_axes_1", 3]
    assert ours.opset_import[0].version == theirs.opset_import[0].version == 20

    class CumMax(torch.nn.Module):
        def forward(self, x):
            return torch.cummax(x, 0)[0]
    with pytest.raises(torch.onnx.errors.UnsupportedOperatorError) as theirs_error:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(CumMax(), (torch.randn(3),), io.BytesIO(), dynamo=False)
    with pytest.raises(UnsupportedOperatorError) as ours_error:
        export(_Fn(lambda m, x: cl.cummax(x, 0)[0]), (cl.randn(3),), io.BytesIO())
    assert str(ours_error.value) == str(theirs_error.value)
    assert isinstance(ours_error.value, RuntimeError)
