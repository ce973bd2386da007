// Test stub of CANN register/register.h: only what the generated plugin uses.
#pragma once
#include <cstdint>
#include <initializer_list>
#include "graph/operator.h"
namespace domi {
using Status = uint32_t;
constexpr Status SUCCESS = 0;
enum FrameworkType { CAFFE = 0, MINDSPORE = 1, TENSORFLOW = 3, ANDROID_NN = 4, ONNX = 5 };
enum class ImplyType : unsigned int { BUILDIN = 0, TVM, CUSTOM, AI_CPU };
using ParseParamByOpFunc = Status (*)(const ge::Operator&, ge::Operator&);
class OpRegistrationData {
 public:
  explicit OpRegistrationData(const ge::AscendString& om_optype);
  OpRegistrationData& FrameworkType(const domi::FrameworkType& fmk_type);
  OpRegistrationData& OriginOpType(const std::initializer_list<ge::AscendString>& ori_op_type_list);
  OpRegistrationData& OriginOpType(const char* ori_op_type);
  OpRegistrationData& ParseParamsByOperatorFn(const ParseParamByOpFunc& parse_param_by_op_fn);
  OpRegistrationData& ImplyType(const domi::ImplyType& imply_type);
};
class OpReceiver {
 public:
  OpReceiver(OpRegistrationData& reg_data);  // NOLINT
};
#define REGISTER_CUSTOM_OP(name) REGISTER_CUSTOM_OP_UNIQ_HELPER(__COUNTER__, name)
#define REGISTER_CUSTOM_OP_UNIQ_HELPER(ctr, name) REGISTER_CUSTOM_OP_UNIQ(ctr, name)
#define REGISTER_CUSTOM_OP_UNIQ(ctr, name) \
  static OpReceiver register_op##ctr __attribute__((unused)) = OpRegistrationData(name)
}  // namespace domi
