// Runs a generated ATC parser plugin the way ATC's ONNX parser runs it (hicann/ge
// parser/parser/onnx/onnx_parser.cc: AdapterOpType, TransNodeToOperator, ParseOpParam; and
// onnx_custom_parser_adapter.cc): for each node, find the registration whose OriginOpType holds the
// node's op_type (the parser has already set it to "<domain>::<version>::<op type>"), make an
// operator of the registered GE type with the op's ports, and call its ParseParamsFn with the
// ge::onnx::NodeProto. Prints, per node, one JSON line: the status and what the plugin set.
//
// usage: run_plugin REQUESTS
//   REQUESTS: one node a line, tab-separated: the GE op's inputs (comma-separated), its outputs
//   (comma-separated), the serialized ge.onnx.NodeProto in hex.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "onnx/proto/ge_onnx.pb.h"
#include "recording.h"

namespace {
std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, sep)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::string FromHex(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

std::string Json(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Bits(float value) {  // a float's 32 bits, so the test compares them exactly
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\"%08" PRIx32 "\"", bits);
  return buf;
}

std::string AttrJson(const recording::Attr& a) {
  std::string value;
  if (a.type == "String") {
    value = Json(a.text);
  } else if (a.type == "Float") {
    value = Bits(a.floats.at(0));
  } else if (a.type == "ListFloat") {
    value = "[";
    for (size_t i = 0; i < a.floats.size(); ++i) value += (i ? "," : "") + Bits(a.floats[i]);
    value += "]";
  } else if (a.type == "ListInt") {
    value = "[";
    for (size_t i = 0; i < a.ints.size(); ++i) value += (i ? "," : "") + std::to_string(a.ints[i]);
    value += "]";
  } else {
    value = std::to_string(a.ints.at(0));
  }
  return "[" + Json(a.name) + "," + Json(a.type) + "," + value + "]";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: run_plugin REQUESTS\n");
    return 2;
  }
  for (const recording::Registration& r : recording::Registrations()) {
    std::string types;
    for (const std::string& t : r.origin_op_types) types += (types.empty() ? "" : ",") + Json(t);
    std::printf("{\"registration\":%s,\"framework\":%d,\"origin_op_types\":[%s],\"parse_params_fn\":%s,"
                "\"by_operator_fn\":%s,\"imply_type\":%d}\n",
                Json(r.om_type).c_str(), r.framework, types.c_str(), r.parse_params ? "true" : "false",
                r.by_operator ? "true" : "false", r.imply_type);
  }
  std::ifstream requests(argv[1]);
  std::string line;
  while (std::getline(requests, line)) {
    std::vector<std::string> fields = Split(line, '\t');
    if (fields.size() != 3) {
      std::printf("{\"error\":\"a request line has 3 tab-separated fields\"}\n");
      continue;
    }
    std::vector<std::string> inputs = Split(fields[0], ',');
    std::vector<std::string> outputs = Split(fields[1], ',');
    ge::onnx::NodeProto node;
    if (!node.ParseFromString(FromHex(fields[2]))) {
      std::printf("{\"error\":\"not a ge.onnx.NodeProto\"}\n");
      continue;
    }
    const recording::Registration* found = nullptr;
    for (const recording::Registration& r : recording::Registrations()) {
      for (const std::string& t : r.origin_op_types) {
        if (r.framework == domi::ONNX && t == node.op_type()) found = &r;
      }
    }
    if (found == nullptr || !found->parse_params) {
      std::printf("{\"node\":%s,\"key\":%s,\"error\":\"no ParseParamsFn registered for the key\"}\n",
                  Json(node.name()).c_str(), Json(node.op_type()).c_str());
      continue;
    }
    ge::Operator op = recording::MakeOperator(node.name(), found->om_type, inputs, outputs);
    domi::Status status = found->parse_params(&node, op);
    std::string attrs, formats;
    for (const recording::Attr& a : recording::Attrs(op)) attrs += (attrs.empty() ? "" : ",") + AttrJson(a);
    for (const recording::Format& f : recording::Formats(op)) {
      formats += (formats.empty() ? "" : ",") + std::string("[") + Json(f.port) + "," + (f.input ? "true" : "false") +
                 "," + std::to_string(static_cast<int>(f.origin_format)) + "," +
                 std::to_string(static_cast<int>(f.format)) + "]";
    }
    std::printf("{\"node\":%s,\"key\":%s,\"om_type\":%s,\"status\":%s,\"attrs\":[%s],\"formats\":[%s]}\n",
                Json(node.name()).c_str(), Json(node.op_type()).c_str(), Json(found->om_type).c_str(),
                status == domi::SUCCESS ? "\"SUCCESS\"" : status == domi::FAILED ? "\"FAILED\"" : "\"OTHER\"",
                attrs.c_str(), formats.c_str());
    std::fflush(stdout);
  }
  return 0;
}
