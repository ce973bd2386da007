// RegisterCustomOps of libresample_grad_training_ops: com.microsoft::ResizeGrad (microsoft_resize_grad.cc) for
// onnxruntime-training's CPU training sessions (resample_grad.training.session_options() registers it next to
// libresample_grad_ops). Kept out of libresample_grad_ops on purpose: registering a custom com.microsoft domain
// makes every session whose model does not import com.microsoft fail once the optimizer inserts a contrib node
// ("com.microsoft:FusedConv(-1) is not a registered function/op"); training models import com.microsoft, and
// resample_grad.training adds the import to the eval model.
#include <string>

#include "kernel_common.h"
#include "simd.h"

namespace rg {
TypedOps MicrosoftResizeGradOps();  // microsoft_resize_grad.cc
}  // namespace rg

extern "C" OrtStatus* RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  const OrtApi* api = api_base->GetApi(kOrtApiVersion);
  if (api == nullptr) return nullptr;  // cannot even build a status; onnxruntime < 1.17
  std::string isa_error;  // the hot loops' instruction set, chosen once (RESAMPLE_GRAD_ISA)
  if (!rg::SelectIsa(&isa_error)) return rg::ErrorStatus(api, isa_error);
  // One domain per session-options object (onnxruntime keeps the pointer); never freed.
  OrtCustomOpDomain* domain = nullptr;
  if (OrtStatus* s = ort::Get<ort::CreateCustomOpDomainFn>(api, ort::kCreateCustomOpDomain)("com.microsoft", &domain))
    return s;
  for (const OrtCustomOp* op : rg::MicrosoftResizeGradOps()) {
    if (OrtStatus* s = ort::Get<ort::CustomOpDomain_AddFn>(api, ort::kCustomOpDomain_Add)(domain, op)) return s;
  }
  return ort::Get<ort::AddCustomOpDomainFn>(api, ort::kAddCustomOpDomain)(options, domain);
}
