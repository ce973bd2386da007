// Test stub of CANN register/register.h: only what the generated plugin uses, copied from
// from: hicann/metadef@786891c02e5a7f509c6ffffd854e33ddefe3527c inc/external/register/register.h
// Deprecated overloads that compete with the ones used are kept, deprecated as in CANN.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>
#include "graph/ascend_string.h"
#include "graph/operator.h"
#include "graph/types.h"
#include "register/register_error_codes.h"
#include "register/register_fmk_types.h"
namespace google {
namespace protobuf {
class Message;
}
}  // namespace google
namespace domi {
using google::protobuf::Message;
using ParseParamFunc = std::function<domi::Status(const google::protobuf::Message *, ge::Operator &)>;
using ParseParamByOpFunc = std::function<domi::Status(const ge::Operator &, ge::Operator &)>;
class OpRegistrationData {
 public:
  ATTRIBUTED_DEPRECATED(OpRegistrationData(const char_t *))
  OpRegistrationData(const std::string &om_optype);
  OpRegistrationData(const char_t *om_optype);
  ~OpRegistrationData();
  OpRegistrationData &FrameworkType(const domi::FrameworkType &fmk_type);
  ATTRIBUTED_DEPRECATED(OpRegistrationData &OriginOpType(const std::vector<ge::AscendString> &))
  OpRegistrationData &OriginOpType(const std::initializer_list<std::string> &ori_optype_list);
  OpRegistrationData &OriginOpType(const std::vector<ge::AscendString> &ori_op_type_list);
  ATTRIBUTED_DEPRECATED(OpRegistrationData &OriginOpType(const char_t *))
  OpRegistrationData &OriginOpType(const std::string &ori_optype);
  OpRegistrationData &OriginOpType(const char_t *ori_op_type);
  OpRegistrationData &ParseParamsFn(const ParseParamFunc &parseParamFn);
  OpRegistrationData &ParseParamsByOperatorFn(const ParseParamByOpFunc &parse_param_by_op_fn);
  OpRegistrationData &ImplyType(const domi::ImplyType &imply_type);
 private:
  std::shared_ptr<void> impl_;  // stand-in for std::shared_ptr<OpRegistrationDataImpl>
  friend struct recording::Access;  // stand-in
};
class OpReceiver {
 public:
  OpReceiver(OpRegistrationData &reg_data);
  ~OpReceiver() = default;
};
}  // namespace domi
#define REGISTER_CUSTOM_OP(name) REGISTER_CUSTOM_OP_UNIQ_HELPER(__COUNTER__, (name))
#define REGISTER_CUSTOM_OP_UNIQ_HELPER(ctr, name) REGISTER_CUSTOM_OP_UNIQ(ctr, (name))
#define REGISTER_CUSTOM_OP_UNIQ(ctr, name) \
  static OpReceiver register_op##ctr __attribute__((unused)) = OpRegistrationData(name)
