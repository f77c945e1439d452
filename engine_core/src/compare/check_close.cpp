#include <kiln/compare.h>
#include <kiln/shape.h>

#include <cmath>
#include <sstream>

namespace kiln {

std::string checkClose(const HostTensor& actual, const HostTensor& expected, double rtol, double atol) {
  if (actual.dtype() != expected.dtype())
    return "dtype " + std::string(toString(actual.dtype())) + ", expected " + std::string(toString(expected.dtype()));
  if (actual.dims() != expected.dims())
    return "shape " + dimsToString(actual.dims()) + ", expected " + dimsToString(expected.dims());
  int64_t n = actual.elementCount();
  if (actual.dtype() == DataType::kString) {
    const auto* a = actual.data<std::string>();
    const auto* e = expected.data<std::string>();
    for (int64_t i = 0; i < n; ++i)
      if (a[i] != e[i]) return "element " + std::to_string(i) + " is '" + a[i] + "', expected '" + e[i] + "'";
    return "";
  }
  if (!isFloatingPoint(actual.dtype())) {
    auto a = actual.toInt64Vector();
    auto e = expected.toInt64Vector();
    for (int64_t i = 0; i < n; ++i)
      if (a[i] != e[i])
        return "element " + std::to_string(i) + " is " + std::to_string(a[i]) + ", expected " + std::to_string(e[i]);
    return "";
  }
  auto a = actual.toDoubleVector();
  auto e = expected.toDoubleVector();
  int64_t bad = 0, firstBad = -1;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (std::isnan(e[i])) ok = std::isnan(a[i]);
    else if (std::isinf(e[i])) ok = a[i] == e[i];
    else ok = !std::isnan(a[i]) && std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i]);
    if (!ok) {
      if (firstBad < 0) firstBad = i;
      ++bad;
      if (!std::isnan(a[i])) worst = std::max(worst, std::fabs(a[i] - e[i]));
    }
  }
  if (bad == 0) return "";
  std::ostringstream ss;
  ss.precision(7);
  ss << bad << " of " << n << " elements differ (first at " << firstBad << ": " << a[size_t(firstBad)]
     << " vs expected " << e[size_t(firstBad)] << "; max abs error " << worst << ")";
  return ss.str();
}

std::string checkClose(const Value& actual, const Value& expected, double rtol, double atol) {
  if (actual.isSequence() != expected.isSequence())
    return "got a " + std::string(toString(actual.kind)) + ", expected a " + std::string(toString(expected.kind));
  if (actual.hasElement != expected.hasElement)
    return actual.hasElement ? "optional has a value, expected none" : "optional is empty, expected a value";
  if (!expected.hasElement) return "";
  if (!expected.isSequence()) return checkClose(actual.tensor, expected.tensor, rtol, atol);
  if (actual.sequence.size() != expected.sequence.size())
    return "sequence has " + std::to_string(actual.sequence.size()) + " tensors, expected " +
           std::to_string(expected.sequence.size());
  for (size_t i = 0; i < expected.sequence.size(); ++i) {
    std::string why = checkClose(actual.sequence[i], expected.sequence[i], rtol, atol);
    if (!why.empty()) return "sequence item " + std::to_string(i) + ": " + why;
  }
  return "";
}

}  // namespace kiln
