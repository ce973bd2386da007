// RegisterCustomOps, the registration table, and the helpers of kernel_common.h.
#include <memory>
#include <mutex>

#include "kernels.h"
#include "simd.h"

namespace rg {

std::string ListString(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

std::string ShapeString(const std::vector<int64_t>& dims) { return ListString(dims); }

OrtStatus* ErrorStatus(const OrtApi* api, const std::string& message) {
  return ort::Get<ort::CreateStatusFn>(api, ort::kCreateStatus)(ORT_INVALID_ARGUMENT, message.c_str());
}

void Check(const OrtApi* api, OrtStatus* status) {
  if (status == nullptr) return;
  std::string message = ort::Get<ort::GetErrorMessageFn>(api, ort::kGetErrorMessage)(status);
  ort::Get<ort::ReleaseStatusFn>(api, ort::kReleaseStatus)(status);
  throw OpError(message);
}

int64_t Tensor::Count() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

namespace {
// An OrtValue's dtype, shape and data.
Tensor Describe(const OrtApi* api, const OrtValue* value) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  Check(api, ort::Get<ort::GetTensorTypeAndShapeFn>(api, ort::kGetTensorTypeAndShape)(value, &info));
  Tensor t;
  size_t rank = 0;
  OrtStatus* status = ort::Get<ort::GetTensorElementTypeFn>(api, ort::kGetTensorElementType)(info, &t.type);
  if (!status) status = ort::Get<ort::GetDimensionsCountFn>(api, ort::kGetDimensionsCount)(info, &rank);
  if (!status) {
    t.dims.resize(rank);
    status = ort::Get<ort::GetDimensionsFn>(api, ort::kGetDimensions)(info, t.dims.data(), rank);
  }
  ort::Get<ort::ReleaseTensorTypeAndShapeInfoFn>(api, ort::kReleaseTensorTypeAndShapeInfo)(info);
  Check(api, status);
  Check(api, ort::Get<ort::GetTensorMutableDataFn>(api, ort::kGetTensorMutableData)(const_cast<OrtValue*>(value),
                                                                                    &t.data));
  return t;
}
}  // namespace

Tensor Input(const OrtApi* api, OrtKernelContext* context, size_t index) {
  Tensor t;
  if (!OptionalInput(api, context, index, &t)) throw OpError("input " + std::to_string(index) + " is missing");
  return t;
}

bool OptionalInput(const OrtApi* api, OrtKernelContext* context, size_t index, Tensor* out) {
  size_t count = 0;
  Check(api, ort::Get<ort::KernelContext_GetCountFn>(api, ort::kKernelContext_GetInputCount)(context, &count));
  if (index >= count) return false;
  const OrtValue* value = nullptr;
  Check(api, ort::Get<ort::KernelContext_GetInputFn>(api, ort::kKernelContext_GetInput)(context, index, &value));
  if (value == nullptr) return false;
  *out = Describe(api, value);
  return true;
}

void* Output(const OrtApi* api, OrtKernelContext* context, size_t index, const std::vector<int64_t>& dims) {
  size_t count = 0;
  Check(api, ort::Get<ort::KernelContext_GetCountFn>(api, ort::kKernelContext_GetOutputCount)(context, &count));
  if (index >= count) return nullptr;
  OrtValue* value = nullptr;
  Check(api, ort::Get<ort::KernelContext_GetOutputFn>(api, ort::kKernelContext_GetOutput)(
                 context, index, dims.data(), dims.size(), &value));
  if (value == nullptr) return nullptr;
  void* data = nullptr;
  Check(api, ort::Get<ort::GetTensorMutableDataFn>(api, ort::kGetTensorMutableData)(value, &data));
  return data;
}

// ----------------------------------------------------------------------------- attributes

Attributes::Attributes(const OrtApi* api, const OrtKernelInfo* info, const char* op_type) : api_(api), info_(info) {
  std::string name;
  size_t size = 0;
  auto get_name = ort::Get<ort::KernelInfo_GetNodeNameFn>(api, ort::kKernelInfo_GetNodeName);
  OrtStatus* status = get_name(info, nullptr, &size);
  if (status == nullptr && size > 1) {
    name.resize(size);
    status = get_name(info, &name[0], &size);
    name.resize(size ? size - 1 : 0);
  }
  if (status) ort::Get<ort::ReleaseStatusFn>(api, ort::kReleaseStatus)(status);
  prefix_ = std::string(op_type) + (name.empty() ? "" : " (node '" + name + "')") + ": ";
}

namespace {
void Release(const OrtApi* api, OrtStatus* status) {
  if (status) ort::Get<ort::ReleaseStatusFn>(api, ort::kReleaseStatus)(status);
}

// A missing attribute comes back as a status: release it and report absence. A scalar attribute of another type
// comes back as onnxruntime's "Attribute name and type don't match": read as absent, it would silently take the
// default, so it is an error.
bool Found(const OrtApi* api, OrtStatus* status, const std::string& prefix, const char* name, const char* kind) {
  if (status == nullptr) return true;
  const std::string message = ort::Get<ort::GetErrorMessageFn>(api, ort::kGetErrorMessage)(status);
  Release(api, status);
  if (message.find("type don't match") != std::string::npos)
    throw OpError(prefix + "attribute '" + name + "' must be " + kind + ", got another type");
  return false;
}

// An array query answers 0 values and no error for an attribute of another type: after such an answer, an error
// when `name` holds a value of another type (a non-empty array of the other element type, or a scalar).
void CheckArrayType(const OrtApi* api, const OrtKernelInfo* info, const std::string& prefix, const char* name,
                    bool ints) {
  size_t count = 0, length = 0;
  int64_t i = 0;
  float f = 0;
  auto floats = ort::Get<ort::KernelInfoGetAttributeArray_floatFn>(api, ort::kKernelInfoGetAttributeArray_float);
  auto int64s = ort::Get<ort::KernelInfoGetAttributeArray_int64Fn>(api, ort::kKernelInfoGetAttributeArray_int64);
  OrtStatus* status = ints ? floats(info, name, nullptr, &count) : int64s(info, name, nullptr, &count);
  bool other = status == nullptr && count > 0;
  Release(api, status);
  for (OrtStatus* scalar : {ort::Get<ort::KernelInfoGetAttribute_int64Fn>(api, ort::kKernelInfoGetAttribute_int64)(
                                info, name, &i),
                            ort::Get<ort::KernelInfoGetAttribute_floatFn>(api, ort::kKernelInfoGetAttribute_float)(
                                info, name, &f),
                            ort::Get<ort::KernelInfoGetAttribute_stringFn>(api, ort::kKernelInfoGetAttribute_string)(
                                info, name, nullptr, &length)}) {
    other = other || scalar == nullptr;
    Release(api, scalar);
  }
  if (other)
    throw OpError(prefix + "attribute '" + name + "' must be " + (ints ? "a list of ints" : "a list of floats") +
                  ", got another type");
}

// A list attribute (int64 or float) into *out; false when absent, an error when it holds another type.
template <typename V>
bool ReadArray(const OrtApi* api, const OrtKernelInfo* info, const std::string& prefix, const char* name,
               std::vector<V>* out) {
  constexpr bool kInts = std::is_same_v<V, int64_t>;
  const char* kind = kInts ? "a list of ints" : "a list of floats";
  using GetFn = std::conditional_t<kInts, ort::KernelInfoGetAttributeArray_int64Fn,
                                   ort::KernelInfoGetAttributeArray_floatFn>;
  auto get = ort::Get<GetFn>(api, kInts ? ort::kKernelInfoGetAttributeArray_int64
                                        : ort::kKernelInfoGetAttributeArray_float);
  size_t size = 0;
  if (!Found(api, get(info, name, nullptr, &size), prefix, name, kind)) return false;
  if (size == 0) CheckArrayType(api, info, prefix, name, kInts);
  out->assign(size, V{});
  return size == 0 || Found(api, get(info, name, out->data(), &size), prefix, name, kind);
}
}  // namespace

int64_t Attributes::Int(const char* name, int64_t fallback) const {
  int64_t v = 0;
  auto get = ort::Get<ort::KernelInfoGetAttribute_int64Fn>(api_, ort::kKernelInfoGetAttribute_int64);
  return Found(api_, get(info_, name, &v), prefix_, name, "an int") ? v : fallback;
}

float Attributes::Float(const char* name, float fallback) const {
  float v = 0;
  auto get = ort::Get<ort::KernelInfoGetAttribute_floatFn>(api_, ort::kKernelInfoGetAttribute_float);
  return Found(api_, get(info_, name, &v), prefix_, name, "a float") ? v : fallback;
}

std::string Attributes::String(const char* name, const std::string& fallback) const {
  auto get = ort::Get<ort::KernelInfoGetAttribute_stringFn>(api_, ort::kKernelInfoGetAttribute_string);
  size_t size = 0;
  if (!Found(api_, get(info_, name, nullptr, &size), prefix_, name, "a string")) return fallback;
  std::string v(size, '\0');
  if (!Found(api_, get(info_, name, &v[0], &size), prefix_, name, "a string")) return fallback;
  v.resize(size ? size - 1 : 0);
  return v;
}

bool Attributes::Ints(const char* name, std::vector<int64_t>* out) const {
  return ReadArray(api_, info_, prefix_, name, out);
}

bool Attributes::Floats(const char* name, std::vector<float>* out) const {
  return ReadArray(api_, info_, prefix_, name, out);
}

// ----------------------------------------------------------------------------- dtypes

float ToFloat(Float16 h) {
  uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  uint32_t exponent = (h.bits >> 10) & 0x1fu;
  uint32_t mantissa = h.bits & 0x3ffu;
  uint32_t u;
  if (exponent == 0x1f) {
    u = sign | 0x7f800000u | (mantissa << 13);  // inf, NaN
  } else if (exponent != 0) {
    u = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    u = sign;
  } else {  // subnormal: value = mantissa * 2^-24
    float f = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

Float16 ToFloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return {static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0))};
  if (abs >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // rounds to inf
  if (abs < 0x38800000u) {  // below the smallest normal half: round to a multiple of 2^-24
    float a;
    std::memcpy(&a, &abs, sizeof a);
    return {static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f)))};
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
  return {static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13))};
}

BFloat16 ToBFloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x40u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<uint16_t>(u >> 16)};
}

void CheckScale(const std::string& prefix, const char* name, float value) {
  if (!std::isfinite(value) || value < 0)
    throw OpError(prefix + "attribute '" + name + "' must be a finite scale >= 0 (0 means: use the size ratio), got " +
                  std::to_string(value));
  if (value > 0 && !std::isfinite(static_cast<float>(1.0 / value)))
    throw OpError(prefix + "attribute '" + name + "' is too small: its inverse overflows float32, got " +
                  std::to_string(value));
}

const char* TypeName(ONNXTensorElementDataType type) {
  switch (static_cast<int>(type)) {
    case 1: return "float";
    case 2: return "uint8";
    case 3: return "int8";
    case 4: return "uint16";
    case 5: return "int16";
    case 6: return "int32";
    case 7: return "int64";
    case 8: return "string";
    case 9: return "bool";
    case 10: return "float16";
    case 11: return "double";
    case 12: return "uint32";
    case 13: return "uint64";
    case 16: return "bfloat16";
    default: return "an unsupported type";
  }
}

}  // namespace rg

// ----------------------------------------------------------------------------- registration table

// RG_HELPERS_ONLY: the helpers above without this library's registration (libresample_grad_training_ops,
// register_training.cc, registers its own domain).
#ifndef RG_HELPERS_ONLY

namespace {

// The registration table, a family per entry (kernels.h). Descriptors live as long as the process: onnxruntime keeps
// pointers to them.
rg::OpList (*const kFamilies[])() = {rg::GridSamplerGradOps, rg::UpsampleGradOps, rg::ResizeV2GradOps,
                                     rg::ResizeGradOps};

}  // namespace

// The instruction set the kernels run with ("baseline", "avx2", "avx512"), or the RESAMPLE_GRAD_ISA error.
extern "C" const char* ResampleGradIsa() {
  static std::string answer;
  std::string error;
  answer = rg::SelectIsa(&error) ? rg::IsaName(rg::ActiveIsa()) : error;
  return answer.c_str();
}

extern "C" OrtStatus* RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  const OrtApi* api = api_base->GetApi(kOrtApiVersion);
  if (api == nullptr) return nullptr;  // cannot even build a status; onnxruntime < 1.17 is refused by pip
  std::string isa_error;  // the hot loops' instruction set, chosen once (RESAMPLE_GRAD_ISA)
  if (!rg::SelectIsa(&isa_error)) return rg::ErrorStatus(api, isa_error);
  // One domain per session-options object (onnxruntime keeps the pointer); they are never freed.
  OrtCustomOpDomain* domain = nullptr;
  if (OrtStatus* s = ort::Get<ort::CreateCustomOpDomainFn>(api, ort::kCreateCustomOpDomain)(rg::kDomain, &domain))
    return s;
  for (auto family : kFamilies) {
    for (const OrtCustomOp* op : family()) {
      if (OrtStatus* s = ort::Get<ort::CustomOpDomain_AddFn>(api, ort::kCustomOpDomain_Add)(domain, op)) return s;
    }
  }
  return ort::Get<ort::AddCustomOpDomainFn>(api, ort::kAddCustomOpDomain)(options, domain);
}
#endif  // RG_HELPERS_ONLY
