// The recording side of recording.cc, for run_plugin.cc: build an op_dest the way ATC's parser does
// (an operator of the GE op's type with its input and output ports), then read back what a plugin
// set on it, and what the plugin registered.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/operator.h"
#include "register/register.h"

namespace recording {
struct Attr {  // one SetAttr call, by the overload's type
  std::string name;
  std::string type;  // Int, Int32, UInt32, Bool, Float, String, ListInt, ListFloat
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string text;
};

struct Format {  // one port's TensorDesc formats
  std::string port;
  bool input;
  ge::Format origin_format;
  ge::Format format;
};

struct Registration {  // one REGISTER_CUSTOM_OP
  std::string om_type;
  int framework;
  std::vector<std::string> origin_op_types;
  domi::ParseParamFunc parse_params;
  bool by_operator;  // registered ParseParamsByOperatorFn
  int imply_type;
};

ge::Operator MakeOperator(const std::string& name, const std::string& type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);
const std::vector<Attr>& Attrs(const ge::Operator& op);
std::vector<Format> Formats(const ge::Operator& op);
const std::vector<Registration>& Registrations();
void Record(const ge::Operator& op, Attr attr);
}  // namespace recording
