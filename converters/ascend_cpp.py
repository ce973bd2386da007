"""The C++ and shell files of an Ascend conversion: the ATC parser plugin, the GE IR program, atc.sh.

    plugin_source(ge_ops)                   plugins/resample_grad_onnx_plugin.cc
    graph_source(model, info, soc, added)   graph/build_graph.cc
    atc_script(model, info, soc, plugin)    atc.sh

Every API use here follows CANN's public sources (docs/ascend.md lists the files and commits):
- The plugin registers a `ParseParamsFn` per GE op. ATC's ONNX parser (hicann/ge
  parser/parser/onnx/onnx_parser.cc, OnnxModelParser::ParseOpParam, and onnx_custom_parser_adapter.cc)
  hands that hook the node's own `ge::onnx::NodeProto` (graph_metadef/proto/onnx/ge_onnx.proto), so
  each attribute is read from its protobuf field, exactly: a float keeps its 32 bits. The other hook,
  `ParseParamsByOperatorFn`, gets every ONNX attribute as one JSON string whose floats pb2json prints
  with "%g" (6 digits), which would round scales such as 1/3.
- The plugin refuses (FAILED, and a line on stderr naming the node and the attribute) a missing
  required attribute, an attribute of the wrong ONNX type, a bool other than 0 or 1, and an attribute
  the GE op does not have; an absent optional attribute keeps the GE op's default.
- Formats: the plugin sets the origin format and format of the ports ascend_prototypes gives a format
  (NCHW where the op definition lists NCHW, channels last for the GridSampler ops), the way CANN's own
  ONNX plugins set theirs (hicann/ops-cv common/inc/framework/onnx_common.h ChangeFormatFromOnnx,
  image/grid_sample/framework/grid_sample_onnx_plugin.cpp).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from resample_grad.constants import GE_DOMAIN, GE_VERSION

from . import ascend_prototypes as protos

PLUGIN_FILE = "resample_grad_onnx_plugin.cc"
# the C++ reader of each GE attribute type: the ONNX field it reads (ONNX has no bool: an int 0 or 1)
_KIND = {protos.STRING: "kString", protos.BOOL: "kBool", protos.INT: "kInt", protos.FLOAT: "kFloat",
         protos.LIST_INT: "kInts", protos.LIST_FLOAT: "kFloats"}
DTYPE_NAMES = {TensorProto.FLOAT16: "float16", TensorProto.BFLOAT16: "bfloat16", TensorProto.FLOAT: "float32",
               TensorProto.DOUBLE: "float64", TensorProto.INT32: "int32", TensorProto.INT64: "int64"}


def cpp_string(value) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def origin_op_type(ge_type: str) -> str:
    """The parser's key for a node of the GE domain (OnnxModelParser::ConstructOriType: domain::version::op_type)."""
    return f"{GE_DOMAIN}::{GE_VERSION}::{ge_type}"


# The part of the plugin that does not depend on the ops: reading one attribute, setting one format.
_PLUGIN_COMMON = r"""
enum class Kind { kString, kBool, kInt, kFloat, kInts, kFloats };

// One GE attribute: its name, how it is stored in the ONNX node, whether the GE op requires it.
struct AttrSpec {
  const char* name;
  Kind kind;
  bool required;
};

const char* OnnxTypeName(Kind kind) {
  switch (kind) {
    case Kind::kString: return "STRING";
    case Kind::kBool: return "INT (0 or 1)";
    case Kind::kInt: return "INT";
    case Kind::kFloat: return "FLOAT";
    case Kind::kInts: return "INTS";
    case Kind::kFloats: return "FLOATS";
  }
  return "?";
}

AttributeProto::AttributeType OnnxType(Kind kind) {
  switch (kind) {
    case Kind::kString: return AttributeProto::STRING;
    case Kind::kBool:
    case Kind::kInt: return AttributeProto::INT;
    case Kind::kFloat: return AttributeProto::FLOAT;
    case Kind::kInts: return AttributeProto::INTS;
    case Kind::kFloats: return AttributeProto::FLOATS;
  }
  return AttributeProto::UNDEFINED;
}

Status Refuse(const NodeProto& node, const char* ge_type, const std::string& why) {
  std::fprintf(stderr, "[ERROR] resample_grad ONNX parser plugin: node '%s' (%s): %s\n", node.name().c_str(),
               ge_type, why.c_str());
  return FAILED;
}

// Copies one ONNX attribute to the GE attribute of the same name, value for value.
Status CopyAttr(const NodeProto& node, const char* ge_type, const AttributeProto& attr, Kind kind,
                ge::Operator& op) {
  const char* name = attr.name().c_str();
  if (attr.type() != OnnxType(kind)) {
    return Refuse(node, ge_type, std::string("attribute '") + name + "' must be " + OnnxTypeName(kind) +
                                     ", got ONNX attribute type " + std::to_string(static_cast<int>(attr.type())));
  }
  switch (kind) {
    case Kind::kString:
      op.SetAttr(name, attr.s().c_str());
      break;
    case Kind::kBool:
      if (attr.i() != 0 && attr.i() != 1) {
        return Refuse(node, ge_type, std::string("attribute '") + name + "' must be 0 or 1, got " +
                                         std::to_string(attr.i()));
      }
      op.SetAttr(name, attr.i() == 1);
      break;
    case Kind::kInt:
      op.SetAttr(name, static_cast<int64_t>(attr.i()));
      break;
    case Kind::kFloat:
      op.SetAttr(name, attr.f());
      break;
    case Kind::kInts:
      op.SetAttr(name, std::vector<int64_t>(attr.ints().begin(), attr.ints().end()));
      break;
    case Kind::kFloats:
      op.SetAttr(name, std::vector<float>(attr.floats().begin(), attr.floats().end()));
      break;
  }
  return SUCCESS;
}

// Every attribute of the node onto op_dest; refuses an unknown attribute and a missing required one.
Status CopyAttrs(const NodeProto& node, const char* ge_type, std::initializer_list<AttrSpec> specs,
                 ge::Operator& op) {
  for (const AttributeProto& attr : node.attribute()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : specs) {
      if (attr.name() == s.name) spec = &s;
    }
    if (spec == nullptr) {
      std::string known;
      for (const AttrSpec& s : specs) known += std::string(known.empty() ? "" : ", ") + s.name;
      return Refuse(node, ge_type, "unknown attribute '" + attr.name() + "'; " + ge_type + " has " +
                                       (known.empty() ? std::string("none") : known));
    }
    if (CopyAttr(node, ge_type, attr, spec->kind, op) != SUCCESS) return FAILED;
  }
  for (const AttrSpec& s : specs) {
    bool present = false;
    for (const AttributeProto& attr : node.attribute()) present = present || attr.name() == s.name;
    if (s.required && !present) {
      return Refuse(node, ge_type, std::string("required attribute '") + s.name + "' is missing");
    }
  }
  return SUCCESS;
}

// The origin format and format of one input or output, as CANN's ONNX plugins set them (ChangeFormatFromOnnx).
Status SetFormat(const NodeProto& node, const char* ge_type, ge::Operator& op, const char* port, bool input,
                 ge::Format format) {
  ge::TensorDesc desc = input ? op.GetInputDescByName(port) : op.GetOutputDescByName(port);
  desc.SetOriginFormat(format);
  desc.SetFormat(format);
  ge::graphStatus status = input ? op.UpdateInputDesc(port, desc) : op.UpdateOutputDesc(port, desc);
  if (status != ge::GRAPH_SUCCESS) {
    return Refuse(node, ge_type, std::string("could not set the format of ") + (input ? "input '" : "output '") +
                                     port + "'");
  }
  return SUCCESS;
}

// A port of the GE op whose format is not ND, and its format.
struct PortFormat {
  const char* name;
  bool input;
  ge::Format format;
};

// The parse function of every GE op: the node's attributes, then the formats of its ports.
Status ParseNode(const google::protobuf::Message* op_src, ge::Operator& op_dest, const char* ge_type,
                 std::initializer_list<AttrSpec> attrs, std::initializer_list<PortFormat> formats) {
  const NodeProto* node = dynamic_cast<const NodeProto*>(op_src);
  if (node == nullptr) {
    std::fprintf(stderr, "[ERROR] resample_grad ONNX parser plugin: %s: op_src is not a ge::onnx::NodeProto\n",
                 ge_type);
    return FAILED;
  }
  if (CopyAttrs(*node, ge_type, attrs, op_dest) != SUCCESS) return FAILED;
  for (const PortFormat& port : formats) {
    if (SetFormat(*node, ge_type, op_dest, port.name, port.input, port.format) != SUCCESS) return FAILED;
  }
  return SUCCESS;
}
"""


def plugin_source(ge_ops: list[str]) -> str:
    """The ATC ONNX parser plugin for the GE ops used: OriginOpType and a ParseParamsFn each."""
    parts = [
        "// ATC ONNX parser plugin for the resample_grad.ge domain (generated by resample_grad.converters.ascend).",
        "// ATC's ONNX parser looks a node up by \"<domain>::<opset version>::<op type>\" and calls its",
        "// ParseParamsFn with the node's ge::onnx::NodeProto: every attribute is copied from its protobuf field,",
        "// exactly. Build it into a CANN custom op package (docs/ascend.md): it needs CANN's include folders and",
        "// onnx/proto/ge_onnx.pb.h, generated with protoc from CANN's ge_onnx.proto.",
        "#include <cstdint>", "#include <cstdio>", "#include <initializer_list>", "#include <string>",
        "#include <vector>", "", '#include "graph/operator.h"', '#include "graph/tensor.h"', '#include "graph/types.h"',
        '#include "onnx/proto/ge_onnx.pb.h"', '#include "register/register.h"', "", "namespace domi {", "namespace {",
        "using ge::onnx::AttributeProto;", "using ge::onnx::NodeProto;", _PLUGIN_COMMON]
    for ge_type in ge_ops:
        proto = protos.ALL_PROTOTYPES[ge_type]
        attrs = ",\n".join(f"                   {{{cpp_string(a.name)}, Kind::{_KIND[a.ge_type]}, "
                            f"{'true' if a.required else 'false'}}}" for a in proto.attrs)
        ports = ", ".join(f"{{{cpp_string(port)}, {'true' if is_input else 'false'}, ge::FORMAT_{fmt}}}"
                          for port, is_input, fmt in proto.port_formats())
        parts += [f"Status Parse{ge_type}(const google::protobuf::Message* op_src, ge::Operator& op_dest) {{",
                  f"  return ParseNode(op_src, op_dest, {cpp_string(ge_type)},",
                  "                   {" + ("\n" + attrs if attrs else "") + "},",
                  f"                   {{{ports}}});", "}", ""]
    parts += ["}  // namespace", ""]
    for ge_type in ge_ops:
        parts += [f"REGISTER_CUSTOM_OP({cpp_string(ge_type)})", "    .FrameworkType(ONNX)",
                  f"    .OriginOpType({{ge::AscendString({cpp_string(origin_op_type(ge_type))})}})",
                  f"    .ParseParamsFn(Parse{ge_type})", "    .ImplyType(ImplyType::TVM);", ""]
    parts.append("}  // namespace domi")
    return "\n".join(parts) + "\n"


def _cpp_float(value) -> str:
    """A float32 literal that reads back to the same 32 bits (hexadecimal: exact)."""
    value = float(np.float32(value))
    if not np.isfinite(value):
        raise ValueError(f"a GE float attribute must be finite, got {value}")
    return value.hex() + "f"


def _cpp_attr(kind: str, value) -> str:
    """A GE attribute value as the argument of the Operator::SetAttr overload of its GE type."""
    if kind == protos.STRING:
        return cpp_string(value.decode() if isinstance(value, bytes) else value)
    if kind == protos.BOOL:
        return "true" if value else "false"
    if kind == protos.INT:
        return f"static_cast<int64_t>({int(value)})"
    if kind == protos.FLOAT:
        return _cpp_float(value)
    if kind == protos.LIST_INT:
        return "std::vector<int64_t>{" + ", ".join(str(int(v)) for v in value) + "}"
    return "std::vector<float>{" + ", ".join(_cpp_float(v) for v in value) + "}"


def _desc(shape, elem, fmt="ND") -> str:
    dims = ", ".join(str(d if d is not None else -1) for d in (shape or []))
    dtype = protos.GE_DTYPE.get(DTYPE_NAMES.get(elem, "float32"))
    return f"ge::TensorDesc(ge::Shape(std::vector<int64_t>{{{dims}}}), ge::FORMAT_{fmt}, ge::{dtype})"


# The standard ops the converter adds around a GE node: their GE input ports (each has the one output y). Their
# attributes: Cast dst_type (Int), Unsqueeze axes and Squeeze axis (ListInt); Transpose takes perm as an input.
_HELPER_PORTS = {"Cast": ("x",), "Transpose": ("x", "perm"), "Unsqueeze": ("x",), "Squeeze": ("x",)}

# The part of the program that does not depend on the model.
_GRAPH_COMMON = r"""
namespace {
// An operator of a type the op prototype libraries register (aclgrphBuildInitialize loads them:
// hicann/ge compiler/api/aclgrph/ge_ir_build.cc, LoadOpsProto); exits naming the type if there is none.
ge::Operator Make(const char* name, const char* type) {
  ge::Operator op = ge::OperatorFactory::CreateOperator(name, type);
  ge::AscendString made;
  if (op.GetName(made) != ge::GRAPH_SUCCESS || std::strcmp(made.GetString(), name) != 0) {
    std::fprintf(stderr, "build_graph: CANN has no op %s (for node %s): is its op package installed?\n", type, name);
    std::exit(1);
  }
  return op;
}

void Check(ge::graphStatus status, const char* what) {
  if (status != ge::GRAPH_SUCCESS) {
    std::fprintf(stderr, "build_graph: %s failed\n", what);
    std::exit(1);
  }
}

// A graph input: a Data node of this index, shape, format and dtype.
ge::Operator Input(const char* name, int64_t index, const ge::TensorDesc& desc) {
  ge::Operator data = Make(name, "Data");
  data.SetAttr("index", index);
  Check(data.UpdateInputDesc("x", desc), name);
  Check(data.UpdateOutputDesc("y", desc), name);
  return data;
}

// A constant: a Const node holding `values`.
template <typename T>
ge::Operator Constant(const char* name, const std::vector<T>& values, const ge::TensorDesc& desc) {
  ge::Operator constant = Make(name, "Const");
  constant.SetAttr("value",
                   ge::Tensor(desc, reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(T)));
  Check(constant.UpdateOutputDesc("y", desc), name);
  return constant;
}
}  // namespace
"""


def graph_source(model: onnx.ModelProto, info, soc: str, added: set[str]) -> str:
    """The model's GE ops (with the Cast, Transpose, Unsqueeze and Squeeze added for them) with the GE IR C++ API.

    Every op is made by type through ge::OperatorFactory (graph/operator_factory.h) and wired, attributed and
    described with ge::Operator's own calls, so the program needs only CANN's public graph headers, not op
    prototype headers (CANN publishes none for seven of these ops). Values that come from other ops or from graph
    inputs become Data nodes, initializers Const nodes. Every GE op's output desc is set: several of these ops
    register no shape inference in CANN. `added`: the names of the helper nodes the conversion added.
    """
    initializers = {i.name: i for i in model.graph.initializer}
    produced = {}  # value -> (C++ variable, the producer's output port, or None for its only output)
    indices = {}  # value -> (C++ variable, the index of the producer's output)
    body, inputs = [], []
    formats = {}  # value -> the GE format its consumer reads it in
    for node in model.graph.node:
        if node.domain == GE_DOMAIN:
            proto = protos.ALL_PROTOTYPES[node.op_type]
            for port, value in zip(proto.inputs, node.input, strict=False):  # trailing optional inputs may be absent
                formats.setdefault(value, proto.port_format(port))

    def ident(text):
        return "v_" + "".join(ch if ch.isalnum() else "_" for ch in text)

    def constant(var, name, values, dtype, ctype):
        body.append(f"  ge::Operator {var} = Constant({cpp_string(name)}, std::vector<{ctype}>{{"
                    f"{', '.join(str(v) for v in values)}}}, {_desc([len(values)], dtype)});")

    def source(value):
        if value in produced:
            return produced[value]
        shape, elem = info.get(value, (None, TensorProto.FLOAT))
        var = ident(value)
        if value in initializers:
            array = numpy_helper.to_array(initializers[value])
            ctype = {np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t"}.get(array.dtype, "float")
            constant(var, value, array.reshape(-1).tolist(), initializers[value].data_type, ctype)
        else:
            body.append(f"  ge::Operator {var} = Input({cpp_string(value)}, {len(inputs)}, "
                        f"{_desc(shape, elem, formats.get(value, 'ND'))});")
            inputs.append(var)
        produced[value] = (var, None)
        return produced[value]

    def connect(var, port, value):
        src, out = source(value)
        if out:  # an output of a multi-output op, by its name
            return f"  {var}.SetInput({cpp_string(port)}, {src}, {cpp_string(out)});"
        return f"  {var}.SetInput({cpp_string(port)}, {src});"

    ge_order = [n for n in model.graph.node if n.domain == GE_DOMAIN or (n.domain == "ai.onnx" and n.name in added)]
    for index, node in enumerate(ge_order):
        var, name = f"n{index}", node.name or f"n{index}"
        values = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        connections = list(node.input)
        if node.domain == GE_DOMAIN:
            proto = protos.ALL_PROTOTYPES[node.op_type]
            ports, outputs, out_format = proto.inputs, proto.outputs, proto.port_format
            attrs = [f"{cpp_string(a.name)}, {_cpp_attr(a.ge_type, values[a.name])}"
                     for a in proto.attrs if a.name in values]
        else:
            ports, outputs, out_format = _HELPER_PORTS[node.op_type], ("y",), lambda port: "ND"
            attrs = []
            if node.op_type == "Cast":
                attrs = [f'"dst_type", static_cast<int64_t>(ge::{protos.GE_DTYPE[DTYPE_NAMES[values["to"]]]})']
            elif node.op_type == "Transpose":
                constant(f"{var}_perm", f"{name}_perm", [int(p) for p in values["perm"]], TensorProto.INT64, "int64_t")
                produced[f"{var}_perm"] = (f"{var}_perm", None)
                connections = [node.input[0], f"{var}_perm"]
            else:  # the 1-D forms' Unsqueeze / Squeeze of axis 2 (axes: an initializer in ONNX, an attribute in GE)
                attrs = [f'"{"axes" if node.op_type == "Unsqueeze" else "axis"}", std::vector<int64_t>{{2}}']
                connections = connections[:1]
        body.append(f"  ge::Operator {var} = Make({cpp_string(name)}, {cpp_string(node.op_type)});")
        # strict=False: trailing optional inputs may be absent
        body += [connect(var, port, value) for port, value in zip(ports, connections, strict=False)]
        body += [f"  {var}.SetAttr({attr});" for attr in attrs]
        # a node may name only its leading outputs
        for index, (port, value) in enumerate(zip(outputs, node.output, strict=False)):
            shape, elem = info.get(value, (None, TensorProto.FLOAT))
            body.append(f"  Check({var}.UpdateOutputDesc({cpp_string(port)}, {_desc(shape, elem, out_format(port))}), "
                        f"{cpp_string(f'{name}: output {port}')});")
            produced[value] = (var, port if len(outputs) > 1 else None)
            indices[value] = (var, index)
    graph_outputs = {o.name for o in model.graph.output}
    consumed = {name for n in ge_order for name in n.input}
    outputs = {}  # C++ variable -> the indices of its outputs that are graph outputs, in order
    for node in ge_order:
        for value in node.output:
            if value and (value in graph_outputs or value not in consumed):
                var, index = indices[value]
                outputs.setdefault(var, []).append(index)
    graph_name = cpp_string(model.graph.name or "resample_grad")
    return "\n".join([
        "// The GE ops of the model with the GE IR C++ API (generated by resample_grad.converters.ascend).",
        "// Build it against CANN's include folders and link libge_compiler and libgraph (docs/ascend.md).",
        "#include <cstddef>", "#include <cstdint>", "#include <cstdio>", "#include <cstdlib>", "#include <cstring>",
        "#include <map>", "#include <utility>", "#include <vector>", "",
        '#include "ge/ge_api_types.h"', '#include "ge/ge_ir_build.h"', '#include "graph/graph.h"',
        '#include "graph/operator.h"', '#include "graph/operator_factory.h"', '#include "graph/tensor.h"',
        '#include "graph/types.h"', _GRAPH_COMMON,
        "int main() {",
        "  std::map<ge::AscendString, ge::AscendString> global_options = {",
        f"      {{ge::AscendString(ge::ir_option::SOC_VERSION), ge::AscendString({cpp_string(soc)})}}}};",
        '  Check(ge::aclgrphBuildInitialize(global_options), "aclgrphBuildInitialize");', "",
        *body, "",
        f"  std::vector<ge::Operator> inputs{{{', '.join(inputs)}}};",
        "  std::vector<std::pair<ge::Operator, std::vector<size_t>>> outputs{"
        + ", ".join(f"{{{var}, {{{', '.join(map(str, idx))}}}}}" for var, idx in outputs.items()) + "};",
        f"  ge::Graph graph({graph_name});",
        "  graph.SetInputs(inputs).SetOutputs(outputs);",
        "  ge::ModelBufferData model;",
        "  std::map<ge::AscendString, ge::AscendString> build_options;",
        '  Check(ge::aclgrphBuildModel(graph, build_options, model), "aclgrphBuildModel");',
        f'  Check(ge::aclgrphSaveModel({graph_name}, model), "aclgrphSaveModel");',
        "  ge::aclgrphBuildFinalize();", "  return 0;", "}", ""])


def atc_script(model: onnx.ModelProto, info, soc: str, plugin: bool) -> str:
    initialized = {i.name for i in model.graph.initializer}
    def dims(name):
        return ",".join(str(d if d is not None else -1) for d in (info.get(name, ([],))[0] or []))

    shapes = ";".join(f"{i.name}:{dims(i.name)}" for i in model.graph.input if i.name not in initialized)
    lines = ["#!/usr/bin/env bash", "# ATC for this model (run on a machine with CANN; set up its environment first,",
             "# e.g. source /usr/local/Ascend/ascend-toolkit/set_env.sh).", "set -euo pipefail", 'cd "$(dirname "$0")"']
    if plugin:
        lines += [f"# The {GE_DOMAIN} nodes need the parser plugin: build plugins/{PLUGIN_FILE}",
                  "# into your CANN custom op package (framework/onnx_plugin) and install it before running ATC",
                  "# (see resample-grad's docs/ascend.md)."]
    lines.append(f'atc --model=model.ascend.onnx --framework=5 --output={model.graph.name or "model"} '
                 f'--soc_version={soc} --input_shape="{shapes}"')
    return "\n".join(lines) + "\n"
