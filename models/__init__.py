"""Example models that use the resample_grad ops; `python -m resample_grad.models OUT_DIR` writes them.

    one model per op (a row of ONE_OP_MODELS), with representative shapes and attributes;
    spatial_transformer_step: affine grid + GridSample forward, MSE loss, and the backward
        through GridSampler2DGrad to the image and to theta (via the grid);
    decoder_step: nearest-exact and bilinear upsampling of a latent, a weighted loss, and
        the backward through ResizeBilinearV2Grad and UpsampleNearestExact2dGrad;
    fpn_decoder_step: an FPN top-down merge with torch's default nearest upsampling and a
        bilinear merge into a finer skip feature (UpsampleNearest2dGrad, UpsampleBilinear2dGrad);
    registration_step: a volumetric (VoxelMorph-style) registration step, 5-D GridSample warp of
        a trilinearly upsampled displacement field (GridSampler3DGrad, UpsampleTrilinear3dBackward);
    super_resolution_step: bicubic x4 upsampling plus a residual, an MSE loss and an antialiased
        bicubic downscale-consistency loss (UpsampleBicubic2dGrad, UpsampleBicubic2dAAGrad);
    resize_training_step: an ONNX Resize (cubic, scales fed at run time) through
        converters.gradient_model: the forward and its gradient (ResizeGrad) in one model.
    unet_training_step: a U-Net's training step exported from PyTorch (converters.export_training_step):
        loss and the gradient of every parameter, through UpsampleNearest2dGrad and ResizeBilinearV2Grad.

The builders are the source; the one exception is unet_training_step.onnx, kept here because exporting it needs
torch, which the package does not: models/unet_step.py writes it (python -m resample_grad.models.unet_step), and
tests/cli/test_models.py checks it against torch autograd and against a fresh export. Every model passes
onnx.checker.check_model(full_check=True) and carries the function bodies (attach).
example_inputs(name) gives inputs a model is meant to run on (where random ones would not do:
a small smooth displacement field, a scale vector); build_all writes them next to each model.
"""
from __future__ import annotations

import dataclasses
import functools
import pathlib
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from resample_grad import opset

FLOAT = TensorProto.FLOAT
DEFAULT_OPSET = 18


def _model(name: str, nodes, inputs: dict[str, list], outputs: dict[str, list], doc: str, initializers=(),
           opset_version: int = DEFAULT_OPSET) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(k, FLOAT, v) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, FLOAT, v) for k, v in outputs.items()], initializer=list(initializers))
    model = helper.make_model(graph, producer_name="resample_grad.models", doc_string=doc,
                              opset_imports=[helper.make_opsetid("", opset_version)])
    return opset.attach(model)


def spatial_transformer_step(n=2, c=3, h=32, w=32, out_h=24, out_w=24) -> onnx.ModelProto:
    """One training step of a spatial transformer: loss and gradients for the image and theta.

    grid = base @ theta^T (base: the normalised output pixel centres with a 1, align_corners=0, as
    torch.nn.functional.affine_grid), y = GridSample(x, grid), loss = mean((y - target)^2).
    """
    ys, xs = np.meshgrid((np.arange(out_h) * 2 + 1) / out_h - 1, (np.arange(out_w) * 2 + 1) / out_w - 1, indexing="ij")
    base = np.stack([xs.ravel(), ys.ravel(), np.ones(out_h * out_w)], axis=1).astype(np.float32)  # [P, 3]
    count = float(n * c * out_h * out_w)
    nodes = [
        helper.make_node("Transpose", ["theta"], ["theta_t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["base", "theta_t"], ["grid_flat"]),  # [N, P, 2]
        helper.make_node("Reshape", ["grid_flat", "grid_shape"], ["grid"]),
        helper.make_node("GridSample", ["x", "grid"], ["y"], mode="bilinear", padding_mode="zeros", align_corners=0),
        helper.make_node("Sub", ["y", "target"], ["diff"]),
        helper.make_node("Mul", ["diff", "diff"], ["squared"]),
        helper.make_node("ReduceMean", ["squared"], ["loss"], keepdims=0),
        helper.make_node("Mul", ["diff", "two_over_count"], ["grad_y"]),
        opset.make_node("GridSampler2DGrad", ["grad_y", "x", "grid"], ["grad_x", "grad_grid"], name="backward",
                        interpolation_mode="bilinear", padding_mode="zeros", align_corners=0),
        helper.make_node("Reshape", ["grad_grid", "flat_shape"], ["grad_grid_flat"]),  # [N, P, 2]
        helper.make_node("Transpose", ["grad_grid_flat"], ["grad_grid_t"], perm=[0, 2, 1]),  # [N, 2, P]
        helper.make_node("MatMul", ["grad_grid_t", "base"], ["grad_theta"]),  # [N, 2, 3]
    ]
    initializers = [numpy_helper.from_array(base, "base"),
                    numpy_helper.from_array(np.array([n, out_h, out_w, 2], np.int64), "grid_shape"),
                    numpy_helper.from_array(np.array([n, out_h * out_w, 2], np.int64), "flat_shape"),
                    numpy_helper.from_array(np.array(2.0 / count, np.float32), "two_over_count")]
    return _model("spatial_transformer_step", nodes,
                  {"x": [n, c, h, w], "theta": [n, 2, 3], "target": [n, c, out_h, out_w]},
                  {"loss": [], "grad_x": [n, c, h, w], "grad_theta": [n, 2, 3]},
                  "Spatial transformer training step: GridSample forward, MSE loss, GridSampler2DGrad backward "
                  "to the image and (through the affine grid) to theta.", initializers)


def decoder_step(n=2, c=8, h=8, w=8) -> onnx.ModelProto:
    """An upsampling decoder: nearest-exact x2 then bilinear x2 (torch align_corners=False), a weighted
    sum loss, and the gradient of the loss with respect to the latent."""
    nodes = [
        helper.make_node("Resize", ["z", "", "", "size1"], ["up1"], mode="nearest",
                         coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil"),
        helper.make_node("Resize", ["up1", "", "", "size2"], ["up2"], mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel"),
        helper.make_node("Mul", ["up2", "weight"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted"], ["loss"], keepdims=0),
        # d loss / d up2 = weight
        opset.make_node("ResizeBilinearV2Grad", ["weight", "up1"], ["grad_up1"], name="bilinear_backward",
                        align_corners=0, half_pixel_centers=1),
        opset.make_node("UpsampleNearestExact2dGrad", ["grad_up1"], ["grad_z"], name="nearest_backward",
                        input_size=[n, c, h, w], output_size=[2 * h, 2 * w]),
    ]
    initializers = [numpy_helper.from_array(np.array([n, c, 2 * h, 2 * w], np.int64), "size1"),
                    numpy_helper.from_array(np.array([n, c, 4 * h, 4 * w], np.int64), "size2")]
    return _model("decoder_step", nodes, {"z": [n, c, h, w], "weight": [n, c, 4 * h, 4 * w]},
                  {"loss": [], "grad_z": [n, c, h, w]},
                  "Decoder step: nearest-exact and bilinear upsampling, a weighted-sum loss, and the backward "
                  "through ResizeBilinearV2Grad and UpsampleNearestExact2dGrad.", initializers)


def _mse(prediction: str, target: str, count: int, prefix: str = ""):
    """(nodes, initializer): {prefix}loss = mean((prediction - target)^2) and {prefix}grad, its gradient
    with respect to the prediction, 2 (prediction - target) / count."""
    nodes = [helper.make_node("Sub", [prediction, target], [f"{prefix}diff"]),
             helper.make_node("Mul", [f"{prefix}diff", f"{prefix}diff"], [f"{prefix}squared"]),
             helper.make_node("ReduceMean", [f"{prefix}squared"], [f"{prefix}loss"], keepdims=0),
             helper.make_node("Mul", [f"{prefix}diff", f"{prefix}two_over_count"], [f"{prefix}grad"])]
    return nodes, _float32(f"{prefix}two_over_count", 2.0 / count)


def _int64(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _float32(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.float32), name)


def fpn_decoder_step(n=2, c=16, h=8, w=8, out_h=40, out_w=40) -> onnx.ModelProto:
    """An FPN top-down merge followed by a U-Net style merge into a finer skip feature, MSE loss, and the
    gradients the lateral convolution and the coarser level train on.

    p = lateral + F.interpolate(top, scale_factor=2) (torch's default nearest: Resize asymmetric + floor),
    y = skip + F.interpolate(p, size=(out_h, out_w), mode="bilinear") (align_corners=False: pytorch_half_pixel),
    loss = mean((y - target)^2); backward through UpsampleBilinear2dGrad and UpsampleNearest2dGrad.
    """
    mse, two_over_count = _mse("y", "target", n * c * out_h * out_w)
    nodes = [
        helper.make_node("Resize", ["top", "", "up2"], ["top_up"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Add", ["lateral", "top_up"], ["p"]),
        helper.make_node("Resize", ["p", "", "", "skip_size"], ["p_up"], mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel"),
        helper.make_node("Add", ["skip", "p_up"], ["y"]),
        *mse,
        # d loss / d p = d loss / d lateral; d loss / d top through the nearest upsampling
        opset.make_node("UpsampleBilinear2dGrad", ["grad"], ["grad_lateral"], name="bilinear_backward",
                        input_size=[n, c, 2 * h, 2 * w], output_size=[out_h, out_w], align_corners=0),
        opset.make_node("UpsampleNearest2dGrad", ["grad_lateral"], ["grad_top"], name="nearest_backward",
                        input_size=[n, c, h, w], output_size=[2 * h, 2 * w]),
    ]
    initializers = [_float32("up2", [1, 1, 2, 2]), _int64("skip_size", [n, c, out_h, out_w]), two_over_count]
    return _model("fpn_decoder_step", nodes,
                  {"top": [n, c, h, w], "lateral": [n, c, 2 * h, 2 * w], "skip": [n, c, out_h, out_w],
                   "target": [n, c, out_h, out_w]},
                  {"loss": [], "grad_top": [n, c, h, w], "grad_lateral": [n, c, 2 * h, 2 * w]},
                  "FPN / U-Net decoder step: nearest x2 top-down merge, bilinear merge into a skip feature, MSE loss, "
                  "backward through UpsampleBilinear2dGrad and UpsampleNearest2dGrad.", initializers)


def _identity_grid(d: int, h: int, w: int) -> np.ndarray:
    """[1, D, H, W, 3] normalised voxel positions (x, y, z) for align_corners=True: F.affine_grid of the identity."""
    z, y, x = np.meshgrid(np.linspace(-1, 1, d), np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    return np.stack([x, y, z], axis=-1)[None].astype(np.float32)


def registration_step(n=1, c=1, d=12, h=12, w=12) -> onnx.ModelProto:
    """One training step of a volumetric registration network (VoxelMorph-like): the network predicts a
    displacement field at half resolution; it is upsampled trilinearly, added to the identity grid, and
    the moving volume is warped with a 5-D grid_sample onto the fixed one.

    flow_up = F.interpolate(flow, scale_factor=2, mode="trilinear", align_corners=True) (as VoxelMorph's
    ResizeTransform), grid = identity + flow_up (channels x, y, z, in normalised coordinates),
    warped = F.grid_sample(moving, grid, align_corners=True), loss = mean((warped - fixed)^2).
    grad_flow trains the network; grad_moving trains a learned template (atlas building). VoxelMorph's
    smoothness term on the flow uses no resampling and is left out.
    """
    mse, two_over_count = _mse("warped", "fixed", n * c * d * h * w)
    nodes = [
        helper.make_node("Resize", ["flow", "", "up2"], ["flow_up"], mode="linear",
                         coordinate_transformation_mode="align_corners"),
        helper.make_node("Transpose", ["flow_up"], ["flow_last"], perm=[0, 2, 3, 4, 1]),  # [N, D, H, W, 3]
        helper.make_node("Add", ["identity", "flow_last"], ["grid"]),
        helper.make_node("GridSample", ["moving", "grid"], ["warped"], mode="linear", padding_mode="zeros",
                         align_corners=1),
        *mse,
        opset.make_node("GridSampler3DGrad", ["grad", "moving", "grid"], ["grad_moving", "grad_grid"],
                        name="warp_backward", interpolation_mode="bilinear", padding_mode="zeros", align_corners=1),
        helper.make_node("Transpose", ["grad_grid"], ["grad_flow_up"], perm=[0, 4, 1, 2, 3]),  # [N, 3, D, H, W]
        opset.make_node("UpsampleTrilinear3dBackward", ["grad_flow_up"], ["grad_flow"], name="upsample_backward",
                        input_size=[n, 3, d // 2, h // 2, w // 2], output_size=[d, h, w], align_corners=1),
    ]
    initializers = [_float32("up2", [1, 1, 2, 2, 2]), numpy_helper.from_array(_identity_grid(d, h, w), "identity"),
                    two_over_count]
    # GridSample of a 5-D input is opset 20
    return _model("registration_step", nodes,
                  {"moving": [n, c, d, h, w], "fixed": [n, c, d, h, w], "flow": [n, 3, d // 2, h // 2, w // 2]},
                  {"loss": [], "grad_moving": [n, c, d, h, w], "grad_flow": [n, 3, d // 2, h // 2, w // 2]},
                  "Volumetric registration step: trilinear upsampling of a coarse displacement field, 5-D GridSample "
                  "warp, MSE loss, backward through GridSampler3DGrad (both outputs) and UpsampleTrilinear3dBackward.",
                  initializers, opset_version=20)


def super_resolution_step(n=2, c=3, h=12, w=12, factor=4, consistency=0.5) -> onnx.ModelProto:
    """One training step of a residual x4 super-resolution network with a downscale-consistency loss.

    sr = F.interpolate(lr, scale_factor=4, mode="bicubic") + residual (the network predicts the residual),
    loss = mean((sr - hr)^2) + consistency * mean((down - lr)^2) with
    down = F.interpolate(sr, scale_factor=1/4, mode="bicubic", antialias=True) (Resize cubic, A = -0.5,
    exclude_outside, antialias: PIL's filter, as torch). grad_residual trains the network; grad_lr is what a
    learned downscaler in front of it (task-aware downscaling) would train on.
    """
    big_h, big_w = factor * h, factor * w
    mse, two_over_count = _mse("sr", "hr", n * c * big_h * big_w)
    consistency_mse, two_over_small = _mse("down", "lr", n * c * h * w, prefix="down_")
    nodes = [
        helper.make_node("Resize", ["lr", "", "up_scales"], ["lr_up"], mode="cubic", cubic_coeff_a=-0.75,
                         coordinate_transformation_mode="pytorch_half_pixel"),
        helper.make_node("Add", ["lr_up", "residual"], ["sr"]),
        *mse,
        helper.make_node("Resize", ["sr", "", "down_scales"], ["down"], mode="cubic", cubic_coeff_a=-0.5,
                         exclude_outside=1, antialias=1, coordinate_transformation_mode="pytorch_half_pixel"),
        *consistency_mse,
        helper.make_node("Mul", ["down_loss", "consistency"], ["weighted_down_loss"]),
        helper.make_node("Add", ["loss", "weighted_down_loss"], ["total_loss"]),
        # d total / d down, back through the antialiased downscale to sr
        helper.make_node("Mul", ["down_grad", "consistency"], ["grad_down"]),
        opset.make_node("UpsampleBicubic2dAAGrad", ["grad_down"], ["grad_sr_from_down"], name="downscale_backward",
                        input_size=[n, c, big_h, big_w], output_size=[h, w], align_corners=0),
        helper.make_node("Add", ["grad", "grad_sr_from_down"], ["grad_residual"]),
        # lr enters twice: through the bicubic upsampling and as the consistency target
        opset.make_node("UpsampleBicubic2dGrad", ["grad_residual"], ["grad_lr_up"], name="upsample_backward",
                        input_size=[n, c, h, w], output_size=[big_h, big_w], align_corners=0),
        helper.make_node("Sub", ["grad_lr_up", "grad_down"], ["grad_lr"]),
    ]
    initializers = [_float32("up_scales", [1, 1, factor, factor]),
                    _float32("down_scales", [1, 1, 1 / factor, 1 / factor]),
                    _float32("consistency", consistency), two_over_count, two_over_small]
    return _model("super_resolution_step", nodes,
                  {"lr": [n, c, h, w], "residual": [n, c, big_h, big_w], "hr": [n, c, big_h, big_w]},
                  {"total_loss": [], "grad_residual": [n, c, big_h, big_w], "grad_lr": [n, c, h, w]},
                  "Super-resolution step: bicubic x4 plus a predicted residual, MSE loss and an antialiased bicubic "
                  "downscale-consistency loss, backward through UpsampleBicubic2dAAGrad and UpsampleBicubic2dGrad.",
                  initializers)


def resize_training_step(n=2, c=3, h=16, w=16) -> onnx.ModelProto:
    """An ONNX forward Resize (cubic, A = -0.75, half_pixel: torch's bicubic) whose scales are a graph input,
    fed per batch as in multi-scale training, turned into its training graph by converters.gradient_model:
    inputs x, scales, grad_y; outputs y (the forward) and grad_x (ResizeGrad, reading the fed scales)."""
    from resample_grad.converters import gradient_model

    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode="cubic", cubic_coeff_a=-0.75,
                            coordinate_transformation_mode="half_pixel")
    graph = helper.make_graph([node], "resize_training_step",
                              [helper.make_tensor_value_info("x", FLOAT, [n, c, h, w]),
                               helper.make_tensor_value_info("scales", FLOAT, [4])],
                              [helper.make_tensor_value_info("y", FLOAT, [n, c, "out_h", "out_w"])])
    forward = helper.make_model(graph, producer_name="resample_grad.models",
                                opset_imports=[helper.make_opsetid("", DEFAULT_OPSET)])
    model = gradient_model(forward, wrt=["x"])
    model.doc_string = ("Resize training step from converters.gradient_model: Resize cubic with scales fed at run "
                        "time, the forward y and its gradient grad_x (ResizeGrad) in one model.")
    return model


# --------------------------------------------------------------------------- one model per op

@dataclasses.dataclass(frozen=True)
class OneOpModel:
    """A model of one node of op_type: the graph inputs and outputs (name -> shape), the node's attributes, and
    constant inputs (name -> array) that follow the graph inputs, unless node_inputs orders them ("" for an absent
    optional input). The node is named node_name, or like the model."""
    op_type: str
    inputs: dict[str, list]
    outputs: dict[str, list]
    doc: str
    attributes: dict[str, object] = dataclasses.field(default_factory=dict)
    constants: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    node_inputs: list[str] | None = None
    node_name: str | None = None

    def build(self, name: str) -> onnx.ModelProto:
        initializers = [numpy_helper.from_array(value, key) for key, value in self.constants.items()]
        node_inputs = self.node_inputs or list(self.inputs) + list(self.constants)
        node = opset.make_node(self.op_type, node_inputs, list(self.outputs), name=self.node_name or name,
                               **self.attributes)
        return _model(name, [node], self.inputs, self.outputs, self.doc, initializers)


# model name -> its row, in the order of opset.OPS
ONE_OP_MODELS: dict[str, OneOpModel] = {
    "grid_sampler_2d_grad": OneOpModel(
        "GridSampler2DGrad", {"grad_output": [4, 16, 32, 32], "input": [4, 16, 48, 48], "grid": [4, 32, 32, 2]},
        {"grad_input": [4, 16, 48, 48], "grad_grid": [4, 32, 32, 2]},
        "GridSampler2DGrad, bilinear, border padding: both gradients.",
        dict(interpolation_mode="bilinear", padding_mode="border", align_corners=0), node_name="grid_sampler_grad"),
    "upsample_nearest_exact1d_grad": OneOpModel(
        "UpsampleNearestExact1dGrad", {"grad_output": [4, 32, 250]}, {"grad_input": [4, 32, 100]},
        "UpsampleNearestExact1dGrad: 100 -> 250 (ratio 2.5), dynamic batch (-1).",
        dict(input_size=[-1, 32, 100], output_size=[250]), node_name="nearest1d_grad"),
    "upsample_nearest_exact2d_grad": OneOpModel(
        "UpsampleNearestExact2dGrad", {"grad_output": [2, 16, 50, 45]}, {"grad_input": [2, 16, 20, 30]},
        "UpsampleNearestExact2dGrad: 20x30 -> 50x45 with scales 2.5, 1.5.",
        dict(input_size=[2, 16, 20, 30], output_size=[50, 45], scales_h=2.5, scales_w=1.5), node_name="nearest2d_grad"),
    "resize_bilinear_v2_grad": OneOpModel(
        "ResizeBilinearV2Grad", {"grads": [2, 16, 64, 48], "original_image": [2, 16, 24, 32]}, {"y": [2, 16, 24, 32]},
        "ResizeBilinearV2Grad, half-pixel centres (torch align_corners=False).",
        dict(align_corners=0, half_pixel_centers=1), node_name="bilinear_grad"),
    "grid_sampler_3d_grad": OneOpModel(
        "GridSampler3DGrad", {"grad": [2, 4, 8, 12, 12], "x": [2, 4, 10, 16, 16], "grid": [2, 8, 12, 12, 3]},
        {"dx": [2, 4, 10, 16, 16], "dgrid": [2, 8, 12, 12, 3]},
        "GridSampler3DGrad, trilinear, zeros padding: both gradients (5-D grid_sample).",
        dict(interpolation_mode="bilinear", padding_mode="zeros", align_corners=0)),
    # a ratio that is not an integer: there torch's nearest (floor(o * s)) and nearest-exact differ
    "upsample_nearest2d_grad": OneOpModel(
        "UpsampleNearest2dGrad", {"grad_output": [4, 32, 32, 40]}, {"grad_input": [4, 32, 13, 17]},
        "UpsampleNearest2dGrad: 13x17 -> 32x40, torch's default F.interpolate mode (nearest) to a size.",
        dict(input_size=[4, 32, 13, 17], output_size=[32, 40])),
    "upsample_nearest3d_grad": OneOpModel(
        "UpsampleNearest3dGrad", {"grad_output": [2, 8, 12, 16, 16]}, {"y": [2, 8, 5, 7, 9]},
        "UpsampleNearest3dGrad: 5x7x9 -> 12x16x16 (a video or volume, nearest).",
        dict(input_size=[2, 8, 5, 7, 9], output_size=[12, 16, 16])),
    # scales, not sizes: CANN's op takes one of the two; 1.5 and 2.5 are exact in float32, so torch agrees exactly
    "upsample_nearest_exact3d_grad": OneOpModel(
        "UpsampleNearestExact3dGrad", {"grad_output": [2, 8, 7, 14, 22]}, {"y": [2, 8, 5, 7, 9]},
        "UpsampleNearestExact3dGrad: 5x7x9 -> 7x14x22 with scales 1.5, 2, 2.5.",
        dict(input_size=[2, 8, 5, 7, 9], scales=[1.5, 2.0, 2.5])),
    "upsample_bilinear2d_grad": OneOpModel(
        "UpsampleBilinear2dGrad", {"grad_output": [2, 16, 48, 64]}, {"grad_input": [2, 16, 24, 32]},
        "UpsampleBilinear2dGrad, align_corners: 24x32 -> 48x64.",
        dict(input_size=[2, 16, 24, 32], output_size=[48, 64], align_corners=1)),
    "upsample_trilinear3d_backward": OneOpModel(
        "UpsampleTrilinear3dBackward", {"grad_output": [2, 4, 12, 16, 20]}, {"grad_input": [2, 4, 6, 8, 8]},
        "UpsampleTrilinear3dBackward: 6x8x8 -> 12x16x20, half-pixel centres.",
        dict(input_size=[2, 4, 6, 8, 8], output_size=[12, 16, 20], align_corners=0)),
    "upsample_bicubic2d_grad": OneOpModel(
        "UpsampleBicubic2dGrad", {"grad_output": [2, 3, 60, 80]}, {"grad_input": [2, 3, 24, 32]},
        "UpsampleBicubic2dGrad: 24x32 -> 60x80 (x2.5), half-pixel centres.",
        dict(input_size=[2, 3, 24, 32], output_size=[60, 80], align_corners=0)),
    "upsample_bilinear2d_aa_backward": OneOpModel(
        "UpsampleBilinear2dAABackward", {"grad_output": [2, 3, 24, 20]}, {"grad_input": [2, 3, 64, 48]},
        "UpsampleBilinear2dAABackward: antialiased downscale 64x48 -> 24x20 (torch antialias=True).",
        dict(input_size=[2, 3, 64, 48], output_size=[24, 20], align_corners=0)),
    "upsample_bicubic2d_aa_grad": OneOpModel(
        "UpsampleBicubic2dAAGrad", {"grad_output": [2, 3, 20, 28]}, {"grad_input": [2, 3, 48, 64]},
        "UpsampleBicubic2dAAGrad: antialiased downscale 48x64 -> 20x28 (torch antialias=True, as PIL).",
        dict(input_size=[2, 3, 48, 64], output_size=[20, 28], align_corners=0)),
    # TensorFlow 2's tf.image.resize default for nearest: half-pixel centres; size int32, as TensorFlow and CANN hold it
    "resize_nearest_neighbor_v2_grad": OneOpModel(
        "ResizeNearestNeighborV2Grad", {"grads": [2, 16, 48, 75]}, {"y": [2, 16, 20, 30]},
        "ResizeNearestNeighborV2Grad, half-pixel centres: 20x30 -> 48x75.",
        dict(align_corners=0, half_pixel_centers=1), {"size": np.array([20, 30], np.int32)}),
    "resize_bicubic_v2_grad": OneOpModel(
        "ResizeBicubicV2Grad", {"grads": [2, 3, 48, 64], "original_image": [2, 3, 24, 32]}, {"y": [2, 3, 24, 32]},
        "ResizeBicubicV2Grad: 24x32 -> 48x64, half-pixel centres (torch bicubic, A = -0.75).", dict(align_corners=0)),
    "resize_linear_grad": OneOpModel(
        "ResizeLinearGrad", {"grads": [4, 8, 250], "original_image": [4, 8, 100]}, {"y": [4, 8, 100]},
        "ResizeLinearGrad: a 1-D signal 100 -> 250 (audio), half-pixel centres.", dict(align_corners=0)),
    "resize_grad": OneOpModel(
        "ResizeGrad", {"dY": [2, 3, 24, 20], "X": [2, 3, 64, 48]}, {"dX": [2, 3, 64, 48]},
        "ResizeGrad of Resize(X, sizes=[24, 20], axes=[2, 3], linear, antialias): a downscale as torch's "
        "antialiased bilinear (exclude_outside=1).",
        dict(mode="linear", antialias=1, exclude_outside=1, axes=[2, 3]), {"sizes": np.array([24, 20], np.int64)},
        node_inputs=["dY", "X", "", "", "sizes"]),
}


def unet_training_step() -> onnx.ModelProto:
    """The stored U-Net training step (models/unet_step.py): inputs input_0, target_0, then the parameters and
    BatchNorm's buffers by name; outputs loss, grad_<parameter> and the updated buffers."""
    from .unet_step import STORED

    return onnx.load(str(STORED))


# the one-op models in the order of opset.OPS, then the training steps
BUILDERS: dict[str, Callable[[], onnx.ModelProto]] = {
    **{name: functools.partial(row.build, name) for name, row in ONE_OP_MODELS.items()},
    "spatial_transformer_step": spatial_transformer_step,
    "decoder_step": decoder_step,
    "fpn_decoder_step": fpn_decoder_step,
    "registration_step": registration_step,
    "super_resolution_step": super_resolution_step,
    "resize_training_step": resize_training_step,
    "unet_training_step": unet_training_step,
}


def __getattr__(name: str):
    """models.<name>() builds the one-op model `name` (models.grid_sampler_2d_grad(), ...), as BUILDERS[name]()."""
    if name in ONE_OP_MODELS:
        return BUILDERS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- inputs

def _grid(rng, shapes):
    return {"grid": rng.uniform(-1.1, 1.1, shapes["grid"])}  # mostly inside the image, some points outside


def _near_identity_theta(rng, shapes):
    return {"theta": np.array([[0.9, 0.2, 0.1], [-0.15, 1.1, -0.05]]) + 0.05 * rng.standard_normal(shapes["theta"])}


def _small_flow(rng, shapes):
    # a network's displacement is a fraction of the volume: 0.1 in normalised units is about a voxel at 12^3
    return {"flow": 0.1 * rng.standard_normal(shapes["flow"])}


def _fed_scales(rng, shapes):
    n, c, h, w = shapes["x"]
    return {"scales": np.array([1, 1, 1.5, 1.5]), "grad_y": rng.standard_normal((n, c, int(h * 1.5), int(w * 1.5)))}


# inputs that standard normal values would not exercise as the model means them: name -> (rng, input shapes) -> arrays
_EXAMPLE_OVERRIDES: dict[str, Callable[[np.random.Generator, dict[str, list]], dict[str, np.ndarray]]] = {
    "grid_sampler_2d_grad": _grid,
    "grid_sampler_3d_grad": _grid,
    "spatial_transformer_step": _near_identity_theta,
    "registration_step": _small_flow,
    "resize_training_step": _fed_scales,
}


def example_inputs(name: str, seed: int = 0, model: onnx.ModelProto = None) -> dict[str, np.ndarray]:
    """Inputs for the model BUILDERS[name] (or `model`, built by it), of each input's declared type: standard
    normal floats, except a grid, a transform, a displacement field or a scale vector, which get values of the
    kind the model expects; integer inputs (a batch-norm step counter) are zero."""
    model = model if model is not None else BUILDERS[name]()
    initialized = {i.name for i in model.graph.initializer}
    inputs = [v for v in model.graph.input if v.name not in initialized]
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inputs}
    rng = np.random.default_rng(seed)
    feeds = _EXAMPLE_OVERRIDES[name](rng, shapes) if name in _EXAMPLE_OVERRIDES else {}
    result = {}
    for v in inputs:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type))
        shape = shapes[v.name]
        if dtype.kind in "iu":
            result[v.name] = np.zeros(shape, dtype)
        else:
            result[v.name] = np.asarray(feeds[v.name] if v.name in feeds else rng.standard_normal(shape), dtype)
    return result


def build_all(out_dir) -> list[pathlib.Path]:
    """Writes every model to out_dir/<name>.onnx (checked with full_check) with its example_inputs() in
    out_dir/<name>.inputs.npz (for `resample-grad check MODEL --inputs`), and returns the model paths."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, build in BUILDERS.items():
        model = build()
        onnx.checker.check_model(model, full_check=True)
        path = out / f"{name}.onnx"
        onnx.save(model, path)
        np.savez(out / f"{name}.inputs.npz", **example_inputs(name, model=model))
        paths.append(path)
    return paths
