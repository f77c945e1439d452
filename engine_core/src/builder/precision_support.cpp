#include <kiln/error.h>
#include <kiln/precision_support.h>

#include "../backends/backend.h"
#include "../backends/backend_registry.h"

namespace kiln {

std::string precisionUnsupportedReason(const Network& network, BackendKind backend, Precision precision) {
  std::shared_ptr<const Backend> engine;
  try {
    engine = BackendRegistry::instance().get(toString(backend));
  } catch (const Error&) {
    return "";
  }
  std::string reason;
  for (const Layer& layer : network.layers()) {
    const SupportVerdict verdict = engine->supports(layer, precision);
    if (verdict.supported) return "";
    if (reason.empty()) reason = verdict.why;
  }
  return reason.empty() ? "the " + engine->name() + " backend runs no layer of this model in " + toString(precision)
                        : reason;
}

}  // namespace kiln
