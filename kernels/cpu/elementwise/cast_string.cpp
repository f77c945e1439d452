// Cast between strings and numbers (see cast.h for the formats).
#include "cast.h"

#include "element_types.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string_view>
#include <type_traits>

namespace kiln::kernels {
namespace {

template <class F>
std::string floatToString(F v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);  // shortest round-trip form
  return std::string(buffer, end);
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

[[noreturn]] void notANumber(const std::string& text, const char* type) {
  throw std::invalid_argument("the string '" + text + "' is not " + type);
}

// Parses the whole of `text` (surrounding spaces allowed, one leading '+').
template <class N>
bool parseNumber(std::string_view text, N& value) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

template <class T>
T parseElement(const std::string& text) {
  if constexpr (std::is_same_v<T, bool>) {
    if (equalsIgnoringCase(text, "true")) return true;
    if (equalsIgnoringCase(text, "false")) return false;
    double number;
    if (!parseNumber(text, number)) notANumber(text, "a boolean (true, false or a number)");
    return number != 0;
  } else if constexpr (std::is_integral_v<T>) {
    T number;
    if (parseNumber(text, number)) return number;
    double approximate;  // "3.0" or "1e3" still name an integer
    if (!parseNumber(text, approximate) || approximate != std::trunc(approximate)) notANumber(text, "an integer");
    return T(approximate);
  } else {
    using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
    F number;
    if (!parseNumber(text, number)) notANumber(text, "a number");
    return T(number);
  }
}

}  // namespace

template <class T>
void castToString(const T* in, std::string* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>) out[i] = in[i] ? "True" : "False";
    else if constexpr (std::is_integral_v<T>) out[i] = std::to_string(in[i]);
    else if constexpr (std::is_same_v<T, double>) out[i] = floatToString(in[i]);
    else out[i] = floatToString(float(in[i]));
  }
}

template <class T>
void castFromString(const std::string* in, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = parseElement<T>(in[i]);
}

#define KILN_INSTANTIATE_STRING_CASTS(T)                               \
  template void castToString<T>(const T*, std::string*, int64_t); \
  template void castFromString<T>(const std::string*, T*, int64_t);
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_STRING_CASTS)
KILN_INSTANTIATE_STRING_CASTS(bool)
KILN_INSTANTIATE_STRING_CASTS(Float8E4M3)
KILN_INSTANTIATE_STRING_CASTS(Float8E5M2)
#undef KILN_INSTANTIATE_STRING_CASTS

}  // namespace kiln::kernels
