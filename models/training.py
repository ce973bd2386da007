"""Forward models trained with onnxruntime-training's API (resample_grad.training): `resample-grad demo` trains
each for a few steps on the CPU when onnxruntime-training is installed.

    unet: Conv-ReLU encoder, MaxPool, Conv-ReLU, Resize (linear, x2), skip Concat, Conv decoder (opset 17);
        Resize's gradient is com.microsoft::ResizeGrad (libresample_grad_training_ops)
    spatial_transformer: a linear layer predicts theta (from the identity), AffineGrid, GridSample (opset 20);
        GridSample's gradient is GridSampler2DGrad, AffineGrid's standard ops

Built with onnx.helper only (no resample_grad.opset: onnxruntime-training's environment may have onnx 1.16).
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
IR_VERSION = 9  # onnxruntime-training 1.19 and onnx 1.16 read it


def _conv_weight(rng, out_channels, in_channels, k=3):
    he_std = np.sqrt(2.0 / (in_channels * k * k))
    return (rng.standard_normal((out_channels, in_channels, k, k)) * he_std).astype(np.float32)


def unet(n=2, channels=2, size=16, width=8, seed=0) -> onnx.ModelProto:
    """A small U-Net: [n, channels, size, size] -> [n, channels, size, size]; parameters enc.*, mid.*, dec.*."""
    rng = np.random.default_rng(seed)
    params = {"enc.weight": _conv_weight(rng, width, channels), "enc.bias": np.zeros(width, np.float32),
              "mid.weight": _conv_weight(rng, width, width), "mid.bias": np.zeros(width, np.float32),
              "dec.weight": _conv_weight(rng, channels, 2 * width) * 0.5, "dec.bias": np.zeros(channels, np.float32)}
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("Conv", ["input", "enc.weight", "enc.bias"], ["enc"], name="enc", **conv),
        helper.make_node("Relu", ["enc"], ["enc_relu"], name="enc_relu"),
        helper.make_node("MaxPool", ["enc_relu"], ["pooled"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pooled", "mid.weight", "mid.bias"], ["mid"], name="mid", **conv),
        helper.make_node("Relu", ["mid"], ["mid_relu"], name="mid_relu"),
        helper.make_node("Resize", ["mid_relu", "", "scales"], ["up"], name="up", mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        helper.make_node("Concat", ["up", "enc_relu"], ["skip"], name="skip", axis=1),
        helper.make_node("Conv", ["skip", "dec.weight", "dec.bias"], ["output"], name="dec", **conv),
    ]
    initializers = [numpy_helper.from_array(v, k) for k, v in params.items()]
    initializers.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    graph = helper.make_graph(nodes, "unet", [helper.make_tensor_value_info("input", FLOAT, [n, channels, size, size])],
                              [helper.make_tensor_value_info("output", FLOAT, [n, channels, size, size])],
                              initializer=initializers)
    return helper.make_model(graph, producer_name="resample_grad.models", ir_version=IR_VERSION,
                             opset_imports=[helper.make_opsetid("", 17)],
                             doc_string="A small U-Net whose decoder upsamples with Resize (linear, x2).")


def spatial_transformer(n=2, channels=1, size=16, seed=0) -> onnx.ModelProto:
    """theta = identity + loc(x) ([n, 2, 3]), y = GridSample(x, AffineGrid(theta)); parameters loc.*."""
    rng = np.random.default_rng(seed)
    features = channels * size * size
    params = {"loc.weight": (rng.standard_normal((6, features)) * 0.01).astype(np.float32),
              "loc.bias": np.array([1, 0, 0, 0, 1, 0], np.float32)}
    nodes = [
        helper.make_node("Flatten", ["input"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "loc.weight", "loc.bias"], ["theta_flat"], name="loc", transB=1),
        helper.make_node("Reshape", ["theta_flat", "theta_shape"], ["theta"], name="theta"),
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="affine_grid", align_corners=0),
        helper.make_node("GridSample", ["input", "grid"], ["output"], name="grid_sample", mode="linear",
                         padding_mode="border", align_corners=0),
    ]
    initializers = [numpy_helper.from_array(v, k) for k, v in params.items()]
    initializers += [numpy_helper.from_array(np.array([n, 2, 3], np.int64), "theta_shape"),
                     numpy_helper.from_array(np.array([n, channels, size, size], np.int64), "size")]
    graph = helper.make_graph(nodes, "spatial_transformer",
                              [helper.make_tensor_value_info("input", FLOAT, [n, channels, size, size])],
                              [helper.make_tensor_value_info("output", FLOAT, [n, channels, size, size])],
                              initializer=initializers)
    return helper.make_model(graph, producer_name="resample_grad.models", ir_version=IR_VERSION,
                             opset_imports=[helper.make_opsetid("", 20)],
                             doc_string="A spatial transformer: a linear layer predicts theta, AffineGrid, GridSample.")


def _blobs(n, channels, size, rng) -> np.ndarray:
    """Smooth random images: a few Gaussian blobs each."""
    ys, xs = np.mgrid[0:size, 0:size] / (size - 1)
    images = np.zeros((n, channels, size, size), np.float32)
    for index in np.ndindex(n, channels):
        for _ in range(3):
            cy, cx, s = rng.uniform(0.25, 0.75), rng.uniform(0.25, 0.75), rng.uniform(0.08, 0.2)
            images[index] += np.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / (2 * s * s)).astype(np.float32)
    return images


def tasks(seed=0) -> dict[str, tuple[onnx.ModelProto, np.ndarray, np.ndarray, float]]:
    """name -> (forward model, input batch, target, SGD learning rate): the U-Net learns to denoise, the spatial
    transformer to undo a shift of 2 pixels."""
    rng = np.random.default_rng(seed)
    clean = _blobs(2, 2, 16, rng)
    noisy = clean + 0.2 * rng.standard_normal(clean.shape).astype(np.float32)
    image = _blobs(2, 1, 16, rng)
    shifted = np.roll(image, 2, axis=3)
    return {"unet": (unet(), noisy, clean, 0.1), "spatial_transformer": (spatial_transformer(), shifted, image, 0.005)}


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 to /dev/null (the builder's C++ logger ignores onnxruntime's severity setting); a failure
    still raises, with onnxruntime's message."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def train(model: onnx.ModelProto, inputs: np.ndarray, target: np.ndarray, learning_rate: float, steps: int,
          out_dir, threads: int = 0) -> dict[str, object]:
    """Generates the artifacts (MSE loss, SGD) into out_dir and trains `steps` steps on one batch with a CPU
    api.Module and api.Optimizer: {"losses": [...], "ms": time per step (forward, backward, SGD)}."""
    from resample_grad import training
    from resample_grad.training import api, artifacts

    out = pathlib.Path(out_dir)
    params = [i.name for i in model.graph.initializer if "." in i.name]
    with _quiet_stderr():  # onnxruntime-training's gradient builder logs every graph transformer (INFO) to stderr
        training.generate_artifacts(model, requires_grad=params, loss=artifacts.LossType.MSELoss,
                                    optimizer=artifacts.OptimType.SGD, artifact_directory=out)
    state = api.CheckpointState.load_checkpoint(str(out / "checkpoint"))
    module = api.Module(str(out / "training_model.onnx"), state, str(out / "eval_model.onnx"), device="cpu",
                        session_options=training.session_options(threads=threads))
    optimizer = api.Optimizer(str(out / "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(learning_rate)
    module.train()
    losses: list[float] = []
    start = time.perf_counter()
    for _ in range(steps):
        losses.append(float(module(inputs, target)))
        optimizer.step()
        module.lazy_reset_grad()
    ms = (time.perf_counter() - start) * 1000 / max(steps, 1)
    return {"losses": losses, "ms": ms}
