"""Bad input: a clear error naming the op, the argument and what was expected, on every path.

- reference: the NumPy reference raises ResampleGradError;
- function: attach() validates every node by strict shape inference and raises before a run;
- kernel: the native kernel returns an onnxruntime error (session creation for attributes, run for
  shapes), checked with symbolic input dims and no function bodies, so the kernel alone decides.

Inputs whose values matter (ResizeGrad's roi / scales / sizes, ResizeNearestNeighborV2Grad's size)
are fed to the reference and the kernel, and are constant initializers for attach(), whose checks
are static: a fed value is invisible to it (test_attach_cannot_see_fed_values says what it does then).
"""
from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper, numpy_helper

from conftest import ONNX_DTYPES, one_node_model, run_model
from resample_grad import opset, runtime
from resample_grad.opset import ResampleGradError

GS = "GridSampler2DGrad"
GS_IN = {"grad_output": (1, 2, 3, 4), "input": (1, 2, 5, 5), "grid": (1, 3, 4, 2)}
N1 = "UpsampleNearestExact1dGrad"
N2 = "UpsampleNearestExact2dGrad"
BI = "ResizeBilinearV2Grad"
BI_IN = {"grads": (1, 2, 6, 6), "original_image": (1, 2, 3, 3)}


def gs(**changes):
    shapes = dict(GS_IN)
    shapes.update({k: v for k, v in changes.items() if k in shapes})
    attrs = {k: v for k, v in changes.items() if k not in shapes}
    return GS, shapes, ("grad_input", "grad_grid"), attrs


def bi(**changes):
    shapes = dict(BI_IN)
    shapes.update({k: v for k, v in changes.items() if k in shapes})
    attrs = {k: v for k, v in changes.items() if k not in shapes}
    return BI, shapes, ("y",), attrs


def node(op_type, defaults, outputs):
    """A row builder: keyword arguments naming an input replace it (a shape, a value or None), the rest are
    attributes."""
    def build(**changes):
        inputs = dict(defaults)
        inputs.update({k: v for k, v in changes.items() if k in inputs})
        return op_type, inputs, outputs, {k: v for k, v in changes.items() if k not in inputs}
    return build


def up(op_type, output="grad_input"):
    """The torch-style family: grad_output is the only input; the attributes are the row's."""
    def build(grad_output, **attrs):
        return op_type, {"grad_output": grad_output}, (output,), attrs
    return build


UN2, UN3, UNE3 = "UpsampleNearest2dGrad", "UpsampleNearest3dGrad", "UpsampleNearestExact3dGrad"
UB2, UT3, UC2 = "UpsampleBilinear2dGrad", "UpsampleTrilinear3dBackward", "UpsampleBicubic2dGrad"
UBA, UCA = "UpsampleBilinear2dAABackward", "UpsampleBicubic2dAAGrad"
un2, un3, une3 = up(UN2), up(UN3, "y"), up(UNE3, "y")
ub2, ut3, uc2, uba, uca = up(UB2), up(UT3), up(UC2), up(UBA), up(UCA)
G4, G5 = (1, 2, 8, 8), (1, 2, 4, 4, 4)
S4, S5 = [1, 2, 4, 4], [1, 2, 2, 2, 2]
nan, inf = float("nan"), float("inf")

RC = "ResizeBicubicV2Grad"
rc = node(RC, {"grads": (1, 2, 6, 6), "original_image": (1, 2, 3, 3)}, ("y",))
RL = "ResizeLinearGrad"
rl = node(RL, {"grads": (1, 2, 6), "original_image": (1, 2, 3)}, ("y",))
RN = "ResizeNearestNeighborV2Grad"
rn = node(RN, {"grads": (1, 2, 6, 6), "size": np.array([3, 3], np.int32)}, ("y",))
G3 = "GridSampler3DGrad"
g3 = node(G3, {"grad": (1, 2, 2, 3, 4), "x": (1, 2, 3, 3, 3), "grid": (1, 2, 3, 4, 3)}, ("dx", "dgrid"))
RG = "ResizeGrad"
rg = node(RG, {"dY": (1, 2, 8, 8), "X": (1, 2, 4, 4), "roi": None, "scales": np.array([1, 1, 2, 2], np.float32),
               "sizes": None}, ("dX",))
ROI = np.array([0, 0, 0, 0, 1, 1, 1, 1], np.float32)
SIZES = np.array([1, 2, 8, 8], np.int64)

# (id, (op, inputs, outputs, attributes), text the error must contain: one for every path, or path -> text).
# inputs: name -> a shape (random float values), a numpy array (that value), or None (left out).
BAD = [
    ("gs-interpolation", gs(interpolation_mode="area"),
     "'interpolation_mode' must be one of 'bilinear', 'nearest', 'bicubic', got 'area'"),
    ("gs-padding", gs(padding_mode="wrap"),
     "'padding_mode' must be one of 'zeros', 'border', 'reflection', got 'wrap'"),
    ("gs-align-corners", gs(align_corners=2), "'align_corners' must be 0 or 1, got 2"),
    ("gs-rank-grad", gs(grad_output=(1, 2, 12)), "'grad_output' must be 4-D"),
    ("gs-rank-input", gs(input=(2, 5, 5)), "'input' must be 4-D"),
    ("gs-rank-grid", gs(grid=(1, 12, 2)), "'grid' must be 4-D"),
    ("gs-batch-grid", gs(grid=(2, 3, 4, 2)), "dimension 0 of 'grid' (2) must equal dimension 0 of 'input' (1)"),
    ("gs-channels", gs(grad_output=(1, 3, 3, 4)),
     "dimension 1 of 'grad_output' (3) must equal dimension 1 of 'input' (2)"),
    ("gs-height", gs(grid=(1, 4, 4, 2)), "dimension 2 of 'grad_output' (3) must equal dimension 1 of 'grid' (4)"),
    ("gs-width", gs(grid=(1, 3, 5, 2)), "dimension 3 of 'grad_output' (4) must equal dimension 2 of 'grid' (5)"),
    ("gs-empty-image", gs(input=(1, 2, 0, 5)), "'input' must have a positive H_in"),
    ("gs-grid-last-dim", gs(grid=(1, 3, 4, 3)), "'grid' must have last dimension 2"),
    ("n1-missing-input-size", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), {}), "'input_size' is required"),
    ("n1-input-size-length", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4])),
     "'input_size' must have 3 values"),
    ("n1-input-size-batch", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[3, 2, 4])),
     "'input_size'[0] is 3 but grad_output has 1"),
    ("n1-zero-length", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[1, 2, 0])),
     "'input_size' must have a positive L"),
    ("n1-output-size", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[1, 2, 4], output_size=[9])),
     "'output_size' is [9] but grad_output has L = 8"),
    ("n1-negative-scale", (N1, {"grad_output": (1, 2, 8)}, ("grad_input",), dict(input_size=[1, 2, 4], scales=-2.0)),
     "'scales' must be a finite scale >= 0"),
    ("n1-rank", (N1, {"grad_output": (1, 2, 8, 1)}, ("grad_input",), dict(input_size=[1, 2, 4])),
     "'grad_output' must be 3-D"),
    ("n2-input-size-length", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4])),
     "'input_size' must have 4 values"),
    ("n2-channels", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 5, 4, 4])),
     "'input_size'[1] is 5 but grad_output has 2"),
    ("n2-zero-width", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 0])),
     "'input_size' must have a positive W"),
    ("n2-negative-scale",
     (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4], scales_w=-1.0)),
     "'scales_w' must be a finite scale >= 0"),
    ("n2-output-size-length",
     (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4], output_size=[8])),
     "'output_size' must have 2 values"),
    ("n2-empty-grad", (N2, {"grad_output": (1, 2, 0, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4])),
     "grad_output must have a positive H"),
    ("bi-both-modes", bi(align_corners=1, half_pixel_centers=1),
     "'align_corners' and 'half_pixel_centers' cannot both be 1"),
    ("bi-flag-value", bi(half_pixel_centers=3), "'half_pixel_centers' must be 0 or 1, got 3"),
    ("bi-scales-length", bi(scales=[2.0]), "'scales' must have 2 values"),
    ("bi-negative-scale", bi(scales=[2.0, -1.0]), "must be a finite scale >= 0"),
    ("bi-rank", bi(grads=(1, 2, 36)), "'grads' must be 4-D"),
    ("bi-batch", bi(original_image=(2, 2, 3, 3)),
     "dimension 0 of 'grads' (1) must equal dimension 0 of 'original_image' (2)"),
    ("bi-empty-image", bi(original_image=(1, 2, 0, 3)), "'original_image' must have a positive H_in"),
    ("bi-empty-grads", bi(grads=(1, 2, 6, 0)), "'grads' must have a positive W_out"),
    # UpsampleNearest2dGrad, its 3-D (1-D) form included
    ("un2-missing-output-size", un2(G4, input_size=S4), "'output_size' is required: 2 ints [H, W]"),
    ("un2-missing-input-size", un2(G4, output_size=[8, 8]), "'input_size' is required: 4 ints [N, C, H, W]"),
    ("un2-output-size-length", un2(G4, input_size=S4, output_size=[8]),
     "'output_size' must have 2 values [H, W], got [8]"),
    ("un2-negative-scale", un2(G4, input_size=S4, output_size=[8, 8], scales_h=-2.0),
     "'scales_h' must be a finite scale >= 0"),
    ("un2-channels", un2(G4, input_size=[1, 3, 4, 4], output_size=[8, 8]),
     "'input_size'[1] is 3 but grad_output has 2"),
    ("un2-zero-height", un2(G4, input_size=[1, 2, 0, 4], output_size=[8, 8]),
     "'input_size' must have a positive H, got [1, 2, 0, 4]"),
    ("un2-empty-grad", un2((1, 2, 8, 0), input_size=S4, output_size=[8, 8]),
     "grad_output must have a positive W (dimension 3)"),
    ("un2-rank", un2(G5, input_size=S4, output_size=[8, 8]),
     "'grad_output' must be 4-D [N, C, H_out, W_out] or 3-D [N, C, W_out], got shape [1, 2, 4, 4, 4]"),
    ("un2-1d-input-size-length", un2((1, 2, 8), input_size=S4, output_size=[8]),
     "'input_size' must have 3 values [N, C, W], got [1, 2, 4, 4]"),
    ("un2-1d-output-size", un2((1, 2, 8), input_size=[1, 2, 4], output_size=[9]),
     "'output_size' is [9] but grad_output has W = 8"),
    ("un2-1d-output-size-length", un2((1, 2, 8), input_size=[1, 2, 4], output_size=[8, 8]),
     "'output_size' must have 1 values [W], got [8, 8]"),
    ("un2-1d-nan-scale", un2((1, 2, 8), input_size=[1, 2, 4], output_size=[8], scales_w=nan),
     "'scales_w' must be a finite scale >= 0"),
    ("un2-1d-negative-scales-h", un2((1, 2, 8), input_size=[1, 2, 4], output_size=[8], scales_h=-1.0),
     "'scales_h' must be a finite scale >= 0"),
    ("un2-1d-batch", un2((1, 2, 8), input_size=[2, 2, 4], output_size=[8]),
     "'input_size'[0] is 2 but grad_output has 1"),
    # UpsampleNearest3dGrad, UpsampleNearestExact3dGrad: a scales list, output_size or scales
    ("un3-both", un3(G5, input_size=S5, output_size=[4, 4, 4], scales=[2.0, 2.0, 2.0]),
     "give exactly one of the attributes 'output_size' and 'scales', got both"),
    ("un3-scales-length", un3(G5, input_size=S5, scales=[2.0, 2.0]), "'scales' must have 3 values [D, H, W], got"),
    ("un3-nan-scale", un3(G5, input_size=S5, scales=[2.0, nan, 2.0]), "'scales[1]' must be a finite scale >= 0"),
    ("un3-missing-input-size", un3(G5, scales=[2.0, 2.0, 2.0]), "'input_size' is required: 5 ints [N, C, D, H, W]"),
    ("un3-input-size-length", un3(G5, input_size=S4),
     "'input_size' must have 5 values [N, C, D, H, W], got [1, 2, 4, 4]"),
    ("un3-output-size", un3(G5, input_size=S5, output_size=[4, 5, 4]),
     "'output_size' is [4, 5, 4] but grad_output has H = 4 at dimension 3"),
    ("un3-rank", un3(G4, input_size=S5),
     "'grad_output' must be 5-D [N, C, D_out, H_out, W_out], got shape [1, 2, 8, 8]"),
    ("un3-empty-grad", un3((1, 2, 0, 4, 4), input_size=S5), "grad_output must have a positive D (dimension 2)"),
    ("une3-both", une3(G5, input_size=S5, output_size=[4, 4, 4], scales=[0.0, 0.0, 2.0]),
     "give exactly one of the attributes 'output_size' and 'scales', got both"),
    ("une3-scales-length", une3(G5, input_size=S5, scales=[2.0, 2.0, 2.0, 2.0]),
     "'scales' must have 3 values [D, H, W], got"),
    ("une3-negative-scale", une3(G5, input_size=S5, scales=[2.0, 2.0, -0.5]),
     "'scales[2]' must be a finite scale >= 0"),
    ("une3-batch", une3(G5, input_size=[3, 2, 2, 2, 2]), "'input_size'[0] is 3 but grad_output has 1"),
    ("une3-zero-width", une3(G5, input_size=[1, 2, 2, 2, 0]),
     "'input_size' must have a positive W, got [1, 2, 2, 2, 0]"),
    ("une3-negative-batch", une3(G5, input_size=[-2, 2, 2, 2, 2]), "'input_size'[0] must be >= 0 or -1, got -2"),
    # UpsampleBilinear2dGrad (and its 1-D form), UpsampleTrilinear3dBackward
    ("ub2-align-corners", ub2(G4, input_size=S4, output_size=[8, 8], align_corners=2),
     "'align_corners' must be 0 or 1, got 2"),
    ("ub2-missing-output-size", ub2(G4, input_size=S4), "'output_size' is required: 2 ints [H, W]"),
    ("ub2-missing-input-size", ub2(G4, output_size=[8, 8]), "'input_size' is required: 4 ints [N, C, H, W]"),
    ("ub2-inf-scale", ub2(G4, input_size=S4, output_size=[8, 8], scales_w=inf),
     "'scales_w' must be a finite scale >= 0"),
    ("ub2-batch", ub2(G4, input_size=[2, 2, 4, 4], output_size=[8, 8]), "'input_size'[0] is 2 but grad_output has 1"),
    ("ub2-rank", ub2((1, 2, 8, 8, 8, 8), input_size=S4, output_size=[8, 8]),
     "'grad_output' must be 4-D [N, C, H_out, W_out] or 3-D [N, C, W_out]"),
    ("ub2-1d-zero-width", ub2((1, 2, 8), input_size=[1, 2, 0], output_size=[8]),
     "'input_size' must have a positive W, got [1, 2, 0]"),
    ("ub2-1d-nan-scales-h", ub2((1, 2, 8), input_size=[1, 2, 4], output_size=[8], scales_h=nan),
     "'scales_h' must be a finite scale >= 0"),
    ("ub2-1d-output-size", ub2((1, 2, 8), input_size=[1, 2, 4], output_size=[7]),
     "'output_size' is [7] but grad_output has W = 8"),
    ("ut3-missing-output-size", ut3(G5, input_size=S5), "'output_size' is required: 3 ints [D, H, W]"),
    ("ut3-align-corners", ut3(G5, input_size=S5, output_size=[4, 4, 4], align_corners=-1),
     "'align_corners' must be 0 or 1, got -1"),
    ("ut3-nan-scale", ut3(G5, input_size=S5, output_size=[4, 4, 4], scale_d=nan),
     "'scale_d' must be a finite scale >= 0"),
    ("ut3-tiny-scale", ut3(G5, input_size=S5, output_size=[4, 4, 4], scale_h=1e-45),
     "'scale_h' is too small: its inverse overflows float32"),
    ("ut3-output-size-length", ut3(G5, input_size=S5, output_size=[4, 4]),
     "'output_size' must have 3 values [D, H, W], got [4, 4]"),
    ("ut3-zero-depth", ut3(G5, input_size=[1, 2, 0, 2, 2], output_size=[4, 4, 4]),
     "'input_size' must have a positive D"),
    ("ut3-channels", ut3(G5, input_size=[1, 1, 2, 2, 2], output_size=[4, 4, 4]),
     "'input_size'[1] is 1 but grad_output has 2"),
    ("ut3-rank", ut3((1, 2, 4, 4), input_size=S5, output_size=[4, 4, 4]),
     "'grad_output' must be 5-D [N, C, D_out, H_out, W_out], got shape [1, 2, 4, 4]"),
    # UpsampleBicubic2dGrad, UpsampleBilinear2dAABackward, UpsampleBicubic2dAAGrad
    ("uc2-align-corners", uc2(G4, input_size=S4, align_corners=3), "'align_corners' must be 0 or 1, got 3"),
    ("uc2-missing-input-size", uc2(G4, scales_h=2.0), "'input_size' is required: 4 ints [N, C, H, W]"),
    ("uc2-output-size", uc2(G4, input_size=S4, output_size=[8, 7]),
     "'output_size' is [8, 7] but grad_output has W = 8 at dimension 3"),
    ("uc2-inf-scale", uc2(G4, input_size=S4, scales_h=-inf), "'scales_h' must be a finite scale >= 0"),
    ("uc2-rank-1d", uc2((1, 2, 8), input_size=[1, 2, 4]),
     "'grad_output' must be 4-D [N, C, H_out, W_out], got shape [1, 2, 8]"),
    ("uc2-negative-channels", uc2(G4, input_size=[1, -3, 4, 4]), "'input_size'[1] must be >= 0 or -1, got -3"),
    ("uba-negative-scale", uba(G4, input_size=S4, scales_w=-0.5), "'scales_w' must be a finite scale >= 0"),
    ("uba-input-size-length", uba(G4, input_size=[1, 2, 4]),
     "'input_size' must have 4 values [N, C, H, W], got [1, 2, 4]"),
    ("uba-channels", uba(G4, input_size=[1, 4, 4, 4]), "'input_size'[1] is 4 but grad_output has 2"),
    ("uba-zero-width", uba(G4, input_size=[1, 2, 4, 0]), "'input_size' must have a positive W"),
    ("uba-empty-grad", uba((1, 2, 0, 8), input_size=S4), "grad_output must have a positive H (dimension 2)"),
    ("uba-align-corners", uba(G4, input_size=S4, align_corners=7), "'align_corners' must be 0 or 1, got 7"),
    ("uca-missing-output-size", uca(G4, input_size=S4), "'output_size' is required: 2 ints [H, W]"),
    ("uca-tiny-scale", uca(G4, input_size=S4, output_size=[8, 8], scales_h=1e-45),
     "'scales_h' is too small: its inverse overflows float32"),
    ("uca-align-corners", uca(G4, input_size=S4, output_size=[8, 8], align_corners=2),
     "'align_corners' must be 0 or 1, got 2"),
    ("uca-batch", uca(G4, input_size=[4, 2, 4, 4], output_size=[8, 8]), "'input_size'[0] is 4 but grad_output has 1"),
    ("uca-rank", uca(G5, input_size=S4, output_size=[8, 8]),
     "'grad_output' must be 4-D [N, C, H_out, W_out], got shape [1, 2, 4, 4, 4]"),
    ("uca-zero-size", uca(G4, input_size=[1, 2, 0, 0], output_size=[8, 8]), "'input_size' must have a positive H"),
    # ResizeBicubicV2Grad, ResizeLinearGrad, ResizeNearestNeighborV2Grad
    ("rc-align-corners", rc(align_corners=2), "'align_corners' must be 0 or 1, got 2"),
    ("rc-scales-length", rc(scales=[2.0, 2.0, 2.0]), "'scales' must have 2 values [scale_h, scale_w], got"),
    ("rc-negative-scale", rc(scales=[-2.0, 2.0]), "'scales[0]' must be a finite scale >= 0"),
    ("rc-rank", rc(grads=(2, 6, 6)), "'grads' must be 4-D [N, C, H_out, W_out], got shape [2, 6, 6]"),
    ("rc-rank-image", rc(original_image=(1, 2, 3, 3, 3)), "'original_image' must be 4-D [N, C, H_in, W_in]"),
    ("rc-channels", rc(original_image=(1, 3, 3, 3)),
     "dimension 1 of 'grads' (2) must equal dimension 1 of 'original_image' (3)"),
    ("rc-empty-image", rc(original_image=(1, 2, 3, 0)), "'original_image' must have a positive W_in (dimension 3)"),
    ("rl-nan-scale", rl(scale=nan), "'scale' must be a finite scale >= 0"),
    ("rl-align-corners", rl(align_corners=5), "'align_corners' must be 0 or 1, got 5"),
    ("rl-rank", rl(grads=(1, 2, 6, 6)), "'grads' must be 3-D [N, C, L_out], got shape [1, 2, 6, 6]"),
    ("rl-batch", rl(original_image=(2, 2, 3)),
     "dimension 0 of 'grads' (1) must equal dimension 0 of 'original_image' (2)"),
    ("rl-empty-image", rl(original_image=(1, 2, 0)), "'original_image' must have a positive L_in (dimension 2)"),
    ("rl-empty-grads", rl(grads=(1, 2, 0)), "'grads' must have a positive L_out (dimension 2)"),
    ("rn-size-length", rn(size=np.array([3, 3, 3], np.int32)),
     "input 'size' must hold 2 values [H_in, W_in], got [3, 3, 3]"),
    ("rn-size-zero", rn(size=np.array([3, 0], np.int64)), "input 'size' must hold a positive W_in, got [3, 0]"),
    ("rn-size-negative", rn(size=np.array([-3, 3], np.int32)), "input 'size' must hold a positive H_in, got [-3, 3]"),
    ("rn-both-flags", rn(align_corners=1, half_pixel_centers=1),
     "attributes 'align_corners' and 'half_pixel_centers' cannot both be 1"),
    ("rn-flag-value", rn(align_corners=2), "'align_corners' must be 0 or 1, got 2"),
    ("rn-scales-length", rn(scales=[2.0]), "'scales' must have 2 values [scale_h, scale_w], got"),
    ("rn-rank", rn(grads=(1, 2, 6)), "'grads' must be 4-D [N, C, H_out, W_out], got shape [1, 2, 6]"),
    ("rn-empty-grads", rn(grads=(1, 2, 0, 6)), "'grads' must have a positive H_out (dimension 2)"),
    # the reference names numpy's dtype (float32), attach() and the kernel ONNX's (float)
    ("rn-float-size", rn(size=np.array([3.0, 3.0], np.float32)),
     {"reference": "input 'size' has dtype float32; expected int32 or int64",
      "attach": "input 'size' has dtype float; expected int32 or int64",
      "kernel": "input 'size' has dtype float; expected int32 or int64"}),
    # GridSampler3DGrad
    ("g3-bicubic", g3(interpolation_mode="bicubic"),
     "'interpolation_mode' must be one of 'bilinear', 'nearest', got 'bicubic'"),
    ("g3-padding", g3(padding_mode="circular"),
     "'padding_mode' must be one of 'zeros', 'border', 'reflection', got 'circular'"),
    ("g3-align-corners", g3(align_corners=2), "'align_corners' must be 0 or 1, got 2"),
    ("g3-grid-last-dim", g3(grid=(1, 2, 3, 4, 2)),
     "input 'grid' must have last dimension 3 (x, y, z), got shape [1, 2, 3, 4, 2]"),
    ("g3-rank-grid", g3(grid=(1, 2, 3, 4)),
     "input 'grid' must be 5-D [N, D_out, H_out, W_out, 3], got shape [1, 2, 3, 4]"),
    ("g3-rank-x", g3(x=(1, 2, 3, 3)), "input 'x' must be 5-D [N, C, D_in, H_in, W_in], got shape [1, 2, 3, 3]"),
    ("g3-rank-grad", g3(grad=(1, 2, 2, 3)),
     "input 'grad' must be 5-D [N, C, D_out, H_out, W_out], got shape [1, 2, 2, 3]"),
    ("g3-batch-grid", g3(grid=(2, 2, 3, 4, 3)), "dimension 0 of 'grid' (2) must equal dimension 0 of 'x' (1)"),
    ("g3-batch-grad", g3(grad=(3, 2, 2, 3, 4)), "dimension 0 of 'grad' (3) must equal dimension 0 of 'x' (1)"),
    ("g3-channels", g3(x=(1, 5, 3, 3, 3)), "dimension 1 of 'grad' (2) must equal dimension 1 of 'x' (5)"),
    ("g3-depth", g3(grid=(1, 3, 3, 4, 3)), "dimension 2 of 'grad' (2) must equal dimension 1 of 'grid' (3)"),
    ("g3-width", g3(grad=(1, 2, 2, 3, 5)), "dimension 4 of 'grad' (5) must equal dimension 3 of 'grid' (4)"),
    ("g3-empty-volume", g3(x=(1, 2, 0, 3, 3)), "input 'x' must have a positive D_in (dimension 2)"),
    # attributes of another type than the schema's (the kernels read them as absent and took the default)
    ("n2-int-scale", (N2, {"grad_output": (1, 2, 8, 8)}, ("grad_input",), dict(input_size=[1, 2, 4, 4], scales_h=2)),
     "attribute 'scales_h' must be a float, got"),
    ("un2-float-input-size", un2(G4, input_size=[1.0, 2.0, 4.0, 4.0], output_size=[8, 8]),
     "attribute 'input_size' must be a list of ints, got"),
    ("un3-int-output-size", un3(G5, input_size=S5, output_size=4),
     "attribute 'output_size' must be a list of ints, got"),
    ("un3-float-scales", un3(G5, input_size=S5, scales=2.0), "attribute 'scales' must be a list of floats, got"),
    ("ub2-float-align-corners", ub2(G4, input_size=S4, output_size=[8, 8], align_corners=1.0),
     "attribute 'align_corners' must be an int, got"),
    ("bi-int-scales", bi(scales=[2, 2]), "attribute 'scales' must be a list of floats, got"),
    ("rl-string-scale", rl(scale="2"), "attribute 'scale' must be a float, got"),
    ("g3-int-mode", g3(interpolation_mode=1), "attribute 'interpolation_mode' must be a string, got"),
    ("gs-float-align-corners", gs(align_corners=0.0), "attribute 'align_corners' must be an int, got"),
    ("rg-int-cubic-coeff", rg(mode="cubic", cubic_coeff_a=-1), "attribute 'cubic_coeff_a' must be a float, got"),
    ("rg-float-axes", rg(scales=np.array([2, 2], np.float32), axes=[2.0, 3.0]),
     "attribute 'axes' must be a list of ints, got"),
    ("rg-int-mode", rg(mode=1), "attribute 'mode' must be a string, got"),
    # ResizeGrad: roi / scales / sizes are values (initializers for attach(), fed elsewhere)
    ("rg-roi-length", rg(roi=ROI[:6], coordinate_transformation_mode="tf_crop_and_resize"),
     "input 'roi' must have 8 values (starts then ends, one per axis), got 6"),
    ("rg-roi-length-axes", rg(roi=ROI, scales=np.array([2, 2], np.float32), axes=[2, 3],
                              coordinate_transformation_mode="tf_crop_and_resize"),
     "input 'roi' must have 4 values (starts then ends, one per entry of axes), got 8"),
    ("rg-scales-and-sizes", rg(sizes=SIZES),
     "give exactly one of the inputs 'scales' and 'sizes' (as Resize), got scales and sizes"),
    ("rg-neither", rg(scales=None), "give exactly one of the inputs 'scales' and 'sizes' (as Resize), got neither"),
    ("rg-neither-empty", rg(scales=np.zeros(0, np.float32), sizes=np.zeros(0, np.int64)),
     "give exactly one of the inputs 'scales' and 'sizes' (as Resize), got neither"),
    ("rg-zero-scale", rg(scales=np.array([1, 1, 0, 2], np.float32)),
     "input 'scales' must hold finite values > 0, got ["),
    ("rg-negative-scale", rg(scales=np.array([1, 1, 2, -2], np.float32)),
     "input 'scales' must hold finite values > 0, got ["),
    ("rg-nan-scale", rg(scales=np.array([1, 1, np.nan, 2], np.float32)),
     "input 'scales' must hold finite values > 0, got ["),
    ("rg-scales-count", rg(scales=np.array([2, 2], np.float32)),
     "input 'scales' must have 4 values (one per axis), got 2"),
    ("rg-zero-size", rg(scales=None, sizes=np.array([1, 2, 0, 8], np.int64)),
     "input 'sizes' must hold values > 0, got [1, 2, 0, 8]"),
    ("rg-negative-size", rg(scales=None, sizes=np.array([1, 2, 8, -8], np.int64)),
     "input 'sizes' must hold values > 0, got [1, 2, 8, -8]"),
    ("rg-empty-axis", rg(dY=(1, 2, 3, 8), X=(1, 2, 0, 4), scales=None, sizes=np.array([1, 2, 3, 8], np.int64)),
     "input 'sizes' asks for length 3 at dimension 2, where X has length 0 "
     "(as Resize: an empty axis cannot be resized"),
    ("rg-sizes-count", rg(scales=None, sizes=np.array([8, 8, 8], np.int64), axes=[2, 3]),
     "input 'sizes' must have 2 values (one per entry of axes), got 3"),
    ("rg-axes-range", rg(scales=np.array([2, 2], np.float32), axes=[2, 4]),
     "attribute 'axes' has 4, outside [-4, 3] for the rank-4 X"),
    ("rg-axes-negative-range", rg(scales=np.array([2, 2], np.float32), axes=[-5, 3]),
     "attribute 'axes' has -5, outside [-4, 3] for the rank-4 X"),
    ("rg-axes-repeated", rg(scales=np.array([2, 2], np.float32), axes=[3, -1]),
     "attribute 'axes' repeats an axis: [3, -1]"),
    ("rg-dy-shape", rg(dY=(1, 2, 8, 7)),
     "input 'dY' has shape [1, 2, 8, 7] but Resize of X [1, 2, 4, 4] with these scales/sizes gives [1, 2, 8, 8]"),
    ("rg-dy-shape-sizes", rg(scales=None, sizes=np.array([1, 2, 6, 8], np.int64)),
     "input 'dY' has shape [1, 2, 8, 8] but Resize of X [1, 2, 4, 4] with these scales/sizes gives [1, 2, 6, 8]"),
    ("rg-dy-shape-policy", rg(scales=None, sizes=np.array([8, 16], np.int64), axes=[2, 3],
                              keep_aspect_ratio_policy="not_smaller"),
     "input 'dY' has shape [1, 2, 8, 8] but Resize of X [1, 2, 4, 4] with these scales/sizes gives [1, 2, 16, 16]"),
    ("rg-dy-rank", rg(dY=(1, 2, 64)), "input 'dY' must have the rank of X (4), got shape [1, 2, 64]"),
    ("rg-scales-with-policy", rg(keep_aspect_ratio_policy="not_larger"),
     "input 'scales' cannot be used with keep_aspect_ratio_policy 'not_larger' (as Resize): give sizes"),
    ("rg-mode", rg(mode="area"), "attribute 'mode' must be one of 'nearest', 'linear', 'cubic', got 'area'"),
    ("rg-coordinate-mode", rg(coordinate_transformation_mode="half_pixel_flipped"),
     "attribute 'coordinate_transformation_mode' must be one of 'half_pixel', 'half_pixel_symmetric', "
     "'pytorch_half_pixel', "
     "'align_corners', 'asymmetric', 'tf_half_pixel_for_nn', 'tf_crop_and_resize', got 'half_pixel_flipped'"),
    ("rg-nearest-mode", rg(nearest_mode="round_half_even"),
     "attribute 'nearest_mode' must be one of 'round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil', got "
     "'round_half_even'"),
    ("rg-policy", rg(scales=None, sizes=SIZES, keep_aspect_ratio_policy="fit"),
     "attribute 'keep_aspect_ratio_policy' must be one of 'stretch', 'not_larger', 'not_smaller', got 'fit'"),
    ("rg-antialias-nearest", rg(antialias=1),
     "attribute 'antialias' = 1 needs mode 'linear' or 'cubic' (as Resize), got mode 'nearest'"),
    ("rg-antialias-value", rg(mode="linear", antialias=2), "attribute 'antialias' must be 0 or 1, got 2"),
    ("rg-exclude-outside", rg(mode="cubic", exclude_outside=-1), "attribute 'exclude_outside' must be 0 or 1, got -1"),
    ("rg-cubic-coeff", rg(mode="cubic", cubic_coeff_a=nan), "attribute 'cubic_coeff_a' must be finite, got"),
]


def feeds_for(shapes, dtype=np.float32):
    """Random values for the inputs given as shapes, the given values as they are, nothing for a left-out input."""
    rng = np.random.default_rng(0)
    return {name: shape if isinstance(shape, np.ndarray) else rng.standard_normal(shape).astype(dtype)
            for name, shape in shapes.items() if shape is not None}


def text_for(text, path):
    return text[path] if isinstance(text, dict) else text


def graph_input(name, value, symbolic):
    elem = (helper.np_dtype_to_tensor_dtype(value.dtype) if isinstance(value, np.ndarray) else ONNX_DTYPES["float32"])
    shape = value.shape if isinstance(value, np.ndarray) else value
    return helper.make_tensor_value_info(name, elem,
                                         [f"{name}_{i}" for i in range(len(shape))] if symbolic else list(shape))


def bad_model(op_type, inputs, outputs, attrs, symbolic=False, constants=False):
    """One named node; an input given as a value is an initializer when `constants`, else a graph input like the
    others; `symbolic`: every graph input has symbolic dims (no shape to check before the kernel)."""
    node = opset.make_node(op_type, [name if v is not None else "" for name, v in inputs.items()], list(outputs),
                           name="bad_node", **attrs)
    given = {name: v for name, v in inputs.items() if v is not None}
    fixed = {name: v for name, v in given.items() if constants and isinstance(v, np.ndarray)}
    graph = helper.make_graph(
        [node], "bad", [graph_input(name, v, symbolic) for name, v in given.items() if name not in fixed],
        [helper.make_tensor_value_info(name, ONNX_DTYPES["float32"], None) for name in outputs if name],
        initializer=[numpy_helper.from_array(v, name) for name, v in fixed.items()])
    return helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 18),
                                                                 helper.make_opsetid(opset.DOMAIN, opset.VERSION)])


PARAMS = [pytest.param(b[1], b[2], id=b[0]) for b in BAD]


@pytest.mark.parametrize("spec,text", PARAMS)
def test_reference_rejects(spec, text):
    op_type, inputs, outputs, attrs = spec
    model = bad_model(op_type, inputs, outputs, attrs)
    with pytest.raises(ResampleGradError) as error:
        run_model(model, feeds_for(inputs), "reference")
    assert text_for(text, "reference") in str(error.value)
    assert str(error.value).startswith(op_type)


@pytest.mark.parametrize("spec,text", PARAMS)
def test_attach_rejects(spec, text):
    op_type, inputs, outputs, attrs = spec
    with pytest.raises(ResampleGradError) as error:
        opset.attach(bad_model(op_type, inputs, outputs, attrs, constants=True))
    assert text_for(text, "attach") in str(error.value)
    assert str(error.value).startswith(op_type)


def dynamic_model(op_type, shapes, outputs, attrs, dtypes=None):
    """Symbolic dims and no function bodies: only the kernel can check the shapes."""
    dtypes = dtypes or {}
    inputs = {name: np.zeros(shape, dtypes[name]) if name in dtypes else shape for name, shape in shapes.items()}
    return bad_model(op_type, inputs, outputs, attrs, symbolic=True)


@pytest.mark.parametrize("spec,text", PARAMS)
def test_kernel_rejects(spec, text):
    op_type, inputs, outputs, attrs = spec
    model = bad_model(op_type, inputs, outputs, attrs, symbolic=True)
    with pytest.raises(Exception) as error:
        session = runtime.session(model)
        session.run(None, feeds_for(inputs))
    message = str(error.value)
    assert text_for(text, "kernel") in message
    assert f"{op_type} (node 'bad_node')" in message


# Rows whose fault is in a run-time value: with the values fed (not constants) attach() cannot see it and
# accepts the model; the function then gives what a function can instead of the error.
FED_VALUE_FAULTS = [
    "rn-size-length", "rn-size-zero", "rn-size-negative", "rg-roi-length", "rg-roi-length-axes", "rg-scales-and-sizes",
    "rg-neither-empty", "rg-zero-scale", "rg-negative-scale", "rg-nan-scale", "rg-scales-count", "rg-zero-size",
    "rg-negative-size", "rg-empty-axis", "rg-sizes-count", "rg-dy-shape", "rg-dy-shape-sizes", "rg-dy-shape-policy",
    "rg-scales-with-policy",
]


@pytest.mark.parametrize("row", FED_VALUE_FAULTS)
def test_attach_cannot_see_fed_values(row):
    """ResizeGrad's function: NaN shaped like X (its documented answer); ResizeNearestNeighborV2Grad's: onnxruntime's
    run-time error, from the function's inlined nodes, whose names carry the op's."""
    op_type, inputs, outputs, attrs = next(spec for name, spec, _ in BAD if name == row)
    model = opset.attach(bad_model(op_type, inputs, outputs, attrs))  # accepted: the values are not known yet
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    if op_type == RN:
        with pytest.raises(Exception, match=RN):
            session.run(None, feeds_for(inputs))
        return
    (dx,) = session.run(None, feeds_for(inputs))
    assert dx.shape == inputs["X"] and np.isnan(dx).all()


@pytest.mark.parametrize("path", ["reference", "kernel"])
def test_mixed_dtypes_are_rejected(path):
    shapes = GS_IN
    feeds = feeds_for(shapes)
    feeds["grid"] = feeds["grid"].astype(np.float64)
    if path == "reference":
        with pytest.raises(ResampleGradError,
                           match="input 'input' has dtype float32 but 'grad_output'|'grid' has dtype float64"):
            opset.OPS[GS].reference(feeds["grad_output"], feeds["input"], feeds["grid"])
        return
    model = dynamic_model(GS, shapes, ("grad_input", "grad_grid"), {}, dtypes={"grid": "float64"})
    with pytest.raises(Exception, match=GS):  # onnxruntime's type check names the op and the type
        runtime.session(model).run(None, feeds)


def test_non_float_dtype_is_rejected():
    with pytest.raises(ResampleGradError,
                       match="input 'grad_output' has dtype int32; expected float16, bfloat16, float32 or float64"):
        opset.OPS[N1].reference(np.ones((1, 2, 4), np.int32), input_size=[1, 2, 2])
    model = dynamic_model(N1, {"grad_output": (1, 2, 4)}, ("grad_input",), dict(input_size=[1, 2, 2]))
    model.graph.input[0].type.tensor_type.elem_type = 6  # int32
    with pytest.raises(Exception, match=N1):
        runtime.session(model).run(None, {"grad_output": np.ones((1, 2, 4), np.int32)})


# Rows whose fault is a dimension: with symbolic dims attach() cannot see it and accepts the model; the function
# fails at run time with onnxruntime's error from its inlined nodes, whose names carry the op's (a function cannot
# raise a message of its own). The Upsample and Resize*V2 functions computed on grad_output's own dims before.
DYNAMIC_SHAPE_FAULTS = [
    "gs-batch-grid", "gs-channels", "gs-height", "gs-width", "gs-empty-image", "gs-grid-last-dim",
    "n1-input-size-batch", "n1-output-size", "n2-channels", "n2-empty-grad", "bi-batch", "bi-empty-image",
    "bi-empty-grads", "un2-channels", "un2-empty-grad", "un2-1d-output-size", "un2-1d-batch", "un3-output-size",
    "un3-empty-grad", "une3-batch", "ub2-batch", "ub2-1d-output-size", "ut3-channels", "uc2-output-size",
    "uba-channels", "uba-empty-grad", "uca-batch", "rc-channels", "rc-empty-image", "rl-batch", "rl-empty-image",
    "rl-empty-grads", "rn-empty-grads", "g3-grid-last-dim", "g3-batch-grid", "g3-batch-grad", "g3-channels",
    "g3-depth", "g3-width", "g3-empty-volume",
]


@pytest.mark.parametrize("row", DYNAMIC_SHAPE_FAULTS)
def test_function_fails_on_a_dynamic_shape_fault(row):
    op_type, inputs, outputs, attrs = next(spec for name, spec, _ in BAD if name == row)
    model = opset.attach(bad_model(op_type, inputs, outputs, attrs, symbolic=True))  # accepted: the dims are unknown
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match=f"_inlfunc_{op_type}"):
        session.run(None, feeds_for(inputs))


@pytest.mark.parametrize("op_type,inputs,input_dtypes,attrs,text", [
    (GS, GS_IN, {"grid": np.float64}, {},
     "input 'grid' has dtype double but 'grad_output' has float; all inputs must share one dtype"),
    (G3, {"grad": (1, 2, 2, 3, 4), "x": (1, 2, 3, 3, 3), "grid": (1, 2, 3, 4, 3)}, {"x": np.float16}, {},
     "input 'x' has dtype float16 but 'grad' has float; all inputs must share one dtype"),
    (N1, {"grad_output": (1, 2, 4)}, {"grad_output": np.int32}, dict(input_size=[1, 2, 2]),
     "input 'grad_output' has dtype int32; expected float16, bfloat16, float or double"),
    (RG, {"dY": (1, 2, 8), "X": (1, 2, 4), "roi": (0,), "scales": (3,)}, {"scales": np.float64}, {},
     "input 'scales' has dtype double; expected float"),
    (RG, {"dY": (1, 2, 8), "X": (1, 2, 4), "roi": (0,), "scales": (0,), "sizes": (3,)}, {"sizes": np.int32}, {},
     "input 'sizes' has dtype int32; expected int64"),
], ids=["gs-mixed", "g3-mixed", "n1-int32", "rg-double-scales", "rg-int32-sizes"])
def test_attach_names_the_op_for_a_wrong_input_type(op_type, inputs, input_dtypes, attrs, text):
    """onnx's own type check raises a ValidationError naming neither the op nor the node: attach() checks first."""
    outputs = {GS: ["gi", "gg"], G3: ["dx", "dgrid"]}.get(op_type, ["out"])
    with pytest.raises(ResampleGradError) as error:
        opset.attach(one_node_model(op_type, inputs, outputs, attrs, input_dtypes=input_dtypes))
    assert str(error.value) == f"{op_type}: {text}"


def test_unknown_op_and_attribute_are_rejected_by_attach():
    model = one_node_model(BI, BI_IN, ("y",), {})
    model.graph.node[0].op_type = "ResizeBicubicGrad"
    with pytest.raises(ResampleGradError, match="uses an op the resample_grad domain does not have"):
        opset.attach(model)
    model = one_node_model(BI, BI_IN, ("y",), dict(half_pixel=1))
    with pytest.raises(ResampleGradError, match="unknown attribute 'half_pixel'"):
        opset.attach(model)


def test_unknown_attribute_is_rejected_by_the_reference_evaluator():
    """The evaluator runs the reference with the node's attributes by name: one the op does not have is an error
    naming it, not a keyword the reference would swallow (a misspelt scale would silently be the default)."""
    model = one_node_model(BI, BI_IN, ("y",), dict(scales_h=2.0))
    feeds = {name: np.ones(shape, np.float32) for name, shape in BI_IN.items()}
    with pytest.raises(ResampleGradError,
                       match=f"{BI}: an unnamed node has unknown attribute 'scales_h'; expected .*align_corners"):
        run_model(model, feeds, "reference")


def test_attach_refuses_old_default_opset():
    with pytest.raises(ResampleGradError, match="opset 16; the resample_grad functions need 17 or newer"):
        opset.attach(one_node_model(BI, BI_IN, ("y",), {}, opset_version=16))
