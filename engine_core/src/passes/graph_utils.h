#pragma once
// Graph queries and edits shared by the passes: who produces and who reads a tensor, whether an
// intermediate may disappear, constant lookup, and the rewrites every fusion ends with.
#include <kiln/network.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::passes {

// A snapshot of the network's edges. Passes build one per sweep; edits made during the sweep do not
// update it, so a sweep only rewrites layers it has not touched yet (see Rewriter).
class GraphIndex {
 public:
  explicit GraphIndex(const Network& network);

  // Index of the layer producing `tensor`, or nullopt (graph input, constant, undefined).
  std::optional<size_t> producer(const std::string& tensor) const;
  // Layer that produces `tensor` when it is of `opType` (domain ai.onnx), else nullptr.
  const Layer* producerOfType(const std::string& tensor, const std::string& opType) const;
  // Layers reading `tensor` (each layer once, including layers whose subgraphs read it).
  const std::vector<size_t>& consumers(const std::string& tensor) const;
  bool isGraphOutput(const std::string& tensor) const { return graphOutputs_.count(tensor) != 0; }
  bool isReadBySubgraph(const std::string& tensor) const { return subgraphReads_.count(tensor) != 0; }
  // The fusion guard for an intermediate: read only by layer `consumer`, not a graph output, not
  // read implicitly by a subgraph.
  bool onlyConsumerIs(const std::string& tensor, size_t consumer) const;
  // The single layer reading `tensor` when that is the only use (same guard as onlyConsumerIs).
  std::optional<size_t> soleConsumer(const std::string& tensor) const;
  // Whether the intermediate `tensor` may vanish: every reader is in `allowed`, and no graph output
  // or subgraph needs it.
  bool usedOnlyBy(const std::string& tensor, const std::set<size_t>& allowed) const;
  const Layer& layer(size_t index) const { return network_.layers()[index]; }
  size_t indexOf(const Layer& layer) const { return size_t(&layer - network_.layers().data()); }
  const Network& network() const { return network_; }

 private:
  const Network& network_;
  std::unordered_map<std::string, size_t> producer_;
  std::unordered_map<std::string, std::vector<size_t>> consumers_;
  std::unordered_set<std::string> graphOutputs_;
  std::unordered_set<std::string> subgraphReads_;
};

// The value of `tensor` when it is a build-time constant (not a graph input that a caller could
// override), else nullptr.
const HostTensor* constantValue(const Network& network, const std::string& tensor);
// The single value of a one-element floating-point or integer constant, as double.
std::optional<double> scalarConstant(const Network& network, const std::string& tensor);
// Whether `tensor` is a one-element constant equal to `expected` within a relative `tolerance`.
bool isScalarConstant(const Network& network, const std::string& tensor, double expected, double tolerance = 1e-3);
// Runs `layer` alone on its constant inputs with the CPU reference kernels; nullopt when an input is
// not a constant, a result is not a plain tensor or the kernel cannot run it.
std::optional<std::vector<HostTensor>> evaluateOnConstants(const Network& network, const Layer& layer);
// Integer values of a constant (axes, perm as inputs), or nullopt when not constant.
std::optional<std::vector<int64_t>> constantInts(const Network& network, const std::string& tensor);

// For a binary layer with `operand` as one input, the other input's name (commutative ops only
// make sense here); nullopt when `operand` is not an input of the two-input layer.
std::optional<std::string> otherOperand(const Layer& layer, const std::string& operand);
bool isOp(const Layer& layer, const char* opType);  // ai.onnx op of that type

// The dims of `tensor` when every one is known (static shapes), else nullopt.
std::optional<std::vector<int64_t>> knownDims(const Network& network, const std::string& tensor);

// Whether both shapes are fully determined (known or named dims) and equal.
bool sameDeterminedShape(const Shape& a, const Shape& b);

// Rewires every layer input reading `from` to read `to` (graph outputs keep their names: callers
// check isGraphOutput first).
void replaceAllUses(Network& network, const std::string& from, const std::string& to);
// Removes the layers at `indices` (any order, duplicates allowed).
void eraseLayers(Network& network, const std::set<size_t>& indices);
// A tensor name not yet used in the network, derived from `base`.
std::string uniqueTensorName(const Network& network, const std::string& base);
// Union of the layers' origins in order, without duplicates.
std::vector<std::string> mergedOrigins(const Network& network, const std::vector<size_t>& layers);
// "Conv 'c1' + Relu 'r1'" for change notes.
std::string describeLayers(const Network& network, const std::vector<size_t>& layers);

// Collects non-overlapping rewrites during one sweep and applies them at the end: each replaces a
// group of layers by one new layer placed at the group's last position (producers stay before
// consumers in file order, which keeps dumps readable).
class Rewriter {
 public:
  explicit Rewriter(Network& network) : network_(network) {}
  // Whether any of `layers` was already claimed by an earlier rewrite in this sweep.
  bool claimed(const std::vector<size_t>& layers) const;
  // Replaces `layers` by `replacement` (whose origins are filled from theirs when empty).
  void replace(const std::vector<size_t>& layers, Layer replacement);
  // Removes `layer` (its outputs must have been rewired by the caller).
  void remove(size_t layer);
  // Applies everything; returns how many rewrites were made.
  size_t commit();

 private:
  Network& network_;
  std::set<size_t> claimed_;
  std::set<size_t> removed_;
  std::vector<std::pair<size_t, Layer>> placed_;
  size_t rewrites_ = 0;
};

// Runs `sweep` (which builds its own GraphIndex and Rewriter) until it changes nothing, at most
// `maxSweeps` times (each fusion enables at most a few follow-ups).
void repeatUntilStable(Network& network, const std::function<size_t(Network&)>& sweep, int maxSweeps = 8);

}  // namespace kiln::passes
