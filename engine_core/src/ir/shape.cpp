#include <kiln/error.h>
#include <kiln/shape.h>

namespace kiln {

std::string Dim::toString() const {
  if (isKnown()) return std::to_string(value_);
  return symbol_.empty() ? "?" : symbol_;
}

Shape Shape::fromDims(const std::vector<int64_t>& dims) {
  std::vector<Dim> out;
  out.reserve(dims.size());
  for (int64_t d : dims) out.emplace_back(d);
  return Shape(std::move(out));
}

bool Shape::isFullyKnown() const {
  if (!rankKnown_) return false;
  for (const Dim& d : dims_)
    if (!d.isKnown()) return false;
  return true;
}

std::optional<int64_t> Shape::elementCount() const {
  if (!isFullyKnown()) return std::nullopt;
  int64_t n = 1;
  for (const Dim& d : dims_) n *= d.value();
  return n;
}

std::vector<int64_t> Shape::knownDims() const {
  if (!isFullyKnown())
    throw Error(ErrorCode::kInvalidArgument, "shape " + toString() + " has dimensions that are not known yet");
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const Dim& d : dims_) out.push_back(d.value());
  return out;
}

std::string Shape::toString() const {
  if (!rankKnown_) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i].toString();
  }
  return s + "]";
}

std::string dimsToString(const std::vector<int64_t>& dims) {
  if (dims.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += "x";
    s += std::to_string(dims[i]);
  }
  return s;
}

int64_t elementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace kiln
