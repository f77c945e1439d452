#pragma once
// Whether a backend can run any layer of a network in a precision, asked before building (Kiln
// Studio shows a precision the backend refuses disabled, with the reason).
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <string>

namespace kiln {

// Empty when `backend` can run at least one of `network`'s layers in `precision` (or the
// backend cannot be had here: backendUnavailableReason says so); else the reason the backend gives
// for the first layer, e.g. "the CPU backend has no fp8 kernels".
std::string precisionUnsupportedReason(const Network& network, BackendKind backend, Precision precision);

}  // namespace kiln
