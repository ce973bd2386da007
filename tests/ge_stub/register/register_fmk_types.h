// Test stub of CANN register/register_fmk_types.h, copied from
// from: hicann/metadef@786891c02e5a7f509c6ffffd854e33ddefe3527c inc/external/register/register_fmk_types.h
#pragma once
namespace domi {
enum FrameworkType { CAFFE = 0, MINDSPORE = 1, TENSORFLOW = 3, ANDROID_NN = 4, ONNX = 5, FRAMEWORK_RESERVED = 6 };
}  // namespace domi
