// A recording implementation of the stub declarations the generated parser plugin calls: what a plugin
// does to its op_dest (attributes set, formats set) and what it registers is kept, so that
// run_plugin.cc can print it. Test fixture, not CANN: the declarations it implements are the stub's,
// each checked against CANN's public headers (README.md beside this file).
#include "recording.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace recording {
namespace {
struct DescState {
  ge::Format format = ge::FORMAT_ND;
  ge::Format origin_format = ge::FORMAT_ND;
};

struct OpState {
  std::string name;
  std::string type;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, DescState> input_descs;
  std::map<std::string, DescState> output_descs;
  std::vector<Attr> attrs;  // in the order they were set
};

struct RegistrationState {
  std::string om_type;
  int framework = -1;
  std::vector<std::string> origin_op_types;
  domi::ParseParamFunc parse_params;
  bool by_operator = false;
  int imply_type = -1;
};

std::vector<Registration>& Registry() {
  static std::vector<Registration> registry;
  return registry;
}

}  // namespace

struct Access {
  static OpState& State(const ge::Operator& op) { return *static_cast<OpState*>(op.operator_impl_.get()); }
  static std::shared_ptr<void>& Impl(ge::Operator& op) { return op.operator_impl_; }
  static RegistrationState& Reg(const domi::OpRegistrationData& data) {
    return *static_cast<RegistrationState*>(data.impl_.get());
  }
  static std::shared_ptr<void>& Impl(domi::OpRegistrationData& data) { return data.impl_; }
};

namespace {
OpState& State(const ge::Operator& op) { return Access::State(op); }
}  // namespace

ge::Operator MakeOperator(const std::string& name, const std::string& type, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
  ge::Operator op(name.c_str(), type.c_str());
  OpState& state = State(op);
  state.inputs = inputs;
  state.outputs = outputs;
  for (const std::string& port : inputs) state.input_descs[port] = DescState{};
  for (const std::string& port : outputs) state.output_descs[port] = DescState{};
  return op;
}

const std::vector<Attr>& Attrs(const ge::Operator& op) { return State(op).attrs; }

std::vector<Format> Formats(const ge::Operator& op) {
  std::vector<Format> formats;
  const OpState& state = State(op);
  for (const std::string& port : state.inputs) {
    const DescState& d = state.input_descs.at(port);
    formats.push_back({port, true, d.origin_format, d.format});
  }
  for (const std::string& port : state.outputs) {
    const DescState& d = state.output_descs.at(port);
    formats.push_back({port, false, d.origin_format, d.format});
  }
  return formats;
}

const std::vector<Registration>& Registrations() { return Registry(); }

void Record(const ge::Operator& op, Attr attr) {
  std::vector<Attr>& attrs = State(op).attrs;
  for (Attr& a : attrs) {
    if (a.name == attr.name) {
      a = std::move(attr);  // set twice: the last value counts, as in GE
      return;
    }
  }
  attrs.push_back(std::move(attr));
}
}  // namespace recording

// ------------------------------------------------------------------------------------------ ge

namespace ge {
AscendString::AscendString(const char_t* const name) : name_(std::make_shared<std::string>(name ? name : "")) {}
const char_t* AscendString::GetString() const { return name_ ? name_->c_str() : ""; }
bool AscendString::operator<(const AscendString& d) const { return std::string(GetString()) < d.GetString(); }
bool AscendString::operator==(const AscendString& d) const { return std::string(GetString()) == d.GetString(); }

Shape::Shape() = default;
Shape::Shape(const std::vector<int64_t>& dims) : impl_(std::make_shared<std::vector<int64_t>>(dims)) {}
std::vector<int64_t> Shape::GetDims() const {
  return impl_ ? *static_cast<std::vector<int64_t>*>(impl_.get()) : std::vector<int64_t>{};
}

namespace {
recording::DescState& Desc(const std::shared_ptr<void>& impl) {
  return *static_cast<recording::DescState*>(impl.get());
}
}  // namespace
TensorDesc::TensorDesc() : impl(std::make_shared<recording::DescState>()) {}
TensorDesc::TensorDesc(Shape, Format format, DataType) : TensorDesc() {
  Desc(impl).format = format;
  Desc(impl).origin_format = format;
}
TensorDesc::TensorDesc(const TensorDesc& desc) : impl(std::make_shared<recording::DescState>(Desc(desc.impl))) {}
TensorDesc::TensorDesc(TensorDesc&& desc) : TensorDesc(static_cast<const TensorDesc&>(desc)) {}
TensorDesc& TensorDesc::operator=(const TensorDesc& desc) {
  Desc(impl) = Desc(desc.impl);
  return *this;
}
TensorDesc& TensorDesc::operator=(TensorDesc&& desc) { return *this = static_cast<const TensorDesc&>(desc); }
Format TensorDesc::GetFormat() const { return Desc(impl).format; }
void TensorDesc::SetFormat(Format format) { Desc(impl).format = format; }
Format TensorDesc::GetOriginFormat() const { return Desc(impl).origin_format; }
void TensorDesc::SetOriginFormat(Format origin_format) { Desc(impl).origin_format = origin_format; }

Operator::Operator(const char_t* name, const char_t* type) {
  recording::Access::Impl(*this) = std::make_shared<recording::OpState>();
  recording::State(*this).name = name;
  recording::State(*this).type = type;
}
graphStatus Operator::GetName(AscendString& name) const {
  name = AscendString(recording::State(*this).name.c_str());
  return GRAPH_SUCCESS;
}

namespace {
// A port's desc, or nullptr for a name the op does not have (GE returns an empty desc and fails the update).
recording::DescState* Port(const Operator& op, const char_t* name, bool input) {
  auto& descs = input ? recording::State(op).input_descs : recording::State(op).output_descs;
  auto it = descs.find(name);
  return it == descs.end() ? nullptr : &it->second;
}

TensorDesc DescOf(const recording::DescState* state) {
  TensorDesc desc;
  if (state != nullptr) {
    desc.SetFormat(state->format);
    desc.SetOriginFormat(state->origin_format);
  }
  return desc;
}

graphStatus Update(Operator& op, const char_t* name, const TensorDesc& desc, bool input) {
  recording::DescState* state = Port(op, name, input);
  if (state == nullptr) return GRAPH_FAILED;
  state->format = desc.GetFormat();
  state->origin_format = desc.GetOriginFormat();
  return GRAPH_SUCCESS;
}
}  // namespace

TensorDesc Operator::GetInputDescByName(const char_t* name) const { return DescOf(Port(*this, name, true)); }
TensorDesc Operator::GetOutputDescByName(const char_t* name) const { return DescOf(Port(*this, name, false)); }
graphStatus Operator::UpdateInputDesc(const char_t* name, const TensorDesc& tensor_desc) {
  return Update(*this, name, tensor_desc, true);
}
graphStatus Operator::UpdateOutputDesc(const char_t* name, const TensorDesc& tensor_desc) {
  return Update(*this, name, tensor_desc, false);
}

Operator& Operator::SetAttr(const char_t* name, int64_t attr_value) {
  recording::Record(*this, {name, "Int", {attr_value}, {}, ""});
  return *this;
}
Operator& Operator::SetAttr(const char_t* name, int32_t attr_value) {
  recording::Record(*this, {name, "Int32", {attr_value}, {}, ""});
  return *this;
}
Operator& Operator::SetAttr(const char_t* name, uint32_t attr_value) {
  recording::Record(*this, {name, "UInt32", {attr_value}, {}, ""});
  return *this;
}
Operator& Operator::SetAttr(const char_t* name, const std::vector<int64_t>& attr_value) {
  recording::Record(*this, {name, "ListInt", attr_value, {}, ""});
  return *this;
}
Operator& Operator::SetAttr(const char_t* name, float32_t attr_value) {
  recording::Record(*this, {name, "Float", {}, {attr_value}, ""});
  return *this;
}
Operator& Operator::SetAttr(const char_t* name, const std::vector<float32_t>& attr_value) {
  recording::Record(*this, {name, "ListFloat", {}, attr_value, ""});
  return *this;
}
Operator& Operator::SetAttr(const char_t* name, const char_t* attr_value) {
  recording::Record(*this, {name, "String", {}, {}, attr_value});
  return *this;
}
Operator& Operator::SetAttr(const char_t* name, const AscendString& attr_value) {
  recording::Record(*this, {name, "String", {}, {}, attr_value.GetString()});
  return *this;
}
Operator& Operator::SetAttr(const char_t* name, bool attr_value) {
  recording::Record(*this, {name, "Bool", {attr_value ? 1 : 0}, {}, ""});
  return *this;
}
}  // namespace ge

// ------------------------------------------------------------------------------------------ domi

namespace domi {
namespace {
recording::RegistrationState& Reg(const OpRegistrationData& data) { return recording::Access::Reg(data); }
}  // namespace

OpRegistrationData::OpRegistrationData(const char_t* om_optype) {
  recording::Access::Impl(*this) = std::make_shared<recording::RegistrationState>();
  Reg(*this).om_type = om_optype;
}
OpRegistrationData::~OpRegistrationData() = default;
OpRegistrationData& OpRegistrationData::FrameworkType(const domi::FrameworkType& fmk_type) {
  Reg(*this).framework = static_cast<int>(fmk_type);
  return *this;
}
OpRegistrationData& OpRegistrationData::OriginOpType(const std::vector<ge::AscendString>& ori_op_type_list) {
  for (const ge::AscendString& type : ori_op_type_list) Reg(*this).origin_op_types.push_back(type.GetString());
  return *this;
}
OpRegistrationData& OpRegistrationData::OriginOpType(const char_t* ori_op_type) {
  Reg(*this).origin_op_types.push_back(ori_op_type);
  return *this;
}
OpRegistrationData& OpRegistrationData::ParseParamsFn(const ParseParamFunc& parseParamFn) {
  Reg(*this).parse_params = parseParamFn;
  return *this;
}
OpRegistrationData& OpRegistrationData::ParseParamsByOperatorFn(const ParseParamByOpFunc&) {
  Reg(*this).by_operator = true;
  return *this;
}
OpRegistrationData& OpRegistrationData::ImplyType(const domi::ImplyType& imply_type) {
  Reg(*this).imply_type = static_cast<int>(imply_type);
  return *this;
}
OpReceiver::OpReceiver(OpRegistrationData& reg_data) {
  const recording::RegistrationState& r = Reg(reg_data);
  recording::Registry().push_back(
      {r.om_type, r.framework, r.origin_op_types, r.parse_params, r.by_operator, r.imply_type});
}
}  // namespace domi
