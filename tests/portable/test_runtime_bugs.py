"""The runtime bugs that opset.inline works around (docs/ops.md, "Portable form"), each as its minimal model, checked
to still be there: onnxruntime and onnx.reference compute each model as the ONNX spec says, the runtime does not.
When one of these fails, the runtime has fixed the bug: the work-around (and its row in docs/ops.md) can go."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from resample_grad import opset
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


def test_iree_argmax_select_last_index_over_dynamic_dims(tmp_path):
    """IREE 3.13: ArgMax with select_last_index over dims the model leaves dynamic gives other indices (one past the
    axis here); with static dims it is right. The separable bodies' band took its last row so; it is a ReduceMax of
    the row numbers read now (opset/_separable_body.py: band)."""
    x = np.array([[[0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 1]]], np.float32).transpose(0, 2, 1)  # [1, 4, 3]
    node = helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0, select_last_index=1)
    results = {}
    for dims in ([1, 4, 3], ["n", "rows", "columns"]):
        model = _model([node], [("x", F, dims)], [("y", I64, [None, None])], version=18)
        assert _spec(model, {"x": x}).tolist() == [[2, 1, 3]]
        results[str(dims[0])] = np.asarray(_on("iree", model, {"x": x}, tmp_path)["y"]).tolist()
    assert results == {"1": [[2, 1, 3]], "n": [[3, 4, 2]]}


def test_openvino_cubic_antialias_resize_differs(tmp_path):
    """OpenVINO 2026.4: an antialiased cubic Resize (downscale 4 -> 2) gives other weights than the ONNX spec's."""
    sizes = helper.make_tensor("sizes", I64, [4], [1, 1, 1, 2])
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic", antialias=1)
    model = _model([node], [("x", F, [1, 1, 1, 4])], [("y", F, [1, 1, 1, 2])], [sizes], version=19)
    feeds = {"x": np.array([[[[1, 2, 3, 4]]]], np.float32)}
    np.testing.assert_allclose(_spec(model, feeds).ravel(), [1.4902344, 3.5097656], rtol=1e-6)
    np.testing.assert_allclose(_on("openvino", model, feeds, tmp_path)["y"].ravel(), [1.40625, 3.59375], rtol=1e-6)


def test_tinygrad_gather_of_constant_2d_indices_fails(tmp_path):
    """tinygrad 0.14: Gather whose indices are a constant of rank 2 fails (it reads them as a flat list). torchlib
    writes as_strided so (kornia's warp_affine reads H[..., :2, :2]); the export writes a Gather at 1-D indices."""
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


# --------------------------------------------------------------------------- met in exported steps of client code
# (test_runtimes.py's library steps: kornia's warps, monai's BasicUNet); standard ops torch's exporter writes


# a square constant C read by one product as it is and by another transposed, in the forms torch's export writes
SHARED_CONSTANT_FORMS = {
    "transpose": [helper.make_node("MatMul", ["x", "c"], ["y"]),
                  helper.make_node("Transpose", ["c"], ["t"], perm=[1, 0]),
                  helper.make_node("MatMul", ["z", "t"], ["w"])],
    # C computed from constants through a Split (kornia's warp_affine step inverts a constant 3 x 3 matrix so)
    "split": [helper.make_node("Split", ["cc"], ["c", "c2"], axis=0, num_outputs=2),
              helper.make_node("MatMul", ["x", "c"], ["y"]),
              helper.make_node("Transpose", ["c"], ["t"], perm=[1, 0]), helper.make_node("MatMul", ["z", "t"], ["w"])],
    # a frozen linear layer: forward Gemm(x, W, transB=1), backward MatMul(g, W)
    "gemm": [helper.make_node("Gemm", ["z", "c"], ["w"], transB=1), helper.make_node("MatMul", ["x", "c"], ["y"])],
}


@pytest.mark.parametrize("form", list(SHARED_CONSTANT_FORMS))
def test_openvino_matmul_by_transpose_of_a_shared_constant(form, tmp_path):
    """OpenVINO 2026.4.1 (CPU, f32): a square constant C that is B of one product as it is and, transposed, of
    another: one of them computes with the other's C (silently; a rectangular C or a C fed as an input is right).
    torch's export of mm's backward has this form (aten.mm(grad, aten.t(B)) next to mm(x, B)): kornia's warp_affine
    step, relative errors 1.0 and 2.5 in two gradients. inline() avoids it: it folds the constant chain (a Split of
    constants included) and a Gemm's transposed constant, so C and its transpose are two initializers."""
    c = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    initializers = [numpy_helper.from_array(c, "c")] if form != "split" else [
        numpy_helper.from_array(np.concatenate([c, c + 9]), "cc")]
    model = _model(SHARED_CONSTANT_FORMS[form], [("x", F, [2, 3]), ("z", F, [2, 3])],
                   [("y", F, [2, 3]), ("w", F, [2, 3])], initializers)
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((2, 3)).astype(np.float32), "z": rng.standard_normal((2, 3)).astype(np.float32)}
    want = {"y": feeds["x"] @ c, "w": feeds["z"] @ c.T}
    np.testing.assert_allclose(_spec(model, feeds), want["y"], rtol=1e-6)
    ours = _on("openvino", model, feeds, tmp_path)
    wrong = {name for name in want if np.abs(ours[name] - want[name]).max() > 1}
    assert len(wrong) == 1  # (which one depends on the form)
    portable = _on("openvino", opset.inline(model), feeds, tmp_path)
    for name in want:
        np.testing.assert_allclose(portable[name], want[name], rtol=1e-5)


def test_tinygrad_scatter_nd_writes_into_its_data_input(tmp_path):
    """tinygrad 0.14: ScatterND updates its data tensor in place, so another reader of that tensor sees the update
    (a silent wrong number; two ScatterNDs on one data tensor raise "can't setitem on a tensor with other uses"
    instead). torchlib writes slice_scatter and index_put as ScatterND; the export writes the slice scatters as a
    Concat and the view scatters (kornia's H[..., -1, -1] += 1) as a Where (converters/torch_export.py)."""
    index = numpy_helper.from_array(np.array([[0]], np.int64), "index")
    nodes = [helper.make_node("Neg", ["x"], ["z"]), helper.make_node("ScatterND", ["z", "index", "u"], ["y"]),
             helper.make_node("Neg", ["z"], ["w"])]
    model = _model(nodes, [("x", F, [3]), ("u", F, [1])], [("y", F, [3]), ("w", F, [3])], [index], version=18)
    feeds = {"x": np.array([1, 2, 3], np.float32), "u": np.array([9], np.float32)}
    ours = _on("tinygrad", model, feeds, tmp_path)
    assert ours["y"].tolist() == [9, -2, -3]
    assert _spec(model, feeds).tolist() == [9, -2, -3]
    assert ReferenceEvaluator(model).run(None, feeds)[1].tolist() == [1, 2, 3]
    assert ours["w"].tolist() == [-9, 2, 3]


def test_tract_reads_a_constant_then_branch_whatever_the_condition(tmp_path):
    """tract 0.23.9: a node that reads the output of an If whose then branch is a constant (here zeros by Expand of a
    Shape) gets that constant, whatever the condition (silently; the If's output itself, a graph output, is right;
    a constant else branch is right). The grid samplers' empty-input guard had this form (their zeros as the then
    branch): the gradient of theta in the spatial transformer and registration steps, inlined by onnx.inliner, was
    zero on tract; their zeros are the else branch now (opset/_grid_body.py)."""
    zeros = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Expand", ["zero", "shape"], ["zeros"])]
    then = helper.make_graph(zeros, "then", [], [helper.make_tensor_value_info("zeros", F, None)])
    otherwise = helper.make_graph([helper.make_node("Neg", ["x"], ["negated"])], "else", [],
                                  [helper.make_tensor_value_info("negated", F, None)])
    nodes = [helper.make_node("Size", ["x"], ["size"]), helper.make_node("Equal", ["size", "none"], ["empty"]),
             helper.make_node("If", ["empty"], ["z"], then_branch=then, else_branch=otherwise),
             helper.make_node("Reshape", ["z", "flat"], ["y"])]
    constants = [numpy_helper.from_array(np.array(0, np.int64), "none"),
                 numpy_helper.from_array(np.array([6], np.int64), "flat"),
                 numpy_helper.from_array(np.array(0, np.float32), "zero")]
    model = _model(nodes, [("x", F, [2, 3])], [("y", F, [6])], constants, version=18)
    feeds = {"x": np.arange(1, 7, dtype=np.float32).reshape(2, 3)}
    assert _spec(model, feeds).tolist() == [-1, -2, -3, -4, -5, -6]
    assert _on("tract", model, feeds, tmp_path)["y"].tolist() == [0] * 6


@pytest.mark.parametrize("bound", [2 ** 31 - 1, 2 ** 62])
def test_tract_reshape_to_a_shape_checked_against_a_large_constant(bound, tmp_path):
    """tract 0.23.9: Reshape(x, Where(Shape(x) <= bound, Shape(x), -2)) with x of a static shape loads with a bound
    below 2^31 and fails ("Failed analyse for node ... Reshape") with 2^62. The bodies' shape checks had this form
    where ONNX's shape inference cannot see x's shape, so the folding leaves them (kornia's step); they compare with
    an upper bound only where there is one now (opset/_separable_body.py: checked)."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("LessOrEqual", ["shape", "bound"], ["ok"]),
             helper.make_node("Where", ["ok", "shape", "bad"], ["checked"]),
             helper.make_node("Reshape", ["x", "checked"], ["y"], allowzero=1)]
    constants = [numpy_helper.from_array(np.full(4, bound, np.int64), "bound"),
                 numpy_helper.from_array(np.array(-2, np.int64), "bad")]
    model = _model(nodes, [("x", F, [2, 3, 4, 5])], [("y", F, [2, 3, 4, 5])], constants, version=18)
    feeds = {"x": np.ones((2, 3, 4, 5), np.float32)}
    assert _spec(model, feeds).shape == (2, 3, 4, 5)
    if bound < 2 ** 31:
        assert _on("tract", model, feeds, tmp_path)["y"].shape == (2, 3, 4, 5)
    else:
        with pytest.raises(Exception, match="Failed analyse"):
            _on("tract", model, feeds, tmp_path)


def test_tract_constant_of_shape_without_value_is_float64(tmp_path):
    """tract 0.23.9: ConstantOfShape without a value gives float64 zeros (the spec: float32), so an Add to a float32
    tensor gives float64, and a ScatterND of float32 updates into them does not load ("Impossible to unify F32 with
    F64"). torch's export of zeros has this form: kornia's and monai BasicUNet's steps do not load."""
    shape = numpy_helper.from_array(np.array([3], np.int64), "shape")
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["zeros"]), helper.make_node("Add", ["x", "zeros"], ["y"])]
    model = _model(nodes, [("x", F, [3])], [("y", F, [3])], [shape], version=18)
    feeds = {"x": np.array([1, 2, 3], np.float32)}
    assert _spec(model, feeds).dtype == np.float32
    assert _on("tract", model, feeds, tmp_path)["y"].dtype == np.float64


def test_tract_negative_pad_aborts_the_process(tmp_path):
    """tract 0.23.9: a Pad with a negative pad (a crop, as the spec allows) panics in a function that cannot unwind,
    which aborts the whole process ("could not broadcast array from shape: [2, 3, 3] to: [2, 1, 3]"); so it runs in a
    child process here. torch's export of a pad's backward has this form (kornia's warp_affine step); the export
    writes it as a Slice (converters/torch_export.py)."""
    pads = numpy_helper.from_array(np.array([0, 0, 0, 0, -1, 0], np.int64), "pads")
    model = _model([helper.make_node("Pad", ["x", "pads"], ["y"])], [("x", F, [2, 3, 3])], [("y", F, [2, 2, 3])],
                   [pads], version=18)
    feeds = {"x": np.arange(18, dtype=np.float32).reshape(2, 3, 3)}
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, feeds)[0], feeds["x"][:, :2])  # (onnx.reference refuses it)
    if missing("tract"):
        pytest.skip(missing("tract"))
    onnx.save(model, tmp_path / "model.onnx")
    child = ("import sys, numpy as np, onnx; sys.path.insert(0, sys.argv[1]); from runtimes import run_tract; "
             "run_tract(onnx.load(sys.argv[2]), {'x': np.arange(18, dtype=np.float32).reshape(2, 3, 3)}, "
             "__import__('pathlib').Path(sys.argv[3]))")
    arguments = [str(pathlib.Path(__file__).parent), str(tmp_path / "model.onnx"), str(tmp_path)]
    done = subprocess.run([sys.executable, "-c", child, *arguments], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "could not broadcast array from shape: [2, 3, 3] to: [2, 1, 3]" in done.stderr


def test_iree_grouped_conv_transpose_does_not_compile(tmp_path):
    """IREE 3.13: ConvTranspose with group > 1 does not compile ("'tensor.collapse_shape' op expected reassociation
    map #0 to have size equal to the expanded rank (5), but it is 4"). The export's input gradient of a grouped
    convolution (kornia's pyrdown / pyrup blur, group 3) had this form; it now avoids it: one ConvTranspose of group
    1 per group (converters/torch_backward.py), which IREE computes as the spec says."""
    weight = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2), "weight")
    node = helper.make_node("ConvTranspose", ["x", "weight"], ["y"], group=2)
    model = _model([node], [("x", F, [1, 2, 2, 2])], [("y", F, [1, 2, 3, 3])], [weight], version=18)
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)}
    want = _spec(model, feeds)
    assert want.shape == (1, 2, 3, 3)
    with pytest.raises(Exception, match="expected reassociation map"):
        _on("iree", model, feeds, tmp_path)
    per_group = [helper.make_node("Split", ["x"], ["x0", "x1"], axis=1, num_outputs=2),
                 helper.make_node("Split", ["weight"], ["w0", "w1"], axis=0, num_outputs=2),
                 helper.make_node("ConvTranspose", ["x0", "w0"], ["y0"]),
                 helper.make_node("ConvTranspose", ["x1", "w1"], ["y1"]),
                 helper.make_node("Concat", ["y0", "y1"], ["y"], axis=1)]
    model = _model(per_group, [("x", F, [1, 2, 2, 2])], [("y", F, [1, 2, 3, 3])], [weight], version=18)
    np.testing.assert_allclose(_on("iree", model, feeds, tmp_path)["y"], want, rtol=1e-6)


# --------------------------------------------------------------------------- found with the example models


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


def test_onnx2tf_conv_weight_from_a_graph_input_fails(tmp_path):
    """onnx2tf 1.29.24: a Conv whose weight is a graph input does not convert (IndexError): Conv.make_node reads the
    weight's producer (graph_node.i(1)), which a graph input has not, and then get_weights_constant_or_variable reads
    const_or_var.inputs[0] of it (PINTO0309/onnx2tf onnx2tf/ops/Conv.py:66-80 and
    onnx2tf/utils/common_functions.py:600-601 at 76bbfdd2594c63b490b90624763496fa30f20fac, tag 1.29.24): the weight
    must be a constant. A training step's parameters are graph inputs: unet_training_step does not convert."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[2, 2])
    model = _model([node], [("x", F, [1, 1, 3, 3]), ("w", F, [1, 1, 2, 2])], [("y", F, [1, 1, 2, 2])])
    feeds = {"x": np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3), "w": np.array([[[[1, 2], [3, 4]]]], np.float32)}
    np.testing.assert_array_equal(_spec(model, feeds), [[[[27, 37], [57, 67]]]])  # 0 1 + 1 2 + 3 3 + 4 4, ...
    for runtime in ("onnx2tf-tf", "onnx2tf-tflite"):
        with pytest.raises(RuntimeError, match=r"(?s)get_weights_constant_or_variable.*IndexError"):
            _on(runtime, model, feeds, tmp_path)


def test_onnx2tf_if_branch_reading_a_main_graph_initializer_fails(tmp_path):
    """onnx2tf 1.29.24: an If branch whose node reads an initializer of the main graph does not convert (KeyError):
    the branch's nodes are converted with the main graph's table of converted tensors, which holds no initializer
    (PINTO0309/onnx2tf onnx2tf/ops/If.py:75 and onnx2tf/utils/common_functions.py:6585-6588 at
    76bbfdd2594c63b490b90624763496fa30f20fac). inline()'s folding leaves such Ifs (ResizeGrad's refusal of invalid
    run-time scales): the portable ResizeGrad refuses by a Where instead (_resize_body.resize_grad_body)."""
    c = numpy_helper.from_array(np.array([1, 2, 3], np.float32), "c")
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    then = helper.make_graph([helper.make_node("Add", ["x", "c"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", F, [3])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", F, [3])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Greater", ["s", "zero"], ["p"]),
             helper.make_node("If", ["p"], ["y"], then_branch=then, else_branch=other)]
    model = _model(nodes, [("x", F, [3])], [("y", F, [3])], [c, zero], version=18)
    feeds = {"x": np.array([1, 1, 1], np.float32)}
    assert _spec(model, feeds).tolist() == [2, 3, 4]
    for runtime in ("onnx2tf-tf", "onnx2tf-tflite"):
        with pytest.raises(RuntimeError, match="KeyError: 'c'"):
            _on(runtime, model, feeds, tmp_path)


def test_onnx2tf_constant_vector_minus_a_run_time_column_fails(tmp_path):
    """onnx2tf 1.29.24: Sub(a constant [4], a column [n, 1] of run-time length n) does not convert ("axes don't match
    array"): explicit_broadcast takes the shapes for NCHW ones to transpose and transposes the 1-D constant by a
    permutation of rank 2 (PINTO0309/onnx2tf onnx2tf/utils/common_functions.py:1145-1152 at
    76bbfdd2594c63b490b90624763496fa30f20fac). ResizeGrad's cubic taps with fed scales had this form: their constants
    are [1, 4] (_resize_body.cubic_matrix)."""
    offsets = numpy_helper.from_array(np.array([-1, 0, 1, 2], np.float32), "offsets")
    scalars = [numpy_helper.from_array(np.array(v, np.float32), name) for name, v in (("zero", 0), ("one", 1))]
    axis = numpy_helper.from_array(np.array([1], np.int64), "axis")
    nodes = [helper.make_node("ReduceMax", ["n"], ["length"], keepdims=0),
             helper.make_node("Range", ["zero", "length", "one"], ["row"]),
             helper.make_node("Unsqueeze", ["row", "axis"], ["column"]),
             helper.make_node("Sub", ["offsets", "column"], ["y"])]
    model = _model(nodes, [("n", F, [1])], [("y", F, None)], [offsets, *scalars, axis])
    feeds = {"n": np.array([3], np.float32)}
    np.testing.assert_array_equal(_spec(model, feeds), [[-1, 0, 1, 2], [-2, -1, 0, 1], [-3, -2, -1, 0]])
    for runtime in ("onnx2tf-tf", "onnx2tf-tflite"):
        with pytest.raises(RuntimeError, match="axes don't match array"):
            _on(runtime, model, feeds, tmp_path)


def test_onnx2tf_conv_transpose_without_kernel_shape_fails(tmp_path):
    """onnx2tf 1.29.24: a ConvTranspose without its optional kernel_shape (the spec: inferred from W) does not convert
    ("axes don't match array"): ConvTranspose.make_node takes the kernel's rank from kernel_shape alone, 0 here, and
    get_weights_constant_or_variable transposes the 4-D weight by a permutation of rank 2 (PINTO0309/onnx2tf
    onnx2tf/ops/ConvTranspose.py:62-77 and onnx2tf/utils/common_functions.py:597-598 at
    76bbfdd2594c63b490b90624763496fa30f20fac). torch's export of a convolution's input gradient has this form
    (converters/torch_backward.py): kornia's pyrdown / pyrup step does not convert."""
    weight = numpy_helper.from_array(np.array([[[[1, 2], [3, 4]]]], np.float32), "weight")
    model = _model([helper.make_node("ConvTranspose", ["x", "weight"], ["y"])], [("x", F, [1, 1, 2, 2])],
                   [("y", F, [1, 1, 3, 3])], [weight], version=18)
    feeds = {"x": np.ones((1, 1, 2, 2), np.float32)}
    np.testing.assert_array_equal(_spec(model, feeds), [[[[1, 3, 2], [4, 10, 6], [3, 7, 4]]]])
    for runtime in ("onnx2tf-tf", "onnx2tf-tflite"):
        with pytest.raises(RuntimeError, match=r"(?s)get_weights_constant_or_variable.*axes don't match array"):
            _on(runtime, model, feeds, tmp_path)
