"""What every op module shares: the domain, dtype rules, error type, shape checks, the evaluator class.

The domain name and version are defined once, in resample_grad.constants; the
schemas, the function bodies and the reference evaluator classes read them from here.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto
from onnx.reference.op_run import OpRun

from resample_grad.constants import DOMAIN, VERSION  # noqa: F401 - the domain's modules import them from here

# ONNX type strings accepted for every floating input of the four ops.
FLOAT_TYPES = ["tensor(float16)", "tensor(bfloat16)", "tensor(float)", "tensor(double)"]
FLOAT_ELEM_TYPES = {TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE}

# Largest value torch's safe_downgrade_to_int_range keeps (aten GridSampler.h).
INT32_MAX = 2147483647
INT32_MIN = -2147483648


class ResampleGradError(ValueError):
    """Bad input to one of the resample_grad ops: the message names the op and the argument."""

    def __init__(self, op: str, message: str):
        super().__init__(f"{op}: {message}")
        self.op = op


def compute_dtype(dtype) -> np.dtype:
    """Accumulation type: float64 for double, float32 for float, float16 and bfloat16."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def numpy_dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def check_float_dtypes(op: str, **arrays) -> np.dtype:
    """All arrays share one of the four float dtypes; returns it."""
    allowed = {"float16", "bfloat16", "float32", "float64"}
    first_name, first = next(iter(arrays.items()))
    for name, arr in arrays.items():
        if numpy_dtype_name(arr.dtype) not in allowed:
            raise ResampleGradError(
                op, f"input '{name}' has dtype {numpy_dtype_name(arr.dtype)}; expected float16, bfloat16, float32 or "
                    f"float64")
        if arr.dtype != first.dtype:
            raise ResampleGradError(
                op, f"input '{name}' has dtype {numpy_dtype_name(arr.dtype)} but '{first_name}' has "
                f"{numpy_dtype_name(first.dtype)}; all inputs must share one dtype")
    return first.dtype


def check_rank(op: str, name: str, shape: Sequence[int | None], rank: int, layout: str) -> None:
    if len(shape) != rank:
        raise ResampleGradError(op, f"input '{name}' must be {rank}-D {layout}, got shape {list(shape)}")


def check_dim_equal(op: str, a_name: str, a_axis: int, a: int | None, b_name: str, b_axis: int, b: int | None) -> None:
    """Dimension a_name[a_axis] == b_name[b_axis]; None (unknown at graph time) passes."""
    if a is not None and b is not None and a != b:
        raise ResampleGradError(
            op, f"dimension {a_axis} of '{a_name}' ({a}) must equal dimension {b_axis} of '{b_name}' ({b})")


def check_positive_spatial(op: str, name: str, shape: Sequence[int | None], axis_names: Sequence[str],
                           suffix: str) -> None:
    """Input `name`'s spatial dimensions (2, 3, ...: axis_names + suffix) are positive (None: unknown)."""
    for axis, axis_name in enumerate(axis_names, 2):
        if shape[axis] is not None and shape[axis] <= 0:
            raise ResampleGradError(op, f"input '{name}' must have a positive {axis_name}{suffix} (dimension {axis}), "
                                        f"got shape {list(shape)}")


def check_bool_attr(op: str, name: str, value: int) -> None:
    if value not in (0, 1):
        raise ResampleGradError(op, f"attribute '{name}' must be 0 or 1, got {value}")


def check_choice_attr(op: str, name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ResampleGradError(
            op, f"attribute '{name}' must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")


def check_scale_attr(op: str, name: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise ResampleGradError(
            op, f"attribute '{name}' must be a finite scale >= 0 (0 means: use the size ratio), got {value}")
    if value > 0 and 1.0 / float(value) >= 2.0**128 - 2.0**103:  # rounds to inf in float32 (float32 max + half an ulp)
        raise ResampleGradError(op, f"attribute '{name}' is too small: its inverse overflows float32, got {value}")


def resolve_input_size(op: str, input_size: Sequence[int], grad_shape: Sequence[int | None],
                       spatial_names: Sequence[str]) -> list:
    """input_size [N, C, *spatial] against grad_output [N, C, *spatial_out].

    N or C may be -1 ("take it from grad_output", for a dynamic batch). Spatial
    sizes must be positive. Returns the full input shape (None where unknown).
    """
    rank = 2 + len(spatial_names)
    layout = "[N, C, " + ", ".join(spatial_names) + "]"
    if input_size is None:
        raise ResampleGradError(op, f"attribute 'input_size' is required: {rank} ints {layout}")
    input_size = [int(v) for v in input_size]
    if len(input_size) != rank:
        raise ResampleGradError(op, f"attribute 'input_size' must have {rank} values {layout}, got {input_size}")
    resolved = []
    for axis, (want, have) in enumerate(zip(input_size[:2], grad_shape[:2], strict=True)):
        if want == -1:
            resolved.append(have)
        elif want < 0:
            raise ResampleGradError(op, f"attribute 'input_size'[{axis}] must be >= 0 or -1, got {want}")
        else:
            if have is not None and have != want:
                raise ResampleGradError(
                    op, f"attribute 'input_size'[{axis}] is {want} but grad_output has {have} at dimension {axis}")
            resolved.append(want)
    for name, value in zip(spatial_names, input_size[2:], strict=True):
        if value <= 0:
            raise ResampleGradError(op, f"attribute 'input_size' must have a positive {name}, got {input_size}")
        resolved.append(value)
    return resolved


def check_output_size(op: str, output_size: Sequence[int] | None, grad_spatial: Sequence[int | None],
                      spatial_names: Sequence[str]) -> None:
    for axis, value in enumerate(grad_spatial):
        if value is not None and value <= 0:
            raise ResampleGradError(
                op, f"grad_output must have a positive {spatial_names[axis]} (dimension {axis + 2}), got {value}")
    if output_size is None or len(output_size) == 0:
        return
    output_size = [int(v) for v in output_size]
    if len(output_size) != len(grad_spatial):
        raise ResampleGradError(
            op, f"attribute 'output_size' must have {len(grad_spatial)} values "
            f"[{', '.join(spatial_names)}], got {output_size}")
    for axis, (want, have) in enumerate(zip(output_size, grad_spatial, strict=True)):
        if have is not None and want != have:
            raise ResampleGradError(
                op, f"attribute 'output_size' is {output_size} but grad_output has "
                f"{spatial_names[axis]} = {have} at dimension {axis + 2}")


def nearest_exact_index_scale(input_size: int, output_size: int, scale: float) -> np.float32:
    """aten compute_scales_value<float>: 1/scale when a scale is given, else in/out, in float32."""
    if scale > 0:
        return np.float32(1.0 / float(np.float32(scale)))
    return np.float32(input_size) / np.float32(output_size)


def nearest_exact_source_index(input_size: int, output_size: int, scale: float) -> np.ndarray:
    """aten nearest_neighbor_exact_compute_source_index for every output position.

    min(floorf((dst + 0.5) * scale), in - 1): the product is formed in double and
    rounded to float before the floor, exactly as floorf(double) does in aten.
    """
    index_scale = nearest_exact_index_scale(input_size, output_size, scale)
    product = (np.arange(output_size, dtype=np.float64) + 0.5) * np.float64(index_scale)
    return np.minimum(np.floor(product.astype(np.float32)).astype(np.int64), input_size - 1)


def shape_of(value_type: onnx.TypeProto) -> list | None:
    """Dims of a tensor type: ints where known, None where symbolic; None if the rank is unknown."""
    tensor = value_type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]


def make_tensor_type(elem_type: int, shape: Sequence[int | None] | None) -> onnx.TypeProto:
    return onnx.helper.make_tensor_type_proto(elem_type, None if shape is None else list(shape))


# --------------------------------------------------------------------------- schemas

ATTRIBUTE_KINDS = {onnx.AttributeProto.FLOAT: "a float", onnx.AttributeProto.INT: "an int",
                   onnx.AttributeProto.STRING: "a string", onnx.AttributeProto.FLOATS: "a list of floats",
                   onnx.AttributeProto.INTS: "a list of ints"}


def node_label(node: onnx.NodeProto) -> str:
    return f"node {node.name!r}" if node.name else "an unnamed node"


def check_attribute_types(node: onnx.NodeProto, schema: onnx.defs.OpSchema) -> None:
    """Each attribute of the node is one of its schema's, of the schema's type: the reference evaluator would take
    an int for a float, the kernels see an attribute of the wrong type as absent (and use the default), onnx's
    checker names no op."""
    for attr in node.attribute:
        if attr.name not in schema.attributes:
            raise ResampleGradError(node.op_type, f"{node_label(node)} has unknown attribute {attr.name!r}; "
                                                  f"expected {', '.join(schema.attributes)}")
        want = schema.attributes[attr.name].type.value
        if attr.type != want:
            have = ATTRIBUTE_KINDS.get(attr.type, onnx.AttributeProto.AttributeType.Name(attr.type).lower())
            raise ResampleGradError(node.op_type, f"attribute '{attr.name}' must be {ATTRIBUTE_KINDS.get(want, want)}, "
                                                  f"got {have}")


class ReferenceOp(OpRun):
    """Base of the onnx.reference.ReferenceEvaluator classes, one per op, named after it (evaluator())."""
    op_domain = DOMAIN
    reference = None  # the op's NumPy function: reference(*inputs, **attributes)
    output_count = 1

    def __init__(self, onnx_node: onnx.NodeProto, run_params, schema=None):
        super().__init__(onnx_node, run_params, schema)
        check_attribute_types(onnx_node, onnx.defs.get_schema(onnx_node.op_type, DOMAIN))

    def _run(self, *inputs, **attributes):
        """The reference on the node's inputs and the attributes it sets (the others take the reference's defaults);
        with several outputs, only those the node names are computed (output_mask) and the others get an empty
        array, which the evaluator wants in their slots."""
        given = {name: value.decode() if isinstance(value, bytes) else value
                 for name, value in attributes.items() if value is not None}
        if self.output_count == 1:
            return (self.reference(*inputs, **given),)
        names = list(self.onnx_node.output)
        wanted = [k < len(names) and names[k] != "" for k in range(self.output_count)]
        results = self.reference(*inputs, **given, output_mask=wanted)
        return tuple(r if r is not None else inputs[0][:0] for r in results[:len(names)])


def evaluator(op_type: str, reference, outputs: int) -> type:
    """The onnx.reference class of an op: a ReferenceOp named after it that runs `reference`."""
    return type(op_type, (ReferenceOp,), {"reference": staticmethod(reference), "output_count": outputs,
                                          "__module__": __name__})


T_CONSTRAINT = ("T", FLOAT_TYPES, "float16, bfloat16, float or double; all inputs and outputs share it. "
                                  "Half types accumulate in float32 and round once at the end.")


def make_schema(op_type: str, doc: str, inputs, outputs, attributes, infer, since_version: int = 1,
                type_constraints=()) -> onnx.defs.OpSchema:
    """An OpSchema in the resample_grad domain with the type variable T over the four float types.

    inputs / outputs: (name, description, optional) tuples, or (name, description, optional, type
    variable) for an input that is not T (its constraint goes in type_constraints).
    attributes: (name, default or AttrType, description) tuples; an AttrType means no default.
    infer(ctx): shape inference that raises ResampleGradError on bad attributes or shapes.
    """
    OpSchema = onnx.defs.OpSchema

    def formal(name, description, optional, type_var="T"):
        option = OpSchema.FormalParameterOption.Optional if optional else OpSchema.FormalParameterOption.Single
        return OpSchema.FormalParameter(name, type_var, description, param_option=option)

    def attribute(name, default, description):
        if isinstance(default, OpSchema.AttrType):
            return OpSchema.Attribute(name, default, description, required=False)
        return OpSchema.Attribute(name, onnx.helper.make_attribute(name, default), description)

    schema = OpSchema(
        op_type, DOMAIN, since_version, doc,
        inputs=[formal(*i) for i in inputs],
        outputs=[formal(*o) for o in outputs],
        type_constraints=[T_CONSTRAINT, *type_constraints],
        attributes=[attribute(*a) for a in attributes],
        node_determinism=OpSchema.NodeDeterminism.Deterministic,
    )
    schema.set_type_and_shape_inference_function(infer)
    return schema


def attribute_value(ctx, name: str, default):
    """An attribute of the node under shape inference, as a Python value (default when absent)."""
    attr = ctx.get_attribute(name)
    if attr is None:
        return default
    value = onnx.helper.get_attribute_value(attr)
    return value.decode() if isinstance(value, bytes) else value


def input_shape(ctx, index: int) -> list | None:
    value_type = ctx.get_input_type(index) if ctx.has_input(index) else None
    return None if value_type is None else shape_of(value_type)


def input_elem_type(ctx, index: int) -> int:
    value_type = ctx.get_input_type(index) if ctx.has_input(index) else None
    return 0 if value_type is None else value_type.tensor_type.elem_type


# --------------------------------------------------------------------------- graphs

def subgraphs(node: onnx.NodeProto):
    """The graphs a node holds in its attributes (If branches, Loop and Scan bodies)."""
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        yield from attr.graphs


def walk(nodes):
    """Every node, and every node of every subgraph below it."""
    for node in nodes:
        yield node
        for graph in subgraphs(node):
            yield from walk(graph.node)
