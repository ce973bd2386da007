"""ONNX models with resample_grad ops to Ascend ATC, and back.

    to_ascend(model, soc="Ascend910B1", out_dir="out", cast=False, fallback=None, wide_modes=False, native_half=False)
    from_ascend(model)
    resample-grad convert MODEL --target ascend --soc SOC -o DIR [--cast] [--fallback node|all] [--wide-modes]
    resample-grad convert model.ascend.onnx --from ascend -o MODEL.onnx

to_ascend writes into out_dir:
    model.ascend.onnx                         every resample_grad node as its GE op (domain resample_grad.ge),
                                              standard nodes with the explicit domain ai.onnx
    plugins/resample_grad_onnx_plugin.cc      ATC ONNX parser plugin: OriginOpType + attribute parsing per GE op
    graph/build_graph.cc                      the GE ops of the model written with the GE IR C++ API
    atc.sh                                    the ATC command line
    report.json                               per node: GE op, attribute mapping, each device check

Checks come from ascend_prototypes.PROTOTYPES. A failing check is an error naming the node, unless
--cast (dtypes) or --fallback (the node becomes its inlined standard-ONNX function body) handles it.
A float16 / bfloat16 node runs its GE op in float32 between Casts, as aclnn does (native_half=True keeps the
input dtype: less precise). Where a GE kernel is modelled (the section "what CANN's kernels compute"), the
node converts only if the kernel computes the op's index map and weights on every axis of its static sizes.
--fallback all lowers the whole model to standard ONNX (opset <= 18) for an ATC with no plugin.
A ResizeGrad node becomes a GE op only where ascend_prototypes.RESIZE_GRAD_MAPPINGS has a row for
its configuration and the references agree on its sizes; any other ResizeGrad is inlined.

Each GE node's doc_string (ATC ignores it) records the original node and the helper nodes and
initializers added for it, as JSON, so from_ascend restores the resample_grad node exactly.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import pathlib

import numpy as np
import onnx
import onnx.inliner
from onnx import TensorProto, helper, numpy_helper

from resample_grad import opset
from resample_grad.constants import GE_DOMAIN, GE_VERSION
from resample_grad.opset import ResampleGradError
from resample_grad.opset._common import subgraphs, walk

from . import ascend_cpp as cpp
from . import ascend_prototypes as protos

ATC_MAX_OPSET = 18
SOC_DEFAULT = "Ascend910B1"  # an Atlas A2 part: every op of the domain runs there
OP = "to_ascend"
RECORD_KEY = "resample_grad"  # the doc_string JSON key of the record
DTYPE_NAMES = cpp.DTYPE_NAMES
FLOAT_ELEMS = {TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE}
HALF_TYPES = ("float16", "bfloat16")
AGREEMENT = 1e-6  # ResizeGrad mappings: largest tap-weight difference per unit of input length (see _probe_axis)


@dataclasses.dataclass
class NodeReport:
    node: str
    op_type: str
    ge_op: str | None
    action: str  # "converted", "converted with Cast", "fallback: <why>"
    attributes: dict[str, object] = dataclasses.field(default_factory=dict)  # GE attribute -> value
    checks: list[dict] = dataclasses.field(default_factory=list)  # {"check", "ok", "detail"}
    mapping: str | None = None  # ResizeGrad: the row of RESIZE_GRAD_MAPPINGS and the op it became
    rejected: list[str] = dataclasses.field(default_factory=list)  # candidates tried first, and why not


@dataclasses.dataclass
class Conversion:
    model: onnx.ModelProto
    soc: str
    family: str
    nodes: list[NodeReport]
    files: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> path

    def summary(self) -> str:
        lines = [f"Ascend conversion for {self.soc} ({self.family})"]
        for r in self.nodes:
            lines.append(f"- {r.node} ({r.op_type}) -> {r.ge_op or 'standard ONNX'}: {r.action}")
            if r.mapping:
                lines.append(f"    mapping: {r.mapping}")
            for why in r.rejected:
                lines.append(f"    not {why}")
            for c in r.checks:
                lines.append(f"    [{'ok' if c['ok'] else 'NO'}] {c['check']}: {c['detail']}")
            if r.attributes:
                lines.append("    attributes: " + ", ".join(f"{k}={v}" for k, v in r.attributes.items()))
        for name, path in self.files.items():
            lines.append(f"wrote {name}: {path}")
        return "\n".join(lines)


def _attrs(node) -> dict:
    """A node's attributes as Python values, strings decoded (lists of strings too)."""
    def plain(value):
        return value.decode() if isinstance(value, bytes) else value

    out = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        out[a.name] = [plain(v) for v in value] if isinstance(value, (list, tuple)) else plain(value)
    return out


def _value_types(inferred: onnx.ModelProto) -> dict:
    """name -> (dims with None where unknown, or None without a shape; elem type) of an inferred model."""
    info = {}
    for v in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim] if t.HasField("shape") else None
        info[v.name] = (dims, t.elem_type)
    for init in inferred.graph.initializer:
        info.setdefault(init.name, (list(init.dims), init.data_type))
    return info


def _shapes_and_types(model):
    return _value_types(opset.validate_model(model))


# --------------------------------------------------------------------------- the record

def _attribute_record(a: onnx.AttributeProto) -> dict:
    value = helper.get_attribute_value(a)
    if isinstance(value, bytes):
        value = value.decode()
    elif isinstance(value, (list, tuple)):
        value = [v.decode() if isinstance(v, bytes) else v for v in value]
    # floats are float32 values: a Python float holds each exactly and JSON writes it back exactly
    return {"name": a.name, "type": onnx.AttributeProto.AttributeType.Name(a.type), "value": value}


def _node_record(node: onnx.NodeProto) -> dict:
    return {"op_type": node.op_type, "domain": node.domain, "name": node.name, "inputs": list(node.input),
            "outputs": list(node.output), "doc_string": node.doc_string,
            "attributes": [_attribute_record(a) for a in node.attribute]}


def _node_from_record(record: dict) -> onnx.NodeProto:
    node = helper.make_node(record["op_type"], record["inputs"], record["outputs"], name=record["name"] or None,
                            domain=record["domain"], doc_string=record["doc_string"] or None)
    for a in record["attributes"]:
        node.attribute.append(helper.make_attribute(a["name"], a["value"],
                                                    attr_type=onnx.AttributeProto.AttributeType.Value(a["type"])))
    return node


def _record_of(node: onnx.NodeProto) -> dict | None:
    if not node.doc_string.startswith("{"):
        return None
    try:
        return json.loads(node.doc_string).get(RECORD_KEY)
    except (ValueError, AttributeError):
        return None


# --------------------------------------------------------------------------- what CANN's kernels compute

# The GE kernels' arithmetic along one resized axis, as M[out, in] (the forward weight of input i in output o), read
# from their source: hicann/ops-cv at OPS_CV (AscendC, Atlas A2 / A3 and Ascend 950) and, for the older ops that
# ops-cv registers on Ascend 950 only, the TBE sources of Ascend canndev as mirrored at CANNDEV. A node becomes its GE
# op only where this matrix equals the op's own (opset/_taps.py) on every axis; docs/ascend.md explains each case.
OPS_CV = "hicann/ops-cv@6ae8765"
CANNDEV = "dengguojie/vue-element-admin@57af4a1 (canndev mirror)"
# ResizeGradD's HWNC kernel is newer than CANNDEV's (whose resize_grad_d.py takes no data_format): the dynamic TBE
# source shipped in the CANN 8.1.RC1 toolkit, as mirrored publicly
CANN_TBE = ("leideng/CANN-8.1.RC1@551ed27 Ascend/ascend-toolkit/8.1.RC1/opp/built-in/op_impl/ai_core/tbe/impl/"
            "dynamic/resize_grad_d.py")
KERNEL_TBE_FAMILIES = ("Atlas training series", "Atlas inference series", "Atlas A2", "Atlas A3")
TRILINEAR_SCALES = ("scale_d", "scale_h", "scale_w")  # UpsampleTrilinear3dBackward's inverse scales, D H W
_SCALE_ONE = 1e-6  # FloatEqual(scale, 1) of the ops-cv kernels: such an axis is copied


def _identity(size_in: int, size_out: int) -> np.ndarray:
    return np.eye(size_out, size_in)


def _corners_step(size_in: int, size_out: int) -> np.float32:
    """The align_corners step of the ops-cv tilings, (in-1)/(out-1) in float32, 0 for one output."""
    return np.float32(size_in - 1) / np.float32(size_out - 1) if size_out > 1 else np.float32(0)


def _forward_step(size_in: int, size_out: int, forward: float, corners: bool) -> np.float32:
    """The step of the kernels given forward scales (Ascend 950's Resize*V2Grad / ResizeLinearGrad, ResizeGradD):
    (in-1)/(out-1) with align_corners, else 1 / scale when given, else in / out (each cited where it is used)."""
    if corners:
        return _corners_step(size_in, size_out)
    return np.float32(1) / np.float32(forward) if forward > 0 else np.float32(size_in) / np.float32(size_out)


def _ceil_ranges(size_in: int, size_out: int, step: np.float32, offset: float) -> np.ndarray:
    """The nearest gathers of ops-cv: input x takes the outputs [min(ceil(x * step - offset), out),
    min(ceil((x + 1) * step - offset), out)), in float32."""
    edges = np.arange(size_in + 1, dtype=np.float32) * step - np.float32(offset)
    edges = np.minimum(np.ceil(edges), size_out).astype(np.int64)
    m = np.zeros((size_out, size_in))
    for x in range(size_in):
        m[max(edges[x], 0):max(edges[x + 1], 0), x] = 1
    return m


def _nearest_kernel(size_in: int, size_out: int, scale: float, exact: bool) -> np.ndarray:
    """UpsampleNearest(Exact)2dGrad / 3dGrad: the tiling resolves the forward scale out/in (the attribute when > 0,
    else float(out) / in: upsample_nearest_exact2d_grad_tiling.h:116-126, upsample_nearest3d_grad_tiling.cpp:263-270);
    input x takes the outputs o in [min(ceil(x * s [- 0.5]), out), min(ceil((x + 1) * s [- 0.5]), out)), in float32
    (upsample_nearest_exact2d_grad_kernel.h:317-337, upsample_nearest3d_grad.h:299-309, arch35
    upsample_nearest_exact2d_grad_simt_base.h:34-42); a scale of 1 copies (kernel.h:290-297)."""
    s = np.float32(scale) if scale > 0 else np.float32(size_out) / np.float32(size_in)
    if abs(float(s) - 1.0) < _SCALE_ONE:
        return _identity(size_in, size_out)
    return _ceil_ranges(size_in, size_out, s, 0.5 if exact else 0.0)


def _linear_rows(size_in: int, source: np.ndarray) -> np.ndarray:
    """Rows of two taps floor(src), floor(src) + 1 with weights 1 - l, l; the last input takes both."""
    low = np.floor(source).astype(np.int64)
    lam = (source - low.astype(np.float32)).astype(np.float64)
    m = np.zeros((len(source), size_in))
    for o, (i, w) in enumerate(zip(low, lam, strict=True)):
        if not 0 <= i < size_in:
            return np.full_like(m, np.nan)  # a read outside the image: never the op's
        m[o, i] += 1 - w
        m[o, min(i + 1, size_in - 1)] += w
    return m


def _bilinear_kernel(size_in: int, size_out: int, inverse: float, corners: bool) -> np.ndarray:
    """UpsampleBilinear2dGrad: the tiling resolves the inverse scale in/out ((in-1)/(out-1) with align_corners, 0 for
    one output; else the attribute when > 0, else float(in) / out: upsample_bilinear2d_grad_tiling.cpp:155-172); the
    kernel's source index is o * s, or max((o + 0.5) * s - 0.5, 0), floor and lambda in float32
    (upsample_bilinear2d_grad_kernel.h:345-379), the last input taking both weights (kernel.h:447-451); a scale of 1
    copies (kernel.h:197-198)."""
    if corners:
        s = _corners_step(size_in, size_out)
    else:
        s = np.float32(inverse) if inverse > 0 else np.float32(size_in) / np.float32(size_out)
    if abs(float(s) - 1.0) < _SCALE_ONE:
        return _identity(size_in, size_out)
    o = np.arange(size_out, dtype=np.float32)
    source = o * s if corners else np.maximum((o + np.float32(0.5)) * s - np.float32(0.5), np.float32(0))
    return _linear_rows(size_in, source)


def _trilinear_kernel(size_in: int, size_out: int, inverse: float, corners: bool) -> np.ndarray:
    """UpsampleTrilinear3dBackward: the tiling resolves 1 for equal sizes, (in-1)/(out-1) with align_corners (0 for
    one output), else the attribute when > 0, else float(in) / out (upsample_trilinear3d_backward_tiling_func.cpp:
    218-239), and skips an axis whose scale is 1 (:201-206); the kernel's source index is o * s or
    max((o + 0.5) * s - 0.5, 0) in float32, min(int(src), in - 1), lambda clamped to [0, 1], the last input taking
    both weights (upsample_trilinear3d_backward.h:227-262)."""
    if size_in == size_out:
        return _identity(size_in, size_out)
    return _bilinear_kernel(size_in, size_out, inverse, corners)


def _keys_weights(t: np.ndarray) -> list[np.ndarray]:
    """The weights of the taps floor - 1 .. floor + 2 at fraction t, in float32, as the kernel computes them
    (upsample_bicubic2d_grad_base.cpp:140-160): ((1.25 x - 2.25) x) x + 1 at the near distances t, 1 - t and
    ((-0.75 x + 3.75) x - 6) x + 3 at the far ones 1 + t, 2 - t (Keys' cubic with A = -0.75)."""
    one = np.float32(1)

    def near(x):
        return (np.float32(1.25) * x + np.float32(-2.25)) * x * x + one

    def far(x):
        return ((np.float32(-0.75) * x + np.float32(3.75)) * x + np.float32(-6)) * x + np.float32(3)
    return [far(one + t), near(t), near(one - t), far(np.float32(2) - t)]


def _bicubic_kernel(size_in: int, size_out: int, step: float, corners: bool, deterministic: bool,
                    guard: bool = False) -> np.ndarray:
    """UpsampleBicubic2dGrad: the attribute is the inverse scale, used as it is. The tiling runs the deterministic
    kernel when the context asks for it or a step is outside [1/50, 50) (upsample_bicubic2d_grad_tiling.cpp:306-313),
    and that kernel copies an axis of equal sizes whatever its step (tiling.cpp:330-334). Both kernels: source
    o * s or (o + 0.5) * s - 0.5 in float32, four taps floor - 1 .. floor + 2 read at the border when outside, Keys'
    weights with A = -0.75 (upsample_bicubic2d_grad_base.cpp:124-160, 233-265; _dc.h:59-80, 414-441)."""
    if deterministic and size_in == size_out:
        return _identity(size_in, size_out)
    s = np.float32(step)
    o = np.arange(size_out, dtype=np.float32)
    source = o * s if corners else (o + np.float32(0.5)) * s - np.float32(0.5)
    low = np.floor(source).astype(np.int64)
    if guard:  # guard_index_and_lambda: the index at most in - 1, its fraction clamped to [0, 1]
        low = np.minimum(low, size_in - 1)
    t = source - low.astype(np.float32)
    if guard:
        t = np.clip(t, np.float32(0), np.float32(1))
    m = np.zeros((size_out, size_in))
    for k, w in enumerate(_keys_weights(t)):
        np.add.at(m, (np.arange(size_out), np.clip(low - 1 + k, 0, size_in - 1)), w.astype(np.float64))
    return m


def _resize_grad_d_kernel(size_in: int, size_out: int, forward: float, corners: bool) -> np.ndarray:
    """ResizeGradD, mode cubic, data_format HWNC: the TBE kernel UpSampleBicubic2dBackward of CANN 8.1.RC1 (CANN_TBE
    dynamic/resize_grad_d.py:55-703, chosen at :1349-1356). No copy for equal sizes; s = (in-1)/(out-1) with
    align_corners (0 for one output), else 1 / scale when > 0, else in / out (area_pixel_compute_scale :122-137; the
    scales as check_scale takes them, :338-342); per gradient position the source o * s or s * (o + 0.5) - 0.5
    (:116-120), the index floor at most in - 1 and the fraction clamped to [0, 1] (guard_index_and_lambda :328-336),
    Keys' a = -0.75 whatever cubic_coeff_a says (:46, 92, 307-326), the four taps clamped into the image (calc
    :653-671)."""
    return _bicubic_kernel(size_in, size_out, float(_forward_step(size_in, size_out, forward, corners)), corners,
                           deterministic=False, guard=True)


def _aa_filter(cubic: bool, distance: np.float32, a2: bool) -> np.float32:
    """The antialias filters: triangle 1 - |x| below 1 (upsample_bilinear2d_aa_backward_kernel.h:56-65, arch35
    _simt_base.h:46-53); Keys with a = -0.5: (1.5 x - 2.5) x^2 + 1 below 1, ((2.5 - 0.5 x) x - 4) x + 2 beyond, with
    0 from 2 on Ascend 950 only (upsample_bicubic2d_aa_grad_kernel.h:64-73; arch35 _common.h:32-50)."""
    x, f = abs(np.float32(distance)), np.float32
    if not cubic:
        return f(1) - x if x < 1 else f(0)
    if x < 1:
        return (f(1.5) * x - f(2.5)) * x * x + f(1)
    return ((f(2.5) - f(0.5) * x) * x - f(4)) * x + f(2) if x < 2 or a2 else f(0)


def _antialias_kernels(size_in: int, size_out: int, given: float, corners: bool, cubic: bool,
                       family: str | None) -> list[np.ndarray]:
    """UpsampleBilinear2dAABackward / UpsampleBicubic2dAAGrad. The tiling resolves the inverse scale s: (in-1)/(out-1)
    with align_corners (0 for one output), else the attribute when > 0, else in / out
    (upsample_bilinear2d_aa_backward_tiling.cpp:255-268, arch35 _tiling_arch35.cpp:143-166;
    upsample_bicubic2d_aa_grad_tiling.cpp:198-214, whose attribute 1 is input_size: :70-74, 414-421; arch35
    :158-173); support s * (1 or 2) when s >= 1, else 1 or 2, invscale 1 / s or 1 (tiling.cpp:239-252,
    bicubic :178-194). A2 / A3 skip an axis of scale 1 (bilinear: the attribute, or equal sizes without one or with
    align_corners, tiling.cpp:270-277; bicubic: the resolved scale, :169-174); Ascend 950 copies only when both axes
    keep their size at scale 1 (arch35 tiling :116-141), which computing gives too. For each gradient index o:
    centre c = (o + 0.5) * s, the inputs [max(floor(c + 0.5 - support), 0), min(floor(c + 0.5 + support), in)), at
    most 2 ceil(support) + 1 of them on A2 / A3, each weighted filter((i - c + 0.5) * invscale) over their float32
    sum (kernel.h:302-351, 404-439; bicubic kernel.h:375-415, 488-520; arch35 simt_base.h:87-121). Ascend 950 also
    has a deterministic kernel (the tiling's GetDeterministic); the bicubic one centres a gradient at 0 for a scale
    of 0 (_simt_base_deter.h:101), the other at 0.5 (_simt_base.h:37): both are returned."""
    f = np.float32
    s = _corners_step(size_in, size_out) if corners else f(given) if given > 0 else f(size_in) / f(size_out)
    a2 = family != "Ascend 950"
    skip = abs(float(s) - 1) < _SCALE_ONE if cubic else \
        abs(given - 1) < _SCALE_ONE if given > 0 and not corners else size_in == size_out
    if a2 and skip:
        return [_identity(size_in, size_out) if size_in == size_out else np.full((size_out, size_in), np.nan)]
    half = f(2) if cubic else f(1)
    support, inv = (half * s, f(1) / s) if s >= 1 else (half, f(1))
    centres = [(f(o) + f(0.5)) * s for o in range(size_out)]
    variants = [centres] + ([[c if s > 0 else f(0.5) for c in centres]] if cubic and not a2 else [])
    out = []
    for centre_of in variants:
        m = np.zeros((size_out, size_in))
        for o, c in enumerate(centre_of):
            # A2 adds 0.5 -+ support (one rounding), Ascend 950 subtracts the support, then adds 0.5
            low = np.floor(c + (f(0.5) - support) if a2 else c - support + f(0.5))
            high = np.floor(c + (f(0.5) + support) if a2 else c + support + f(0.5))
            low, high = max(int(low), 0), min(int(high), size_in)
            if a2:
                high = min(high, low + int(np.ceil(support)) * 2 + 1)
            taps = [_aa_filter(cubic, (f(i) - c + f(0.5)) * inv, a2) for i in range(low, high)]
            total = f(0)
            for w in taps:
                total = f(total + w)
            if total != 0:
                m[o, low:high] = [float(f(w / total)) for w in taps]
        out.append(m)
    return out


def _clamped_tent_kernel(size_in: int, size_out: int, forward: float, corners: bool, half_pixel: bool,
                         all_equal: bool) -> np.ndarray:
    """ResizeBilinearV2Grad and ResizeLinearGrad on Ascend 950 (ops-cv arch35): equal sizes on every axis copy whatever
    the scales (all-copy: resize_bilinear_v2_grad_tiling_arch35.cpp:310-313, 446-451; resize_linear_grad_tiling_arch35
    .cpp:193-196); else s = (in-1)/(out-1) with align_corners, 1 / scale, or in/out (SetScales :352-394;
    LinearComputeGrad :352-368), and each gradient o lands on the tent around its source (o + off) * s - off clamped
    to [0, in - 1]: the scatter kernels' floor / delta pair (simt.h:121-150; resize_linear_grad_simt_no_determine.h:
    52-78), their point copies at integer steps (which land on integer sources) and the deterministic gathers'
    1 - |clamp(out) - h| (simt_determine.h:85-119, simt_determine_scales.h:78-229; resize_linear_grad_simt_determine
    .h:40-104) are that one matrix."""
    if all_equal:
        return _identity(size_in, size_out)
    f, s = np.float32, _forward_step(size_in, size_out, forward, corners)
    off = f(0.5) if half_pixel else f(0)
    source = np.clip((np.arange(size_out, dtype=f) + off) * s - off, f(0), f(size_in - 1))
    return _linear_rows(size_in, source)


def _bicubic_v2_950_kernel(size_in: int, size_out: int, forward: float, corners: bool,
                           all_equal: bool) -> np.ndarray:
    """ResizeBicubicV2Grad on Ascend 950 (ops-cv arch35): equal sizes on both axes copy whatever the scales (all-copy
    tiling, resize_bicubic_v2_grad_all_copy_tiling_arch35.cpp:23-27); else s = (in-1)/(out-1) with align_corners
    (0 for one output; in/out in the deterministic kernel, the same source 0), 1 / scale, or in/out (SetScales,
    base_tiling_arch35.cpp:315-360), source s * o or s * (o + 0.5) - 0.5 unclamped (op_kernel/arch35/
    resize_bicubic_v2_grad_base.h:72-80), Keys' a = -0.75 on the four taps floor - 1 .. floor + 2 clamped into the
    image: the scatter kernel's coefficients (simt.h:100-145) and the deterministic gather's |src - h| form, with the
    clamped taps on the first and last index (simt_determine.h:132-345), are one matrix, UpsampleBicubic2dGrad's."""
    if all_equal:
        return _identity(size_in, size_out)
    return _bicubic_kernel(size_in, size_out, float(_forward_step(size_in, size_out, forward, corners)), corners,
                           deterministic=False)


def _tbe_scale(size_in: int, size_out: int, corners: bool) -> np.float32:
    """The older ResizeBilinearV2Grad / ResizeNearestNeighborV2Grad (TBE) read no `scales`: image / grads from the
    sizes, (in-1)/(out-1) with align_corners (CANNDEV ops/built-in/tbe/impl/dynamic/resize_bilinear_v2_grad.py:
    398-419, dynamic/resize_nearest_neighbor_v2_grad.py:171-216; their signatures :1213, :930 take no scales)."""
    return _forward_step(size_in, size_out, 0.0, corners)


def _tbe_bilinear_kernel(size_in: int, size_out: int, corners: bool, half_pixel: bool) -> np.ndarray:
    """TBE ResizeBilinearV2Grad: scale 0 for one grads row (resize_bilinear_v2_grad.py:411-417), source s * o or
    max(s * (o + 0.5) - 0.5, 0) (:428-436), floor, the right tap only below the last input (:447-464)."""
    s = _tbe_scale(size_in, size_out, corners) if size_out > 1 else np.float32(0)
    o = np.arange(size_out, dtype=np.float32)
    source = np.maximum(s * (o + np.float32(0.5)) - np.float32(0.5), np.float32(0)) if half_pixel else s * o
    return _linear_rows(size_in, source)


def _tbe_nearest_kernel(size_in: int, size_out: int, corners: bool, half_pixel: bool) -> list[np.ndarray]:
    """TBE ResizeNearestNeighborV2Grad: index floor((o [+ 0.5]) * s), rounded instead with align_corners
    (resize_nearest_neighbor_v2_grad.py:137-169, vconv f322s32r); no clamp. Both tie rules are returned (the
    rounding mode of f322s32r is not in the source): a node converts only where they agree."""
    if corners and size_in > 1 and size_out == 1:  # (size - 1) / (grads - 1): a division by 0 (:203-214)
        return [np.full((size_out, size_in), np.nan)]
    s = _tbe_scale(size_in, size_out, corners)
    o = np.arange(size_out, dtype=np.float32)
    product = (o + np.float32(0.5)) * s if half_pixel else o * s
    indices = [np.rint(product), np.floor(product + np.float32(0.5))] if corners else [np.floor(product)]
    out = []
    for index in indices:
        m = np.zeros((size_out, size_in))
        index = index.astype(np.int64)
        if index.min() < 0 or index.max() >= size_in:
            m[:] = np.nan
        else:
            m[np.arange(size_out), index] = 1
        out.append(m)
    return out


def _nearest_v2_950_kernel(size_in: int, size_out: int, forward: float, corners: bool, half_pixel: bool,
                           all_equal: bool) -> np.ndarray:
    """ResizeNearestNeighborV2Grad on Ascend 950 (ops-cv arch35): equal sizes on both axes copy
    (resize_nearest_neighbor_v2_grad_tiling_base.cpp:443-446). align_corners: min(roundf(o * s), in - 1) with
    s = (in-1)/(out-1), 0 for one output (tiling_base.cpp:371-372; simt.h:96-106). Otherwise the deterministic
    kernel always (tiling_base.cpp:438): s = 1 / scale, else in/out (:378-388), inv = 1 / s (:390-393), and input y
    takes the outputs [min(ceil(y * inv [- 0.5]), out), min(ceil((y + 1) * inv [- 0.5]), out))
    (simt_determine.h:79-88, 105-108)."""
    if all_equal:
        return _identity(size_in, size_out)
    m = np.zeros((size_out, size_in))
    if corners:
        s = _corners_step(size_in, size_out)
        product = np.arange(size_out, dtype=np.float32) * s
        index = np.floor(product) + (product - np.floor(product) >= np.float32(0.5))  # roundf: half away from 0
        m[np.arange(size_out), np.minimum(index.astype(np.int64), size_in - 1)] = 1
        return m
    s = _forward_step(size_in, size_out, forward, False)
    return _ceil_ranges(size_in, size_out, np.float32(1) / s, 0.5 if half_pixel else 0.0)


def _kernel_matrices(ge_type: str, family: str | None, attrs: dict, axis: int, spatial: int, size_in: int,
                     size_out: int, all_equal: bool = False) -> list[np.ndarray] | None:
    """Every M[out, in] the GE op's kernels can compute along one axis with these attributes (more than one where the
    kernel depends on something the model does not fix), or None where the kernel is not modelled here.
    all_equal: every resized axis of the node keeps its size."""
    corners = bool(attrs.get("align_corners", 0))
    two = ("scales_h", "scales_w")[axis] if spatial == 2 else None
    if ge_type in ("UpsampleNearest2dGrad", "UpsampleNearestExact2dGrad"):
        return [_nearest_kernel(size_in, size_out, attrs[two], "Exact" in ge_type)]
    if ge_type in ("UpsampleNearest3dGrad", "UpsampleNearestExact3dGrad"):
        scales = attrs.get("scales") or []
        return [_nearest_kernel(size_in, size_out, scales[axis] if scales else 0.0, "Exact" in ge_type)]
    if ge_type == "UpsampleBilinear2dGrad":
        return [_bilinear_kernel(size_in, size_out, attrs[two], corners)]
    if ge_type == "UpsampleTrilinear3dBackward":
        return [_trilinear_kernel(size_in, size_out, attrs[TRILINEAR_SCALES[axis]], corners)]
    if ge_type == "UpsampleBicubic2dGrad":
        return [_bicubic_kernel(size_in, size_out, attrs[two], corners, d) for d in (False, True)]
    if ge_type == "ResizeGradD" and attrs.get("mode") == "cubic" and attrs.get("data_format") == "HWNC":
        corners = attrs.get("coordinate_transformation_mode") == "align_corners"
        return [_resize_grad_d_kernel(size_in, size_out, (attrs.get("scales") or [0.0, 0.0])[axis], corners)]
    if ge_type in ("UpsampleBilinear2dAABackward", "UpsampleBicubic2dAAGrad"):
        return _antialias_kernels(size_in, size_out, attrs[two], corners, "Bicubic" in ge_type, family)
    if family in KERNEL_TBE_FAMILIES and ge_type == "ResizeBilinearV2Grad":
        return [_tbe_bilinear_kernel(size_in, size_out, corners, bool(attrs.get("half_pixel_centers", 0)))]
    if family in KERNEL_TBE_FAMILIES and ge_type == "ResizeNearestNeighborV2Grad":
        return _tbe_nearest_kernel(size_in, size_out, corners, bool(attrs.get("half_pixel_centers", 0)))
    if family == "Ascend 950" and ge_type == "ResizeBilinearV2Grad":
        return [_clamped_tent_kernel(size_in, size_out, (attrs.get("scales") or [0.0, 0.0])[axis], corners,
                                     bool(attrs.get("half_pixel_centers", 0)), all_equal)]
    if family == "Ascend 950" and ge_type == "ResizeBicubicV2Grad":
        return [_bicubic_v2_950_kernel(size_in, size_out, (attrs.get("scales") or [0.0, 0.0])[axis], corners,
                                       all_equal)]
    if family == "Ascend 950" and ge_type == "ResizeLinearGrad":  # no half_pixel_centers: half-pixel unless corners
        return [_clamped_tent_kernel(size_in, size_out, attrs.get("scale", 0.0), corners, not corners, all_equal)]
    if family == "Ascend 950" and ge_type == "ResizeNearestNeighborV2Grad":
        return [_nearest_v2_950_kernel(size_in, size_out, (attrs.get("scales") or [0.0, 0.0])[axis], corners,
                                       bool(attrs.get("half_pixel_centers", 0)), all_equal)]
    return None


def _first_difference(kernel: np.ndarray, op: np.ndarray) -> str:
    """Where a kernel's matrix leaves the op's: the first output row that differs, as the inputs each reads."""
    bad = np.flatnonzero(~np.isclose(kernel, op, atol=AGREEMENT * max(1, op.shape[1]), rtol=0).all(axis=1))
    if not len(bad):
        return "same"
    o = int(bad[0])

    def reads(row):
        return "nothing" if not np.nan_to_num(row).any() else ", ".join(
            f"{i}" if abs(w - 1) < 1e-9 else f"{i}:{w:.3g}" for i, w in enumerate(row) if w)
    return f"output {o} reads input {reads(kernel[o])} on the device, {reads(op[o])} in the op"


def _kernel_agrees(ge_type, family, attrs, axis, spatial, size_in, size_out, op_matrix,
                   all_equal=False) -> tuple[bool | None, str]:
    """(True / False / None if not modelled, where they differ)."""
    kernels = _kernel_matrices(ge_type, family, attrs, axis, spatial, size_in, size_out, all_equal)
    if kernels is None:
        return None, "kernel not modelled"
    for kernel in kernels:
        where = _first_difference(kernel, op_matrix)
        if where != "same":
            return False, where
    return True, "same"


# --------------------------------------------------------------------------- the GE node(s) of one op

@dataclasses.dataclass
class GePlan:
    """One GE op for one resample_grad node: its inputs, attribute values, and what it needs around it."""
    ge_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, object]
    # per resized axis: in, out, in/out step
    steps: list[tuple[int, int, float]] = dataclasses.field(default_factory=list)
    wrap: bool = False  # the 1-D form: Unsqueeze to [N, C, 1, L], the 2-D op, Squeeze
    inits: list[onnx.TensorProto] = dataclasses.field(default_factory=list)
    # name, ok, detail, problem
    checks: list[tuple[str, bool, str, str | None]] = dataclasses.field(default_factory=list)
    out_shapes: list[list | None] = dataclasses.field(default_factory=list)
    # per resized axis of the GE op: axis, in, out, the op's M[out, in] (what the kernel must compute there)
    kernel_axes: list[tuple[int, int, int, np.ndarray]] = dataclasses.field(default_factory=list)


class _Context:
    def __init__(self, model: onnx.ModelProto, info: dict):
        self.info = info
        overridable = {v.name for v in model.graph.input}  # an initializer that is also an input is a default
        self.constants = {i.name: i for i in model.graph.initializer if i.name not in overridable}
        for node in model.graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.attribute \
                    and node.attribute[0].name == "value":
                self.constants[node.output[0]] = node.attribute[0].t
        self.used = {name for n in walk(model.graph.node) for name in list(n.input) + list(n.output)}
        self.used |= {v.name for v in list(model.graph.input) + list(model.graph.output)} | set(self.constants)
        self.counter = 0

    def fresh(self, hint: str) -> str:
        while True:
            self.counter += 1
            name = f"{hint}__ge{self.counter}"
            if name not in self.used:
                self.used.add(name)
                return name

    def shape(self, name: str) -> list | None:
        return self.info.get(name, (None, 0))[0]

    def elem(self, name: str) -> int:
        return self.info.get(name, (None, TensorProto.FLOAT))[1]

    def value(self, name: str) -> np.ndarray | None:
        return numpy_helper.to_array(self.constants[name]) if name in self.constants else None


def _inverse(forward: float) -> float:
    """GE's inverse-scale attributes: 1/scale for a given forward scale, 0 (derive from sizes) otherwise."""
    return float(1.0 / forward) if forward > 0 else 0.0


def _step(size_in, size_out, forward, align_corners) -> float:
    """The in/out index step an op resolves for the limit checks (align_corners: the size ratio)."""
    if forward > 0 and not align_corners:
        return 1.0 / forward
    return size_in / size_out if size_out else 0.0


def _static(values) -> bool:
    return all(v is not None and v >= 0 for v in values)


def _upsample_plan(node, ctx: _Context, ge_type: str) -> GePlan:
    """The torch-style family: sizes and scales as attributes, converted to the GE op's conventions."""
    attrs = _attrs(node)
    spec = opset.OPS[node.op_type].spec  # its row says which attributes carry the scales
    grad = ctx.shape(node.input[0])
    if grad is None:
        rank = len(attrs["input_size"])
        grad = [None] * rank
    spatial = len(grad) - 2
    forward = spec.scale_values(attrs, spatial)
    size = [grad[k] if v == -1 else v for k, v in enumerate(attrs["input_size"])]
    out = [g if g is not None else (attrs.get("output_size") or [None] * spatial)[k] for k, g in enumerate(grad[2:])]
    corners = int(attrs.get("align_corners", 0))
    proto = protos.PROTOTYPES[ge_type]
    wrap = proto.rank == 4 and spatial == 1
    if wrap:  # [N, C, L] -> [N, C, 1, L]: H is 1 -> 1 with scale 1 (as aclnn's 1-D backwards)
        size, out, forward = size[:2] + [1] + size[2:], [1] + out, [1.0] + forward
    steps = [(i, o, _step(i, o, f, corners)) for i, o, f in zip(size[2:], out, forward, strict=True)
             if i is not None and o is not None]
    checks = [("static sizes", _static(size) and _static(out), f"input_size {size}, output_size {out}",
               None if _static(size) and _static(out) else
               f"{ge_type} needs static sizes (input_size {size}, grad_output spatial {out}); N or C of -1 must be "
               "known from grad_output")]
    names = TRILINEAR_SCALES[3 - len(out):]
    static = _static(size) and _static(out)
    axes = _op_axes(spec.taps, size[2:], out, forward, corners, 0) if static else []
    if ge_type in ("UpsampleNearest2dGrad", "UpsampleNearestExact2dGrad"):
        # per axis the given scale, else 0 (the size ratio: where the op ignores the scale, issue A)
        ge_attrs = dict(output_size=out, input_size=size, scales_h=float(forward[0]), scales_w=float(forward[1]))
        candidates = [[f, 0.0] for f in forward]
    elif ge_type in ("UpsampleNearest3dGrad", "UpsampleNearestExact3dGrad"):
        # GE infershape takes exactly one of output_size / scales, and with scales needs floor(in * scale) == out
        # (upsample_nearest3d_grad_infershape.cpp:43-72); the tiling reads scales[0..2] whatever was given
        # (upsample_nearest3d_grad_tiling.cpp:180-183, arch35 :232-235): scales for every axis, output_size empty
        ge_attrs = dict(input_size=size, output_size=[], scales=[float(f) for f in forward])
        candidates = [_scales_3d(i, o, f) for i, o, f in zip(size[2:], out, forward, strict=True)] if static else []
        if static and not all(candidates):
            checks.append(("scales for GE infershape", False, f"input_size {size}, grad_output {out}",
                           f"{ge_type}: no float32 scale s gives floor(in * s) == out on every axis (GE infershape) "
                           f"for input_size {size[2:]} -> {out}"))
    elif ge_type == "UpsampleTrilinear3dBackward":
        ge_attrs = dict(output_size=out, input_size=size, align_corners=corners,
                        **{n: _inverse(f) for n, f in zip(names, forward, strict=True)})
        candidates = [[_inverse(f), 0.0] for f in forward]
    elif ge_type == "UpsampleBicubic2dGrad":  # no sizes: the kernel uses the resolved inverse scales as they are
        resolved = [0.0, 0.0]
        if static:
            resolved = [((i - 1) / (o - 1) if o > 1 else 0.0) if corners else (1.0 / f if f > 0 else i / o)
                        for i, o, f in zip(size[2:], out, forward, strict=True)]
            steps = [(i, o, r) for i, o, r in zip(size[2:], out, resolved, strict=True)]  # the step it checks
        ge_attrs = dict(align_corners=corners, scales_h=float(resolved[0]), scales_w=float(resolved[1]))
        candidates = [[r] + ([1.0] if i == o else []) for i, o, r in zip(size[2:], out, resolved, strict=True)]
    elif ge_type == "ResizeGradD":  # the torch bicubic backward of aclnnUpsampleBicubic2dBackward's fallback
        ge_attrs = dict(original_size=size, roi=[], scales=[float(f) for f in forward],
                        coordinate_transformation_mode="align_corners" if corners else "half_pixel",
                        cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, mode="cubic",
                        nearest_mode="round_prefer_floor",
                        data_format="HWNC")  # as CANN's only caller (ops-cv resize_grad_d.cpp), on HWNC data
        # the given scale, else 0 (the size ratio): aten copies a tensor whose axes all keep their size, whatever
        # the scales, and the kernel resamples such an axis by its scale
        candidates = [[f, 0.0] for f in forward]
    else:  # UpsampleBilinear2dGrad and the antialias ops: inverse scales
        ge_attrs = dict(output_size=out, input_size=size, align_corners=corners, scales_h=_inverse(forward[0]),
                        scales_w=_inverse(forward[1]))
        candidates = [[_inverse(f), 0.0] for f in forward] if ge_type == "UpsampleBilinear2dGrad" else None
    if candidates and axes:
        _choose_axis_values(ge_type, ge_attrs, axes, candidates)
        if ge_type == "UpsampleBicubic2dGrad":
            steps = [(i, o, ge_attrs[n]) for (_, i, o, _), n in zip(axes, ("scales_h", "scales_w"), strict=True)]
    return GePlan(ge_type, [node.input[0]], [node.output[0]], ge_attrs, steps, wrap=wrap, checks=checks,
                  out_shapes=[size], kernel_axes=axes)


def _op_axes(taps: str, sizes_in, sizes_out, scales, corners, half_pixel) -> list:
    """(axis, in, out, M[out, in]) of the resample_grad op along each resized axis (its taps, float32 arithmetic)."""
    from resample_grad.opset._taps import axes_taps
    matrices = axes_taps(taps, sizes_in, sizes_out, scales, bool(corners), bool(half_pixel), np.float32)
    return [(k, i, o, m.matrix(np.float64)) for k, (i, o, m) in enumerate(zip(sizes_in, sizes_out, matrices,
                                                                                strict=True))]


def _scales_3d(size_in: int, size_out: int, forward: float) -> list[float]:
    """The scales a 3-D nearest GE op can take on one axis: GE infershape's floor(in * s) == out in float32, the
    given scale first, then out / in rounded to float32 and its next float up (what the tiling resolves for 0)."""
    ratio = np.float32(size_out) / np.float32(size_in)
    tried = ([np.float32(forward)] if forward > 0 else []) + [ratio, np.nextafter(ratio, np.float32(np.inf))]
    return [float(s) for s in tried if int(np.floor(np.float32(size_in) * s)) == size_out]


def _put_axis(ge_type: str, ge_attrs: dict, axis: int, value: float) -> None:
    """Set one axis' scale where the GE op keeps it: the scales list (3-D nearest ops, ResizeGradD, the Resize*V2
    grads), ResizeLinearGrad's scale, else scales_h / scales_w."""
    if "scales" in ge_attrs:
        ge_attrs["scales"][axis] = float(value)
    elif ge_type == "ResizeLinearGrad":
        ge_attrs["scale"] = float(value)
    elif ge_type == "UpsampleTrilinear3dBackward":
        ge_attrs[TRILINEAR_SCALES[axis]] = float(value)
    else:
        ge_attrs[("scales_h", "scales_w")[axis]] = float(value)


def _choose_axis_values(ge_type: str, ge_attrs: dict, axes, candidates, family: str | None = None) -> None:
    """Per axis, the first candidate attribute value with which the kernel (of `family` where it depends on it)
    computes the op's matrix (issues A, B): the given scale where the kernel follows it as the op does, else the
    alternative (0: the size ratio, or a step of 1 for an axis the op copies). Left at the first candidate where none
    agrees (_check_plan says where)."""
    all_equal = all(i == o for _, i, o, _ in axes)
    for (axis, size_in, size_out, op_matrix), values in zip(axes, candidates, strict=True):
        for value in values:
            _put_axis(ge_type, ge_attrs, axis, value)
            if _kernel_agrees(ge_type, family, ge_attrs, axis, len(axes), size_in, size_out, op_matrix, all_equal)[0]:
                break
        else:
            if values:
                _put_axis(ge_type, ge_attrs, axis, values[0])


def _resize_v2_plan(node, ctx: _Context, ge_type: str) -> GePlan:
    """The Resize*V2 / ResizeLinearGrad family: same attributes and conventions as the GE ops."""
    attrs = _attrs(node)
    proto = protos.PROTOTYPES[ge_type]
    schema = opset.OPS[node.op_type].schema
    ge_attrs = {}
    for a in proto.attrs:
        value = attrs.get(a.name, helper.get_attribute_value(schema.attributes[a.name].default_value))
        ge_attrs[a.name] = int(value) if a.ge_type == protos.BOOL else [float(v) for v in value] \
            if a.ge_type == protos.LIST_FLOAT else float(value)
    grads = ctx.shape(node.input[0]) or [None] * proto.rank
    plan = GePlan(ge_type, list(node.input[:2]), [node.output[0]], ge_attrs)
    if ge_type == "ResizeNearestNeighborV2Grad":  # size: an int32 [H, W], a constant where it can be
        value = ctx.value(node.input[1])
        if value is not None:
            spatial = [int(v) for v in value.reshape(-1)]
            if value.dtype != np.int32:
                plan.inputs[1] = ctx.fresh(f"{node.name or 'size'}_int32")
                plan.inits.append(numpy_helper.from_array(np.array(spatial, np.int32), plan.inputs[1]))
            converted = " (from int64)" if value.dtype != np.int32 else ""
            plan.checks.append(("size", True, f"int32 constant {spatial}{converted}", None))
        else:  # a run-time size: refused below (static sizes)
            spatial = [None, None]
        original = list(grads[:2]) + spatial
    else:
        original = ctx.shape(node.input[1]) or [None] * proto.rank
    scales = ge_attrs.get("scales", [ge_attrs.get("scale", 0.0)])
    corners = ge_attrs.get("align_corners", 0)
    plan.steps = [(i, o, _step(i, o, f, corners)) for i, o, f in zip(original[2:], grads[2:], scales, strict=True)
                  if i is not None and o is not None]
    plan.out_shapes = [original]
    if _static(original[2:]) and _static(grads[2:]):
        taps, half_pixel = opset.OPS[node.op_type].spec.taps, ge_attrs.get("half_pixel_centers", 0)
        plan.kernel_axes = _op_axes(taps, original[2:], grads[2:], scales, corners, half_pixel)
        # Ascend 950's kernels read the scales (the TBE ones ignore them): per axis the given scale, else 0 (the size
        # ratio), e.g. for an axis the op copies under a given scale
        _choose_axis_values(ge_type, ge_attrs, plan.kernel_axes, [[f, 0.0] for f in scales], family="Ascend 950")
    else:  # the kernel's index map and weights can be compared with the op's only for known lengths
        plan.checks.append(("static sizes", False, f"image {original[2:]}, grads {grads[2:]}",
                            f"{ge_type} needs static spatial sizes (image {original[2:]}, grads {grads[2:]}) for the "
                            f"converter to check what its kernel computes"))
    return plan


def _grid_plan(node, ctx: _Context, ge_type: str) -> GePlan:
    attrs = _attrs(node)
    ge_attrs = dict(interpolation_mode=attrs.get("interpolation_mode", "bilinear"),
                    padding_mode=attrs.get("padding_mode", "zeros"), align_corners=int(attrs.get("align_corners", 0)))
    outputs = list(node.output) + [""] * (2 - len(node.output))
    outputs = [o or ctx.fresh(f"{node.name or 'grid_sampler'}_unused_{k}") for k, o in enumerate(outputs)]
    return GePlan(ge_type, list(node.input), outputs, ge_attrs,
                  out_shapes=[ctx.shape(node.input[1]), ctx.shape(node.input[2])])


def _grid_kernel_checks(plan: GePlan, dtype: str, family: str, cast: bool, native_half: bool, check) -> bool:
    """What the GridSampler kernels compute on `family`, one check row per fact (hicann/ops-cv@6ae8765, image/
    grid_sampler{2,3}_d_grad/; tests/converters/cann_emulation_grid.py emulates the kernels): True where the node
    needs Casts to float32."""
    three_d = plan.ge_type == "GridSampler3DGrad"
    aclnn = f"aclnn_grid_sampler{'3' if three_d else '2'}d_backward.cpp"
    definition, untransposed = (("grid_sampler3_d_grad_def.cpp:55-57", ":194-198, 290-303") if three_d else
                                ("grid_sampler2_d_grad_def.cpp:51-53", ":186-192, 281-299"))
    if not check("kernel", family != "Atlas training series",
                 "the AI Core kernel" if family != "Atlas training series" else
                 "an AI CPU task: the op definition registers AI Core kernels for ascend910b, ascend910_93 and "
                 f"ascend950 only ({definition}); aclnn gives that task {'NCDHW' if three_d else 'NCHW'} "
                 f"({aclnn}{untransposed}), the converter writes channels "
                 "last: not established",
                 f"{plan.ge_type} runs as an AI CPU task on {family}, whose source is not public and to which aclnn "
                 "gives channels-first tensors: what it computes on the converter's channels-last form is not "
                 "established"):
        return False
    needs_cast = False
    x_shape = plan.out_shapes[0] if plan.out_shapes else None
    channels = x_shape[1] if x_shape else None
    check("channels", channels is None or channels <= 2048,
          f"{'run-time' if channels is None else channels} (aclnn runs the AI Core kernel up to 2048 channels, the "
          f"AI CPU task above: {aclnn}, MAX_CHANNEL_SIZE / AICORE_CHANNEL_LIMIT)",
          f"{channels} channels: aclnn runs {plan.ge_type} as an AI CPU task above 2048 (not established)")
    if dtype == "float64":
        needs_cast = cast
        via = "--cast: Cast to float32 around the op, the AI Core kernel" if cast else "not established"
        check("float64", cast, f"float64 runs as an AI CPU task (aclnn: no AI Core for double, {aclnn}); {via}",
              f"float64 runs {plan.ge_type} as an AI CPU task (not established); --cast runs it in float32 on the "
              "AI Core kernel")
    if three_d and family in ("Atlas A2", "Atlas A3"):
        check("float32 kernel", dtype not in HALF_TYPES or not native_half,
              "the A2/A3 kernel has only its float32 key (op_kernel/grid_sampler3_d_grad.cpp:44-49; the tiling gives "
              "half types keys 2/3, grid_sampler3_d_grad_tiling.cpp:440-452); half types through Casts, as aclnn "
              "(aclnn_grid_sampler3d_backward.cpp:270-280)",
              f"{dtype} with native_half: the A2/A3 kernel of GridSampler3DGrad has no {dtype} body "
              "(grid_sampler3_d_grad.cpp:44-49)")
    if three_d and family == "Ascend 950":
        check("layout", False,
              "the SIMT kernels (keys 1-6) index grad, x and dx channels first whatever their format "
              "(arch35/grid_sampler3_d_grad_simt_base.h:135-140, _simt.h:284); the channels-last SIMD kernel runs "
              "only for float32, >= 128 channels and a non-deterministic context, a run-time setting "
              "(grid_sampler3_d_grad_tiling.cpp:315-317, 432-439)",
              "GridSampler3DGrad on Ascend 950 reads its tensors channels first (SIMT kernels) or channels last "
              "(SIMD kernel) by run-time setting: no one layout is right")
    return needs_cast


# resample_grad op -> the function that writes its GE op (the GE op chosen from GE_OP_FOR)
PLANS = {
    **{op: _upsample_plan for op in protos.GE_OP_FOR if op.startswith("Upsample")},
    **{op: _resize_v2_plan for op in protos.GE_OP_FOR if op.startswith("Resize")},
    "GridSampler2DGrad": _grid_plan, "GridSampler3DGrad": _grid_plan,
}


# --------------------------------------------------------------------------- ResizeGrad

def _target_attrs(target: str, fixed: dict, x_shape, dy_shape, forward) -> dict:
    """The attributes of the op a ResizeGrad becomes, for X and dY of these shapes (-1: unknown N or C)."""
    if target.startswith("Upsample"):
        return dict(input_size=[-1 if d is None else int(d) for d in x_shape],
                    output_size=[int(d) for d in dy_shape[2:]],
                    **fixed, scales_h=float(forward[0]), scales_w=float(forward[1]))
    return dict(fixed, scales=[float(f) for f in forward])


def _target_reference(target: str, dy: np.ndarray, x_shape, attrs: dict) -> np.ndarray:
    reference = opset.OPS[target].reference
    if target == "ResizeNearestNeighborV2Grad":
        return reference(dy, np.array(x_shape[2:], np.int32), **attrs)
    if target.startswith("Resize"):
        return reference(dy, np.zeros(x_shape, dy.dtype), **attrs)
    return reference(dy, **attrs)


def _probe_axis(resize_attrs: dict, target: str, fixed: dict, axis: int, size_in: int, size_out: int,
                scale: float | None, dtype, alone: bool) -> float:
    """Largest difference between the two ops' tap weights along one axis: both references run on the one-hot
    gradients of every output position, so each result row is the row of one tap matrix. The other spatial axis is
    1 -> 1 where the node resizes nothing else (`alone`), else 1 -> 2 (gradients summed, halved): ResizeGrad, as
    onnxruntime's Resize, copies a tensor whose every axis keeps its size, whatever the scales, but resizes an axis
    that keeps its size by its scale when another axis is resized. The coordinates are float32 in ResizeGrad
    (onnxruntime divides by the scale) and in aten (it multiplies by the inverse), so equal functions still differ by
    float32 rounding of a coordinate, which grows with its magnitude: AGREEMENT is per unit of input length."""
    from resample_grad.opset.resize_grad import resize_grad
    other, wide = 5 - axis, 1 if alone else 2
    x_shape = [size_out, 1, 1, 1]
    x_shape[axis] = size_in
    dy_shape = [size_out, 1, 1, 1]
    dy_shape[axis], dy_shape[other] = size_out, wide
    dy = np.zeros(dy_shape, dtype)
    index = [np.arange(size_out), 0, slice(None), slice(None)]
    index[axis] = np.arange(size_out)
    dy[tuple(index)] = 1
    step = [1.0, 1.0, 1.0, 1.0]
    step[axis], step[other] = scale or 0.0, float(wide)
    scales = None if scale is None else np.array(step, np.float32)
    sizes = None if scale is not None else np.array(dy_shape, np.int64)
    ours = resize_grad(dy, np.zeros(x_shape, dtype), None, scales, sizes,
                       **{k: v for k, v in resize_attrs.items() if k not in ("axes", "keep_aspect_ratio_policy")})
    forward = [0.0, 0.0]
    forward[axis - 2] = scale or 0.0
    forward[other - 2] = float(wide) if scale is not None else 0.0
    theirs = _target_reference(target, dy, x_shape, _target_attrs(target, fixed, x_shape, dy_shape, forward))
    return float(np.abs(ours.astype(np.float64) - theirs.astype(np.float64)).max()) / wide


def _matches(row: protos.ResizeMapping, a) -> bool:
    return (a.mode == row.mode and a.coordinate_transformation_mode in row.coordinate_modes
            and a.antialias == row.antialias
            and (row.nearest_mode is None or a.nearest_mode == row.nearest_mode)
            and (row.cubic_coeff_a is None or np.float32(a.cubic_coeff_a) == np.float32(row.cubic_coeff_a))
            and (row.exclude_outside is None or a.exclude_outside == row.exclude_outside))


def _describe(a) -> str:
    parts = [f"mode {a.mode!r}", f"coordinate_transformation_mode {a.coordinate_transformation_mode!r}"]
    if a.mode == "nearest":
        parts.append(f"nearest_mode {a.nearest_mode!r}")
    if a.mode == "cubic":
        parts.append(f"cubic_coeff_a {a.cubic_coeff_a:g}")
    if a.mode != "nearest":
        parts += [f"exclude_outside {a.exclude_outside}", f"antialias {a.antialias}"]
    return ", ".join(parts)


def resize_grad_targets(node, ctx: _Context) -> tuple[list[tuple[onnx.NodeProto, str]], list[str], str | None]:
    """The ops of the domain that compute this ResizeGrad node on its sizes: ([(equivalent node, mapping)],
    the candidates that did not agree and why, or the reason there are none)."""
    from resample_grad.opset import _onnx_resize, resize_grad
    values = _attrs(node)
    a = resize_grad._attributes({k: values.get(k) for k, _, _ in resize_grad.ATTRIBUTES})
    rows = [row for row in protos.RESIZE_GRAD_MAPPINGS if _matches(row, a)]
    if not rows:
        return [], [], f"no GE op computes ResizeGrad with {_describe(a)} (no row of the mapping table)"
    dy_name, x_name = node.input[0], node.input[1]
    x_shape, dy_shape = ctx.shape(x_name), ctx.shape(dy_name)
    if x_shape is None or dy_shape is None or len(x_shape) != 4 or len(dy_shape) != 4:
        return [], [], "the GE ops take 4-D NCHW; X and dY need a known rank of 4"
    if None in x_shape[2:] or None in dy_shape[2:]:
        return [], [], f"H and W must be static (X {x_shape}, dY {dy_shape})"
    if a.keep_aspect_ratio_policy != "stretch":
        return [], [], f"keep_aspect_ratio_policy {a.keep_aspect_ratio_policy!r} (only 'stretch' is mapped)"
    given = {}
    for k, name in ((3, "scales"), (4, "sizes")):
        if len(node.input) > k and node.input[k]:
            value = ctx.value(node.input[k])
            if value is None:
                return [], [], f"input '{name}' is computed at run time; the GE ops need static {name}"
            if value.size:
                given[name] = value
    listed = list(range(4)) if a.axes is None else [int(v) % 4 for v in a.axes]
    if "sizes" in given and any(axis < 2 and x_shape[axis] is None for axis in listed):
        return [], [], f"sizes lists N or C, which X {x_shape} has dynamic: cannot tell they are kept"
    # N and C are not resized: probe with them as 1
    probe_shape = [1, 1] + list(x_shape[2:])
    try:
        plan = _onnx_resize.plan("ResizeGrad", a, probe_shape, None, given.get("scales"),
                                 None if "sizes" not in given else _probe_sizes(given["sizes"], a.axes, x_shape))
    except (ResampleGradError, ValueError) as error:
        return [], [], str(error)
    if any(p.scale != 1 or p.output_size != p.input_size for p in plan[:2]):
        return [], [], "N or C is resized (the GE ops resize H and W only)"
    if [p.output_size for p in plan[2:]] != list(dy_shape[2:]):
        return [], [], f"dY {dy_shape} is not Resize's output for X {x_shape}"
    scales = [float(p.scale) if "scales" in given else None for p in plan[2:]]
    dtype = np.float64 if ctx.elem(x_name) == TensorProto.DOUBLE else np.float32
    found, rejected = [], []
    for row in rows:
        if row.outputs_above_one and min(dy_shape[2:]) <= 1:
            rejected.append(f"{row.name}: an output of length 1 reads coordinate 0 in ResizeGrad")
            continue
        for target, fixed in row.targets:
            alone = [p.input_size for p in plan[2:]] == [p.output_size for p in plan[2:]]
            worst = [_probe_axis(values, target, fixed, axis, p.input_size, p.output_size, s, dtype, alone)
                     for axis, p, s in zip((2, 3), plan[2:], scales, strict=True)]
            limits = [AGREEMENT * max(1, p.input_size) for p in plan[2:]]
            detail = f"{row.name} -> {target}{_fixed(fixed)}: references differ by " + ", ".join(
                f"{w:.2g} on {axis} (limit {t:.2g})" for w, axis, t in zip(worst, ("H", "W"), limits, strict=True))
            if all(w <= t for w, t in zip(worst, limits, strict=True)):
                forward = [s or 0.0 for s in scales]
                attrs = _target_attrs(target, fixed, x_shape, dy_shape, forward)
                inputs = [dy_name] + ([x_name] if target in ("ResizeBilinearV2Grad", "ResizeBicubicV2Grad") else [])
                size_init = None
                if target == "ResizeNearestNeighborV2Grad":
                    size_init = numpy_helper.from_array(np.array(x_shape[2:], np.int32),
                                                        ctx.fresh(f"{node.name or 'resize'}_size"))
                    ctx.constants[size_init.name] = size_init
                    inputs.append(size_init.name)
                equivalent = opset.make_node(target, inputs, [node.output[0]], name=node.name, **attrs)
                found.append((equivalent, detail, size_init))
            else:
                rejected.append(detail)
    if not found:
        probed = [why.split(":")[0] for why in rejected if "references differ" in why]
        if not probed:
            return [], rejected, "; ".join(rejected)
        return [], rejected, (f"the references disagree on these sizes ({', '.join(probed)}; "
                              f"how far: the report's rejected list)")
    return found, rejected, None


def _probe_sizes(sizes: np.ndarray, axes, x_shape) -> np.ndarray:
    """sizes for the probe shape [1, 1, H, W]: N and C as 1 when they are kept."""
    sizes = np.asarray(sizes, np.int64).reshape(-1).copy()
    listed = list(range(4)) if axes is None else [int(v) % 4 for v in axes]
    if len(sizes) != len(listed):
        return sizes  # Resize's own check reports it
    for k, axis in enumerate(listed):
        if axis < 2:
            sizes[k] = 1 if sizes[k] == x_shape[axis] else sizes[k] + 1  # a resized N or C stays resized
    return sizes


def _fixed(fixed: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in fixed.items()) + ")" if fixed else ""


# --------------------------------------------------------------------------- checks

def _check_plan(plan: GePlan, dtype: str, family: str, cast: bool, wide_modes: bool, native_half: bool = False):
    """The device checks of one GE op: (checks, problems no option fixes, needs a Cast)."""
    ge = protos.PROTOTYPES[plan.ge_type]
    checks, problems, needs_cast = [], [], False

    def check(name, ok, detail, problem=None):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})
        if not ok and problem:
            problems.append(problem)
        return ok

    supported = ge.dtypes.get(family)
    if not check("product", supported is not None,
                 f"GE op {ge.ge_type} on {family}"
                 + ("" if supported else f": not available (it runs on {', '.join(ge.dtypes)})"),
                 f"GE op {ge.ge_type} is not available on {family} (it runs on {', '.join(ge.dtypes)})"):
        return checks, problems, False
    if dtype in HALF_TYPES and "float32" in supported and not native_half:  # issue E: as every aclnn caller does
        needs_cast = True
        check("dtype", True, f"{dtype}: Cast to float32 around the op, as aclnn does (the kernels keep weights and "
                             f"partial sums in the input dtype; native_half keeps {dtype}, less precise)")
    elif not check("dtype", dtype in supported, f"{dtype} (supported: {', '.join(supported)})"):
        if cast and "float32" in supported:
            needs_cast = True
            checks[-1]["detail"] += "; --cast: Cast to float32 around the op"
        else:
            problems.append(f"dtype {dtype} is not supported by {ge.ge_type} on {family} (supported: "
                            f"{', '.join(supported)}; --cast inserts Cast nodes)")
    for attr, documented in ge.modes.items():
        value = plan.attrs[attr]
        allowed = ge.wide_modes[attr] if wide_modes and attr in ge.wide_modes else documented
        wide = f"; --wide-modes: {', '.join(ge.wide_modes[attr])}" if attr in ge.wide_modes and wide_modes else ""
        hint = (f"; --wide-modes accepts {', '.join(ge.wide_modes[attr])} for newer CANN" if attr in ge.wide_modes
                else "")
        check(attr, value in allowed, f"{value!r} (documented: {', '.join(documented)}{wide})",
              f"{attr} {value!r} is not documented for {ge.ge_type} (documented: {', '.join(documented)}{hint})")
    limit = ge.limit
    for axis, (i, o, step) in enumerate(plan.steps if limit else []):
        if i == o == 1:
            continue  # the H of a 1-D form
        if limit.high is not None:
            ok = step < limit.high if limit.high_open else step <= limit.high
            bound = f"{'<' if limit.high_open else ''}{limit.high:g}x"
            check(f"downscale axis {axis}", ok, f"{i} -> {o} is {step:.3g}x (limit {bound}; {limit.source})",
                  f"downscale {i} -> {o} ({step:.3g}x) exceeds the device limit of {limit.high:g}x")
        if limit.low is not None:
            check(f"upscale axis {axis}", step >= limit.low,
                  f"{i} -> {o}: inverse scale {step:.3g} (limit {limit.low:g}; {limit.source})",
                  f"upscale {i} -> {o} (inverse scale {step:.3g}) exceeds the device limit of {1 / limit.low:g}x "
                  f"(inverse scale >= {limit.low:g})")
    for name, ok, detail, problem in plan.checks:
        check(name, ok, detail, problem)
    if plan.ge_type.startswith("GridSampler"):
        needs_cast = _grid_kernel_checks(plan, dtype, family, cast, native_half, check) or needs_cast
    all_equal = all(i == o for _, i, o, _ in plan.kernel_axes)
    for axis, size_in, size_out, op_matrix in plan.kernel_axes:
        agrees, where = _kernel_agrees(plan.ge_type, family, plan.attrs, axis, len(plan.kernel_axes), size_in,
                                       size_out, op_matrix, all_equal)
        label = ("D", "H", "W")[3 - len(plan.kernel_axes) + axis]
        if agrees is None:  # never converted unchecked: what the kernel computes there is not read from a source
            check(f"kernel computes the op on {label}", False, f"{size_in} -> {size_out}: {where}",
                  f"what {plan.ge_type} computes on {family} with these attributes is not modelled from a public "
                  f"kernel source, so it is not converted unchecked")
            break
        check(f"kernel computes the op on {label}", agrees,
              f"{size_in} -> {size_out}: " + ("its index map and weights are the op's" if agrees else where),
              f"{plan.ge_type} on {family} computes another gradient on {label} ({size_in} -> {size_out}): {where}")
    return checks, problems, needs_cast


# --------------------------------------------------------------------------- rewrite

def _ge_node(ge_type, inputs, outputs, name, attrs) -> onnx.NodeProto:
    """A node in the GE domain with its attributes in the prototype's order (make_node sorts them by name)."""
    node = helper.make_node(ge_type, inputs, outputs, name=name, domain=GE_DOMAIN)
    for attr in protos.ALL_PROTOTYPES[ge_type].attrs:
        if attr.name in attrs:
            value = attrs[attr.name]
            kind = {protos.LIST_INT: onnx.AttributeProto.INTS,
                    protos.LIST_FLOAT: onnx.AttributeProto.FLOATS}.get(attr.ge_type)
            node.attribute.append(helper.make_attribute(attr.name, value, attr_type=kind))
    return node


def _emit(original, plan: GePlan, needs_cast: bool,
          ctx: _Context) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """The GE node with its helpers (Cast, Unsqueeze / Squeeze); the GE node's doc_string records the
    original node and what was added for it."""
    pre, post, inits = [], [], list(plan.inits)
    inputs, outputs = list(plan.inputs), list(plan.outputs)
    base = original.name or original.op_type

    def helper_node(op_type, ins, outs, hint, **attrs):
        return helper.make_node(op_type, ins, outs, name=ctx.fresh(f"{base}_{hint}"), domain="ai.onnx", **attrs)

    if needs_cast:
        for k, name in enumerate(inputs):
            if ctx.elem(name) in FLOAT_ELEMS:
                inputs[k] = ctx.fresh(f"{name}_f32")
                pre.append(helper_node("Cast", [name], [inputs[k]], "cast_in", to=TensorProto.FLOAT))
                ctx.info[inputs[k]] = (ctx.shape(name), TensorProto.FLOAT)
        dtype = ctx.elem(original.input[0])
        for k, name in enumerate(outputs):
            outputs[k] = ctx.fresh(f"{name}_f32")
            if name in original.output:  # not GridSampler's unused outputs
                post.append(helper_node("Cast", [outputs[k]], [name], "cast_out", to=dtype))
            ctx.info[outputs[k]] = (plan.out_shapes[k] if k < len(plan.out_shapes) else None, TensorProto.FLOAT)
    proto = protos.PROTOTYPES[plan.ge_type]
    if proto.layout:  # image tensors in the axis order the GE op reads (channels last, HWNC) and back
        back = [proto.layout.index(k) for k in range(len(proto.layout))]
        for k, port in enumerate(proto.inputs):
            if port in proto.layout_ports:
                moved = ctx.fresh(f"{inputs[k]}_{port}_layout")
                pre.append(helper_node("Transpose", [inputs[k]], [moved], f"{port}_layout", perm=list(proto.layout)))
                shape = ctx.shape(inputs[k])
                ctx.info[moved] = (None if shape is None else [shape[a] for a in proto.layout], ctx.elem(inputs[k]))
                inputs[k] = moved
        for k, port in enumerate(proto.outputs):
            if port in proto.layout_ports and plan.outputs[k] in original.output:  # not GridSampler's unused ones
                moved = ctx.fresh(f"{outputs[k]}_{port}_layout")
                post.insert(0, helper_node("Transpose", [moved], [outputs[k]], f"{port}_layout", perm=back))
                shape, elem = ctx.info.get(outputs[k], (plan.out_shapes[k] if k < len(plan.out_shapes) else None,
                                                        ctx.elem(inputs[0])))
                ctx.info[moved] = (None if shape is None else [shape[a] for a in proto.layout], elem)
                outputs[k] = moved
    if plan.wrap:  # [N, C, L] -> [N, C, 1, L] and back
        axes = ctx.fresh("unsqueeze_axes")
        inits.append(numpy_helper.from_array(np.array([2], np.int64), axes))
        wide_in, wide_out = ctx.fresh(f"{inputs[0]}_2d"), ctx.fresh(f"{outputs[0]}_2d")
        grad = ctx.shape(original.input[0])
        ctx.info[wide_in] = (None if grad is None else grad[:2] + [1] + grad[2:], ctx.elem(inputs[0]))
        ctx.info[wide_out] = (plan.out_shapes[0], ctx.elem(inputs[0]))
        pre.append(helper_node("Unsqueeze", [inputs[0], axes], [wide_in], "unsqueeze"))
        post.insert(0, helper_node("Squeeze", [wide_out, axes], [outputs[0]], "squeeze"))
        inputs[0], outputs[0] = wide_in, wide_out
    else:
        for k, name in enumerate(outputs):
            if k < len(plan.out_shapes) and name not in ctx.info:
                elem = ctx.elem(original.input[0]) if not needs_cast else TensorProto.FLOAT
                ctx.info[name] = (plan.out_shapes[k], elem)
    ge = _ge_node(plan.ge_type, inputs, outputs, original.name, plan.attrs)
    ge.doc_string = json.dumps({RECORD_KEY: {"node": _node_record(original), "added": [n.name for n in pre + post],
                                             "initializers": [i.name for i in inits]}})
    return pre + [ge] + post, inits


def _plan_node(node, ctx: _Context, family, cast, wide_modes, native_half=False):
    """The GE op for one node: (plan or None, report, problems, needs_cast)."""
    report = NodeReport(node.name or node.op_type, node.op_type, None, "converted")
    if node.op_type == "ResizeGrad":
        targets, rejected, reason = resize_grad_targets(node, ctx)
        report.rejected += rejected
        if not targets:
            report.action = f"fallback: {reason}; kept as its standard-ONNX function"
            return None, report, [], False
        candidates = [(target, ge_type, detail, init) for target, detail, init in targets
                      for ge_type in protos.GE_OP_FOR[target.op_type]]
    else:
        candidates = [(node, ge_type, None, None) for ge_type in protos.GE_OP_FOR[node.op_type]]
    dtype = DTYPE_NAMES.get(ctx.elem(node.input[0]), "unknown")
    tried = []
    for target, ge_type, detail, init in candidates:
        plan = PLANS[target.op_type](target, ctx, ge_type)
        if init is not None:
            plan.inits.append(init)
        checks, problems, needs_cast = _check_plan(plan, dtype, family, cast, wide_modes, native_half)
        tried.append((plan, checks, problems, needs_cast, detail))
        if not problems:
            break
    # the first that passes; else the first available on the product, for its problems
    chosen = next((t for t in tried if not t[2]), None) or next(
        (t for t in tried if t[1][0]["ok"]), tried[0])
    plan, checks, problems, needs_cast, detail = chosen
    for other in tried:
        if other is not chosen and other[2]:
            report.rejected.append(f"{other[0].ge_type}: {other[2][0]}")
    report.ge_op, report.checks = plan.ge_type, checks
    report.mapping = detail
    if needs_cast:
        report.action = "converted with Cast"
    return plan, report, problems, needs_cast


def _domains(graph: onnx.GraphProto) -> set:
    return {node.domain for node in walk(graph.node)}


def _lower(model: onnx.ModelProto, function_ids) -> onnx.ModelProto:
    """Inline the selected functions: standard ONNX only."""
    # onnx's inliner drops a reference to an attribute the node leaves out instead of using the
    # function's default (onnxruntime's applies it): write the defaults onto the nodes first.
    functions = {(f.domain, f.name): f for f in model.functions}
    for node in walk(model.graph.node):
        function = functions.get((node.domain, node.op_type))
        if function is None or (node.domain, node.op_type) not in set(function_ids):
            continue
        present = {a.name for a in node.attribute}
        node.attribute.extend(copy.deepcopy(a) for a in function.attribute_proto if a.name not in present)
    model = onnx.inliner.inline_selected_functions(model, list(function_ids))
    used = _domains(model.graph)
    keep = [o for o in model.opset_import if o.domain in used or o.domain in ("", "ai.onnx")]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    called = {(n.domain, n.op_type) for n in walk(model.graph.node)}
    kept_functions = [f for f in model.functions if (f.domain, f.name) in called]
    del model.functions[:]
    model.functions.extend(kept_functions)
    return model


def to_ascend(model: onnx.ModelProto, soc: str = "Ascend910B1", out_dir=None, cast: bool = False,
              fallback: str | None = None, wide_modes: bool = False, native_half: bool = False) -> Conversion:
    if fallback not in (None, "node", "all"):
        raise ResampleGradError(OP, f"fallback must be 'node' or 'all', got {fallback!r}")
    try:
        soc, family = protos.resolve_soc(soc)
    except ValueError as error:
        raise ResampleGradError(OP, str(error)) from None
    if any(n.domain == GE_DOMAIN for n in walk(model.graph.node)):
        raise ResampleGradError(OP, f"the model already has {GE_DOMAIN} nodes (it was converted for Ascend); "
                                    "expected a model with resample_grad ops (from_ascend converts it back)")
    model = opset.attach(model)
    default_version = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    forward_reports = []
    # standard forward nodes ATC cannot read (5-D GridSample...) as GE ops or standard bodies: ascend_forward.py
    from .ascend_forward import replace_forward
    model, forward_reports = replace_forward(model, family, fallback)
    if default_version > ATC_MAX_OPSET:
        try:
            model = onnx.version_converter.convert_version(model, ATC_MAX_OPSET)
            model = opset.attach(model)
        except Exception as error:  # noqa: BLE001
            raise ResampleGradError(OP, f"the model's default opset {default_version} is above what ATC reads "
                                        f"({ATC_MAX_OPSET}) and onnx's version converter could not lower it: "
                                        f"{error}") from None
    info = _shapes_and_types(model)
    ctx = _Context(model, info)
    reports, fallback_nodes, rewrites = list(forward_reports), [], {}
    for index, node in enumerate(model.graph.node):  # by position: protobuf wrappers' id()s get reused
        if node.domain != opset.DOMAIN:
            continue
        if fallback == "all":
            report = NodeReport(node.name or node.op_type, node.op_type, None, "fallback (--fallback all)")
            plan, problems = None, []
        else:
            plan, report, problems, needs_cast = _plan_node(node, ctx, family, cast, wide_modes, native_half)
        if plan is None or (problems and fallback == "node"):
            if plan is not None:
                report.action = f"fallback: {problems[0]}"
                report.ge_op = None
            fallback_nodes.append(node)
        elif problems:
            also = [why for why in report.rejected if not why.startswith(report.ge_op)]
            raise ResampleGradError(OP, f"node {node.name or node.op_type!r} ({node.op_type}) on {soc}: {problems[0]}"
                                        + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
                                        + "".join(f"; not {why}" for why in also)
                                        + "; --fallback node replaces it with standard ONNX")
        else:
            rewrites[index] = (plan, needs_cast)
            report.attributes = dict(plan.attrs)
        reports.append(report)
    for holder in model.graph.node:  # the bodies of If / Loop / Scan: no shapes there to plan a GE op with
        for node in (n for graph in subgraphs(holder) for n in walk(graph.node) if n.domain == opset.DOMAIN):
            fallback_nodes.append(node)
            reports.append(NodeReport(node.name or node.op_type, node.op_type, None,
                                      f"fallback: inside a subgraph of {holder.op_type} node "
                                      f"{holder.name or holder.output[0]!r} (the converter maps main-graph nodes); "
                                      "kept as its standard-ONNX function"))

    # fallback nodes: each its own copy of the function, inlined alone
    selected = set()
    for k, node in enumerate(fallback_nodes):
        function = copy.deepcopy(next(f for f in model.functions if f.domain == opset.DOMAIN
                                      and f.name == node.op_type and f.overload == node.overload))
        function.name = f"{node.op_type}__fallback{k}"
        function.overload = ""  # a body of its own now: the inliner selects it by name
        model.functions.append(function)
        node.op_type = function.name
        node.overload = ""
        selected.add((opset.DOMAIN, function.name))
    new_nodes, new_inits = [], []
    forward_ge = any(r.ge_op for r in forward_reports)  # a GE node in the model: default-domain ops named ai.onnx
    for index, node in enumerate(model.graph.node):
        if index in rewrites:
            nodes, inits = _emit(node, *rewrites[index], ctx)
            new_nodes.extend(nodes)
            new_inits.extend(inits)
        else:
            if node.domain in ("", "ai.onnx") and (rewrites or forward_ge):
                node.domain = "ai.onnx"
            new_nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(new_nodes)
    model.graph.initializer.extend(new_inits)
    if selected:
        model = _lower(model, selected)
    # imports: the GE domain for the rewritten nodes; ai.onnx named explicitly (ATC reads an empty
    # domain as ai.onnx only when the model has a single opset import)
    imports = {o.domain: o.version for o in model.opset_import}
    imports.pop(opset.DOMAIN, None)
    if "ai.onnx.ml" not in _domains(model.graph):
        imports.pop("ai.onnx.ml", None)
    if rewrites or forward_ge:
        imports[GE_DOMAIN] = GE_VERSION
        imports["ai.onnx"] = imports.pop("", imports.get("ai.onnx", ATC_MAX_OPSET))
        for node in walk(model.graph.node):
            if node.domain == "":
                node.domain = "ai.onnx"
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports.items())
    kept = [f for f in model.functions if f.domain != opset.DOMAIN]
    del model.functions[:]
    model.functions.extend(kept)
    conversion = Conversion(model, soc, family, reports)
    if out_dir is not None:
        _write(conversion, pathlib.Path(out_dir), ctx.info)
    return conversion


# GE ops whose attributes and tensors are the resample_grad op's own (same names, same values, same axis order): a
# GE node without the record (an older model.ascend.onnx) reads back as that op, Unsqueeze / Squeeze left in place.
# Not the GridSampler ops: their GE form reads channels last (the converter transposes around them).
SAME_ATTRIBUTES = ("UpsampleNearestExact2dGrad", "UpsampleNearest2dGrad", "ResizeBilinearV2Grad", "ResizeBicubicV2Grad",
                   "ResizeLinearGrad", "ResizeNearestNeighborV2Grad")


def from_ascend(model: onnx.ModelProto) -> onnx.ModelProto:
    """A GE-named graph (to_ascend's model.ascend.onnx) back to the resample_grad domain.

    Each GE node whose doc_string holds to_ascend's record becomes the recorded node again, and the
    Cast / Transpose / Unsqueeze / Squeeze nodes and initializers added for it are removed: the original graph.
    """
    if not any(n.domain == GE_DOMAIN for n in walk(model.graph.node)):
        raise ResampleGradError("from_ascend", f"the model has no {GE_DOMAIN} nodes; expected a model written by "
                                               "to_ascend (model.ascend.onnx; one lowered with fallback='all' is "
                                               "standard ONNX and runs as it is)")
    from . import ascend_forward as forward
    model = copy.deepcopy(model)
    added, dropped_inits, nodes, forward_opset = set(), set(), [], 0
    for node in model.graph.node:
        record = _record_of(node) if node.domain == GE_DOMAIN else None
        if record is not None:
            nodes.append(_node_from_record(record["node"]))
            if forward.recorded_opset(record):  # a standard forward node: set aside for forward.raise_opset
                nodes[-1].domain = forward.ASIDE
                forward_opset = max(forward_opset, forward.recorded_opset(record))
            added |= set(record["added"])
            dropped_inits |= set(record["initializers"])
            continue
        if node.domain == GE_DOMAIN:
            if node.op_type not in SAME_ATTRIBUTES:
                raise ResampleGradError("from_ascend", f"node {node.name!r} ({node.op_type}) has no resample_grad "
                                                       f"record in its doc_string, and its attributes follow GE's "
                                                       f"conventions (expected one of {', '.join(SAME_ATTRIBUTES)} or "
                                                       f"a record)")
            node.domain = opset.DOMAIN
        nodes.append(node)
    nodes = [n for n in nodes if not (n.domain == "ai.onnx" and n.name in added)]
    for node in walk(nodes):
        if node.domain == "ai.onnx":
            node.domain = ""
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    still_used = {name for n in walk(model.graph.node) for name in n.input}
    inits = [i for i in model.graph.initializer if i.name not in dropped_inits or i.name in still_used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(inits)
    imports = {o.domain: o.version for o in model.opset_import}
    default = imports.pop("ai.onnx", None)
    imports.pop(GE_DOMAIN, None)
    if default is not None:
        imports[""] = default
    imports[opset.DOMAIN] = opset.VERSION
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports.items())
    return opset.attach(forward.raise_opset(model, forward_opset))


# --------------------------------------------------------------------------- files

def _write(conversion: Conversion, out: pathlib.Path, info) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model = conversion.model
    ge_ops = sorted({n.op_type for n in model.graph.node if n.domain == GE_DOMAIN})
    onnx.save(model, out / "model.ascend.onnx")
    conversion.files["model"] = str(out / "model.ascend.onnx")
    if ge_ops:
        (out / "plugins").mkdir(exist_ok=True)
        (out / "graph").mkdir(exist_ok=True)
        (out / "plugins" / cpp.PLUGIN_FILE).write_text(cpp.plugin_source(ge_ops))
        info = dict(info)
        for name, value in _shapes_and_types_loose(model).items():
            info.setdefault(name, value)
        added = {name for node in model.graph.node if node.domain == GE_DOMAIN
                 for name in (_record_of(node) or {"added": []})["added"]}
        (out / "graph" / "build_graph.cc").write_text(cpp.graph_source(model, info, conversion.soc, added))
        conversion.files["plugin"] = str(out / "plugins" / cpp.PLUGIN_FILE)
        conversion.files["graph"] = str(out / "graph" / "build_graph.cc")
    (out / "atc.sh").write_text(cpp.atc_script(model, info, conversion.soc, bool(ge_ops)))
    (out / "atc.sh").chmod(0o755)
    conversion.files["atc"] = str(out / "atc.sh")
    report = {"soc": conversion.soc, "family": conversion.family,
              "nodes": [dataclasses.asdict(r) for r in conversion.nodes], "files": dict(conversion.files)}
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str))
    conversion.files["report"] = str(out / "report.json")


def _shapes_and_types_loose(model):
    """Shapes of the GE-named model where onnx can infer them (GE nodes have no schema: unknown outputs)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001
        return {}
    return {name: value for name, value in _value_types(inferred).items() if value[0] is not None}
