"""The runtime bugs that opset.inline works around (docs/ops.md, "Portable form"), each as its minimal model, checked
to still be there: onnxruntime and onnx.reference compute each model as the ONNX spec says, the runtime does not.
When one of these fails, the runtime has fixed the bug: the work-around (and its row in docs/ops.md) can go."""
from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from runtimes import RUNTIMES, missing

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, initializers=(), version=20):
    graph = helper.make_graph(nodes, "bug", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])


def _spec(model, feeds) -> np.ndarray:
    """The model's output on onnxruntime, checked against onnx.reference."""
    ours = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(ours[0], ReferenceEvaluator(model).run(None, feeds)[0], rtol=1e-6)
    return ours[0]


def _on(runtime: str, model, feeds, tmp_path):
    reason = missing(runtime)
    if reason:
        pytest.skip(reason)
    return RUNTIMES[runtime].run(model, feeds, tmp_path)


def test_iree_grid_sample_zeros_padding_reads_outside_the_image(tmp_path):
    """IREE 3.13: a linear GridSample point outside the image reads the edge instead of zero padding."""
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode="linear", padding_mode="zeros", align_corners=0)
    model = _model([node], [("x", F, [1, 1, 2, 2]), ("grid", F, [1, 1, 1, 2])], [("y", F, [1, 1, 1, 1])])
    feeds = {"x": np.array([[[[1, 2], [3, 4]]]], np.float32), "grid": np.array([[[[1.5, 0.0]]]], np.float32)}
    assert _spec(model, feeds).item() == 0.0  # x = 1.5 is pixel 2.0: both taps (2, 3) past the last column, 1
    assert _on("iree", model, feeds, tmp_path)["y"].item() == pytest.approx(1.5)


def test_openvino_cubic_antialias_resize_differs(tmp_path):
    """OpenVINO 2026.4: an antialiased cubic Resize (downscale 4 -> 2) gives other weights than the ONNX spec's."""
    sizes = helper.make_tensor("sizes", I64, [4], [1, 1, 1, 2])
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic", antialias=1)
    model = _model([node], [("x", F, [1, 1, 1, 4])], [("y", F, [1, 1, 1, 2])], [sizes], version=19)
    feeds = {"x": np.array([[[[1, 2, 3, 4]]]], np.float32)}
    np.testing.assert_allclose(_spec(model, feeds).ravel(), [1.4902344, 3.5097656], rtol=1e-6)
    np.testing.assert_allclose(_on("openvino", model, feeds, tmp_path)["y"].ravel(), [1.40625, 3.59375], rtol=1e-6)


def test_tinygrad_gather_of_constant_2d_indices_fails(tmp_path):
    """tinygrad 0.14: Gather whose indices are a constant of rank 2 fails (it reads them as a flat list)."""
    indices = helper.make_tensor("indices", I64, [2, 2], [0, 1, 2, 0])
    node = helper.make_node("Gather", ["x", "indices"], ["y"], axis=0)
    model = _model([node], [("x", F, [3, 4])], [("y", F, [2, 2, 4])], [indices])
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(3, 4)}
    assert _spec(model, feeds).shape == (2, 2, 4)
    with pytest.raises(TypeError, match="'<' not supported"):
        _on("tinygrad", model, feeds, tmp_path)


def test_tinygrad_slice_without_axes_takes_every_axis(tmp_path):
    """tinygrad 0.14: Slice without axes on a 2-D tensor with one start takes axes 0 .. rank - 1, not 0 .. 0."""
    starts, ends = helper.make_tensor("starts", I64, [1], [0]), helper.make_tensor("ends", I64, [1], [2])
    node = helper.make_node("Slice", ["x", "starts", "ends"], ["y"])
    model = _model([node], [("x", F, [3, 4])], [("y", F, [2, 4])], [starts, ends])
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(3, 4)}
    assert _spec(model, feeds).shape == (2, 4)
    with pytest.raises(IndexError):
        _on("tinygrad", model, feeds, tmp_path)


def test_tract_resize_with_run_time_scales_fails(tmp_path):
    """tract 0.23: a Resize whose scales are a graph input does not load ("Neither sizes nor scales makes sense")."""
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")
    model = _model([node], [("x", F, [1, 1, 2, 2]), ("scales", F, [4])], [("y", F, None)], version=19)
    feeds = {"x": np.array([[[[1, 2], [3, 4]]]], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)}
    assert _spec(model, feeds).shape == (1, 1, 4, 4)
    with pytest.raises(Exception, match="Neither sizes nor scales makes sense"):
        _on("tract", model, feeds, tmp_path)


def test_onnx2tf_transposes_a_sliced_3d_index_tensor(tmp_path):
    """onnx2tf 1.29.24: the Slice of a constant 3-D int64 tensor is taken for an NCW tensor and transposed to NWC, so a
    Gather reading it as indices gives another shape (TF and .tflite alike): (1, 2, 1, 3, 2, 4) for (1, 2, 1, 2, 3, 4).
    The portable bodies' tap indices take this form (upsample_bilinear2d_grad: relative error 1.0)."""
    table = helper.make_tensor("table", I64, [1, 2, 6], [0, 1, 2, 9, 9, 9, 2, 1, 0, 9, 9, 9])
    bounds = [helper.make_tensor(name, I64, [1], [value]) for name, value in (("starts", 0), ("ends", 3), ("axes", 2))]
    nodes = [helper.make_node("Slice", ["table", "starts", "ends", "axes"], ["indices"]),
             helper.make_node("Gather", ["x", "indices"], ["y"], axis=2)]
    model = _model(nodes, [("x", F, [1, 2, 3, 4])], [("y", F, [1, 2, 1, 2, 3, 4])], [table, *bounds])
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)}
    assert _spec(model, feeds).shape == (1, 2, 1, 2, 3, 4)
    assert _on("onnx2tf-tf", model, feeds, tmp_path)["y"].shape == (1, 2, 1, 3, 2, 4)
    assert _on("onnx2tf-tflite", model, feeds, tmp_path)["y"].shape == (1, 2, 1, 3, 2, 4)


@pytest.mark.parametrize("runtime", ["tinygrad", "iree"])
def test_max_pool_indices_count_within_each_plane(runtime, tmp_path):
    """tinygrad 0.14 and IREE 3.13: MaxPool's Indices count within each (n, c) plane, not over the whole tensor as
    the ONNX spec says ((n C + c) H W + h W + w): the export's max-pool indices take them modulo H W
    (converters/torch_backward.py), right either way."""
    node = helper.make_node("MaxPool", ["x"], ["y", "indices"], kernel_shape=[2, 2], strides=[2, 2])
    model = _model([node], [("x", F, [1, 2, 2, 2])], [("y", F, [1, 2, 1, 1]), ("indices", I64, [1, 2, 1, 1])],
                   version=18)
    feeds = {"x": np.array([[[[0, 1], [0, 0]], [[0, 0], [2, 0]]]], np.float32)}
    ours = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    assert ours[1].ravel().tolist() == [1, 6]  # plane 1 starts at 4: its maximum (1, 0) is 4 + 2
    assert np.asarray(_on(runtime, model, feeds, tmp_path)["indices"]).ravel().tolist() == [1, 2]


def test_onnx2tf_contracts_axes_0_then_1_of_a_cube_wrongly(tmp_path):
    """onnx2tf 1.29.24: x [2, 4, 4, 4] contracted along axis 0, then along axis 1, each moved next to last by a
    Transpose, multiplied from the left by a constant matrix (a permutation here) and moved back: TF and .tflite give
    other numbers (max error 45; with x [2, 3, 4, 4] they are right: its layout guess where C, H and W are equal).
    The portable form leaves out the contractions with an identity matrix, where it met this (Resize's N and C)."""
    swap = helper.make_tensor("swap", F, [2, 2], [0, 1, 1, 0])
    roll = helper.make_tensor("roll", F, [4, 4], np.roll(np.eye(4), 1, axis=1).ravel().tolist())
    nodes = [helper.make_node("Transpose", ["x"], ["a"], perm=[2, 1, 0, 3]),
             helper.make_node("MatMul", ["swap", "a"], ["b"]),
             helper.make_node("Transpose", ["b"], ["c"], perm=[2, 1, 0, 3]),
             helper.make_node("Transpose", ["c"], ["d"], perm=[0, 2, 1, 3]),
             helper.make_node("MatMul", ["roll", "d"], ["e"]),
             helper.make_node("Transpose", ["e"], ["y"], perm=[0, 2, 1, 3])]
    model = _model(nodes, [("x", F, [2, 4, 4, 4])], [("y", F, [2, 4, 4, 4])], [swap, roll])
    x = np.arange(128, dtype=np.float32).reshape(2, 4, 4, 4)
    want = _spec(model, {"x": x})
    np.testing.assert_array_equal(want, np.roll(x[::-1], -1, axis=1))  # N swapped, C rolled
    for runtime in ("onnx2tf-tf", "onnx2tf-tflite"):
        assert np.abs(_on(runtime, model, {"x": x}, tmp_path)["y"] - want).max() > 1
