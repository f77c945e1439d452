#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// One dimension of a tensor shape: a known size, a named symbol (ONNX dim_param, e.g. "batch"),
// or unknown.
class Dim {
 public:
  Dim() = default;
  Dim(int64_t value) : value_(value) {}  // NOLINT: implicit so shapes read like {1, 3, 224, 224}
  static Dim symbol(std::string name) {
    Dim d;
    d.symbol_ = std::move(name);
    return d;
  }
  static Dim unknown() { return Dim(); }

  bool isKnown() const { return value_ >= 0; }
  bool isSymbol() const { return value_ < 0 && !symbol_.empty(); }
  int64_t value() const { return value_; }  // -1 when not known
  const std::string& symbolName() const { return symbol_; }
  std::string toString() const;  // "224", "batch" or "?"

  bool operator==(const Dim& other) const {
    return value_ == other.value_ && (value_ >= 0 || symbol_ == other.symbol_);
  }

 private:
  int64_t value_ = -1;
  std::string symbol_;
};

// A tensor shape whose rank may itself be unknown (e.g. the output of a Reshape fed at run time).
class Shape {
 public:
  Shape() = default;  // unknown rank
  Shape(std::initializer_list<Dim> dims) : dims_(dims), rankKnown_(true) {}
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)), rankKnown_(true) {}
  static Shape fromDims(const std::vector<int64_t>& dims);
  static Shape unknownRank() { return Shape(); }
  static Shape ofRank(size_t rank) { return Shape(std::vector<Dim>(rank)); }

  bool hasRank() const { return rankKnown_; }
  size_t rank() const { return dims_.size(); }
  const Dim& operator[](size_t i) const { return dims_[i]; }
  Dim& operator[](size_t i) { return dims_[i]; }
  const std::vector<Dim>& dims() const { return dims_; }
  bool isFullyKnown() const;
  // Element count when every dimension is known.
  std::optional<int64_t> elementCount() const;
  // Known dims as int64 (throws kiln::Error when some are not known).
  std::vector<int64_t> knownDims() const;
  std::string toString() const;  // "[1,3,224,224]", "[batch,3,?,?]", "[*]" for unknown rank

  bool operator==(const Shape& other) const {
    return rankKnown_ == other.rankKnown_ && dims_ == other.dims_;
  }

 private:
  std::vector<Dim> dims_;
  bool rankKnown_ = false;
};

std::string dimsToString(const std::vector<int64_t>& dims);  // "1x3x224x224"
int64_t elementCount(const std::vector<int64_t>& dims);

}  // namespace kiln
