"""Ascend GE prototypes of the ops the resample_grad ops map to, as data.

From ../shared/ge_ir_prototypes.md, ../shared/ge_family.md and, where they disagree, the CANN
sources summarised in notes/tf_cann_spec.md (REG_OP headers, op_host defs, tilings, aclnn
callers). Every step of the Ascend converter reads this table: the node rewrite, the checks, the
parser plugin, the GE IR C++, the report, and the tests. Names, attribute order and types are
CANN's; `dtypes` lists per product family what the op runs (an absent family: not available).
"""
from __future__ import annotations

import dataclasses

# GE attribute types as the plugin and the GE IR setters see them
STRING, BOOL, INT, FLOAT, LIST_INT, LIST_FLOAT = "String", "Bool", "Int", "Float", "ListInt", "ListFloat"

FAMILIES = {  # product family -> known SoC names (ATC --soc_version)
    "Atlas training series": ("Ascend910", "Ascend910A", "Ascend910ProA", "Ascend910PremiumA"),
    "Atlas A2": ("Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4"),
    "Atlas A3": ("Ascend910_9391", "Ascend910_9392", "Ascend910_9381", "Ascend910_9382"),
    "Atlas inference series": ("Ascend310P1", "Ascend310P3"),
    "Atlas 200I/500 A2": ("Ascend310B1", "Ascend310B4"),
    "Ascend 950": ("Ascend950PR", "Ascend950DT"),
}
FAMILY_ALIASES = {  # spellings of the families (lower case): recognised only to say which SoCs they hold
    "training": "Atlas training series", "atlas training series": "Atlas training series",
    "a2": "Atlas A2", "atlas a2": "Atlas A2", "a3": "Atlas A3", "atlas a3": "Atlas A3",
    "inference": "Atlas inference series", "atlas inference series": "Atlas inference series",
    "200i/500 a2": "Atlas 200I/500 A2", "atlas 200i/500 a2": "Atlas 200I/500 A2",
    "950": "Ascend 950", "ascend 950": "Ascend 950",
}
# SoC name prefixes of families whose list above is not complete (other A3 and 950 parts)
FAMILY_PREFIXES = {"ascend910_93": "Atlas A3", "ascend950": "Ascend 950"}


def known_socs() -> str:
    return "; ".join(f"{family}: {', '.join(socs)}" for family, socs in FAMILIES.items()) + \
        " (and other Ascend910_93xx, Ascend950xx)"


A2_A3 = ("Atlas A2", "Atlas A3")
A2_A3_950 = ("Atlas A2", "Atlas A3", "Ascend 950")
HALF_AND_FLOAT = ("bfloat16", "float16", "float32")
WITH_DOUBLE = HALF_AND_FLOAT + ("float64",)  # double runs as an AI CPU task


@dataclasses.dataclass(frozen=True)
class GeAttr:
    name: str
    ge_type: str
    default: object  # None: no default
    required: bool = False  # REQUIRED_ATTR / AttrType(REQUIRED)


@dataclasses.dataclass(frozen=True)
class ScaleLimit:
    """Bounds on the inverse scale in/out of every resized axis (the src/dst index step as the op
    resolves it: 1/scale when a forward scale is given, else the size ratio)."""
    low: float | None = None  # smallest step: 0.02 = at most a 50x upscale
    high: float | None = None  # largest step: 50 = at most a 50x downscale
    high_open: bool = False  # the high bound itself is outside
    source: str = ""


@dataclasses.dataclass(frozen=True)
class GeOp:
    ge_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: tuple[GeAttr, ...]  # in CANN's order (aclnn OP_ATTR and tilings read them by index)
    dtypes: dict[str, tuple[str, ...]]  # product family -> supported dtypes (onnx names); absent family: unsupported
    modes: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # documented GE attribute values
    wide_modes: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)  # newer CANN, opt-in
    limit: ScaleLimit | None = None
    rank: int = 4  # rank of the first input (and the output) the GE op takes
    # GE format of each port that is not ND (the parser plugin sets it, as CANN's ONNX plugins and aclnn callers do)
    formats: dict[str, str] = dataclasses.field(default_factory=dict)
    # the axis order the op reads its image tensors in, as a permutation of the ONNX (N, C, spatial...) order; the
    # converter transposes the `layout_ports` inputs by it and the outputs back (None: the op reads N, C, spatial...)
    layout: tuple[int, ...] | None = None
    layout_ports: tuple[str, ...] = ()
    source: str = ""  # where the row comes from

    def attr(self, name: str) -> GeAttr:
        return next(a for a in self.attrs if a.name == name)

    def port_formats(self):
        """(port, is input, GE format name) of each port whose format is not ND, inputs first."""
        return [(p, p in self.inputs, self.formats[p]) for p in self.inputs + self.outputs if p in self.formats]

    def port_format(self, port: str) -> str:
        return self.formats.get(port, "ND")


def _req(name, ge_type):
    return GeAttr(name, ge_type, None, required=True)


def _opt(name, ge_type, default=None):
    return GeAttr(name, ge_type, default)


_UPSAMPLE_2D_SIZES = (_req("output_size", LIST_INT), _req("input_size", LIST_INT))
_INVERSE_SCALES_2D = (_opt("scales_h", FLOAT), _opt("scales_w", FLOAT))
_INVERSE_002 = ScaleLimit(low=0.02, source="tiling/aclnn: inverse scale >= 0.02")
# GridSampler2DGrad / 3DGrad read grad and x channels last and write dx so (REG_OP doc; their tilings; aclnn
# transposes and sets these formats); the Resize*V2 ops' definitions list NCHW for their image tensors
_CHANNELS_LAST_2D = {"grad": "NHWC", "x": "NHWC", "dx": "NHWC"}
_CHANNELS_LAST_3D = {"grad": "NDHWC", "x": "NDHWC", "dx": "NDHWC"}
_NCHW_V2 = {"grads": "NCHW", "original_image": "NCHW", "y": "NCHW"}

PROTOTYPES: dict[str, GeOp] = {op.ge_type: op for op in (
    GeOp("GridSampler2DGrad", ("grad", "x", "grid"), ("dx", "dgrid"),
         (_opt("interpolation_mode", STRING, "bilinear"), _opt("padding_mode", STRING, "zeros"),
          _opt("align_corners", BOOL, False)),
         {"Atlas training series": ("float16", "float32"), "Atlas A2": WITH_DOUBLE, "Atlas A3": WITH_DOUBLE},
         modes={"interpolation_mode": ("bilinear", "nearest"), "padding_mode": ("zeros", "border")},
         wide_modes={"interpolation_mode": ("bilinear", "nearest", "bicubic"),
                     "padding_mode": ("zeros", "border", "reflection")},
         formats=_CHANNELS_LAST_2D, layout=(0, 2, 3, 1), layout_ports=("grad", "x", "dx"),
         source="REG_OP (grad and x NHWC); seeds 000/001; tiling and aclnn: channels last"),
    GeOp("GridSampler3DGrad", ("grad", "x", "grid"), ("dx", "dgrid"),
         (_opt("interpolation_mode", STRING, "bilinear"), _opt("padding_mode", STRING, "zeros"),
          _opt("align_corners", BOOL, False)),
         {"Atlas training series": ("float16", "float32"), **{f: ("float16", "float32", "float64") for f in A2_A3_950}},
         modes={"interpolation_mode": ("bilinear", "nearest"), "padding_mode": ("zeros", "border", "reflection")},
         formats=_CHANNELS_LAST_3D, layout=(0, 2, 3, 4, 1), layout_ports=("grad", "x", "dx"),
         rank=5, source="REG_OP (no bfloat16); README (training series: no double); tiling and aclnn: channels last"),
    GeOp("UpsampleNearest2dGrad", ("grad_output",), ("grad_input",), _UPSAMPLE_2D_SIZES + _INVERSE_SCALES_2D,
         {f: HALF_AND_FLOAT for f in A2_A3},
         limit=ScaleLimit(high=50.0, source="tiling shared with UpsampleNearestExact2dGrad: downscale <= 50x"),
         source="op_host def (scales forward out/in)"),
    GeOp("UpsampleNearestExact2dGrad", ("grad_output",), ("grad_input",), _UPSAMPLE_2D_SIZES + _INVERSE_SCALES_2D,
         {f: HALF_AND_FLOAT for f in A2_A3_950},
         limit=ScaleLimit(high=50.0, source="seed 002: downscale <= 50x"),
         source="op_host def (scales forward out/in)"),
    GeOp("UpsampleNearest3dGrad", ("grad_output",), ("y",),
         (_req("input_size", LIST_INT), _opt("output_size", LIST_INT, ()), _opt("scales", LIST_FLOAT, ())),
         {f: WITH_DOUBLE for f in A2_A3_950},
         limit=ScaleLimit(low=0.02, source="tiling: forward scale > 50 is 'too large'"), rank=5,
         source="REG_OP; infershape: exactly one of output_size / scales, floor(in * scale) == out"),
    GeOp("UpsampleNearestExact3dGrad", ("grad_output",), ("y",),
         (_req("input_size", LIST_INT), _opt("output_size", LIST_INT, (0, 0, 0)),
          _opt("scales", LIST_FLOAT, (0.0, 0.0, 0.0))),
         {f: HALF_AND_FLOAT for f in A2_A3_950}, rank=5, source="REG_OP"),
    GeOp("UpsampleBilinear2dGrad", ("grad_output",), ("grad_input",),
         _UPSAMPLE_2D_SIZES + (_opt("align_corners", BOOL, False),) + _INVERSE_SCALES_2D,
         {f: HALF_AND_FLOAT for f in A2_A3}, limit=_INVERSE_002,
         source="op_host def (910b, 910_93; scales inverse in/out)"),
    GeOp("UpsampleTrilinear3dBackward", ("grad_output",), ("grad_input",),
         (_req("output_size", LIST_INT), _req("input_size", LIST_INT), _opt("align_corners", BOOL, False),
          _opt("scale_d", FLOAT), _opt("scale_h", FLOAT), _opt("scale_w", FLOAT)),
         {f: HALF_AND_FLOAT for f in A2_A3},
         limit=ScaleLimit(low=0.02, source="aclnn: AI Core only for inverse >= 0.02"),
         rank=5, source="op_host def (scales inverse)"),
    GeOp("UpsampleBicubic2dGrad", ("grad_output",), ("grad_input",),
         (_opt("align_corners", BOOL, False), _opt("scales_h", FLOAT, 0.0), _opt("scales_w", FLOAT, 0.0)),
         {f: HALF_AND_FLOAT for f in A2_A3},
         limit=ScaleLimit(low=0.02, high=50.0, high_open=True, source="aclnn CheckCanCalc: inverse in [1/50, 50)"),
         source="op_host def (no sizes; scales = resolved inverse, used as is)"),
    GeOp("UpsampleBilinear2dAABackward", ("grad_output",), ("grad_input",),
         (_opt("output_size", LIST_INT), _req("input_size", LIST_INT), _opt("align_corners", BOOL, False))
         + _INVERSE_SCALES_2D,
         {f: HALF_AND_FLOAT for f in A2_A3_950}, limit=_INVERSE_002, source="op_host def (scales inverse)"),
    GeOp("UpsampleBicubic2dAAGrad", ("grad_output",), ("grad_input",),
         _UPSAMPLE_2D_SIZES + (_opt("align_corners", BOOL, False),) + _INVERSE_SCALES_2D,
         {f: HALF_AND_FLOAT for f in A2_A3_950}, limit=_INVERSE_002, source="op_host def (scales inverse)"),
    GeOp("ResizeNearestNeighborV2Grad", ("grads", "size"), ("y",),
         (_opt("align_corners", BOOL, False), _opt("half_pixel_centers", BOOL, False),
          _opt("scales", LIST_FLOAT, (0.0, 0.0))),
         {"Ascend 950": HALF_AND_FLOAT, "Atlas A2": ("float32", "float64"), "Atlas A3": ("float32", "float64")},
         formats={"grads": "NCHW", "y": "NCHW"},
         source="REG_OP; README products; 950 def fp16/fp32/bf16; A2/A3 the TBE kernel: float32 grads, no scales "
                "(canndev tbe/impl/dynamic/resize_nearest_neighbor_v2_grad.py:59, :930), AI CPU double"),
    GeOp("ResizeBicubicV2Grad", ("grads", "original_image"), ("y",),
         (_opt("align_corners", BOOL, False), _opt("scales", LIST_FLOAT, (0.0, 0.0))),
         {"Ascend 950": HALF_AND_FLOAT}, formats=_NCHW_V2, source="REG_OP; def ascend950 only"),
    GeOp("ResizeLinearGrad", ("grads", "original_image"), ("y",),
         (_opt("align_corners", BOOL, False), _opt("scale", FLOAT, 0.0)),
         {"Ascend 950": HALF_AND_FLOAT}, rank=3, source="REG_OP; def ascend950 only"),
    GeOp("ResizeBilinearV2Grad", ("grads", "original_image"), ("y",),
         (_opt("align_corners", BOOL, False), _opt("half_pixel_centers", BOOL, False),
          _opt("scales", LIST_FLOAT, (0.0, 0.0))),
         {"Ascend 950": HALF_AND_FLOAT,
          **{family: ("float32",) for family in ("Atlas A3", "Atlas A2", "Atlas inference series",
                                                 "Atlas training series")}},
         formats=_NCHW_V2, source="REG_OP; seed 004; outside Ascend 950 the TBE kernel: float32 only, no scales "
                                  "(canndev tbe/impl/dynamic/resize_bilinear_v2_grad.py:70-71, :1213)"),
    GeOp("ResizeGradD", ("grads",), ("y",),
         (_req("original_size", LIST_INT), _opt("roi", LIST_INT, ()), _opt("scales", LIST_FLOAT, ()),
          _opt("coordinate_transformation_mode", STRING, "half_pixel"), _opt("cubic_coeff_a", FLOAT, -0.75),
          _opt("exclude_outside", INT, 0), _opt("extrapolation_value", FLOAT, 0.0), _opt("mode", STRING, "nearest"),
          _opt("nearest_mode", STRING, "round_prefer_floor"), _opt("data_format", STRING, "NCHW")),
         {f: ("float16", "float32") for f in ("Atlas training series", "Atlas inference series") + A2_A3},
         modes={"mode": ("linear", "cubic"), "coordinate_transformation_mode": ("half_pixel", "align_corners"),
                "data_format": ("NCHW", "HWNC")}, formats={"grads": "NCHW", "y": "NCHW"},
         layout=(2, 3, 0, 1), layout_ports=("grads", "y"),
         source="op_cv_proto_extend.h; spec page (training series); aclnnUpsampleBicubic2dBackward's fallback "
                "on inference, A2, A3; torch bicubic backward, A fixed at -0.75"),
)}

# resample_grad op -> the GE ops it can become, preferred first: the first whose device checks pass
# is used (UpsampleBicubic2dGrad as aclnnUpsampleBicubic2dBackward dispatches: the GE op of the same
# name within its scale range, else ResizeGradD). The 1-D forms of UpsampleNearestExact1dGrad,
# UpsampleNearest2dGrad and UpsampleBilinear2dGrad run the 2-D GE op on [N, C, 1, L] (as aclnn).
# ResizeGrad has no fixed GE op: see RESIZE_GRAD_MAPPINGS.
GE_OP_FOR: dict[str, tuple[str, ...]] = {
    "GridSampler2DGrad": ("GridSampler2DGrad",),
    "GridSampler3DGrad": ("GridSampler3DGrad",),
    "UpsampleNearestExact1dGrad": ("UpsampleNearestExact2dGrad",),
    "UpsampleNearestExact2dGrad": ("UpsampleNearestExact2dGrad",),
    "UpsampleNearest2dGrad": ("UpsampleNearest2dGrad",),
    "UpsampleNearest3dGrad": ("UpsampleNearest3dGrad",),
    "UpsampleNearestExact3dGrad": ("UpsampleNearestExact3dGrad",),
    "UpsampleBilinear2dGrad": ("UpsampleBilinear2dGrad",),
    "UpsampleTrilinear3dBackward": ("UpsampleTrilinear3dBackward",),
    "UpsampleBicubic2dGrad": ("UpsampleBicubic2dGrad", "ResizeGradD"),
    "UpsampleBilinear2dAABackward": ("UpsampleBilinear2dAABackward",),
    "UpsampleBicubic2dAAGrad": ("UpsampleBicubic2dAAGrad",),
    "ResizeNearestNeighborV2Grad": ("ResizeNearestNeighborV2Grad",),
    "ResizeBicubicV2Grad": ("ResizeBicubicV2Grad",),
    "ResizeLinearGrad": ("ResizeLinearGrad",),
    "ResizeBilinearV2Grad": ("ResizeBilinearV2Grad",),
}


@dataclasses.dataclass(frozen=True)
class ResizeMapping:
    """ResizeGrad configurations (4-D NCHW, only H and W resized) whose gradient another op of the
    domain computes: `targets` are (resample_grad op, its fixed attributes), preferred first. Each
    row was decided numerically (tests/converters/test_ascend.py::test_resize_grad_mapping_table runs both
    references on a table of shapes and scales); the converter checks each use again, per axis,
    on the model's own sizes and scales (nearest indices can differ at scale-derived boundaries)."""
    name: str
    mode: str
    coordinate_modes: tuple[str, ...]
    targets: tuple[tuple[str, dict[str, int]], ...]
    nearest_mode: str | None = None  # None: not read by the mode
    cubic_coeff_a: float | None = None
    exclude_outside: int | None = None  # None: either (not read by the mode)
    antialias: int = 0
    outputs_above_one: bool = False  # pytorch_half_pixel reads coordinate 0 for an output of length 1


_BILINEAR_HALF_PIXEL = (("ResizeBilinearV2Grad", {"half_pixel_centers": 1}),
                        ("UpsampleBilinear2dGrad", {"align_corners": 0}))
_EXACT = (("UpsampleNearestExact2dGrad", {}), ("ResizeNearestNeighborV2Grad", {"half_pixel_centers": 1}))
_BICUBIC = (("ResizeBicubicV2Grad", {"align_corners": 0}), ("UpsampleBicubic2dGrad", {"align_corners": 0}))
RESIZE_GRAD_MAPPINGS: tuple[ResizeMapping, ...] = (
    ResizeMapping("linear align_corners", "linear", ("align_corners",),
                  (("ResizeBilinearV2Grad", {"align_corners": 1}), ("UpsampleBilinear2dGrad", {"align_corners": 1}))),
    ResizeMapping("linear half_pixel", "linear", ("half_pixel",), _BILINEAR_HALF_PIXEL),
    ResizeMapping("linear pytorch_half_pixel", "linear", ("pytorch_half_pixel",), _BILINEAR_HALF_PIXEL,
                  outputs_above_one=True),
    ResizeMapping("linear asymmetric", "linear", ("asymmetric",), (("ResizeBilinearV2Grad", {}),)),
    ResizeMapping("nearest asymmetric floor", "nearest", ("asymmetric",),
                  (("UpsampleNearest2dGrad", {}), ("ResizeNearestNeighborV2Grad", {})), nearest_mode="floor"),
    ResizeMapping("nearest half_pixel round_prefer_ceil", "nearest", ("half_pixel",), _EXACT,
                  nearest_mode="round_prefer_ceil"),
    ResizeMapping("nearest pytorch_half_pixel round_prefer_ceil", "nearest", ("pytorch_half_pixel",), _EXACT,
                  nearest_mode="round_prefer_ceil", outputs_above_one=True),
    ResizeMapping("nearest tf_half_pixel_for_nn floor", "nearest", ("tf_half_pixel_for_nn",),
                  (("ResizeNearestNeighborV2Grad", {"half_pixel_centers": 1}), ("UpsampleNearestExact2dGrad", {})),
                  nearest_mode="floor"),
    ResizeMapping("nearest align_corners round_prefer_ceil", "nearest", ("align_corners",),
                  (("ResizeNearestNeighborV2Grad", {"align_corners": 1}),), nearest_mode="round_prefer_ceil"),
    ResizeMapping("cubic half_pixel A=-0.75", "cubic", ("half_pixel",), _BICUBIC, cubic_coeff_a=-0.75,
                  exclude_outside=0),
    ResizeMapping("cubic pytorch_half_pixel A=-0.75", "cubic", ("pytorch_half_pixel",), _BICUBIC, cubic_coeff_a=-0.75,
                  exclude_outside=0, outputs_above_one=True),
    ResizeMapping("cubic align_corners A=-0.75", "cubic", ("align_corners",),
                  (("ResizeBicubicV2Grad", {"align_corners": 1}), ("UpsampleBicubic2dGrad", {"align_corners": 1})),
                  cubic_coeff_a=-0.75, exclude_outside=0),
    ResizeMapping("antialias linear half_pixel exclude_outside", "linear", ("half_pixel",),
                  (("UpsampleBilinear2dAABackward", {"align_corners": 0}),), exclude_outside=1, antialias=1),
    ResizeMapping("antialias linear pytorch_half_pixel exclude_outside", "linear", ("pytorch_half_pixel",),
                  (("UpsampleBilinear2dAABackward", {"align_corners": 0}),), exclude_outside=1, antialias=1,
                  outputs_above_one=True),
    ResizeMapping("antialias cubic half_pixel A=-0.5 exclude_outside", "cubic", ("half_pixel",),
                  (("UpsampleBicubic2dAAGrad", {"align_corners": 0}),), cubic_coeff_a=-0.5, exclude_outside=1,
                  antialias=1),
    ResizeMapping("antialias cubic pytorch_half_pixel A=-0.5 exclude_outside", "cubic", ("pytorch_half_pixel",),
                  (("UpsampleBicubic2dAAGrad", {"align_corners": 0}),), cubic_coeff_a=-0.5, exclude_outside=1,
                  antialias=1, outputs_above_one=True),
)

GE_DTYPE = {"float16": "DT_FLOAT16", "bfloat16": "DT_BF16", "float32": "DT_FLOAT", "float64": "DT_DOUBLE",
            "int32": "DT_INT32", "int64": "DT_INT64"}


def resolve_soc(soc: str) -> tuple[str, str]:
    """(the ATC spelling of a concrete SoC name, its product family), case-insensitive.

    A family name is refused: ATC's --soc_version and the GE IR build need a concrete SoC."""
    key = soc.strip().lower()
    for family, socs in FAMILIES.items():
        for name in socs:
            if key == name.lower():
                return name, family
    for prefix, family in FAMILY_PREFIXES.items():
        if key.startswith(prefix) and len(key) > len(prefix):
            return "Ascend" + key[len("ascend"):].upper(), family
    if key in FAMILY_ALIASES:
        family = FAMILY_ALIASES[key]
        raise ValueError(f"--soc {soc!r} is a product family ({family}), not an SoC; ATC's --soc_version needs a "
                         f"concrete SoC: one of {', '.join(FAMILIES[family])}")
    raise ValueError(f"unknown --soc {soc!r}; known: {known_socs()}")


def family_of(soc: str) -> str:
    """The product family of a concrete ATC SoC name."""
    return resolve_soc(soc)[1]


# --------------------------------------------------------------------------- forward ops (ascend_forward.py)
# The GE forward ops that standard GridSample / Resize nodes ATC's ONNX parser cannot read become. Kept apart from
# PROTOTYPES (the gradient ops' table): the plugin, the GE IR program and the contract tests read ALL_PROTOTYPES.
FORWARD_PROTOTYPES: dict[str, GeOp] = {op.ge_type: op for op in (
    # hicann/ge@ffdcbc9 tests/autofuse/framework/eager_style_graph_builder/all_ops.cpp:23756-23780 (inputs x, grid;
    # output y; attributes in this order); ops-cv@6ae8765 image/grid_sample/op_api/grid_sampler3d.cpp:88-93 (the
    # AI CPU task aclnnGridSampler3D runs: interpolation "bilinear" / "nearest" only, l.38-44; data_format "NCDHW"
    # for NCDHW / ND input, l.86-87); products: image/grid_sample/docs/aclnnGridSampler3D.md:5-24 (not the
    # inference series, not 200I/500 A2). GE itself transposes an NCDHW float32 input to NDHWC for the AI CPU
    # kernel (hicann/ge@ffdcbc9 compiler/engines/cpu_engine/cpu_engine/common/util/cpu_engine_util.cc:750-781).
    GeOp("GridSampler3D", ("x", "grid"), ("y",),
         (_opt("interpolation_mode", STRING, "bilinear"), _opt("padding_mode", STRING, "zeros"),
          _opt("data_format", STRING, "NCDHW"), _opt("align_corners", BOOL, False)),
         {f: ("float16", "float32", "float64") for f in ("Atlas training series",) + A2_A3_950},
         modes={"interpolation_mode": ("bilinear", "nearest"), "padding_mode": ("zeros", "border", "reflection"),
                "data_format": ("NCDHW",)},
         formats={"x": "NCDHW", "y": "NCDHW"}, rank=5,
         source="hicann/ge all_ops.cpp GridSampler3D; ops-cv grid_sampler3d.cpp (AI CPU), aclnnGridSampler3D.md"),
    # ops-cv@6ae8765 image/grid_sampler2_d/op_graph/grid_sampler2_d_proto.h:49-56 (x, grid -> y; FLOAT16, FLOAT;
    # interpolation "bilinear", "nearest", "bicubic", l.35-37); A2: hicann/ge@ffdcbc9 tests/engines/nn_engine/
    # depends/CANN_910b_stub/.../aic-ascend910b-ops-info-legacy.json:24483; 950: grid_sampler2_d_def.cpp:61
    GeOp("GridSampler2D", ("x", "grid"), ("y",),
         (_opt("interpolation_mode", STRING, "bilinear"), _opt("padding_mode", STRING, "zeros"),
          _opt("align_corners", BOOL, False)),
         {f: ("float16", "float32") for f in ("Atlas A2", "Ascend 950")},
         modes={"interpolation_mode": ("bilinear", "nearest", "bicubic"),
                "padding_mode": ("zeros", "border", "reflection")},
         formats={"x": "NCHW", "y": "NCHW"},  # as CANN's own GridSample plugin sets them
         source="ops-cv grid_sampler2_d_proto.h; 910b ops info; grid_sampler2_d_def.cpp (950)"),
    # ops-cv@6ae8765 image/resize_upsample_trilinear/op_host/resize_upsample_trilinear_def.cpp:28-77 (input, output;
    # output_size, align_corners, scales_d/h/w; A2, A3 and 950: FLOAT16, FLOAT, BF16; 310P: FLOAT16, FLOAT). The
    # scales are inverse (in / out): aclnn passes castScales = 1 / scale (aclnn_upsample_trilinear_3d.cpp:342-344,
    # upsample_trilinear_3d.cpp:180-184), 0 when not given; A2 and 310P cast float16 / bfloat16 to float32 around it
    # (upsample_trilinear_3d.cpp:83-122).
    GeOp("ResizeUpsampleTrilinear", ("input",), ("output",),
         (_opt("output_size", LIST_INT), _opt("align_corners", BOOL, False), _opt("scales_d", FLOAT),
          _opt("scales_h", FLOAT), _opt("scales_w", FLOAT)),
         {**{f: HALF_AND_FLOAT for f in A2_A3_950}, "Atlas inference series": ("float16", "float32")},
         rank=5, source="ops-cv resize_upsample_trilinear_def.cpp; aclnn_upsample_trilinear_3d.cpp (inverse scales)"),
    # torch's antialiased resizes, for the 4-D Resize forms CANN's Resize plugin mishandles: ops-cv@6ae8765
    # image/upsample_bicubic2d_aa/op_host/upsample_bicubic2d_aa_def.cpp:25-50 (x -> y; output_size required,
    # align_corners, scales_h / scales_w default 0.0; 910b, 910_93, 950; BF16, FLOAT16, FLOAT) and
    # image/upsample_bilinear2d_aa/op_host/upsample_bilinear2d_aa_def.cpp:24-56 (input -> output; scales without a
    # default). Scales: inverse (in / out), except UpsampleBicubic2dAA on 950, which takes the forward ones
    # (aclnn_upsample_bicubic2d_aa.cpp:189-201; aclnn_upsample_bilinear2d_aa.cpp:214-237); A2 / A3 cast float16 /
    # bfloat16 to float32 around both.
    GeOp("UpsampleBicubic2dAA", ("x",), ("y",),
         (_req("output_size", LIST_INT), _opt("align_corners", BOOL, False), _opt("scales_h", FLOAT, 0.0),
          _opt("scales_w", FLOAT, 0.0)),
         {f: HALF_AND_FLOAT for f in A2_A3_950}, source="ops-cv upsample_bicubic2d_aa_def.cpp; aclnn caller"),
    GeOp("UpsampleBilinear2dAA", ("input",), ("output",),
         (_req("output_size", LIST_INT), _opt("align_corners", BOOL, False)) + _INVERSE_SCALES_2D,
         {f: HALF_AND_FLOAT for f in A2_A3_950}, source="ops-cv upsample_bilinear2d_aa_def.cpp; aclnn caller"),
)}
ALL_PROTOTYPES: dict[str, GeOp] = {**PROTOTYPES, **FORWARD_PROTOTYPES}
