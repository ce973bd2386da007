"""The facts every layer shares, defined once: domains and versions, and the grid samplers' mode names and codes.

Standard library only (no onnx, no numpy): resample_grad.training reads it under onnx 1.16, where
resample_grad.opset (onnx >= 1.20) cannot be imported. The C++ library repeats DOMAIN in
runtime/src (kDomain); tests/ops/test_constants.py checks that the two agree.
"""
from __future__ import annotations

# --------------------------------------------------------------------------- domains and versions

DOMAIN = "resample_grad"  # the custom ops' domain: schemas, functions, reference ops, C++ kernels, converters
# Version 1: the four seed ops. Version 2: the rest of CANN's family, ResizeGrad, GridSampler3DGrad
# (each op's schema says since_version; a model importing version 1 keeps working unchanged).
VERSION = 2

GE_DOMAIN = DOMAIN + ".ge"  # converters.ascend: nodes named and attributed as Ascend GE ops (ATC's OriginOpType key)
GE_VERSION = 1

DEFAULT_DOMAINS = ("", "ai.onnx")  # the two spellings of the standard ONNX domain
MICROSOFT_DOMAIN = "com.microsoft"  # onnxruntime's contrib ops (ResizeGrad of onnxruntime-training)

FUNCTION_IR_VERSION = 8  # model-local functions need IR 8
OVERLOAD_IR_VERSION = 10  # a node's `overload` (which body of a model-local function) needs IR 10

# --------------------------------------------------------------------------- grid samplers

# GridSampler2DGrad's interpolation_mode and padding_mode values; a value's position is its code, as in aten
# (grid_sampler_2d_backward's int interpolation_mode and padding_mode) and in the functions and kernels.
INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")
INTERPOLATION_CODE = {name: code for code, name in enumerate(INTERPOLATION_MODES)}
PADDING_CODE = {name: code for code, name in enumerate(PADDING_MODES)}
BILINEAR, NEAREST, BICUBIC = (INTERPOLATION_CODE[name] for name in INTERPOLATION_MODES)
ZEROS, BORDER, REFLECTION = (PADDING_CODE[name] for name in PADDING_MODES)
INTERPOLATION_MODES_3D = ("bilinear", "nearest")  # GridSampler3DGrad, as aten's grid_sampler_3d: no bicubic

# ONNX GridSample's mode (opset 16 spellings and opset 20's) -> the gradient ops' interpolation_mode
GRID_SAMPLE_MODES = {"bilinear": "bilinear", "linear": "bilinear", "nearest": "nearest", "bicubic": "bicubic",
                     "cubic": "bicubic"}

# --------------------------------------------------------------------------- ONNX Resize (ResizeGrad)

# Resize's string attributes, the values the schema, the reference and the functions accept (opset/_onnx_resize.py)
RESIZE_MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ASPECT_RATIO_POLICIES = ("stretch", "not_larger", "not_smaller")

# --------------------------------------------------------------------------- training step models

# export_training_step(..., optimizer=...) writes, resample_grad.training.Trainer reads: a step input X that the step
# changes (a parameter, a buffer, an optimizer state) has the output X + UPDATED; the optimizer's inputs start with
# OPTIMIZER_PREFIX; the eval-mode forward travels in the model as the function INFERENCE_FUNCTION of INFERENCE_DOMAIN
UPDATED = "_updated"
OPTIMIZER_PREFIX = "optimizer."
STEP_INPUT = OPTIMIZER_PREFIX + "step"
LEARNING_RATE_INPUT = OPTIMIZER_PREFIX + "learning_rate"
INFERENCE_DOMAIN = DOMAIN + ".training"
INFERENCE_FUNCTION = "inference"
