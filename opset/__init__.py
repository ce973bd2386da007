"""The resample_grad ONNX domain: schemas, function bodies and NumPy references of its ops.

    DOMAIN, VERSION           the custom domain and its opset version (each op has a since_version)
    OPS                       op type -> Op: its row (SPEC), schema, body(key), reference, evaluator class
    functions(model)          the FunctionProtos attach() gives a model's nodes (standard ops only)
    attach(model)             a model with the functions and opset imports it needs
    inline(model)             the model in standard ONNX only: every node replaced by its body, static shapes decided
    reference_ops()           classes for onnx.reference.ReferenceEvaluator(new_ops=...)
    make_node(op_type, ...)   a NodeProto in the domain
"""
from __future__ import annotations

import copy
import functools
from typing import NamedTuple

import numpy as np
import onnx

from resample_grad import _ort_probe
from resample_grad.constants import FUNCTION_IR_VERSION, OVERLOAD_IR_VERSION

from . import (
    grid_sampler_2d_grad,
    grid_sampler_3d_grad,
    resize_bicubic_v2_grad,
    resize_bilinear_v2_grad,
    resize_grad,
    resize_linear_grad,
    resize_nearest_neighbor_v2_grad,
    upsample_bicubic2d_aa_grad,
    upsample_bicubic2d_grad,
    upsample_bilinear2d_aa_backward,
    upsample_bilinear2d_grad,
    upsample_nearest2d_grad,
    upsample_nearest3d_grad,
    upsample_nearest_exact1d_grad,
    upsample_nearest_exact2d_grad,
    upsample_nearest_exact3d_grad,
    upsample_trilinear3d_backward,
)
from ._common import DOMAIN, VERSION, ResampleGradError, check_attribute_types, evaluator, node_label, walk
from ._graph import BodyKey
from ._portable import FORWARD_OPS, inline

__all__ = ["DOMAIN", "VERSION", "OPS", "ResampleGradError", "functions", "attach", "inline", "FORWARD_OPS",
           "reference_ops", "make_node", "schemas", "validate_model"]


class Op(NamedTuple):
    """One op of the domain, every layer of it made from its row (the `SPEC` of the op's module)."""
    spec: object  # the row: _upsample.UpsampleSpec, _resize_v2.ResizeV2Spec, _grid_sampler.GridSamplerSpec, ...
    body_attributes: dict[str, object]  # the attributes that shape the body, with their defaults
    evaluator: type  # the onnx.reference OpRun class, named after the op

    @classmethod
    def of(cls, spec) -> Op:
        defaults = {name: onnx.helper.get_attribute_value(a.default_value) if a.default_value.name else None
                    for name, a in spec.schema.attributes.items()}
        return cls(spec, defaults, evaluator(spec.op_type, spec.reference, len(spec.schema.outputs)))

    @property
    def op_type(self) -> str:
        return self.spec.op_type

    @property
    def schema(self) -> onnx.defs.OpSchema:
        return self.spec.schema

    @property
    def since_version(self) -> int:
        return self.schema.since_version

    @property
    def rank_input(self) -> int | None:
        """The input whose rank shapes the body too (None: no such input)."""
        return self.spec.rank_input

    def body(self, key: BodyKey) -> onnx.FunctionProto:
        """The function body of a node (attach() picks the key)."""
        return self.spec.body(key)

    def reference(self, *inputs, **attributes):
        """The NumPy reference: the op's inputs, then its attributes by name (absent ones take their defaults)."""
        return self.spec.reference(*inputs, **attributes)


# The registration table: one module per op, each holding its row, SPEC.
_MODULES = (
    grid_sampler_2d_grad, upsample_nearest_exact1d_grad, upsample_nearest_exact2d_grad, resize_bilinear_v2_grad,
    # since version 2
    grid_sampler_3d_grad, upsample_nearest2d_grad, upsample_nearest3d_grad, upsample_nearest_exact3d_grad,
    upsample_bilinear2d_grad, upsample_trilinear3d_backward, upsample_bicubic2d_grad, upsample_bilinear2d_aa_backward,
    upsample_bicubic2d_aa_grad, resize_nearest_neighbor_v2_grad, resize_bicubic_v2_grad, resize_linear_grad,
    resize_grad,
)

OPS: dict[str, Op] = {m.SPEC.op_type: Op.of(m.SPEC) for m in _MODULES}


def _register_schemas() -> None:
    for op in OPS.values():
        try:
            onnx.defs.get_schema(op.op_type, op.since_version, DOMAIN)
        except onnx.defs.SchemaError:
            onnx.defs.register_schema(op.schema)


_register_schemas()


def schemas() -> list[onnx.defs.OpSchema]:
    return [op.schema for op in OPS.values()]


def functions(model: onnx.ModelProto) -> list[onnx.FunctionProto]:
    """The FunctionProtos attach() gives the resample_grad nodes of `model`, one per distinct body (standard ops
    only; each body specialised to its nodes' attributes and dtype)."""
    return [f for f in attach(model).functions if f.domain == DOMAIN]


def _function(key: BodyKey, overload: str) -> onnx.FunctionProto:
    function = OPS[key.op_type].body(key)
    function.overload = overload
    return function


def make_node(op_type: str, inputs, outputs, name: str = "", **attributes) -> onnx.NodeProto:
    if op_type not in OPS:
        raise ResampleGradError(op_type, f"unknown op; the {DOMAIN} domain has {', '.join(OPS)}")
    return onnx.helper.make_node(op_type, inputs, outputs, name=name or None, domain=DOMAIN, **attributes)


# --------------------------------------------------------------------------- attach

MIN_DEFAULT_OPSET = 17
# inputs whose functions compute in float32 (aten's opmath for them); double keeps the double body
FLOAT32_BODY_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


@functools.cache
def max_onnxruntime_ir_version() -> int:
    """The newest IR version the installed onnxruntime loads (probed once), or onnx's if it is missing."""
    try:
        import onnxruntime
    except ImportError:
        return onnx.IR_VERSION
    return _ort_probe.max_ir_version(onnxruntime)


def _domain_nodes(model: onnx.ModelProto):
    return [n for n in walk(model.graph.node) if n.domain == DOMAIN]


BODY_NAME_SEPARATOR = "__"  # op type + separator + overload: a body named apart (_choose_bodies)


def _restored(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the model whose nodes that call a body named apart (an attached model, on an onnxruntime that does
    not select overloads) name their op again, so that it can be validated and attached anew."""
    model = copy.deepcopy(model)
    for node in _domain_nodes(model):
        op_type = node.op_type.split(BODY_NAME_SEPARATOR)[0]
        if node.op_type not in OPS and op_type in OPS:
            node.op_type = op_type
    return model


def validate_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """Checks every resample_grad node (op type, attributes, shapes) with the op's own shape inference.

    Other nodes do not take part beyond giving their inferred types (best effort), so a quirk
    elsewhere in the graph cannot fail this. Raises ResampleGradError naming the op. Returns
    the model with inferred shapes.
    """
    for node in _domain_nodes(model):
        if node.op_type not in OPS:
            raise ResampleGradError(node.op_type, f"{node_label(node)} uses an op the {DOMAIN} domain does not have "
                                                  f"(it has {', '.join(OPS)})")
        check_attribute_types(node, OPS[node.op_type].schema)
    imported = next((o.version for o in model.opset_import if o.domain == DOMAIN), VERSION)
    for node in _domain_nodes(model):
        if OPS[node.op_type].since_version > imported:
            raise ResampleGradError(node.op_type, f"{node_label(node)} needs {DOMAIN} opset "
                                                  f"{OPS[node.op_type].since_version}, the model imports {imported}")
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:  # reported below, node by
        _raise_if_ours(error)                                                                # node, if it is ours
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    types = _value_types(inferred)
    for node in _domain_nodes(inferred):
        known = {name: types[name] for name in node.input if name in types}
        _check_input_types(node, known)
        try:
            onnx.shape_inference.infer_node_outputs(OPS[node.op_type].schema, node, known)
        except onnx.shape_inference.InferenceError as error:
            _raise_if_ours(error)
    return inferred


def _value_types(inferred: onnx.ModelProto) -> dict:
    """{value name: TypeProto} of the main graph's inputs, initializers and inferred values."""
    types = {v.name: v.type for v in list(inferred.graph.input) + list(inferred.graph.value_info)
             + list(inferred.graph.output)}
    for init in inferred.graph.initializer:
        types.setdefault(init.name, onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims)))
    return types


def _type_name(elem_type: int) -> str:
    return onnx.TensorProto.DataType.Name(elem_type).lower()  # ONNX's spelling: float, double, int64, ...


def _check_input_types(node: onnx.NodeProto, types: dict) -> None:
    """Each input's element type against the op's schema, and one type per type variable: onnx's own
    check raises a ValidationError naming neither the op nor the node. Messages as the kernels'."""
    schema = OPS[node.op_type].schema
    allowed = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    bound = {}  # type variable -> (first input's name, its type)
    for formal, name in zip(schema.inputs, node.input, strict=False):  # a node may omit trailing optional inputs
        value_type = types.get(name) if name else None
        if value_type is None or not value_type.HasField("tensor_type") or not value_type.tensor_type.elem_type:
            continue
        have = _type_name(value_type.tensor_type.elem_type)
        choices = [t[len("tensor("):-1] for t in allowed.get(formal.type_str, [formal.type_str])]
        if have not in choices:
            raise ResampleGradError(node.op_type, f"input '{formal.name}' has dtype {have}; expected "
                                                  f"{', '.join(choices[:-1]) + ' or ' if len(choices) > 1 else ''}"
                                                  f"{choices[-1]}")
        if formal.type_str in allowed:
            first_name, first = bound.setdefault(formal.type_str, (formal.name, have))
            if first != have:
                raise ResampleGradError(node.op_type, f"input '{formal.name}' has dtype {have} but '{first_name}' has "
                                                      f"{first}; all inputs must share one dtype")


@functools.cache
def onnxruntime_selects_overloads() -> bool:
    """Whether the installed onnxruntime runs the body a node's `overload` names (probed once). onnxruntime 1.19
    reads IR 10 but runs one body per function name whatever the node asks for; without onnxruntime, no."""
    try:
        import onnxruntime
    except ImportError:
        return False
    if max_onnxruntime_ir_version() < OVERLOAD_IR_VERSION:
        return False
    helper = onnx.helper
    f = onnx.TensorProto.FLOAT

    def body(overload: str, value: float) -> onnx.FunctionProto:
        constant = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", f, [], [value]))
        return helper.make_function("probe", "Times", ["x"], ["y"], [constant,
                                                                     helper.make_node("Mul", ["x", "c"], ["y"])],
                                    [helper.make_opsetid("", 17)], overload=overload)

    nodes = [helper.make_node("Times", ["x"], ["two"], domain="probe", overload="two"),
             helper.make_node("Times", ["x"], ["three"], domain="probe")]
    graph = helper.make_graph(nodes, "probe", [helper.make_tensor_value_info("x", f, [1])],
                              [helper.make_tensor_value_info(n, f, [1]) for n in ("two", "three")])
    model = helper.make_model(graph, functions=[body("two", 2.0), body("", 3.0)], ir_version=OVERLOAD_IR_VERSION,
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("probe", 1)])
    try:
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        two, three = session.run(None, {"x": np.ones(1, np.float32)})
    except Exception:  # noqa: BLE001 - any refusal means "no"
        return False
    return float(two[0]) == 2.0 and float(three[0]) == 3.0


def _raise_if_ours(error: Exception) -> None:
    text = str(error)
    for op_type in OPS:
        marker = f"{op_type}: "
        if marker in text:
            raise ResampleGradError(op_type, text[text.index(marker) + len(marker):].strip()) from None


def attach(model: onnx.ModelProto, *, portable: bool = False, scatter_free: bool = False) -> onnx.ModelProto:
    """A copy of `model` with the functions of the resample_grad ops it uses and the opset imports they need.

    Every resample_grad node is validated first (ResampleGradError on bad attributes), then
    gets a body built for what it statically is (_body_key): its dtype (float32 arithmetic for
    float and the half types, double for double), its attributes and its named outputs, so the
    body holds only what the node computes. The body is the op's function with the key's
    `overload` (IR 10) when the installed onnxruntime runs the body a node names
    (onnxruntime_selects_overloads); otherwise _choose_bodies names bodies apart. The
    functions' default-domain opset is the model's (17 or newer), and the IR version one that
    both the functions (>= 8) and the installed onnxruntime accept. portable: bodies for inline()
    (BodyKey.portable); scatter_free: grid samplers without ScatterElements (BodyKey.scatter_free).
    """
    model = _restored(model)
    imports = {o.domain: o for o in model.opset_import}
    default = imports.get("", imports.get("ai.onnx"))
    if default is None:
        model.opset_import.append(onnx.helper.make_opsetid("", MIN_DEFAULT_OPSET))
        default = model.opset_import[-1]
    if default.version < MIN_DEFAULT_OPSET:
        raise ResampleGradError("attach", f"the model imports default-domain opset {default.version}; the "
                                          f"{DOMAIN} functions need {MIN_DEFAULT_OPSET} or newer (convert it with "
                                          f"onnx.version_converter first)")
    if DOMAIN not in imports:
        model.opset_import.append(onnx.helper.make_opsetid(DOMAIN, VERSION))
    inferred = validate_model(model)
    _fill_output_types(model, inferred)
    _fill_optional_inputs(model)
    _fill_optional_outputs(model)
    bodies = _choose_bodies(model, _value_types(inferred), default.version,
                            dict(portable=portable, scatter_free=scatter_free))
    used = {key.op_type for key in bodies.values()}
    kept = [f for f in model.functions
            if not (f.domain == DOMAIN and f.name.split(BODY_NAME_SEPARATOR)[0] in used)]
    del model.functions[:]
    model.functions.extend(kept)
    for (name, overload), key in bodies.items():
        function = _function(key, overload)
        function.name = name
        for entry in function.opset_import:
            if entry.domain in ("", "ai.onnx"):
                entry.version = default.version
        model.functions.append(function)
    needed = OVERLOAD_IR_VERSION if any(overload for _, overload in bodies) else FUNCTION_IR_VERSION
    model.ir_version = max(needed, min(model.ir_version or onnx.IR_VERSION, max_onnxruntime_ir_version()))
    return model


def _body_key(node: onnx.NodeProto, types: dict, overloads: bool, opset_version: int, form: dict) -> BodyKey:
    """What the node statically is: its dtype, with float32 arithmetic for float and half inputs (double and any dtype
    when onnxruntime cannot select bodies: that body serves every dtype), its attributes, its named outputs."""
    op = OPS[node.op_type]
    value_type = types.get(node.input[0]) if node.input else None
    elem = value_type.tensor_type.elem_type if value_type is not None and value_type.HasField("tensor_type") else 0
    opmath = onnx.TensorProto.FLOAT if overloads and elem in FLOAT32_BODY_TYPES else onnx.TensorProto.DOUBLE
    dtype = elem if overloads else 0
    given = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    attributes = tuple((name, _plain(given.get(name, default))) for name, default in op.body_attributes.items())
    if op.rank_input is not None:  # a body that depends on an input's rank
        rank_type = types.get(node.input[op.rank_input])
        if rank_type is None or not rank_type.tensor_type.HasField("shape"):
            raise ResampleGradError(node.op_type, f"{node_label(node)}: attach() needs the rank of input "
                                                  f"'{op.schema.inputs[op.rank_input].name}' (give it a shape)")
        attributes += (("rank", len(rank_type.tensor_type.shape.dim)),)
    wanted = tuple(k < len(node.output) and node.output[k] != "" for k in range(len(op.schema.outputs)))
    return BodyKey(node.op_type, opmath, dtype, attributes, wanted, opset_version, **form)


def _plain(value):
    """An attribute value as a hashable Python value."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (list, tuple)) or hasattr(value, "__len__") and not isinstance(value, str):
        return tuple(_plain(v) for v in value)
    return value


def _choose_bodies(model: onnx.ModelProto, types: dict, opset_version: int, form: dict) -> dict:
    """Gives each resample_grad node the body of what it statically is (_body_key) and returns the bodies the model
    needs, {(function name, overload): key}.

    A node's body is its op's function with the key's overload. An onnxruntime that does not select overloads runs
    one body per function name: there a node whose op has one body in the model calls the op's function, and the
    nodes of an op with several bodies call a function named per body (the native kernels then do not take them)."""
    overloads = onnxruntime_selects_overloads()
    nodes = list(_domain_nodes(model))
    keys = [_body_key(node, types, overloads, opset_version, form) for node in nodes]
    bodies = {}
    for node, key in zip(nodes, keys, strict=True):
        if overloads:
            node.overload = key.overload
        else:
            node.overload = ""
            if len({k for k in keys if k.op_type == key.op_type}) > 1:
                node.op_type = key.op_type + BODY_NAME_SEPARATOR + key.overload
        bodies[(node.op_type, node.overload)] = key
    return bodies


# Optional inputs a node may leave out but whose function body reads (as an empty tensor, Resize's own
# spelling of "not given"): op type -> [(input index, element type)].
_EMPTY_WHEN_ABSENT = {"ResizeGrad": [(2, onnx.TensorProto.FLOAT), (3, onnx.TensorProto.FLOAT),
                                     (4, onnx.TensorProto.INT64)]}


def _fill_optional_inputs(model: onnx.ModelProto) -> None:
    """Every absent optional input in _EMPTY_WHEN_ABSENT becomes an empty initializer, so the functions run."""
    added = {}
    for node in _domain_nodes(model):
        for index, elem in _EMPTY_WHEN_ABSENT.get(node.op_type, ()):
            while len(node.input) <= index:
                node.input.append("")
            if node.input[index]:
                continue
            name = f"{DOMAIN}_empty_{onnx.helper.tensor_dtype_to_np_dtype(elem).name}"
            if name not in added:
                added[name] = onnx.helper.make_tensor(name, elem, [0], [])
            node.input[index] = name
    existing = {init.name for init in model.graph.initializer}
    model.graph.initializer.extend(t for name, t in added.items() if name not in existing)


def _fill_optional_outputs(model: onnx.ModelProto) -> None:
    """A node that leaves trailing optional outputs out names them "" instead: the same node in ONNX, but
    onnxruntime's function inliner fails on a node with fewer outputs than its function."""
    for node in _domain_nodes(model):
        while len(node.output) < len(OPS[node.op_type].schema.outputs):
            node.output.append("")


def _fill_output_types(model: onnx.ModelProto, inferred: onnx.ModelProto) -> None:
    """Graph outputs declared without a shape get the inferred type (the full checker wants one)."""
    types = {v.name: v.type for v in list(inferred.graph.output) + list(inferred.graph.value_info)}
    for output in model.graph.output:
        tensor = output.type.tensor_type
        if not tensor.HasField("shape") and output.name in types and types[output.name].tensor_type.HasField("shape"):
            output.type.CopyFrom(types[output.name])


# --------------------------------------------------------------------------- reference evaluator

def reference_ops():
    """The OpRun classes for onnx.reference.ReferenceEvaluator(model, new_ops=reference_ops()): the domain's ops,
    and MaxPool with onnx's Indices for every stride (below)."""
    return [op.evaluator for op in OPS.values()] + [_MaxPool]


def _max_pool_class():
    from onnx.reference.ops.op_max_pool import MaxPool

    class _MaxPool(MaxPool):
        """onnx's reference MaxPool, whose Indices are offsets within each [n, c] plane (not over the whole tensor,
        as the ONNX spec and onnxruntime have them) when strides and dilations are 1. torch's exporter reads the
        indices of a 1x1 MaxPool to make max_pool's indices per-plane, so an exported max-pool backward failed.
        Its other code path computes them as the spec does: that one for every stride when Indices is asked for."""
        op_domain = ""

        def _run(self, x, auto_pad=None, ceil_mode=None, dilations=None, kernel_shape=None, pads=None,
                 storage_order=None, strides=None):
            if len(self.output) < 2:
                return super()._run(x, auto_pad, ceil_mode, dilations, kernel_shape, pads, storage_order, strides)
            return self._max_pool(x, auto_pad=auto_pad, ceil_mode=ceil_mode, dilations=dilations or [1] * (x.ndim - 2),
                                  kernel_shape=kernel_shape, pads=pads, storage_order=storage_order,
                                  strides=strides or [1] * (x.ndim - 2))
    _MaxPool.__name__ = "MaxPool"  # (the evaluator finds new ops by class name)
    return _MaxPool


_MaxPool = _max_pool_class()
