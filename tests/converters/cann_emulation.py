"""What CANN's GE gradient kernels compute: an independent NumPy picture, read from their public source.

A test oracle for the Ascend converter (test_ascend_emulation.py), written from the kernels, not from this
project's references: each formula cites its file and line at

    OPS_CV   hicann/ops-cv @ 6ae87653464d2afb064c829e529abba2e278b0c4 (image/<op>/op_host, op_kernel)
    CANNDEV  dengguojie/vue-element-admin @ 57af4a169fb94656ab03005d102f65f18d9e61f7, a public mirror of Ascend
             canndev: the TBE kernels (ops/built-in/tbe/impl/...) of the ops that ops-cv registers on Ascend 950 only
    RGD      leideng/CANN-8.1.RC1 @ 551ed27c, Ascend/ascend-toolkit/8.1.RC1/opp/built-in/op_impl/ai_core/tbe/impl/
             dynamic/resize_grad_d.py: the TBE ResizeGradD of the CANN 8.1.RC1 toolkit (CANNDEV's predates its
             data_format attribute)

`run_converted` runs a model written by to_ascend: its standard helper nodes (Cast, Unsqueeze, Squeeze,
Transpose) in NumPy, each GE node through the emulation of its kernel on the given product family. A GE op
not emulated here raises NotEmulated; attributes with which the kernel reads memory it was not given, or
which GE's infershape refuses, raise Undefined.

Arithmetic: the AscendC kernels build per-axis weight matrices in float32, cast them to the tensor dtype T
(CAST_RINT), and contract one axis at a time on the cube unit with A, B and C of dtype T
(matmul::MatmulType<..., T>): each pass is emulated as round_T(float32 sum of round_T(weight) * x), the
intermediate tensor of dtype T (the workspace is `__gm__ T*`). The cube's float32 accumulation inside one
pass is an assumption (the kernels' K-splits are not modelled).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto, helper, numpy_helper

GE_DOMAIN = "resample_grad.ge"
TBE_FAMILIES = ("Atlas training series", "Atlas inference series", "Atlas A2", "Atlas A3")
F32 = np.float32


class NotEmulated(Exception):
    """A GE op (or product) whose kernel this module does not model."""


class Undefined(Exception):
    """Attributes with which the kernel reads past what it was given, or GE infershape fails."""


def rounded(x: np.ndarray, dtype) -> np.ndarray:
    """x rounded to dtype (float16, bfloat16 or float32), held as float32."""
    return np.asarray(x, np.float32).astype(dtype).astype(np.float32)


def _contract(x: np.ndarray, axis: int, weights: np.ndarray, dtype) -> np.ndarray:
    """One pass: weights[i, o] (input index i of the result, output index o of x) contracted with x's axis."""
    w = rounded(weights, dtype).astype(np.float64)  # Cast(radio, ..., CAST_RINT) to T
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    out = (moved @ w.T).astype(np.float32)  # float32 accumulation (see the module docstring)
    return rounded(np.moveaxis(out, -1, axis), dtype)


def _float_equal(a: float, b: float) -> bool:
    """FloatEqual of the ops-cv tilings and kernels: |a - b| < 1e-6
    (upsample_nearest_exact2d_grad_tiling.h:128-136)."""
    return abs(float(a) - float(b)) < 1e-6


# --------------------------------------------------------------------------- nearest (ops-cv)

def _nearest_weights(x_len: int, dy_len: int, scale: np.float32, exact: bool) -> np.ndarray:
    """For each input column x the kernel marks the outputs down..up-1 of the original gradient:
    down = min(ceil(x * scale [- 0.5]), dy_len), up = the same for x + 1, in float32
    (upsample_nearest_exact2d_grad_kernel.h:301-339 calculateIntermediateTensorX, :379-398 calculateRadioTensorW;
    upsample_nearest3d_grad.h:289-322; arch35 upsample_nearest_exact2d_grad_simt_base.h:34-42)."""
    w = np.zeros((x_len, dy_len))
    for x in range(x_len):
        bounds = []
        for edge in (x, x + 1):
            value = F32(edge) * scale  # Muls(downTensor, downTensor, scale_w)
            if exact:
                value = F32(value - F32(0.5))  # Adds(..., -0.5)
            bounds.append(int(min(np.ceil(value), dy_len)))  # Ceil, Mins(..., wSize)
        w[x, max(bounds[0], 0):max(bounds[1], 0)] = 1
    return w


def _nearest_scale_2d(dy_len: int, x_len: int, attr: float) -> np.float32:
    """compute_scale_value(in = grad_output's size, out = input_size, scale): the attribute when > 0, else
    float(in) / out (upsample_nearest_exact2d_grad_tiling.h:116-126, called at tiling.cpp:122-137)."""
    return F32(attr) if attr > 0 else F32(dy_len) / F32(x_len)


def upsample_nearest_2d(dy: np.ndarray, attrs: dict, exact: bool, dtype) -> np.ndarray:
    """UpsampleNearest2dGrad (the exact kernel with isExact = false: upsample_nearest2d_grad.cpp:37-40) and
    UpsampleNearestExact2dGrad. Attribute order output_size, input_size, scales_h, scales_w
    (upsample_nearest_exact2d_grad_def.cpp:36-39; the tiling reads them by index, tiling.cpp:140-156)."""
    x_shape = list(attrs["input_size"])
    scales = [_nearest_scale_2d(dy.shape[k], x_shape[k], attrs.get(name, 0.0))
              for k, name in ((2, "scales_h"), (3, "scales_w"))]
    # Process(): the W pass unless scale_w is 1, then the H pass unless scale_h is 1 and scale_w is not
    # (upsample_nearest_exact2d_grad_kernel.h:284-299); a skipped pass leaves the axis as it is
    return _two_passes(dy, x_shape, scales, lambda axis, s: _nearest_weights(x_shape[axis], dy.shape[axis], s, exact),
                       dtype)


def _two_passes(dy: np.ndarray, x_shape, scales, weights, dtype) -> np.ndarray:
    """The W pass unless W's scale is 1, then the H pass unless H's is 1 and W's is not (the Process() of the 2-D
    ops-cv kernels); weights(axis, scale) -> [in, out]."""
    out = dy
    if not _float_equal(scales[1], 1.0):
        out = _contract(out, 3, weights(3, scales[1]), dtype)
    if not _float_equal(scales[0], 1.0) or _float_equal(scales[1], 1.0):
        out = _contract(out, 2, weights(2, scales[0]), dtype)
    if list(out.shape) != list(x_shape):
        raise Undefined(f"the kernel leaves shape {list(out.shape)}, input_size is {list(x_shape)}")
    return out


def upsample_nearest_3d(dy: np.ndarray, attrs: dict, exact: bool, dtype) -> np.ndarray:
    """UpsampleNearest3dGrad / UpsampleNearestExact3dGrad (the same kernel, isExact true for the latter:
    upsample_nearest_exact3d_grad.cpp:17-41)."""
    x_shape = list(attrs["input_size"])
    output_size, scales = list(attrs.get("output_size") or []), list(attrs.get("scales") or [])
    # GE infershape: exactly one of output_size / scales non-empty; with scales, floor(in * scale) == out
    # (upsample_nearest3d_grad_infershape.cpp:43-72)
    if bool(output_size) == bool(scales):
        raise Undefined("GE infershape: only one of output_size or scales may be non-empty (infershape.cpp:70-72)")
    for k, s in enumerate(scales):
        if int(np.floor(F32(x_shape[2 + k]) * F32(s))) != dy.shape[2 + k]:
            raise Undefined(f"GE infershape: floor(input_size * scales[{k}]) != grad_output (infershape.cpp:61-68)")
    # the tiling reads scalesArray[0..2] whatever the attribute holds (upsample_nearest3d_grad_tiling.cpp:178-183,
    # arch35 tiling :232-235)
    if len(scales) < 3:
        raise Undefined(f"the tiling reads scales[0..2] of a {len(scales)}-element attribute (tiling.cpp:180-183)")
    out = dy
    # W, then H, then D, each only where GetNeedResize (the scale is not 1, or without a scale the sizes differ)
    # (tiling.cpp:243-261, 272-279; upsample_nearest3d_grad.h:215-237); the scale: the attribute when > 0, else
    # out / in (tiling.cpp:263-270)
    need = []
    for k in range(3):
        s, size_in, size_out = F32(scales[k]), x_shape[2 + k], dy.shape[2 + k]
        need.append(not _float_equal(s, 1.0) if s > 0 else size_in != size_out)
    if not any(need):
        need[2] = True
    for k in (2, 1, 0):
        if need[k]:
            s = F32(scales[k]) if scales[k] > 0 else F32(dy.shape[2 + k]) / F32(x_shape[2 + k])
            out = _contract(out, 2 + k, _nearest_weights(x_shape[2 + k], dy.shape[2 + k], s, exact), dtype)
    if list(out.shape) != x_shape:
        raise Undefined(f"the kernel leaves shape {list(out.shape)}, input_size is {x_shape}")
    return out


# --------------------------------------------------------------------------- bilinear (ops-cv)

def _bilinear_scale(dy_len: int, x_len: int, corners: bool, attr: float) -> np.float32:
    """compute_scale_value(in = grad_output's size, out = input_size): (out-1)/(in-1) with align_corners (0 for
    in = 1), else the attribute when > 0, else out / in (upsample_bilinear2d_grad_tiling.cpp:155-172)."""
    if corners:
        return F32(x_len - 1) / F32(dy_len - 1) if dy_len > 1 else F32(0)
    return F32(attr) if attr > 0 else F32(x_len) / F32(dy_len)


def _bilinear_weights(x_len: int, dy_len: int, scale: np.float32, corners: bool) -> np.ndarray:
    """Each gradient position o: center o * s, or max((o + 0.5) * s - 0.5, 0); floor index and lambda
    (upsample_bilinear2d_grad_kernel.h:340-380); weight 1 - lambda on the floor index and lambda on the next, or
    1.0 on the floor index when it is the last input (kernel.h:426-466 setRadioValueW)."""
    w = np.zeros((x_len, dy_len))
    for o in range(dy_len):
        if corners:
            center = F32(o) * scale
        else:
            center = max(F32(F32(F32(o) + F32(0.5)) * scale) - F32(0.5), F32(0))
        low = int(np.floor(center))
        lam = F32(center - F32(low))
        if not 0 <= low < x_len:
            raise Undefined(f"the kernel reads input {low} of {x_len}")
        if low == x_len - 1:
            w[low, o] += 1.0
        else:
            w[low, o] += F32(1) - lam
            w[low + 1, o] += lam
    return w


def upsample_bilinear_2d(dy: np.ndarray, attrs: dict, dtype) -> np.ndarray:
    """UpsampleBilinear2dGrad: attributes output_size, input_size, align_corners, scales_h, scales_w
    (tiling.cpp:215-232); W pass unless its scale is 1, H pass unless its is 1 and W's is not
    (tiling.cpp:469-476, kernel.h:197-198)."""
    x_shape, corners = list(attrs["input_size"]), bool(attrs.get("align_corners", 0))
    scales = [_bilinear_scale(dy.shape[k], x_shape[k], corners, attrs.get(name, 0.0))
              for k, name in ((2, "scales_h"), (3, "scales_w"))]
    return _two_passes(dy, x_shape, scales,
                       lambda axis, s: _bilinear_weights(x_shape[axis], dy.shape[axis], s, corners), dtype)


# --------------------------------------------------------------------------- trilinear (ops-cv)

SLIDE = 16  # SLIDE_SIZE: weights for 16 inputs at a time (upsample_trilinear3d_backward_tiling_func.cpp:23)


def _trilinear_weights(x_len: int, dy_len: int, scale: np.float32, corners: bool) -> np.ndarray:
    """The weights of each slide of 16 inputs starting at a multiple of 16 (kernel.h GetSlideRange :412-424), over the
    gradient window [x_min, x_min + k) with x_min = max(int((start - 1) / s) - 1, 0) (kernel.h:221-223) and
    k = min(Ceil(20 / s) + 4, dy_len), dy_len for s = 0 (tiling_func.cpp:391-398, Ceil :443-450). Per gradient
    index: source s * o with align_corners, else max(s * (o + 0.5) - 0.5, 0) (kernel.h:256-262); index
    min(int(src), x_len - 1), lambda1 = min(max(src - index, 0), 1), the next index clamped, lambda0 = 1 when both
    are the last input (kernel.h:228-232); each weight set only inside the slide (kernel.h:241-246)."""
    w = np.zeros((x_len, dy_len))
    if _float_equal(scale, 0.0):
        k = dy_len
    else:
        q = F32(F32(SLIDE + 4) / scale)
        k = min((int(q) if _float_equal(q, int(q)) else int(q) + 1) + 4, dy_len)
    for start in range(0, x_len, SLIDE):
        length = min(SLIDE, x_len - start)
        x_min = max(int(F32(start - 1) / scale) - 1, 0) if scale > 0 else 0
        for o in range(x_min, x_min + min(dy_len - x_min, k)):
            if corners:
                src = F32(scale * F32(o))
            else:
                src = max(F32(F32(scale * F32(F32(o) + F32(0.5))) - F32(0.5)), F32(0))
            i0 = min(int(src), x_len - 1)
            lam1 = min(max(F32(src - F32(i0)), F32(0)), F32(1))
            i1 = min(i0 + 1, x_len - 1)
            lam0 = F32(1) if i0 == i1 else F32(F32(1) - lam1)
            if start <= i0 < start + length:
                w[i0, o] = lam0
            if i0 != i1 and start <= i1 < start + length:
                w[i1, o] = lam1
    return w


def upsample_trilinear_3d(dy: np.ndarray, attrs: dict, dtype) -> np.ndarray:
    """UpsampleTrilinear3dBackward (A2 / A3 only: upsample_trilinear3d_backward_def.cpp:42-43): attributes
    output_size, input_size, align_corners, scale_d, scale_h, scale_w, the inverse scales (tiling_func.cpp:29-35,
    131-135; aclnn passes 1 / scale for all three or 0 for all: aclnn_upsample_trilinear_3d_backward.cpp:213-222).
    The tiling fails when an attribute-or-ratio scale is below 0.02 (CheckScales, tiling_func.cpp:169-180); per axis
    the resolved scale is 1 for equal sizes, (in-1)/(out-1) with align_corners (0 for one output), else the attribute
    when > 0, else float(in) / out (:218-239); an axis of scale 1 is skipped, W kept when all are (:201-206). Passes
    W, then H, then D (kernel.h Process :141-162)."""
    x_shape, corners = list(attrs["input_size"]), bool(attrs.get("align_corners", 0))
    given = [F32(attrs.get(n, 0.0)) for n in ("scale_d", "scale_h", "scale_w")]
    scales, need = [], []
    for k, g in enumerate(given):
        x_len, dy_len = x_shape[2 + k], dy.shape[2 + k]
        if (g if g > 0 else F32(x_len) / F32(dy_len)) < F32(0.02):
            raise Undefined(f"the tiling refuses a scale below 0.02 on axis {2 + k} (tiling_func.cpp:169-180)")
        if x_len == dy_len:
            s = F32(1)
        elif corners:
            s = F32(x_len - 1) / F32(dy_len - 1) if dy_len > 1 else F32(0)
        else:
            s = g if g > 0 else F32(x_len) / F32(dy_len)
        scales.append(s)
        need.append(not _float_equal(s, 1.0))
    if not any(need):
        need[2] = True
    out = dy
    for k in (2, 1, 0):
        if need[k]:
            out = _contract(out, 2 + k, _trilinear_weights(x_shape[2 + k], dy.shape[2 + k], scales[k], corners), dtype)
    if list(out.shape) != x_shape:
        raise Undefined(f"the kernel leaves shape {list(out.shape)}, input_size is {x_shape}")
    return out


# --------------------------------------------------------------------------- bicubic (ops-cv)

def _cubic(t: np.float32) -> list:
    """The kernel's coefficients of the taps at -1, 0, 1, 2 for fraction t: ((1.25 x - 2.25) x) x + 1 for
    x = t, 1 - t and ((-0.75 x + 3.75) x - 6) x + 3 for x = 1 + t, 2 - t (upsample_bicubic2d_grad_base.cpp:139-159;
    _dc.h:59-80 CalcWeights)."""
    def near(x):
        return F32(F32(F32(F32(1.25) * x - F32(2.25)) * x) * x + F32(1))

    def far(x):
        return F32(F32(F32(F32(-0.75) * x + F32(3.75)) * x - F32(6)) * x + F32(3))
    return [far(F32(t + F32(1))), near(t), near(F32(F32(1) - t)), far(F32(F32(2) - t))]


def _bicubic_weights(x_len: int, dy_len: int, scale: np.float32, corners: bool, deterministic: bool) -> np.ndarray:
    """Source o * s or (o + 0.5) * s - 0.5 in float32 (base.cpp:124-136; _dc.h:414-441), index floor (the DC kernel
    also min(floor, in - 1) and t <= 1), taps index - 1 .. index + 2 clamped into [0, in - 1] with their weights
    added there (base.cpp:233-265 fillCoeffW)."""
    w = np.zeros((x_len, dy_len))
    for o in range(dy_len):
        center = F32(o) * scale if corners else F32(F32(F32(o) + F32(0.5)) * scale) - F32(0.5)
        low = int(np.floor(center))
        if deterministic:
            low = min(low, x_len - 1)
        t = F32(center - F32(low))
        if deterministic:
            t = min(t, F32(1))
        for k, c in enumerate(_cubic(t)):
            w[min(max(low - 1 + k, 0), x_len - 1), o] += c
    return w


def upsample_bicubic_2d(dy: np.ndarray, attrs: dict, x_shape, dtype, deterministic: bool) -> np.ndarray:
    """UpsampleBicubic2dGrad: attributes align_corners, scales_h, scales_w (the inverse scales, used as they are:
    upsample_bicubic2d_grad_tiling.cpp:62-72); grad_input's shape is the output's. The tiling runs the deterministic
    kernel when asked or when a scale is outside [1/50, 50) (tiling.cpp:306-313); that kernel copies an axis whose
    sizes are equal (tiling.cpp:330-334) and divides by the scale to place its tiles (_dc.h:404-411)."""
    corners = bool(attrs.get("align_corners", 0))
    scales = [F32(attrs.get("scales_h", 0.0)), F32(attrs.get("scales_w", 0.0))]
    if any(not F32(1 / 50) <= s < F32(50) for s in scales):
        deterministic = True
        if any(s == 0 for s in scales):
            raise Undefined(f"the deterministic kernel divides by a scale of 0 (_dc.h:404-411), scales {scales}")
    out = dy
    for axis, s in ((3, scales[1]), (2, scales[0])):  # W first, then H (_dc.h:304-316)
        if deterministic and x_shape[axis] == dy.shape[axis]:
            continue
        out = _contract(out, axis, _bicubic_weights(x_shape[axis], dy.shape[axis], s, corners, deterministic), dtype)
    return out


# --------------------------------------------------------------------------- antialias (ops-cv)

AA_BL = "image/upsample_bilinear2d_aa_backward"
AA_BC = "image/upsample_bicubic2d_aa_grad"


def _aa_filter(x: np.float32, cubic: bool, a2: bool) -> np.float32:
    """weightCalculate (AA_BL/op_kernel/..._kernel.h:56-65; arch35 _simt_base.h:46-53) and the bicubic getWeight
    (AA_BC/op_kernel/..._kernel.h:64-73: no test for |x| >= 2) or CubicFilterAA (arch35 _common.h:32-50: 0 from 2)."""
    x = F32(abs(F32(x)))
    if not cubic:
        return F32(F32(1) - x) if x < F32(1) else F32(0)
    if x < F32(1):
        return F32(F32(F32(F32(F32(1.5) * x) - F32(2.5)) * x) * x + F32(1))
    if not a2 and x >= F32(2):
        return F32(0)
    if a2:
        return F32(F32(F32(F32(F32(2.5) - F32(F32(0.5) * x)) * x) - F32(4)) * x + F32(2))
    return F32(F32(F32(F32(F32(-0.5) * x) + F32(2.5)) * x - F32(4)) * x + F32(2))


def _aa_scale(x_len: int, dy_len: int, corners: bool, attr: float) -> np.float32:
    """ComputeScaleValue (AA_BL/op_host/..._tiling.cpp:255-268, arch35 _tiling_arch35.cpp:143-166) and
    compute_scale_value (AA_BC/op_host/..._tiling.cpp:198-214, its `output_size` being attribute 1, input_size:
    :70-74, 414-421; arch35 :158-173): (x-1)/(dy-1) with align_corners (0 for dy = 1; bicubic A2: 1 for equal
    sizes), else the attribute when > 0, else x / dy."""
    if corners:
        return F32(x_len - 1) / F32(dy_len - 1) if dy_len > 1 else F32(0)
    return F32(attr) if attr > 0 else F32(x_len) / F32(dy_len)


def _aa_window(center: np.float32, support: np.float32, x_len: int, a2: bool, cubic: bool):
    """xMin = max(floor(center + (0.5 - support)), 0), xSize = min(floor(center + (0.5 + support)), x) - xMin, capped
    at maxInterpSize = 2 ceil(support) + 1 (A2: kernel.h:331-349; AA_BC kernel.h:397-414; tiling.cpp:244-245, AA_BC
    :184-185); arch35: floorf(center - support + 0.5), floorf(center + support + 0.5) (simt_base.h:88-89, AA_BC
    _simt_base.h:39-42)."""
    if a2:
        low = max(F32(np.floor(F32(center + F32(F32(0.5) - support)))), F32(0))
        size = min(F32(np.floor(F32(center + F32(F32(0.5) + support)))), F32(x_len)) - low
        size = max(min(size, F32(int(np.ceil(support)) * 2 + 1)), F32(0))
        return int(low), int(low) + int(size)
    low = max(int(np.floor(F32(F32(center - support) + F32(0.5)))), 0)
    return low, min(int(np.floor(F32(F32(center + support) + F32(0.5)))), x_len)


def _aa_weights(x_len: int, dy_len: int, scale: np.float32, cubic: bool, a2: bool) -> np.ndarray:
    """The scatter form (A2 / A3 radio matrices, the arch35 non-deterministic SIMT kernels): per gradient index o,
    centre (o + 0.5) * s (A2: Adds 0.5 then Muls, kernel.h:325-327; arch35 bicubic: 0.5 for s = 0, _simt_base.h:37),
    w = filter((i - centre + 0.5) * invscale) on the window, divided by their float32 sum when it is not 0
    (kernel.h:420-438; AA_BC kernel.h:503-520; arch35 simt_base.h:90-121, AA_BC _simt_base.h:44-98). support and
    invscale from the tiling (tiling.cpp:239-252; AA_BC tiling.cpp:178-194)."""
    half = F32(2) if cubic else F32(1)
    support = F32(half * scale) if scale >= F32(1) else half
    inv = F32(F32(1) / scale) if scale >= F32(1) else F32(1)
    w = np.zeros((x_len, dy_len))
    for o in range(dy_len):
        center = F32(F32(F32(o) + F32(0.5)) * scale)
        if cubic and not a2 and scale <= 0:
            center = F32(0.5)
        low, high = _aa_window(center, support, x_len, a2, cubic)
        taps = [_aa_filter(F32(F32(F32(F32(i) - center) + F32(0.5)) * inv), cubic, a2) for i in range(low, high)]
        total = F32(0)
        for t in taps:
            total = F32(total + t)
        # A2 bilinear: totalW > 0 (kernel.h:428); A2 bicubic: !FloatEqual(total_w, 0) (AA_BC kernel.h:516); arch35:
        # != 0 (simt_base.h:110-117; AA_BC _simt_base.h:75-77)
        keep = (total > 0 if not cubic else not _float_equal(total, 0.0)) if a2 else total != 0
        if keep:
            for i, t in zip(range(low, high), taps, strict=True):
                w[i, o] = F32(t / total)
    return w


def _aa_bilinear_windows(weights: np.ndarray, scale: np.float32, slide: int) -> np.ndarray:
    """The A2 / A3 bilinear kernel builds its radio matrix per slide of `slide` inputs (x multiples of it,
    tiling.cpp:324-367) from the gradients [xMin, xMin + K) only: xMin = max(int((max(a - 1, 0)) / s - support) - 1,
    0), 0 for s = 0 (kernel.h:303-320); K = Ceil((slide + 4) / s) + Ceil(maxInterpSize) + 4, at most the gradient
    length (tiling.cpp:294-302; Ceil :528-535). A weight outside its window is never written."""
    x_len, dy_len = weights.shape
    support = scale if scale >= F32(1) else F32(1)

    def ceil(v):
        return int(v) if _float_equal(v, int(v)) else int(v) + 1
    k = dy_len
    if scale > 0:
        k = min(ceil(F32(F32(slide + 4) / scale)) + ceil(F32(int(np.ceil(support)) * 2 + 1)) + 4, dy_len)
    kept = np.zeros_like(weights)
    for start in range(0, x_len, slide):
        low = max(int(F32(F32(max(start - 1, 0)) / scale) - support) - 1, 0) if scale > 0 else 0
        high = low + min(k, dy_len - low)
        kept[start:start + slide, low:high] = weights[start:start + slide, low:high]
    return kept


def _aa_gather_bicubic(x_len: int, dy_len: int, scale: np.float32) -> np.ndarray:
    """The arch35 deterministic UpsampleBicubic2dAAGrad: for each input index x, centre x + 0.5, gradients h in
    [floor((c - support) / s + 0.5), floor((c + support) / s - 0.5) + 1) (all for s = 0), each at (h + 0.5) * s
    weighted CubicFilterAA((c - oc) * invscale) over the sum of the filter at the k + 0.5 within support of oc,
    k in [floor(oc - support - 0.5), floor(oc + support + 0.5) + 1) clamped to the image
    (AA_BC/op_kernel/arch35/upsample_bicubic2d_aa_grad_simt_base_deter.h:30-71, 89-118)."""
    support = F32(F32(2) * scale) if scale >= F32(1) else F32(2)
    inv = F32(F32(1) / scale) if scale >= F32(1) else F32(1)
    w = np.zeros((x_len, dy_len))
    for x in range(x_len):
        c = F32(F32(x) + F32(0.5))
        if scale > 0:
            lo = max(int(np.floor(F32(F32(F32(c - support) / scale) + F32(0.5)))), 0)
            hi = min(int(np.floor(F32(F32(F32(c + support) / scale) - F32(0.5)))) + 1, dy_len)
        else:
            lo, hi = 0, dy_len
        for h in range(lo, hi):
            oc = F32(F32(F32(h) + F32(0.5)) * scale)
            weight = _aa_filter(F32(F32(c - oc) * inv), True, False)
            if weight == 0:
                continue
            total = F32(0)
            for k in range(max(int(np.floor(F32(F32(oc - support) - F32(0.5)))), 0),
                           min(int(np.floor(F32(F32(oc + support) + F32(0.5)))) + 1, x_len)):
                kc = F32(F32(k) + F32(0.5))
                if abs(F32(kc - oc)) <= support:
                    total = F32(total + _aa_filter(F32(F32(kc - oc) * inv), True, False))
            w[x, h] = F32(weight / total) if total != 0 else weight
    return w


def upsample_antialias(dy: np.ndarray, attrs: dict, cubic: bool, family: str, dtype, deterministic: bool):
    """UpsampleBilinear2dAABackward / UpsampleBicubic2dAAGrad (A2 / A3 and Ascend 950: AA_BL/op_host/
    upsample_bilinear2d_aa_backward_def.cpp:39-57, AA_BC/op_host/upsample_bicubic2d_aa_grad_def.cpp:34-51).
    A2 / A3: the W pass, then the H pass, each skipped where the tiling says no resize (bilinear: the attribute 1,
    or equal sizes without one or with align_corners, tiling.cpp:223-232, 270-277, both skipped means H runs;
    bicubic: the resolved scale 1, tiling.cpp:169-174, kernel.h:354-372). The tilings refuse a resolved scale
    below 0.02 (bilinear CheckScales tiling.cpp:199-209 from the attribute or x/dy). Ascend 950: copy when both
    axes keep their size at scale 1 (arch35 tilings :116-141), else one SIMT kernel over both axes (the product of
    the two axes' weights: emulated as two passes in float32)."""
    x_shape, corners = list(attrs["input_size"]), bool(attrs.get("align_corners", 0))
    given = [float(attrs.get(n, 0.0)) for n in ("scales_h", "scales_w")]
    scales = [_aa_scale(x_shape[k], dy.shape[k], corners, given[k - 2]) for k in (2, 3)]
    a2 = family in ("Atlas A2", "Atlas A3")
    if not a2 and family != "Ascend 950":
        raise NotEmulated(f"{'UpsampleBicubic2dAAGrad' if cubic else 'UpsampleBilinear2dAABackward'} on {family}")
    if not cubic and a2:
        floor_check = [F32(g) if g > 0 else F32(x_shape[k + 2]) / F32(dy.shape[k + 2]) for k, g in enumerate(given)]
        if min(floor_check) < F32(0.02):
            raise Undefined("the tiling refuses a scale below 0.02 (tiling.cpp:199-209)")

    # the bilinear A2 slide: 8 where a resolved scale is in (0, 0.04), else 16 (tiling.cpp:211-221)
    slide = 8 if any(F32(0) < sc < F32(0.04) for sc in scales) else 16

    def weights(axis, s):
        if not a2 and cubic and deterministic:
            return _aa_gather_bicubic(x_shape[axis], dy.shape[axis], s)
        full = _aa_weights(x_shape[axis], dy.shape[axis], s, cubic, a2)
        return _aa_bilinear_windows(full, s, slide) if a2 and not cubic else full
    if not a2:
        if list(dy.shape[2:]) == x_shape[2:] and all(_float_equal(s, 1.0) for s in scales):
            return rounded(dy, dtype)
        return _contract(_contract(dy, 3, weights(3, scales[1]), np.float32), 2, weights(2, scales[0]), dtype)
    if cubic:
        need = [not _float_equal(s, 1.0) for s in scales]
    else:
        need = [not _float_equal(g, 1.0) if g > 0 and not corners else x_shape[k + 2] != dy.shape[k + 2]
                for k, g in enumerate(given)]
    out = dy
    if need[1]:
        out = _contract(out, 3, weights(3, scales[1]), dtype)
    if need[0] or not need[1]:
        out = _contract(out, 2, weights(2, scales[0]), dtype)
    if list(out.shape) != x_shape:
        raise Undefined(f"the kernel leaves shape {list(out.shape)}, input_size is {x_shape}")
    return out


# --------------------------------------------------------------------------- ResizeGradD (TBE, CANN 8.1.RC1)

def _rgd_weights(x_len: int, dy_len: int, scale: np.float32, corners: bool) -> np.ndarray:
    """UpSampleBicubic2dBackward.single_process (RGD:344-375): source scale * o, or scale * (o + 0.5) - 0.5 (:116-120),
    floor (scalar_conv 'floor'), guard_index_and_lambda (:328-336: index at most x - 1, t clamped to [0, 1]),
    coefficients cubic_convolution2(t + 1), 1(t), 1(1 - t), 2(2 - t) with a = -0.75 (:307-326; Constant.CUBIC_COEFF :46,
    :92), each tap index - 1 + i clamped into [0, x - 1] by calc (:653-671)."""
    a = F32(-0.75)

    def conv1(x):
        return F32(F32(F32(F32(F32(a + F32(2)) * x) - F32(a + F32(3))) * x) * x + F32(1))

    def conv2(x):
        return F32(F32(F32(F32(F32(F32(a * x) - F32(F32(5) * a)) * x) + F32(F32(8) * a)) * x) - F32(F32(4) * a))
    w = np.zeros((x_len, dy_len))
    for o in range(dy_len):
        real = F32(F32(scale * F32(o)) * F32(1)) if corners else F32(F32(scale * F32(F32(o) + F32(0.5))) - F32(0.5))
        index = min(int(np.floor(real)), x_len - 1)
        t = min(max(F32(real - F32(index)), F32(0)), F32(1))
        rest = F32(F32(1) - t)
        for k, c in enumerate((conv2(F32(t + F32(1))), conv1(t), conv1(rest), conv2(F32(rest + F32(1))))):
            w[min(max(index - 1 + k, 0), x_len - 1), o] += c
    return w


def resize_grad_d(dy: np.ndarray, attrs: dict, dtype) -> np.ndarray:
    """ResizeGradD with mode cubic and data_format HWNC (RGD:1349-1356 pick UpSampleBicubic2dBackward): grads
    [H, W, N, C], original_size [N, C, H, W], y [H, W, N, C]. Per image axis the scale from area_pixel_compute_scale
    (:122-137): (x-1)/(dy-1) with align_corners (0 for dy = 1), else 1 / scale when > 0, else x / dy, the scales being
    the attribute's (:81-89, 338-342; the tiling words 12-13 that check_scale reads come from an op_tiling that is not
    public: taken as the attribute). Sums in float32 (a float32 workspace for float16, :102-109); no copy for equal
    sizes."""
    mode, layout = attrs.get("mode", b"nearest"), attrs.get("data_format", b"NCHW")
    mode, layout = (v.decode() if isinstance(v, bytes) else v for v in (mode, layout))
    if mode != "cubic" or layout != "HWNC":
        raise NotEmulated(f"ResizeGradD mode {mode!r}, data_format {layout!r}")
    ctm = attrs.get("coordinate_transformation_mode", b"half_pixel")
    corners = (ctm.decode() if isinstance(ctm, bytes) else ctm) == "align_corners"
    size, scales = list(attrs["original_size"]), list(attrs.get("scales") or [0.0, 0.0])
    out = dy
    for k in (0, 1):
        x_len, dy_len, given = size[2 + k], dy.shape[k], float(scales[k])
        if corners:
            s = F32(F32(x_len - 1) / F32(dy_len - 1)) if dy_len > 1 else F32(0)
        else:
            s = F32(F32(1) / F32(given)) if given > 0 else F32(F32(x_len) / F32(dy_len))
        out = _contract(out, k, _rgd_weights(x_len, dy_len, s, corners), np.float32)
    return rounded(out, dtype)


# --------------------------------------------------------------------------- the TBE kernels (canndev)

def _tbe_scale(image: int, grads: int, corners: bool) -> np.float32:
    """get_scale: 0 when grads < 2, else (image - 1) / (grads - 1) with align_corners, image / grads otherwise,
    float32 scalars (tbe/impl/dynamic/resize_bilinear_v2_grad.py:398-419). No `scales` attribute: the op's
    signature is (grads, images, y, align_corners, half_pixel_centers) (:1213-1218)."""
    if grads < 2:
        return F32(0)
    return F32(image - 1) / F32(grads - 1) if corners else F32(image) / F32(grads)


def tbe_resize_bilinear_v2(dy: np.ndarray, image_shape, attrs: dict) -> np.ndarray:
    """The TBE ResizeBilinearV2Grad: float32 only (:70-71); per gradient index, src = scale * (dst + 0.5) - 0.5
    clamped at 0 with half_pixel_centers, else scale * dst (:425-436); floor; the second tap only below the last
    image index (:455-464); weights 1 - r and r, r = src - floor (:447-449); equal sizes copy (tiling mode 0:
    op_tiling/resize_bilinear_v2_grad.cc, CalTilingMode)."""
    if dy.dtype != np.float32:
        raise Undefined(f"the TBE ResizeBilinearV2Grad takes float32 only, got {dy.dtype}")
    corners, half = bool(attrs.get("align_corners", 0)), bool(attrs.get("half_pixel_centers", 0))
    out = dy
    if list(dy.shape[2:]) == list(image_shape[2:]):
        return dy.copy()
    for axis in (2, 3):
        image, grads = image_shape[axis], dy.shape[axis]
        s, w = _tbe_scale(image, grads, corners), np.zeros((image, grads))
        for dst in range(grads):
            if half:
                src = max(F32(s * F32(F32(dst) + F32(0.5))) - F32(0.5), F32(0))
            else:
                src = F32(s * F32(dst))
            index = int(np.floor(src))
            stride = 1 if index < image - 1 else 0
            r = F32(src - F32(index))
            w[index, dst] += F32(1) - r
            w[index + stride, dst] += r
        out = _contract(out, axis, w, np.float32)
    return out


def tbe_resize_nearest_neighbor_v2(dy: np.ndarray, size, attrs: dict, ties_even: bool) -> np.ndarray:
    """The TBE ResizeNearestNeighborV2Grad: float32 grads (tbe/impl/dynamic/resize_nearest_neighbor_v2_grad.py:59);
    scale = size / grads in float32, (size - 1) / (grads - 1) with align_corners (:171-216); index floor((i + 0.5)
    * scale) with half_pixel_centers, else floor(i * scale), rounded instead with align_corners (:137-169, vconv
    f322s32r: `ties_even` picks how a tie rounds, which the source does not say)."""
    if dy.dtype != np.float32:
        raise Undefined(f"the TBE ResizeNearestNeighborV2Grad takes float32 grads, got {dy.dtype}")
    corners, half = bool(attrs.get("align_corners", 0)), bool(attrs.get("half_pixel_centers", 0))
    out = dy
    for k, axis in enumerate((2, 3)):
        image, grads = int(size[k]), dy.shape[axis]
        top, bottom = (image - 1, grads - 1) if corners and image > 1 else (image, grads)
        if bottom == 0:
            raise Undefined(f"the kernel divides by grads - 1 = 0 (:203-214): image {image}, grads {grads}")
        s, w = F32(F32(top) / F32(bottom)), np.zeros((image, grads))
        for i in range(grads):
            product = F32(F32(F32(i) + F32(0.5)) * s) if half else F32(F32(i) * s)
            if corners:
                index = int(np.rint(product)) if ties_even else int(np.floor(product + F32(0.5)))
            else:
                index = int(np.floor(product))
            if not 0 <= index < image:
                raise Undefined(f"the kernel writes image index {index} of {image}")
            w[index, i] = 1
        out = _contract(out, axis, w, np.float32)
    return out


# --------------------------------------------------------------------------- Ascend 950 (ops-cv arch35)

def ascend950_resize_nearest_neighbor_v2(dy: np.ndarray, attrs: dict, dtype) -> np.ndarray:
    """ResizeNearestNeighborV2Grad on Ascend 950, y's spatial size from `size`. The tiling copies when both axes
    keep their size (op_host/arch35/resize_nearest_neighbor_v2_grad_tiling_base.cpp:443-446); with align_corners
    the scatter kernel: y[min(roundf(i * s), in - 1)] += grads[i], s = (in-1)/(out-1) or 0 (tiling_base.cpp:362-376,
    op_kernel/arch35/resize_nearest_neighbor_v2_grad_simt.h:96-106, 121-122); otherwise always the deterministic
    gather (tiling_base.cpp:438): s = 1 / scales[k] when > 0 else in / out (:378-388), inv = 1 / s (:390-393), and y[j]
    sums grads[min(ceil(j * inv - off), out) : min(ceil((j + 1) * inv - off), out)], off = 0.5 with
    half_pixel_centers (simt_determine.h:79-88, 105-108)."""
    size, scales = attrs["size"], list(attrs.get("scales") or [0.0, 0.0])
    corners, half = bool(attrs.get("align_corners", 0)), bool(attrs.get("half_pixel_centers", 0))
    if list(dy.shape[2:]) == list(size):
        return rounded(dy, dtype)
    out = dy
    for k, axis in enumerate((2, 3)):
        image, grads = int(size[k]), dy.shape[axis]
        w = np.zeros((image, grads))
        if corners:
            s = F32(image - 1) / F32(grads - 1) if grads > 1 else F32(0)
            for i in range(grads):
                product = F32(F32(i) * s)
                index = int(np.floor(product)) + int(product - F32(np.floor(product)) >= F32(0.5))  # roundf
                w[min(index, image - 1), i] = 1
        else:
            s = F32(1) / F32(scales[k]) if scales[k] > 0 else F32(image) / F32(grads)
            inv, offset = F32(F32(1) / s), F32(0.5 if half else 0)
            for j in range(image):
                lo, hi = (min(int(np.ceil(F32(F32(F32(e) * inv) - offset))), grads) for e in (j, j + 1))
                w[j, max(lo, 0):max(hi, 0)] = 1
        out = _contract(out, axis, w, dtype)
    return out


RB = "image/resize_bilinear_v2_grad"


def _rb950_scale(image: int, grads: int, corners: bool, given: float, deterministic: bool) -> np.float32:
    """SetScales (RB/op_host/arch35/resize_bilinear_v2_grad_tiling_arch35.cpp:352-394): align_corners: (image-1) /
    (grads-1) when grads > 1 (the deterministic kernels: and image > 1), else 0 (deterministic: image / grads);
    otherwise 1 / scales[k] when > 0, else image / grads."""
    if corners:
        if grads > 1 and (image > 1 or not deterministic):
            return F32(F32(image - 1) / F32(grads - 1))
        return F32(F32(image) / F32(grads)) if deterministic else F32(0)
    return F32(F32(1) / F32(given)) if given > 0 else F32(F32(image) / F32(grads))


def _rb950_scatter(image: int, grads: int, s: np.float32, half: bool) -> np.ndarray:
    """The non-deterministic SIMT kernel (RB/op_kernel/arch35/resize_bilinear_v2_grad_simt.h:121-150): source
    (o + off) * s - off, clamped at 0, left = min(floor, image - 1), delta clamped to [0, 1], right = left + 1 below
    the last index; atomic adds of (1 - delta) and delta."""
    off, w = F32(0.5 if half else 0), np.zeros((image, grads))
    for o in range(grads):
        src = max(F32(F32(F32(o) + off) * s) - off, F32(0))
        left = min(int(np.floor(src)), image - 1)
        delta = min(max(F32(src - F32(left)), F32(0)), F32(1))
        w[left, o] += F32(F32(1) - delta)
        w[left + 1 if left < image - 1 else left, o] += delta
    return w


def _rb950_gather(image: int, grads: int, s: np.float32, half: bool, scales: bool) -> np.ndarray:
    """The deterministic SIMT kernels, per image index h: grads from max(0, ceil((h - 1 + off) / s - off)) on
    (inverseScale = 1 / s, tiling :390-393), each at out = (i + off) * s - off, weight 1 - |clamp(out, 0, image - 1)
    - h|, while out < h + 1 (simt_determine.h:85-119: out advanced by += s). The `scales` variant (a given scale other
    than the size ratio, tiling :422-436) recomputes out per index, and on the first and last image index reads
    every later gradient, weighting 1 - |c - h| where floor(c) (at most image - 1) is h, c - floor(c) where it is
    h - 1 (simt_determine_scales.h:56-62, 78-144, 262-288)."""
    off, w = F32(0.5 if half else 0), np.zeros((image, grads))
    inv = F32(F32(1) / s)
    for h in range(image):
        i = max(0, int(np.ceil(F32(F32(F32(F32(h) - F32(1)) + off) * inv) - off)))
        out = F32(F32(F32(i) + off) * s) - off
        boundary = scales and h in (0, image - 1)
        while (boundary or out < F32(h + 1)) and i < grads:
            c = max(F32(0), min(out, F32(image - 1)))
            if boundary:
                low = min(F32(np.floor(c)), F32(image - 1))
                w[h, i] += F32(F32(1) - abs(F32(c - F32(h)))) if low == h else F32(c - low) if low + 1 == h else 0
            else:
                w[h, i] += F32(F32(1) - abs(F32(c - F32(h))))
            i += 1
            out = F32(F32(s * F32(F32(i) + off)) - off) if scales else F32(out + s)
    return w


def ascend950_resize_bilinear_v2(dy: np.ndarray, image_shape, attrs: dict, dtype, deterministic: bool) -> np.ndarray:
    """ResizeBilinearV2Grad on Ascend 950 (RB/op_host/resize_bilinear_v2_grad_def.cpp:47), NCHW. The tiling
    (tiling_arch35.cpp:446-470): equal spatial sizes copy (all-copy, :310-313); point-copy and c-parallel need NHWC
    (:301-308, 315-323); a deterministic context, neither align_corners nor half_pixel_centers (:296-299), or a scale
    below 1 (image smaller than grads) run a deterministic gather, else the scatter kernel."""
    corners, half = bool(attrs.get("align_corners", 0)), bool(attrs.get("half_pixel_centers", 0))
    given = list(attrs.get("scales") or [0.0, 0.0])
    images, grads = [int(d) for d in image_shape[2:]], list(dy.shape[2:])
    if images == grads:
        return rounded(dy, dtype)
    gather = deterministic or not (corners or half)
    ratio = [_rb950_scale(i, g, corners, f, False) for i, g, f in zip(images, grads, given, strict=True)]
    gather = gather or any(F32(0) < r < F32(1) for r in ratio)
    scales = [_rb950_scale(i, g, corners, f, gather) for i, g, f in zip(images, grads, given, strict=True)]
    # the scales variant where a resolved scale is not the size ratio (tiling :422-436, FLT_EPSILON)
    variant = gather and not corners and any(abs(F32(i) / F32(g) - r) >= np.finfo(np.float32).eps
                                              for i, g, r in zip(images, grads, ratio, strict=True))
    out = dy
    for k, axis in ((1, 3), (0, 2)):
        w = _rb950_gather(images[k], grads[k], scales[k], half, variant) if gather else \
            _rb950_scatter(images[k], grads[k], scales[k], half)
        out = _contract(out, axis, w, np.float32 if axis == 3 else dtype)
    return out


RL = "image/resize_linear_grad"


def _rl_scale(image: int, grads: int, corners: bool, given: float) -> np.float32:
    """LinearComputeGrad (RL/op_host/arch35/resize_linear_grad_tiling_arch35.cpp:352-368): 1 / scale when > 0,
    else image / grads; align_corners: (image-1)/(grads-1) when grads > 1, else image / grads."""
    if corners:
        return F32(F32(image - 1) / F32(grads - 1)) if grads > 1 else F32(F32(image) / F32(grads))
    return F32(F32(1) / F32(given)) if given > 0 else F32(F32(image) / F32(grads))


def _rl_source(o: int, s: np.float32, corners: bool, fused: bool) -> np.float32:
    """ComputeOriL: fmaf(o + 0.5, s, -0.5) clamped at 0, or fmaf(o, s, 0) with align_corners (the scatter kernels,
    RL/op_kernel/arch35/resize_linear_grad_simt_base.h:26-37); ComputeOutL: (o + 0.5) * s - 0.5 unclamped, or
    o * s (the gather, :40-50)."""
    if corners:
        return F32(F32(o) * s)
    if fused:
        return max(F32(np.float64(F32(o) + F32(0.5)) * np.float64(s) - 0.5), F32(0))
    return F32(F32(F32(F32(o) + F32(0.5)) * s) - F32(0.5))


def ascend950_resize_linear(dy: np.ndarray, image: int, attrs: dict, dtype, deterministic: bool) -> np.ndarray:
    """ResizeLinearGrad (Ascend 950 only: RL/op_host/resize_linear_grad_def.cpp:50), [N, C, L]. ComputeKey
    (tiling_arch35.cpp:191-228): equal lengths copy whatever the scale (:96-116); one gradient with align_corners
    goes to index 0 (out1.h:50-53); one gradient at an odd integer step s to floor(s * 0.5 - 0.5) (out1_half.h:53-56);
    an image of length 1 sums (simt_determine.h:112-117); otherwise a deterministic context, s < 0.8 or
    int(grads * s) - image >= 100 run the gather (:150-175), else the scatter (simt_no_determine.h:52-78), both
    point-copying (floor of the source) at an odd integer step, or an integer one with align_corners."""
    corners, grads = bool(attrs.get("align_corners", 0)), dy.shape[2]
    w = np.zeros((image, grads))
    s = _rl_scale(image, grads, corners, float(attrs.get("scale", 0.0)))
    integer = abs(float(s) - int(s)) < 1e-6
    odd = not corners and integer and int(s) % 2 == 1
    last = image - 1
    if image == grads:
        return rounded(dy, dtype)
    if grads == 1 and corners:
        w[0, 0] = 1
    elif grads == 1 and integer and odd:
        w[min(int(np.floor(F32(F32(s * F32(0.5)) - F32(0.5)))), last), 0] = 1
    elif image == 1:
        w[0, :] = 1
    else:
        repeat = 0 if corners else int(F32(F32(grads) * s)) - image
        gather = deterministic or s < F32(0.8) or repeat >= 100
        point = odd or (corners and integer)
        if point or not gather:
            for o in range(grads):
                src = _rl_source(o, s, corners, True)
                left = min(int(np.floor(src)), last)
                if point:
                    w[left, o] += 1
                    continue
                delta = F32(src - F32(left))
                w[left, o] += F32(F32(1) - delta)
                w[left + (1 if left < last else 0), o] += delta
        else:
            # inverseScaleL (tiling_arch35.cpp:324-333, 358-365): the scale when > 0, else grads / image; align_corners:
            # (grads-1)/(image-1) when image > 1
            given = float(attrs.get("scale", 0.0))
            inv = F32(given) if given > 0 and not corners else _rl_scale(grads, image, corners, 0.0)
            for h in range(image):
                start = F32(F32(h) - F32(1)) * inv if corners else F32(F32(F32(F32(h) - F32(0.5)) * inv) - F32(0.5))
                i = max(0, int(np.ceil(F32(start))))
                out = _rl_source(i, s, corners, False)
                while i < grads and (h == last or out < F32(h + 1)):  # simt_determine.h:89-103
                    pos = max(F32(0), out)
                    if h != last:
                        w[h, i] += F32(F32(1) - abs(F32(pos - F32(h))))
                    else:  # ComputeLimt (:44-65): weight 1 at min(floor, last) == h, pos - floor one below
                        low = min(int(np.floor(pos)), last)
                        w[h, i] += 1.0 if low == h else float(F32(pos - F32(low))) if low + 1 == h else 0.0
                    i += 1
                    out = _rl_source(i, s, corners, False)
    return _contract(dy, 2, w, dtype)


RC = "image/resize_bicubic_v2_grad"


def _rc_conv1(t: np.float32) -> np.float32:
    """CalcCubicConvolution1, a = -0.75: ((a + 2) t - (a + 3)) t t + 1 (RC/op_kernel/arch35/
    resize_bicubic_v2_grad_base.h:34-37)."""
    a = F32(-0.75)
    return F32(F32(F32(F32(F32(a + F32(2)) * t) - F32(a + F32(3))) * t) * t + F32(1))


def _rc_conv2(t: np.float32) -> np.float32:
    """CalcCubicConvolution2: ((a t - 5 a) t + 8 a) t - 4 a (base.h:39-42)."""
    a = F32(-0.75)
    return F32(F32(F32(F32(F32(F32(a * t) - F32(F32(5) * a)) * t) + F32(F32(8) * a)) * t) - F32(F32(4) * a))


def _rc_taps(t: np.float32) -> list:
    """CalcCubicCoefficients: conv2(t + 1), conv1(t), conv1(1 - t), conv2(2 - t) (base.h:58-70)."""
    rest = F32(F32(1) - t)
    return [_rc_conv2(F32(t + F32(1))), _rc_conv1(t), _rc_conv1(rest), _rc_conv2(F32(rest + F32(1)))]


def _rc_source(o: int, s: np.float32, corners: bool) -> np.float32:
    """CalcSourceIndex: s * o, or s * (o + 0.5) - 0.5, unclamped (base.h:72-80)."""
    return F32(s * F32(o)) if corners else F32(F32(s * F32(F32(o) + F32(0.5))) - F32(0.5))


def _rc_scatter(image: int, grads: int, s: np.float32, corners: bool) -> np.ndarray:
    """ResizeBicubicV2GradSimt: each gradient adds coefficient * value to its four taps floor - 1 .. floor + 2, each
    clamped into the image (RC/op_kernel/arch35/resize_bicubic_v2_grad_simt.h:100-145)."""
    w = np.zeros((image, grads))
    for o in range(grads):
        src = _rc_source(o, s, corners)
        low = int(np.floor(src))
        for k, c in enumerate(_rc_taps(F32(src - F32(low)))):
            w[max(0, min(low - 1 + k, image - 1)), o] += c
    return w


def _rc_gather(image: int, grads: int, s: np.float32, inv: np.float32, corners: bool) -> np.ndarray:
    """ResizeBicubicV2GradSimtDetermine, per image index h (simt_determine.h:95-112, 132-300, 330-345): gradients from
    max(0, ceil((h - 2 + off) * inverse - off)); inside the image CalcCubicCoefficient(|src - h|) (conv1 up to 1,
    conv2 below 2, base.h:44-56) while src < h + 2; on the first and last index every later gradient's four clamped
    taps that land on h (the first index stops at floor(src) > 1)."""
    off, w = F32(0 if corners else 0.5), np.zeros((image, grads))
    for h in range(image):
        i = max(0, int(np.ceil(F32(F32(F32(F32(h) - F32(2)) + off) * inv) - off)))
        src = _rc_source(i, s, corners)
        boundary = h in (0, image - 1)
        while i < grads and (boundary or src < F32(h + 2)):
            if boundary:
                low = int(np.floor(src))
                if h == 0 and low > 1 and image > 1:
                    break
                for k, c in enumerate(_rc_taps(F32(src - F32(low)))):
                    if max(0, min(low - 1 + k, image - 1)) == h:
                        w[h, i] += c
            else:
                d = abs(F32(src - F32(h)))
                w[h, i] += _rc_conv1(d) if d <= F32(1) else _rc_conv2(d) if d < F32(2) else 0.0
            i += 1
            src = _rc_source(i, s, corners)
    return w


def ascend950_resize_bicubic_v2(dy: np.ndarray, image_shape, attrs: dict, dtype, deterministic: bool) -> np.ndarray:
    """ResizeBicubicV2Grad (Ascend 950 only: RC/op_host/resize_bicubic_v2_grad_def.cpp:40), NCHW. Equal spatial sizes
    copy (all-copy tiling, :23-27); the deterministic gather when the context asks, an image axis shorter than grads,
    or a resolved scale in (0, 1) (simt_determine_tiling_arch35.cpp:34-53), else the scatter. SetScales
    (base_tiling_arch35.cpp:315-360): align_corners (in-1)/(out-1) for out > 1 (the gather: and in > 1, else in/out;
    the scatter: else 0); otherwise 1 / scales[k] (inverse scales[k]) when > 0, else in / out (inverse out / in)."""
    corners, given = bool(attrs.get("align_corners", 0)), list(attrs.get("scales") or [0.0, 0.0])
    images, grads = [int(d) for d in image_shape[2:]], list(dy.shape[2:])
    if images == grads:
        return rounded(dy, dtype)

    def scales(gather: bool):
        out = []
        for i, g, f in zip(images, grads, given, strict=True):
            if corners and g > 1 and (i > 1 or not gather):
                out.append((F32(F32(i - 1) / F32(g - 1)), F32(F32(g - 1) / F32(i - 1)) if i > 1 else F32(0)))
            elif corners:
                out.append((F32(F32(i) / F32(g)), F32(F32(g) / F32(i))) if gather else (F32(0), F32(0)))
            else:
                out.append((F32(F32(1) / F32(f)), F32(f)) if f > 0 else (F32(F32(i) / F32(g)), F32(F32(g) / F32(i))))
        return out
    gather = deterministic or any(i < g for i, g in zip(images, grads, strict=True)) or \
        any(F32(0) < sc < F32(1) for sc, _ in scales(False))
    out = dy
    for k, axis in ((1, 3), (0, 2)):
        s, inv = scales(gather)[k]
        w = _rc_gather(images[k], grads[k], s, inv, corners) if gather else _rc_scatter(images[k], grads[k], s, corners)
        out = _contract(out, axis, w, np.float32 if axis == 3 else dtype)
    return out


# --------------------------------------------------------------------------- one GE node

def _dtype_of(array: np.ndarray):
    return array.dtype if array.dtype in (np.float16, np.float32, np.float64) else ml_dtypes.bfloat16


def ge_node(node, inputs: list, family: str, out_shape=None, deterministic: bool = False,
            ties_even: bool = True) -> list:
    """The outputs of one GE node as its kernel on `family` computes them (out_shape: the output's declared shape,
    which UpsampleBicubic2dGrad reads its sizes from)."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    op, dy = node.op_type, inputs[0]
    dtype = _dtype_of(dy)
    if dtype == np.float64:
        raise NotEmulated(f"{op} in float64 runs as an AI CPU task (not emulated)")
    if op.startswith("GridSampler"):
        import cann_emulation_grid  # the grid samplers' kernels (it imports this module)
        return cann_emulation_grid.ge_node(op, inputs, attrs, family, dtype, deterministic)
    grad = dy.astype(np.float32)
    if op in ("UpsampleNearest2dGrad", "UpsampleNearestExact2dGrad"):
        out = upsample_nearest_2d(grad, attrs, "Exact" in op, dtype)
    elif op in ("UpsampleNearest3dGrad", "UpsampleNearestExact3dGrad"):
        out = upsample_nearest_3d(grad, attrs, "Exact" in op, dtype)
    elif op == "UpsampleBilinear2dGrad":
        out = upsample_bilinear_2d(grad, attrs, dtype)
    elif op == "UpsampleTrilinear3dBackward" and family in ("Atlas A2", "Atlas A3"):
        out = upsample_trilinear_3d(grad, attrs, dtype)
    elif op == "UpsampleBicubic2dGrad":
        out = upsample_bicubic_2d(grad, attrs, list(out_shape), dtype, deterministic)
    elif op == "ResizeGradD":
        out = resize_grad_d(grad, attrs, dtype)
    elif op in ("UpsampleBilinear2dAABackward", "UpsampleBicubic2dAAGrad"):
        out = upsample_antialias(grad, attrs, op == "UpsampleBicubic2dAAGrad", family, dtype, deterministic)
    elif op == "ResizeBilinearV2Grad" and family in TBE_FAMILIES:
        out = tbe_resize_bilinear_v2(dy, inputs[1].shape, attrs)
    elif op == "ResizeNearestNeighborV2Grad" and family in TBE_FAMILIES:
        out = tbe_resize_nearest_neighbor_v2(dy, inputs[1], attrs, ties_even)
    elif op == "ResizeBilinearV2Grad" and family == "Ascend 950":
        out = ascend950_resize_bilinear_v2(grad, inputs[1].shape, attrs, dtype, deterministic)
    elif op == "ResizeLinearGrad" and family == "Ascend 950":
        out = ascend950_resize_linear(grad, inputs[1].shape[2], attrs, dtype, deterministic)
    elif op == "ResizeBicubicV2Grad" and family == "Ascend 950":
        out = ascend950_resize_bicubic_v2(grad, inputs[1].shape, attrs, dtype, deterministic)
    elif op == "ResizeNearestNeighborV2Grad" and family == "Ascend 950":
        out = ascend950_resize_nearest_neighbor_v2(grad, dict(attrs, size=list(inputs[1])), dtype)
    else:
        raise NotEmulated(f"{op} on {family}")
    return [out.astype(dtype)]


# --------------------------------------------------------------------------- a converted model

NUMPY_OF = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.BFLOAT16: ml_dtypes.bfloat16,
            TensorProto.DOUBLE: np.float64, TensorProto.INT32: np.int32, TensorProto.INT64: np.int64}


def _standard(node, inputs: list) -> list:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Cast":
        return [inputs[0].astype(NUMPY_OF[attrs["to"]])]
    if node.op_type == "Unsqueeze":
        return [np.expand_dims(inputs[0], tuple(int(a) for a in inputs[1]))]
    if node.op_type == "Squeeze":
        return [np.squeeze(inputs[0], tuple(int(a) for a in inputs[1]))]
    if node.op_type == "Transpose":
        return [np.transpose(inputs[0], attrs["perm"])]
    raise NotEmulated(f"standard op {node.op_type}")


def _recorded_input_size(node, dy: np.ndarray, values: dict):
    """grad_input's shape where shape inference cannot see it (GE ops have no ONNX schema), from the resample_grad
    node that to_ascend records in the GE node's doc_string: its input_size (N and C of -1 from dy), or the shape
    of ResizeGrad's X."""
    import json
    try:
        record = json.loads(node.doc_string)["resample_grad"]["node"]
    except (ValueError, KeyError):
        return None
    if record["op_type"] == "ResizeGrad":
        return list(values[record["inputs"][1]].shape)
    size = next((a["value"] for a in record["attributes"] if a["name"] == "input_size"), None)
    return None if size is None else [dy.shape[k] if v == -1 else v for k, v in enumerate(size)]


def run_converted(model, feeds: dict, family: str, **options) -> dict:
    """Every output of a model written by to_ascend, its GE nodes emulated on `family` (options: ge_node's)."""
    from onnx import shape_inference
    values = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    values.update(feeds)
    declared = {}
    for v in list(shape_inference.infer_shapes(model).graph.value_info) + list(model.graph.value_info):
        dims = v.type.tensor_type.shape.dim
        if dims and all(d.HasField("dim_value") for d in dims):
            declared[v.name] = [d.dim_value for d in dims]
    for node in model.graph.node:
        inputs = [values[name] for name in node.input if name]
        if node.domain == GE_DOMAIN:
            shape = declared.get(node.output[0]) or _recorded_input_size(node, inputs[0], values)
            outputs = ge_node(node, inputs, family, shape, **options)
        else:
            outputs = _standard(node, inputs)
        values.update(zip(node.output, outputs, strict=False))
    return {o.name: values[o.name] for o in model.graph.output}
