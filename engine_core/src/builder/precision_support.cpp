#include <kiln/error.h>
#include <kiln/precision_support.h>

#include "../backends/backend.h"
#include "../backends/backend_registry.h"
#include "../passes/int8_layer_form.h"

namespace kiln {

std::string precisionUnsupportedReason(const Network& network, BackendKind backend, Precision precision) {
  std::shared_ptr<const Backend> engine;
  try {
    engine = BackendRegistry::instance().get(toString(backend));
  } catch (const Error&) {
    return "";
  }
  // INT8, FP8 and FP4 run as quantized layers (kiln.QuantizedConv / QuantizedMatMul) that the
  // build makes from the Conv / MatMul / Gemm layers: ask about those forms.
  const bool quantized = precision == Precision::kINT8 || precision == Precision::kFP8 || precision == Precision::kFP4;
  std::string reason;
  for (const Layer& layer : network.layers()) {
    const auto form = quantized ? passes::int8FormOf(layer) : std::nullopt;
    if (quantized && !form) continue;
    const SupportVerdict verdict =
        engine->supports(quantized ? passes::quantizedLayerFor(layer, *form, precision) : layer, precision);
    if (verdict.supported) return "";
    if (reason.empty()) reason = verdict.why;
  }
  return reason.empty() ? "the " + engine->name() + " backend runs no layer of this model in " + toString(precision)
                        : reason;
}

}  // namespace kiln
