// The part of onnxruntime's stable C ABI that this library uses, declared here.
//
// Why this file exists: the onnxruntime wheel on PyPI ships libonnxruntime but no
// C headers, and no reachable registry ships them. The C API is append-only: a
// table of function pointers (OrtApi) whose slots never move and a custom-op
// descriptor (OrtCustomOp) whose fields only grow at the end. So a library can
// declare the slots and fields it needs and be built from PyPI alone. Slot
// numbers and signatures are those of the public onnxruntime_c_api.h; the
// library requests API version 17 (onnxruntime >= 1.17, KernelContext_ParallelFor).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

constexpr uint32_t kOrtApiVersion = 17;

struct OrtStatus;
struct OrtValue;
struct OrtKernelInfo;
struct OrtKernelContext;
struct OrtTensorTypeAndShapeInfo;
struct OrtCustomOpDomain;
struct OrtSessionOptions;
struct OrtShapeInferContext;
struct OrtApi;  // opaque here: read as a table of slots, see ort::Slot

enum ONNXTensorElementDataType : int {
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED = 0,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 = 6,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 = 7,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 = 10,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE = 11,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16 = 16,
};

enum OrtErrorCode : int {
  ORT_OK = 0,
  ORT_FAIL = 1,
  ORT_INVALID_ARGUMENT = 2,
  ORT_NOT_IMPLEMENTED = 9,
};

enum OrtCustomOpInputOutputCharacteristic : int {
  INPUT_OUTPUT_REQUIRED = 0,
  INPUT_OUTPUT_OPTIONAL = 1,
  INPUT_OUTPUT_VARIADIC = 2,
};

enum OrtMemType : int { OrtMemTypeDefault = 0 };

struct OrtApiBase {
  const OrtApi* (*GetApi)(uint32_t version);
  const char* (*GetVersionString)(void);
};

// Fields in ABI order. With version 17 onnxruntime reads fields up to GetEndVersion.
struct OrtCustomOp {
  uint32_t version;
  void* (*CreateKernel)(const OrtCustomOp*, const OrtApi*, const OrtKernelInfo*);
  const char* (*GetName)(const OrtCustomOp*);
  const char* (*GetExecutionProviderType)(const OrtCustomOp*);
  ONNXTensorElementDataType (*GetInputType)(const OrtCustomOp*, size_t index);
  size_t (*GetInputTypeCount)(const OrtCustomOp*);
  ONNXTensorElementDataType (*GetOutputType)(const OrtCustomOp*, size_t index);
  size_t (*GetOutputTypeCount)(const OrtCustomOp*);
  void (*KernelCompute)(void* kernel, OrtKernelContext* context);
  void (*KernelDestroy)(void* kernel);
  OrtCustomOpInputOutputCharacteristic (*GetInputCharacteristic)(const OrtCustomOp*, size_t index);
  OrtCustomOpInputOutputCharacteristic (*GetOutputCharacteristic)(const OrtCustomOp*, size_t index);
  OrtMemType (*GetInputMemoryType)(const OrtCustomOp*, size_t index);
  int (*GetVariadicInputMinArity)(const OrtCustomOp*);
  int (*GetVariadicInputHomogeneity)(const OrtCustomOp*);
  int (*GetVariadicOutputMinArity)(const OrtCustomOp*);
  int (*GetVariadicOutputHomogeneity)(const OrtCustomOp*);
  OrtStatus* (*CreateKernelV2)(const OrtCustomOp*, const OrtApi*, const OrtKernelInfo*, void** kernel);
  OrtStatus* (*KernelComputeV2)(void* kernel, OrtKernelContext* context);
  OrtStatus* (*InferOutputShapeFn)(const OrtCustomOp*, OrtShapeInferContext*);
  int (*GetStartVersion)(const OrtCustomOp*);
  int (*GetEndVersion)(const OrtCustomOp*);
};

// The library's exported symbols (exports.map): the registration, and the instruction set of its kernels.
__attribute__((visibility("default"))) OrtStatus* RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api);
__attribute__((visibility("default"))) const char* ResampleGradIsa();

}  // extern "C"

namespace ort {

// Slot indices in the OrtApi table (0-based), from onnxruntime_c_api.h.
enum Slot : size_t {
  kCreateStatus = 0,
  kGetErrorMessage = 2,
  kCreateCustomOpDomain = 26,
  kCustomOpDomain_Add = 27,
  kAddCustomOpDomain = 28,
  kGetTensorMutableData = 51,
  kGetTensorElementType = 60,
  kGetDimensionsCount = 61,
  kGetDimensions = 62,
  kGetTensorTypeAndShape = 65,
  kKernelInfoGetAttribute_float = 85,
  kKernelInfoGetAttribute_int64 = 86,
  kKernelInfoGetAttribute_string = 87,
  kKernelContext_GetInputCount = 88,
  kKernelContext_GetOutputCount = 89,
  kKernelContext_GetInput = 90,
  kKernelContext_GetOutput = 91,
  kReleaseStatus = 93,
  kReleaseTensorTypeAndShapeInfo = 99,
  kKernelInfoGetAttributeArray_float = 162,
  kKernelInfoGetAttributeArray_int64 = 163,
  kKernelInfo_GetNodeName = 244,
  kKernelContext_ParallelFor = 274,
};

using CreateStatusFn = OrtStatus* (*)(OrtErrorCode, const char*);
using GetErrorMessageFn = const char* (*)(const OrtStatus*);
using CreateCustomOpDomainFn = OrtStatus* (*)(const char*, OrtCustomOpDomain**);
using CustomOpDomain_AddFn = OrtStatus* (*)(OrtCustomOpDomain*, const OrtCustomOp*);
using AddCustomOpDomainFn = OrtStatus* (*)(OrtSessionOptions*, OrtCustomOpDomain*);
using GetTensorMutableDataFn = OrtStatus* (*)(OrtValue*, void**);
using GetTensorElementTypeFn = OrtStatus* (*)(const OrtTensorTypeAndShapeInfo*, ONNXTensorElementDataType*);
using GetDimensionsCountFn = OrtStatus* (*)(const OrtTensorTypeAndShapeInfo*, size_t*);
using GetDimensionsFn = OrtStatus* (*)(const OrtTensorTypeAndShapeInfo*, int64_t*, size_t);
using GetTensorTypeAndShapeFn = OrtStatus* (*)(const OrtValue*, OrtTensorTypeAndShapeInfo**);
using KernelInfoGetAttribute_floatFn = OrtStatus* (*)(const OrtKernelInfo*, const char*, float*);
using KernelInfoGetAttribute_int64Fn = OrtStatus* (*)(const OrtKernelInfo*, const char*, int64_t*);
using KernelInfoGetAttribute_stringFn = OrtStatus* (*)(const OrtKernelInfo*, const char*, char*, size_t*);
using KernelContext_GetCountFn = OrtStatus* (*)(const OrtKernelContext*, size_t*);
using KernelContext_GetInputFn = OrtStatus* (*)(const OrtKernelContext*, size_t, const OrtValue**);
using KernelContext_GetOutputFn = OrtStatus* (*)(OrtKernelContext*, size_t, const int64_t*, size_t, OrtValue**);
using ReleaseStatusFn = void (*)(OrtStatus*);
using ReleaseTensorTypeAndShapeInfoFn = void (*)(OrtTensorTypeAndShapeInfo*);
using KernelInfoGetAttributeArray_floatFn = OrtStatus* (*)(const OrtKernelInfo*, const char*, float*, size_t*);
using KernelInfoGetAttributeArray_int64Fn = OrtStatus* (*)(const OrtKernelInfo*, const char*, int64_t*, size_t*);
using KernelInfo_GetNodeNameFn = OrtStatus* (*)(const OrtKernelInfo*, char*, size_t*);
using KernelContext_ParallelForFn = OrtStatus* (*)(const OrtKernelContext*, void (*)(void*, size_t), size_t, size_t,
                                                  void*);

// The function in slot `slot` of the table, typed.
template <typename Fn>
inline Fn Get(const OrtApi* api, Slot slot) {
  return reinterpret_cast<Fn>(reinterpret_cast<void* const*>(api)[slot]);
}

}  // namespace ort
