// Shared by every kernel: errors, tensor and attribute access, the four dtypes,
// the intra-op thread pool, and the OrtCustomOp descriptor built from a kernel class.
//
// Kernels throw OpError for bad input; the descriptor's C entry points catch it
// and hand onnxruntime a status with the message, so nothing throws across the
// C boundary and a bad model fails session creation or `run` with a clear text.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ort_abi.h"

namespace rg {

constexpr const char* kDomain = "resample_grad";  // resample_grad.opset.DOMAIN

class OpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string ShapeString(const std::vector<int64_t>& dims);
std::string ListString(const std::vector<int64_t>& values);

// ----------------------------------------------------------------------------- ORT calls

// Throws OpError with onnxruntime's message when an API call returns a status.
void Check(const OrtApi* api, OrtStatus* status);

struct Tensor {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> dims;
  void* data = nullptr;
  int64_t Count() const;
};

// Input `index` of the kernel context (throws when absent).
Tensor Input(const OrtApi* api, OrtKernelContext* context, size_t index);
// An optional input: false when the node leaves it out (or it is past the inputs given).
bool OptionalInput(const OrtApi* api, OrtKernelContext* context, size_t index, Tensor* out);
// Allocates output `index`; nullptr when the node does not ask for it (an optional output left unnamed).
void* Output(const OrtApi* api, OrtKernelContext* context, size_t index, const std::vector<int64_t>& dims);

// Attributes read once when the kernel is created.
class Attributes {
 public:
  Attributes(const OrtApi* api, const OrtKernelInfo* info, const char* op_type);
  int64_t Int(const char* name, int64_t fallback) const;
  float Float(const char* name, float fallback) const;
  std::string String(const char* name, const std::string& fallback) const;
  bool Ints(const char* name, std::vector<int64_t>* out) const;     // false when absent
  bool Floats(const char* name, std::vector<float>* out) const;     // false when absent
  // "OpType (node 'name'): " for error messages.
  const std::string& Prefix() const { return prefix_; }

 private:
  const OrtApi* api_;
  const OrtKernelInfo* info_;
  std::string prefix_;
};

// ----------------------------------------------------------------------------- dtypes

struct Float16 { uint16_t bits; };
struct BFloat16 { uint16_t bits; };

float ToFloat(Float16 h);
Float16 ToFloat16(float f);  // round to nearest even
inline float ToFloat(BFloat16 b) {
  uint32_t u = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
BFloat16 ToBFloat16(float f);  // round to nearest even

// Accumulation type: float for the half types and float, double for double.
template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };
template <typename T> using AccT = typename Acc<T>::type;

template <typename A> inline A Load(float v) { return v; }
template <typename A> inline A Load(double v) { return static_cast<A>(v); }
template <typename A> inline A Load(Float16 v) { return ToFloat(v); }
template <typename A> inline A Load(BFloat16 v) { return ToFloat(v); }

template <typename T, typename A> inline T Store(A v) {
  if constexpr (std::is_same_v<T, Float16>) return ToFloat16(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, BFloat16>) return ToBFloat16(static_cast<float>(v));
  else return static_cast<T>(v);
}

const char* TypeName(ONNXTensorElementDataType type);

// A scale attribute: finite, >= 0 (0: use the size ratio), and with an inverse float32 can hold.
void CheckScale(const std::string& prefix, const char* name, float value);

// Calls fn(T{}) with T the C++ type of `type`; throws for anything but the four float types.
template <typename Fn>
void DispatchFloat(ONNXTensorElementDataType type, const std::string& prefix, const char* input_name, Fn&& fn) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return fn(float{});
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return fn(double{});
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return fn(Float16{});
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return fn(BFloat16{});
    default:
      throw OpError(prefix + "input '" + input_name + "' has dtype " + TypeName(type) +
                    "; expected float16, bfloat16, float or double");
  }
}

// ----------------------------------------------------------------------------- threads

// A task of less work than this (elements read plus written) costs more to hand to a pool thread than it saves:
// onnxruntime's pool, not spinning, is slow to wake one (benchmarks/cutover.py measures both sides). Small inputs
// therefore run inline on the calling thread.
#ifndef RG_MIN_TASK_WORK
#define RG_MIN_TASK_WORK 32768
#endif
constexpr double kMinTaskWork = RG_MIN_TASK_WORK;

// Runs body(i) for i in [0, total) on the session's intra-op thread pool, consecutive items grouped into tasks
// of at least kMinTaskWork (work_per_item: the same measure for one item). Every item is still run once, by
// one thread, so results do not depend on the grouping. Bodies must not throw.
template <typename Body>
void ParallelFor(const OrtApi* api, OrtKernelContext* context, size_t total, double work_per_item, Body&& body) {
  if (total == 0) return;
  const size_t per_task = static_cast<size_t>(std::clamp(std::ceil(kMinTaskWork / std::max(work_per_item, 1.0)), 1.0,
                                                         static_cast<double>(total)));
  const size_t tasks = (total + per_task - 1) / per_task;
  auto group = [&](size_t task) {
    for (size_t i = task * per_task, end = std::min(total, i + per_task); i < end; ++i) body(i);
  };
  if (tasks == 1) return group(0);
  auto trampoline = [](void* user, size_t i) { (*static_cast<decltype(group)*>(user))(i); };
  Check(api, ort::Get<ort::KernelContext_ParallelForFn>(api, ort::kKernelContext_ParallelFor)(
                 context, trampoline, tasks, 0, &group));
}

// ----------------------------------------------------------------------------- scratch

// Per-thread scratch: the buffers of a task are thread_local vectors, kept for the thread's next task because fresh
// memory costs a page fault per 4 KB on every run, but freed when the scope that uses them (a task, a run) ends with
// them past kScratchCapBytes together, so that one large input does not pin its memory for as long as the thread
// lives. The loops take plain pointers to them: a thread_local costs a TLS lookup per access.
//   thread_local std::vector<float> sums;
//   const ScratchScope scope(sums);
//   sums.resize(n);
//   float* s = sums.data();
constexpr size_t kScratchCapBytes = size_t{16} << 20;

template <typename T>
size_t ScratchBytes(const std::vector<T>& buffer) { return buffer.capacity() * sizeof(T); }
template <typename T>
void ReleaseScratch(std::vector<T>& buffer) { std::vector<T>().swap(buffer); }

template <typename... Buffers>
class ScratchScope {
 public:
  explicit ScratchScope(Buffers&... buffers) : buffers_(buffers...) {}
  ScratchScope(const ScratchScope&) = delete;
  ScratchScope& operator=(const ScratchScope&) = delete;
  ~ScratchScope() {
    std::apply([](auto&... buffer) {
      if ((ScratchBytes(buffer) + ... + size_t{0}) > kScratchCapBytes) (ReleaseScratch(buffer), ...);
    }, buffers_);
  }

 private:
  std::tuple<Buffers&...> buffers_;
};

// ----------------------------------------------------------------------------- descriptor

OrtStatus* ErrorStatus(const OrtApi* api, const std::string& message);

// How a kernel describes its inputs beyond the float type T they default to.
struct InputSpec {
  bool is_t = true;       // of the op's float type T; otherwise any type, checked by the kernel (an int size)
  bool optional = false;  // may be left out (an empty name in the node)
};

// An OrtCustomOp for Kernel with its T inputs and every output of element type kType. Kernel provides:
//   static constexpr const char* kName; kDomain (optional, default rg::kDomain); kSinceVersion;
//   kInputs, kOutputs (counts); kOptionalOutputs (bool); static InputSpec InputSpecAt(size_t) (optional)
//   Kernel(const OrtApi*, const OrtKernelInfo*)       reads and checks attributes (may throw OpError)
//   void Compute(OrtKernelContext*)                    (may throw OpError)
template <typename Kernel, typename = void> struct HasInputSpec : std::false_type {};
template <typename Kernel>
struct HasInputSpec<Kernel, std::void_t<decltype(Kernel::InputSpecAt(size_t{0}))>> : std::true_type {};

template <typename Kernel>
InputSpec InputSpecOf(size_t index) {
  if constexpr (HasInputSpec<Kernel>::value) return Kernel::InputSpecAt(index);
  else return InputSpec{};
}

template <typename Kernel, ONNXTensorElementDataType kType>
struct CustomOp : OrtCustomOp {
  CustomOp() {
    std::memset(static_cast<OrtCustomOp*>(this), 0, sizeof(OrtCustomOp));
    version = kOrtApiVersion;
    GetName = [](const OrtCustomOp*) { return Kernel::kName; };
    GetExecutionProviderType = [](const OrtCustomOp*) -> const char* { return "CPUExecutionProvider"; };
    GetInputType = [](const OrtCustomOp*, size_t index) {
      return InputSpecOf<Kernel>(index).is_t ? kType : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    };
    GetInputTypeCount = [](const OrtCustomOp*) { return Kernel::kInputs; };
    GetOutputType = [](const OrtCustomOp*, size_t) { return kType; };
    GetOutputTypeCount = [](const OrtCustomOp*) { return Kernel::kOutputs; };
    KernelDestroy = [](void* kernel) { delete static_cast<Kernel*>(kernel); };
    GetInputCharacteristic = [](const OrtCustomOp*, size_t index) {
      return InputSpecOf<Kernel>(index).optional ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
    };
    GetOutputCharacteristic = [](const OrtCustomOp*, size_t) {
      return Kernel::kOptionalOutputs ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
    };
    GetInputMemoryType = [](const OrtCustomOp*, size_t) { return OrtMemTypeDefault; };
    GetVariadicInputMinArity = [](const OrtCustomOp*) { return 1; };
    GetVariadicInputHomogeneity = [](const OrtCustomOp*) { return 0; };
    GetVariadicOutputMinArity = [](const OrtCustomOp*) { return 1; };
    GetVariadicOutputHomogeneity = [](const OrtCustomOp*) { return 0; };
    CreateKernelV2 = [](const OrtCustomOp*, const OrtApi* api, const OrtKernelInfo* info, void** out) -> OrtStatus* {
      try {
        *out = new Kernel(api, info);
        return nullptr;
      } catch (const std::exception& e) {
        return ErrorStatus(api, e.what());
      }
    };
    KernelComputeV2 = [](void* kernel, OrtKernelContext* context) -> OrtStatus* {
      auto* self = static_cast<Kernel*>(kernel);
      try {
        self->Compute(context);
        return nullptr;
      } catch (const std::exception& e) {
        return ErrorStatus(self->api, e.what());
      }
    };
    GetStartVersion = [](const OrtCustomOp*) { return Kernel::kSinceVersion; };
    GetEndVersion = [](const OrtCustomOp*) { return std::numeric_limits<int>::max(); };
  }
};

// One descriptor per dtype under the op's name: onnxruntime picks the kernel by the
// input types and infers the output type from it (an untyped output would need a
// shape-inference callback). The kernel itself dispatches on the runtime dtype.
using TypedOps = std::array<const OrtCustomOp*, 4>;

template <typename Kernel>
TypedOps MakeTypedOps() {
  static const CustomOp<Kernel, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16> f16;
  static const CustomOp<Kernel, ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16> bf16;
  static const CustomOp<Kernel, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT> f32;
  static const CustomOp<Kernel, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE> f64;
  return {&f16, &bf16, &f32, &f64};
}

// The descriptors of a family of ops (kernels.h), every dtype of each.
using OpList = std::vector<const OrtCustomOp*>;

inline OpList JoinOps(std::initializer_list<TypedOps> ops) {
  OpList all;
  all.reserve(ops.size() * std::tuple_size_v<TypedOps>);
  for (const TypedOps& typed : ops) all.insert(all.end(), typed.begin(), typed.end());
  return all;
}

// A family whose ops are the rows of a table: Kernel<0> .. Kernel<Rows - 1>, Kernel<I> reading row I.
template <template <size_t> class Kernel, size_t... I>
OpList RowOps(std::index_sequence<I...>) {
  return JoinOps({MakeTypedOps<Kernel<I>>()...});
}
template <template <size_t> class Kernel, size_t Rows>
OpList FamilyOps() {
  return RowOps<Kernel>(std::make_index_sequence<Rows>());
}

}  // namespace rg
