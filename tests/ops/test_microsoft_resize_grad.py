"""com.microsoft::ResizeGrad (libresample_grad_training_ops), the op onnxruntime-training's gradient builder emits
for Resize: inputs dY, X, optional roi, optional scales (no sizes); here on plain onnxruntime's CPU.

- every configuration the op takes (modes, coordinate modes, nearest modes, cubic A, exclude_outside, antialias,
  axes, roi, scales constant or fed at run time, or no scales: the forward took sizes), ranks 3 to 5, float16 /
  float / double: dX equals the adjoint of onnxruntime's own forward Resize (per resized axis, its float Resize of
  an identity matrix: the weights M_a; dX = dY through every M_a^T, in double), an independent source;
- the torch-exported configurations: dX equals torch autograd of F.interpolate;
- bad input: errors naming the op, the input and what was expected;
- the library is separate for a reason: a custom com.microsoft domain breaks onnxruntime's fusions for models that
  do not import com.microsoft, while libresample_grad_ops leaves them alone.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

from resample_grad import runtime, training

torch = pytest.importorskip("torch")
F = torch.nn.functional

ELEM = {"float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}
TOLERANCE = {"float16": 4e-3, "float32": 1e-5, "float64": 1e-12}


def axis_matrix(attrs, length, scale=None, size=None, roi=None):
    """onnxruntime's weights along one axis: its float Resize of the identity [length, length] along axis 0 only
    (scale or size; roi: (start, end) for tf_crop_and_resize), minus its Resize of zeros (the constant it
    extrapolates), as a float64 [out, in] matrix: the float32 weights, never a product of two of them."""
    attrs = {k: v for k, v in attrs.items() if k != "axes"}
    inits, names = [], ["x", "", "", ""]
    if roi is not None:
        inits.append(helper.make_tensor("roi", TensorProto.FLOAT, [4], [roi[0], 0.0, roi[1], 1.0]))
        names[1] = "roi"
    if scale is not None:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [2], [scale, 1.0]))
        names[2] = "scales"
    else:
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [2], [size, length]))
        names[3] = "sizes"
    node = helper.make_node("Resize", names, ["y"], **attrs)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 19)])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    identity = session.run(None, {"x": np.eye(length, dtype=np.float32)})[0].astype(np.float64)
    return identity - session.run(None, {"x": np.zeros((length, length), np.float32)})[0]


def resize_adjoint(x_shape, attrs, roi=None, scales=None, sizes=None):
    """(the adjoint of onnxruntime's Resize: a function dY -> dX in float64, dY's shape). Resize is separable: per
    resized axis, onnxruntime's weights (axis_matrix); roi / scales / sizes cover every axis, or `axes`'."""
    rank = len(x_shape)
    listed = [a % rank for a in attrs.get("axes", range(rank))]
    matrices = {}
    for k, axis in enumerate(listed):
        axis_roi = (roi[k], roi[len(listed) + k]) if roi is not None else None
        if scales is not None and scales[k] == 1.0 and axis_roi is None:
            continue
        if sizes is not None and sizes[k] == x_shape[axis]:
            continue
        matrices[axis] = axis_matrix(attrs, x_shape[axis], scale=None if scales is None else scales[k],
                                     size=None if sizes is None else sizes[k], roi=axis_roi)
    dy_shape = [matrices[a].shape[0] if a in matrices else n for a, n in enumerate(x_shape)]

    def adjoint(dy):
        dx = dy.astype(np.float64)
        for axis, matrix in matrices.items():
            dx = np.moveaxis(np.tensordot(matrix.T, np.moveaxis(dx, axis, 0), axes=([1], [0])), 0, axis)
        return dx

    return adjoint, dy_shape


def grad_model(attrs, dtype, roi=None, scales=None, runtime_scales=False, input_count=None):
    """One com.microsoft::ResizeGrad node: dY, X (dtype), roi (an initializer), scales (an initializer or a graph
    input); input_count cuts the node's inputs (2: dY and X only)."""
    elem = ELEM[dtype]
    inputs = [helper.make_tensor_value_info("dY", elem, None), helper.make_tensor_value_info("X", elem, None)]
    inits, names = [], ["dY", "X", "", ""]
    if roi is not None:
        inits.append(helper.make_tensor("roi", elem, [len(roi)], np.array(roi, np.float32).astype(
            helper.tensor_dtype_to_np_dtype(elem)).tolist()))
        names[2] = "roi"
    if scales is not None:
        names[3] = "scales"
        if runtime_scales:
            inputs.append(helper.make_tensor_value_info("scales", TensorProto.FLOAT, ["count"]))
        else:
            inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales))
    if input_count is not None:
        names = names[:input_count]
    node = helper.make_node("ResizeGrad", names, ["dX"], domain="com.microsoft", name="rg", **attrs)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("dX", elem, None)], initializer=inits)
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 19),
                                                                 helper.make_opsetid("com.microsoft", 1)])


def run_kernel(model, feeds, threads=1):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 4
    options.register_custom_ops_library(runtime.training_library_path())
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


# name: (x shape, attrs, roi, scales, sizes); scales given -> the node gets them; sizes -> the node gets no scales
CONFIGURATIONS = {
    "linear_half_pixel": ([2, 3, 5, 7], dict(mode="linear"), None, [1, 1, 2.0, 1.5], None),
    "linear_half_pixel_symmetric": ([2, 3, 5, 7],
                                    dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
                                    None, [1, 1, 1.7, 0.6], None),
    "linear_pytorch_half_pixel": ([1, 2, 6, 4],
                                  dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
                                  None, [1, 1, 2.5, 3.0], None),
    "linear_align_corners_sizes": ([2, 3, 5, 7], dict(mode="linear", coordinate_transformation_mode="align_corners"),
                                   None, None, [2, 3, 9, 11]),
    "linear_asymmetric": ([2, 3, 5, 7], dict(mode="linear", coordinate_transformation_mode="asymmetric"), None,
                          [1, 1, 1.3, 2.0], None),
    "linear_tf_crop_and_resize": ([1, 2, 6, 5], dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                                                     extrapolation_value=3.0),
                                  [0, 0, 0.2, -0.3, 1, 1, 0.9, 1.2], [1, 1, 1.5, 2.0], None),
    "nearest_round_prefer_floor": ([2, 3, 5, 7], dict(mode="nearest"), None, [1, 1, 2.5, 1.5], None),
    "nearest_round_prefer_ceil_sizes": ([2, 3, 5, 7], dict(mode="nearest", nearest_mode="round_prefer_ceil"),
                                        None, None, [2, 3, 8, 3]),
    "nearest_floor_asymmetric": ([2, 3, 5, 7], dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                                    nearest_mode="floor"), None, [1, 1, 2.0, 3.0], None),
    "nearest_ceil_tf_half_pixel_for_nn": ([2, 3, 5, 7], dict(mode="nearest", nearest_mode="ceil",
                                                             coordinate_transformation_mode="tf_half_pixel_for_nn"),
                                          None, [1, 1, 1.6, 0.7], None),
    "cubic_a075": ([2, 3, 5, 7], dict(mode="cubic"), None, [1, 1, 2.0, 1.5], None),
    "cubic_a05_exclude_outside": ([2, 3, 5, 7], dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1), None,
                                  [1, 1, 1.4, 2.2], None),
    "cubic_align_corners_sizes": ([2, 3, 5, 7], dict(mode="cubic", coordinate_transformation_mode="align_corners"),
                                  None, None, [2, 3, 12, 4]),
    "antialias_linear_down": ([1, 2, 9, 11], dict(mode="linear", antialias=1), None, [1, 1, 0.5, 0.4], None),
    "antialias_cubic_down_sizes": ([1, 2, 9, 11],
                                   dict(mode="cubic", antialias=1, cubic_coeff_a=-0.5, exclude_outside=1),
                                   None, None, [1, 2, 4, 3]),
    "axes_scales": ([2, 3, 5, 7], dict(mode="linear", axes=[2, 3]), None, [1.6, 2.0], None),
    "negative_axes_sizes": ([2, 3, 5, 7],
                            dict(mode="linear", coordinate_transformation_mode="align_corners", axes=[-1]),
                            None, None, [13]),
    "rank3_nearest": ([2, 3, 7],
                      dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
                      None, [1, 1, 2.5], None),
    "rank5_linear_sizes": ([1, 2, 3, 4, 5], dict(mode="linear"), None, None, [1, 2, 6, 7, 9]),
    "identity_shape": ([2, 3, 5, 7], dict(mode="linear"), None, [1, 1, 1, 1], None),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_kernel_is_the_adjoint_of_onnxruntimes_resize(name, dtype):
    x_shape, attrs, roi, scales, sizes = CONFIGURATIONS[name]
    adjoint, dy_shape = resize_adjoint(x_shape, attrs, roi, scales, sizes)
    rng = np.random.default_rng(len(name))
    numpy_dtype = helper.tensor_dtype_to_np_dtype(ELEM[dtype])
    dy = rng.standard_normal(dy_shape).astype(numpy_dtype)
    x = rng.standard_normal(x_shape).astype(numpy_dtype)
    model = grad_model(attrs, dtype, roi=roi, scales=scales, input_count=None if scales is not None else 2)
    dx = run_kernel(model, {"dY": dy, "X": x})
    expected = adjoint(dy)
    assert dx.dtype == numpy_dtype and dx.shape == tuple(x_shape)
    error = np.abs(dx.astype(np.float64) - expected).max() / max(np.abs(expected).max(), 1.0)
    assert error <= TOLERANCE[dtype], f"{name} {dtype}: relative error {error:.2e}"


def test_kernel_takes_scales_at_run_time_and_an_empty_scales_tensor():
    x_shape, attrs = [2, 3, 5, 7], dict(mode="linear")
    adjoint, dy_shape = resize_adjoint(x_shape, attrs, scales=[1, 1, 1.7, 2.0])
    rng = np.random.default_rng(0)
    dy, x = rng.standard_normal(dy_shape).astype(np.float32), rng.standard_normal(x_shape).astype(np.float32)
    model = grad_model(attrs, "float32", scales=[1, 1, 1.7, 2.0], runtime_scales=True)
    dx = run_kernel(model, {"dY": dy, "X": x, "scales": np.array([1, 1, 1.7, 2.0], np.float32)})
    np.testing.assert_allclose(dx, adjoint(dy), rtol=0, atol=1e-5)
    # scales fed as an empty tensor: the forward took sizes, which are dY's shape
    adjoint, _ = resize_adjoint(x_shape, attrs, sizes=dy_shape)
    dx = run_kernel(model, {"dY": dy, "X": x, "scales": np.zeros(0, np.float32)})
    np.testing.assert_allclose(dx, adjoint(dy), rtol=0, atol=1e-5)


# torch modes as the TorchScript exporter writes their Resize (the attributes onnxruntime's builder copies)
TORCH_MODES = {
    "nearest": (dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), {}),
    "bilinear": (dict(mode="linear", coordinate_transformation_mode="half_pixel"), dict(align_corners=False)),
    "bilinear_align_corners": (dict(mode="linear", coordinate_transformation_mode="align_corners"),
                               dict(align_corners=True)),
    "bicubic": (dict(mode="cubic", coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75),
                dict(align_corners=False)),
    "trilinear": (dict(mode="linear", coordinate_transformation_mode="half_pixel"), dict(align_corners=False)),
}


@pytest.mark.parametrize("with_scales", [True, False], ids=["scales", "size"])
@pytest.mark.parametrize("mode", list(TORCH_MODES))
def test_kernel_equals_torch_autograd_of_interpolate(mode, with_scales):
    attrs, kwargs = TORCH_MODES[mode]
    x_shape = [2, 3, 3, 4, 5] if mode == "trilinear" else [2, 3, 5, 6]
    spatial = len(x_shape) - 2
    x = torch.randn(x_shape, dtype=torch.float64, requires_grad=True)
    torch_mode = {"bilinear_align_corners": "bilinear"}.get(mode, mode)
    if with_scales:
        y = F.interpolate(x, scale_factor=2, mode=torch_mode, **kwargs)
    else:
        y = F.interpolate(x, size=[2 * n + 1 for n in x_shape[2:]], mode=torch_mode, **kwargs)
    dy = torch.randn(y.shape, dtype=torch.float64)
    (expected,) = torch.autograd.grad(y, x, dy)
    model = grad_model(attrs, "float32", scales=[1.0, 1.0] + [2.0] * spatial if with_scales else None)
    dx = run_kernel(model, {"dY": dy.numpy().astype(np.float32), "X": x.detach().numpy().astype(np.float32)})
    np.testing.assert_allclose(dx, expected.numpy(), rtol=1e-5, atol=1e-5)


def test_kernel_result_does_not_depend_on_threads():
    x_shape, attrs = [4, 8, 33, 40], dict(mode="cubic")
    rng = np.random.default_rng(1)
    dy = rng.standard_normal([4, 8, 66, 100]).astype(np.float32)
    x = np.zeros(x_shape, np.float32)
    model = grad_model(attrs, "float32", scales=[1, 1, 2.0, 2.5])
    results = [run_kernel(model, {"dY": dy, "X": x}, threads) for threads in (1, 2, 4)]
    assert all(np.array_equal(results[0], r) for r in results[1:])


# --------------------------------------------------------------------------- bad input

BAD = {
    "not_larger without scales": (dict(mode="linear", keep_aspect_ratio_policy="not_larger"), None, [1, 3, 5, 7],
                                  [1, 3, 10, 14],
                                  "com.microsoft::ResizeGrad (node 'rg'): keep_aspect_ratio_policy 'not_larger' needs "
                                  "input 'scales': without it the forward's scale comes from the shapes of dY and X"),
    "scales of the wrong length": (dict(mode="linear"), [2.0, 2.0], [1, 3, 5, 7], [1, 3, 10, 14],
                                   "com.microsoft::ResizeGrad (node 'rg'): input 'scales' must have 4 values (one per "
                                   "axis), got 2"),
    "dY not what the scales give": (dict(mode="linear"), [1, 1, 2.0, 2.0], [1, 3, 5, 7], [1, 3, 10, 13],
                                    "com.microsoft::ResizeGrad (node 'rg'): input 'dY' has shape [1, 3, 10, 13] but "
                                    "Resize of X [1, 3, 5, 7] with these scales gives [1, 3, 10, 14]"),
    "dY not X's shape outside axes": (dict(mode="linear", axes=[2, 3]), None, [1, 3, 5, 7], [1, 2, 10, 14],
                                      "com.microsoft::ResizeGrad (node 'rg'): input 'dY' has shape [1, 2, 10, 14] but "
                                      "Resize of X [1, 3, 5, 7] with sizes = dY's lengths along the resized axes (no "
                                      "scales given) gives [1, 3, 10, 14]"),
    "dY of another rank": (dict(mode="linear"), None, [1, 3, 5, 7], [3, 10, 14],
                           "com.microsoft::ResizeGrad (node 'rg'): input 'dY' must have the rank of X (4), got shape "
                           "[3, 10, 14]"),
    "zero length without scales": (dict(mode="nearest"), None, [1, 3, 5, 7], [1, 3, 0, 14],
                                   "com.microsoft::ResizeGrad (node 'rg'): input 'dY' has shape [1, 3, 0, 14]: without "
                                   "input 'scales' its lengths along the resized axes are the forward's sizes, which "
                                   "Resize needs > 0"),
    "unknown mode": (dict(mode="area"), None, [1, 3, 5, 7], [1, 3, 5, 7],
                     "com.microsoft::ResizeGrad (node 'rg'): attribute 'mode' must be one of 'nearest', 'linear', "
                     "'cubic', got 'area'"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_kernel_bad_input_names_what_was_wrong(name):
    attrs, scales, x_shape, dy_shape, message = BAD[name]
    model = grad_model(attrs, "float32", scales=scales, input_count=None if scales is not None else 2)
    with pytest.raises(Exception) as caught:
        run_kernel(model, {"dY": np.ones(dy_shape, np.float32), "X": np.ones(x_shape, np.float32)})
    assert message in str(caught.value)


# --------------------------------------------------------------------------- why a separate library

def _conv_relu_model(import_microsoft: bool) -> onnx.ModelProto:
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[helper.make_tensor("w", TensorProto.FLOAT, [2, 2, 3, 3], [0.1] * 36)])
    imports = [helper.make_opsetid("", 18)] + ([helper.make_opsetid("com.microsoft", 1)] if import_microsoft else [])
    return helper.make_model(graph, ir_version=9, opset_imports=imports)


def _session(model, *libraries):
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL  # Conv + Relu -> FusedConv
    for library in libraries:
        options.register_custom_ops_library(library)
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def test_main_library_keeps_onnxruntimes_fusions_and_the_training_library_needs_the_import():
    x = {"x": np.ones((1, 2, 6, 6), np.float32)}
    expected = _session(_conv_relu_model(False)).run(None, x)[0]
    np.testing.assert_array_equal(_session(_conv_relu_model(False), runtime.library_path()).run(None, x)[0], expected)
    # what resample_grad.training works around by adding a com.microsoft import to every artifact
    with pytest.raises(Exception, match="FusedConv"):
        _session(_conv_relu_model(False), runtime.training_library_path())
    both = _session(_conv_relu_model(True), runtime.library_path(), runtime.training_library_path())
    np.testing.assert_array_equal(both.run(None, x)[0], expected)


def test_training_library_exports_only_register_custom_ops():
    symbols = subprocess.run(["nm", "-D", "--defined-only", runtime.training_library_path()], capture_output=True,
                             text=True).stdout
    assert {line.split()[-1] for line in symbols.splitlines() if " T " in line} == {"RegisterCustomOps"}


# --------------------------------------------------------------------------- without onnxruntime-training

def test_training_says_how_to_get_onnxruntime_training():
    if training.available():
        pytest.skip("onnxruntime-training is installed here")
    with pytest.raises(training.TrainingUnavailable, match=r"onnxruntime-training-cpu==1\.19\.2"):
        training.generate_artifacts(_conv_relu_model(False), requires_grad=["w"])
    options = training.session_options()  # registering both libraries needs no training API
    assert isinstance(options, onnxruntime.SessionOptions)


def test_missing_onnxruntime_is_one_line_saying_how_to_install_it(tmp_path):
    from resample_grad import models

    path = tmp_path / "model.onnx"
    onnx.save(models.grid_sampler_2d_grad(), str(path))
    code = ("import sys; sys.modules['onnxruntime'] = None\n"
            "from resample_grad.cli import main\n"
            f"sys.exit(main(['run', {str(path)!r}, '--path', 'kernels']))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("resample-grad: error: resample_grad: onnxruntime is not installed")
    assert 'pip install "resample-grad[runtime]"' in result.stderr
