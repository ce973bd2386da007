"""Example models that use the resample_grad ops; `python -m resample_grad.models OUT_DIR` writes them.

    one model per op, with representative shapes and attributes;
    spatial_transformer_step: affine grid + GridSample forward, MSE loss, and the backward
        through GridSampler2DGrad to the image and to theta (via the grid);
    decoder_step: nearest-exact and bilinear upsampling of a latent, a weighted loss, and
        the backward through ResizeBilinearV2Grad and UpsampleNearestExact2dGrad;
    unet_training_step: a U-Net's training step exported from PyTorch (converters.export_training_step):
        loss and the gradient of every parameter, through UpsampleNearest2dGrad and ResizeBilinearV2Grad.

The builders are the source; the one exception is unet_training_step.onnx, kept here because exporting it needs
torch, which the package does not: models/unet_step.py writes it (python -m resample_grad.models.unet_step), and
tests/test_models.py checks it against torch autograd and against a fresh export. Every model passes
onnx.checker.check_model(full_check=True) and carries the function bodies (attach).
"""
from __future__ import annotations

import pathlib
from typing import Callable, Dict, List

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from resample_grad import opset

FLOAT = TensorProto.FLOAT
DEFAULT_OPSET = 18


def _model(name: str, nodes, inputs: Dict[str, list], outputs: Dict[str, list], doc: str, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(k, FLOAT, v) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, FLOAT, v) for k, v in outputs.items()], initializer=list(initializers))
    model = helper.make_model(graph, producer_name="resample_grad.models", doc_string=doc,
                              opset_imports=[helper.make_opsetid("", DEFAULT_OPSET)])
    return opset.attach(model)


def grid_sampler_2d_grad() -> onnx.ModelProto:
    node = opset.make_node("GridSampler2DGrad", ["grad_output", "input", "grid"], ["grad_input", "grad_grid"],
                           name="grid_sampler_grad", interpolation_mode="bilinear", padding_mode="border", align_corners=0)
    return _model("grid_sampler_2d_grad", [node],
                  {"grad_output": [4, 16, 32, 32], "input": [4, 16, 48, 48], "grid": [4, 32, 32, 2]},
                  {"grad_input": [4, 16, 48, 48], "grad_grid": [4, 32, 32, 2]},
                  "GridSampler2DGrad, bilinear, border padding: both gradients.")


def upsample_nearest_exact1d_grad() -> onnx.ModelProto:
    node = opset.make_node("UpsampleNearestExact1dGrad", ["grad_output"], ["grad_input"], name="nearest1d_grad",
                           input_size=[-1, 32, 100], output_size=[250])
    return _model("upsample_nearest_exact1d_grad", [node], {"grad_output": [4, 32, 250]}, {"grad_input": [4, 32, 100]},
                  "UpsampleNearestExact1dGrad: 100 -> 250 (ratio 2.5), dynamic batch (-1).")


def upsample_nearest_exact2d_grad() -> onnx.ModelProto:
    node = opset.make_node("UpsampleNearestExact2dGrad", ["grad_output"], ["grad_input"], name="nearest2d_grad",
                           input_size=[2, 16, 20, 30], output_size=[50, 45], scales_h=2.5, scales_w=1.5)
    return _model("upsample_nearest_exact2d_grad", [node], {"grad_output": [2, 16, 50, 45]},
                  {"grad_input": [2, 16, 20, 30]}, "UpsampleNearestExact2dGrad: 20x30 -> 50x45 with scales 2.5, 1.5.")


def resize_bilinear_v2_grad() -> onnx.ModelProto:
    node = opset.make_node("ResizeBilinearV2Grad", ["grads", "original_image"], ["y"], name="bilinear_grad",
                           align_corners=0, half_pixel_centers=1)
    return _model("resize_bilinear_v2_grad", [node], {"grads": [2, 16, 64, 48], "original_image": [2, 16, 24, 32]},
                  {"y": [2, 16, 24, 32]}, "ResizeBilinearV2Grad, half-pixel centres (torch align_corners=False).")


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


def unet_training_step() -> onnx.ModelProto:
    """The stored U-Net training step (models/unet_step.py): inputs input_0, target_0, then the parameters and
    BatchNorm's buffers by name; outputs loss, grad_<parameter> and the updated buffers."""
    from .unet_step import STORED

    return onnx.load(str(STORED))


BUILDERS: Dict[str, Callable[[], onnx.ModelProto]] = {
    "grid_sampler_2d_grad": grid_sampler_2d_grad,
    "upsample_nearest_exact1d_grad": upsample_nearest_exact1d_grad,
    "upsample_nearest_exact2d_grad": upsample_nearest_exact2d_grad,
    "resize_bilinear_v2_grad": resize_bilinear_v2_grad,
    "spatial_transformer_step": spatial_transformer_step,
    "decoder_step": decoder_step,
    "unet_training_step": unet_training_step,
}


def build_all(out_dir) -> List[pathlib.Path]:
    """Writes every model to out_dir/<name>.onnx (checked with full_check) and returns the paths."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, build in BUILDERS.items():
        model = build()
        onnx.checker.check_model(model, full_check=True)
        path = out / f"{name}.onnx"
        onnx.save(model, path)
        paths.append(path)
    return paths
