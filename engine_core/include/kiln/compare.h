#pragma once
// Comparing results: the element-wise closeness check used by conformance tests and `kiln compare`.
#include <kiln/host_tensor.h>

#include <string>

namespace kiln {

// "" when `actual` matches `expected`: same kind, dtype and shape; floats within
// |a - e| <= atol + rtol * |e| with NaN only where NaN is expected and infinities matching;
// integers, bools and strings exactly. Otherwise a one-line reason naming the first mismatch.
std::string checkClose(const Value& actual, const Value& expected, double rtol, double atol);
std::string checkClose(const HostTensor& actual, const HostTensor& expected, double rtol, double atol);

}  // namespace kiln
