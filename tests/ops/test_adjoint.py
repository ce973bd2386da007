"""Checks that need no torch: onnxruntime's own GridSample and Resize are the forward.

- adjoint: for the parts linear in the input, <grad_output, forward(x)> == <backward(grad_output), x>;
- finite differences of grad_grid through GridSample (double precision).
"""
from __future__ import annotations

import itertools

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

from conftest import one_node_model, run_model

RNG_SEED = 20261122


def forward_session(node, inputs, elem=TensorProto.FLOAT, initializers=(), opset_version=18):
    graph = helper.make_graph([node], "forward",
                              [helper.make_tensor_value_info(n, elem, list(s)) for n, s in inputs.items()],
                              [helper.make_tensor_value_info("y", elem, None)], initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset_version)], ir_version=9)
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def assert_adjoint(lhs_terms, rhs_terms):
    lhs, rhs = lhs_terms.sum(), rhs_terms.sum()
    magnitude = np.abs(lhs_terms).sum() + np.abs(rhs_terms).sum()
    assert abs(lhs - rhs) <= 1e-5 * magnitude, (lhs, rhs)


@pytest.mark.parametrize("mode,padding,corners", list(itertools.product(
    ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [0, 1])))
def test_grid_sample_adjoint(mode, padding, corners, path):
    rng = np.random.default_rng(RNG_SEED)
    n, c, hi, wi, ho, wo = 2, 3, 5, 6, 4, 7
    x = rng.standard_normal((n, c, hi, wi)).astype(np.float32)
    grid = rng.uniform(-1.3, 1.3, (n, ho, wo, 2)).astype(np.float32)
    go = rng.standard_normal((n, c, ho, wo)).astype(np.float32)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding, align_corners=corners)
    y = forward_session(node, {"x": x.shape, "grid": grid.shape}).run(None, {"x": x, "grid": grid})[0]
    model = one_node_model("GridSampler2DGrad", {"grad_output": go.shape, "input": x.shape, "grid": grid.shape},
                           ["grad_input", ""],
                           dict(interpolation_mode=mode, padding_mode=padding, align_corners=corners))
    (grad_input,) = run_model(model, {"grad_output": go, "input": x, "grid": grid}, path)
    assert_adjoint((go.astype(np.float64) * y), (grad_input.astype(np.float64) * x))


@pytest.mark.parametrize("mode,padding,corners", list(itertools.product(
    ["bilinear", "bicubic"], ["zeros", "border", "reflection"], [0, 1])))
def test_grid_sample_grid_gradient_finite_differences(mode, padding, corners, path):
    rng = np.random.default_rng(RNG_SEED + 1)
    n, c, hi, wi, ho, wo = 1, 2, 5, 4, 3, 3
    x = rng.standard_normal((n, c, hi, wi))
    grid = rng.uniform(-1.2, 1.2, (n, ho, wo, 2))
    go = rng.standard_normal((n, c, ho, wo))
    # GridSample-20 (modes spelled linear / cubic) has onnxruntime's double kernel
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode={"bilinear": "linear", "bicubic": "cubic"}[mode],
                            padding_mode=padding, align_corners=corners)
    forward = forward_session(node, {"x": x.shape, "grid": grid.shape}, TensorProto.DOUBLE, opset_version=20)

    def loss(g):
        return float((go * forward.run(None, {"x": x, "grid": g})[0]).sum())

    eps = 1e-6
    numeric = np.zeros_like(grid)
    for index in np.ndindex(grid.shape):
        up, down = grid.copy(), grid.copy()
        up[index] += eps
        down[index] -= eps
        numeric[index] = (loss(up) - loss(down)) / (2 * eps)
    model = one_node_model("GridSampler2DGrad", {"grad_output": go.shape, "input": x.shape, "grid": grid.shape},
                           ["", "grad_grid"],
                           dict(interpolation_mode=mode, padding_mode=padding, align_corners=corners),
                           dtype="float64")
    (grad_grid,) = run_model(model, {"grad_output": go, "input": x, "grid": grid}, path)
    np.testing.assert_allclose(grad_grid, numeric, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(numeric).max()))


RESIZE_MODES = {  # ResizeBilinearV2Grad attributes -> onnx Resize attributes
    "align_corners": (dict(align_corners=1, half_pixel_centers=0),
                      dict(mode="linear", coordinate_transformation_mode="align_corners")),
    "half_pixel": (dict(align_corners=0, half_pixel_centers=1),
                   dict(mode="linear", coordinate_transformation_mode="half_pixel")),
    "tf_legacy": (dict(align_corners=0, half_pixel_centers=0),
                  dict(mode="linear", coordinate_transformation_mode="asymmetric")),
}


@pytest.mark.parametrize("mode", list(RESIZE_MODES))
@pytest.mark.parametrize("in_hw,out_hw", [((5, 7), (11, 3)), ((4, 4), (8, 8)), ((9, 6), (4, 5))])
def test_resize_bilinear_adjoint(mode, in_hw, out_hw, path):
    ours, theirs = RESIZE_MODES[mode]
    rng = np.random.default_rng(RNG_SEED + 2)
    x = rng.standard_normal((2, 3, *in_hw)).astype(np.float32)
    go = rng.standard_normal((2, 3, *out_hw)).astype(np.float32)
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], [2, 3, *out_hw])
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **theirs)
    y = forward_session(node, {"x": x.shape}, initializers=[sizes]).run(None, {"x": x})[0]
    model = one_node_model("ResizeBilinearV2Grad", {"grads": go.shape, "original_image": x.shape}, ["y"], ours)
    (grad,) = run_model(model, {"grads": go, "original_image": x}, path)
    assert_adjoint(go.astype(np.float64) * y, grad.astype(np.float64) * x)


@pytest.mark.parametrize("in_hw,scales", [((5, 6), (2.0, 1.5)), ((8, 9), (0.5, 0.75))])
@pytest.mark.parametrize("mode", ["half_pixel", "tf_legacy"])
def test_resize_bilinear_adjoint_with_scales(mode, in_hw, scales, path):
    """A scale given to Resize and to the gradient: index scale 1 / scale on both sides."""
    ours, theirs = RESIZE_MODES[mode]
    out_hw = tuple(int(np.floor(s * d)) for s, d in zip(scales, in_hw, strict=True))
    rng = np.random.default_rng(RNG_SEED + 3)
    x = rng.standard_normal((1, 2, *in_hw)).astype(np.float32)
    go = rng.standard_normal((1, 2, *out_hw)).astype(np.float32)
    scale_tensor = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1.0, 1.0, *scales])
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **theirs)
    y = forward_session(node, {"x": x.shape}, initializers=[scale_tensor]).run(None, {"x": x})[0]
    model = one_node_model("ResizeBilinearV2Grad", {"grads": go.shape, "original_image": x.shape}, ["y"],
                           dict(ours, scales=list(scales)))
    (grad,) = run_model(model, {"grads": go, "original_image": x}, path)
    assert_adjoint(go.astype(np.float64) * y, grad.astype(np.float64) * x)


@pytest.mark.parametrize("in_hw,out_hw", [((5, 7), (11, 3)), ((4, 4), (8, 8)), ((13, 6), (5, 5)), ((1, 3), (4, 9))])
def test_nearest_exact_adjoint(in_hw, out_hw, path):
    """Resize nearest with half_pixel + round_prefer_ceil is nearest-exact (how torch exports it)."""
    rng = np.random.default_rng(RNG_SEED + 4)
    x = rng.standard_normal((2, 3, *in_hw)).astype(np.float32)
    go = rng.standard_normal((2, 3, *out_hw)).astype(np.float32)
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], [2, 3, *out_hw])
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                            coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil")
    y = forward_session(node, {"x": x.shape}, initializers=[sizes]).run(None, {"x": x})[0]
    model = one_node_model("UpsampleNearestExact2dGrad", {"grad_output": go.shape}, ["grad_input"],
                           dict(input_size=list(x.shape)))
    (grad,) = run_model(model, {"grad_output": go}, path)
    assert_adjoint(go.astype(np.float64) * y, grad.astype(np.float64) * x)
    # the 1d op on the rows of the same problem
    model = one_node_model("UpsampleNearestExact1dGrad", {"grad_output": (2, 3, out_hw[1])}, ["grad_input"],
                           dict(input_size=[2, 3, in_hw[1]]))
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                            coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil")
    sizes1 = helper.make_tensor("sizes", TensorProto.INT64, [3], [2, 3, out_hw[1]])
    x1 = x[:, :, 0]
    y1 = forward_session(node, {"x": x1.shape}, initializers=[sizes1]).run(None, {"x": x1})[0]
    (grad1,) = run_model(model, {"grad_output": go[:, :, 0]}, path)
    assert_adjoint(go[:, :, 0].astype(np.float64) * y1, grad1.astype(np.float64) * x1)
