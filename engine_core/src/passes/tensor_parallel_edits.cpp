#include "tensor_parallel_edits.h"

#include "../ops/collective.h"
#include "../ops/fused.h"

#include <cstring>

namespace kiln::tensor_parallel {
namespace {

using namespace passes;

// The rank's share of `t` along `axis`: part `rank` of each group.
HostTensor rankShare(const HostTensor& t, size_t axis, const std::vector<int64_t>& groups, RankSplit split) {
  const size_t element = byteSize(t.dtype());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (size_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  std::vector<int64_t> dims = t.dims();
  dims[axis] /= split.worldSize;
  HostTensor share(t.dtype(), dims);
  const size_t rowBytes = size_t(inner) * element;
  const auto* from = static_cast<const uint8_t*>(t.rawData());
  auto* to = static_cast<uint8_t*>(share.rawData());
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offset = 0;
    for (int64_t group : groups) {
      const int64_t part = group / split.worldSize;
      const size_t bytes = size_t(part) * rowBytes;
      if (bytes) std::memcpy(to, from + size_t(o * t.dim(axis) + offset + split.rank * part) * rowBytes, bytes);
      to += bytes;
      offset += group;
    }
  }
  return share;
}

// A new constant made from tensor `old`'s value, named after it for the rank.
std::string addRankConstant(Network& network, const std::string& old, const HostTensor& value, int rank) {
  const std::string name = uniqueTensorName(network, old + "/rank" + std::to_string(rank));
  network.addConstant(name, value);
  return name;
}

Edit replaceConstantInput(size_t at, size_t input, std::function<HostTensor(const HostTensor&)> make, int rank) {
  return [=](Network& network, std::set<size_t>&) {
    const std::string old = network.layers()[at].inputs[input];
    const std::string name = addRankConstant(network, old, make(*network.tensor(old).constant), rank);
    network.layers()[at].inputs[input] = name;
  };
}

HostTensor withEntry(const HostTensor& values, int64_t k, int64_t value) {
  HostTensor copy = values.clone();
  if (copy.dtype() == DataType::kInt64)
    copy.data<int64_t>()[k] = value;
  else
    copy.data<int32_t>()[k] = int32_t(value);
  return copy;
}

}  // namespace

Edit cutConstantInput(size_t at, size_t input, size_t axis, std::vector<int64_t> groups, RankSplit split) {
  return replaceConstantInput(
      at, input, [=](const HostTensor& t) { return rankShare(t, axis, groups, split); }, split.rank);
}

Edit divideConstantInput(size_t at, size_t input, RankSplit split) {
  return replaceConstantInput(
      at, input,
      [=](const HostTensor& t) {
        std::vector<int64_t> values = t.toInt64Vector();
        for (int64_t& v : values) v /= split.worldSize;
        return HostTensor::fromVector<int64_t>({int64_t(values.size())}, values);
      },
      split.rank);
}

Edit dropInputsFrom(size_t at, size_t keep) {
  return [=](Network& network, std::set<size_t>&) { network.layers()[at].inputs.resize(keep); };
}

Edit setAttribute(size_t at, std::string key, Attribute value) {
  return [=](Network& network, std::set<size_t>&) { network.layers()[at].attributes[key] = value; };
}

std::optional<std::vector<TargetPiece>> targetPieces(const Network& network, const GraphIndex& index,
                                                     const Layer& reshape) {
  const std::string& target = reshape.inputs[1];
  if (auto values = constantInts(network, target)) return std::vector<TargetPiece>{{target, 0, values}};
  const auto concat = index.producer(target);
  if (!concat || !isOp(index.layer(*concat), "Concat")) return std::nullopt;
  std::vector<TargetPiece> pieces;
  int64_t offset = 0;
  for (const std::string& in : index.layer(*concat).inputs) {
    const Tensor* t = network.findTensor(in);
    if (!t || !t->shape.hasRank() || t->shape.rank() != 1 || !t->shape[0].isKnown()) return std::nullopt;
    pieces.push_back({in, offset, constantInts(network, in)});
    offset += t->shape[0].value();
  }
  return pieces;
}

std::optional<int64_t> entryOf(const std::vector<TargetPiece>& pieces, int64_t k) {
  for (auto p = pieces.rbegin(); p != pieces.rend(); ++p)
    if (p->offset <= k) {
      if (!p->values || k - p->offset >= int64_t(p->values->size())) return std::nullopt;
      return (*p->values)[size_t(k - p->offset)];
    }
  return std::nullopt;
}

Edit setTargetEntry(const Network& network, const GraphIndex& index, size_t at, int64_t k, int64_t value, int rank) {
  const Layer& reshape = network.layers()[at];
  if (constantInts(network, reshape.inputs[1]))
    return replaceConstantInput(
        at, 1, [=](const HostTensor& t) { return withEntry(t, k, value); }, rank);
  const auto pieces = *targetPieces(network, index, reshape);
  size_t piece = 0;
  while (piece + 1 < pieces.size() && pieces[piece + 1].offset <= k) ++piece;
  const int64_t entry = k - pieces[piece].offset;
  const size_t concat = *index.producer(reshape.inputs[1]);
  return [=](Network& net, std::set<size_t>&) {
    Layer copy = net.layers()[concat];
    const std::string old = copy.inputs[piece];
    copy.inputs[piece] = addRankConstant(net, old, withEntry(*net.tensor(old).constant, entry, value), rank);
    copy.name += "/rank" + std::to_string(rank);
    copy.outputs = {uniqueTensorName(net, copy.outputs[0] + "/rank" + std::to_string(rank))};
    net.layers()[at].inputs[1] = copy.outputs[0];
    net.addLayer(std::move(copy));
  };
}

Edit insertAllReduce(size_t at, std::optional<size_t> biasAdd, RankSplit split) {
  return [=](Network& network, std::set<size_t>& erased) {
    Layer& product = network.layers()[at];
    const std::string total = biasAdd ? network.layers()[*biasAdd].outputs[0] : product.outputs[0];
    const std::string partial = uniqueTensorName(network, total + "/partial");
    network.addTensor(partial);
    if (biasAdd && split.rank == 0) {
      network.layers()[*biasAdd].outputs[0] = partial;
    } else {
      product.outputs[0] = partial;
      if (biasAdd) erased.insert(*biasAdd);
    }
    Layer sum;
    sum.name = product.name + "/all_reduce";
    sum.domain = fused::kDomain;
    sum.opType = collective::kAllReduce;
    sum.opsetVersion = 1;
    sum.inputs = {partial};
    sum.outputs = {total};
    sum.attributes[collective::kWorldSize] = int64_t(split.worldSize);
    sum.attributes[collective::kReduction] = std::string("sum");
    sum.origins = product.origins.empty() ? std::vector<std::string>{product.name} : product.origins;
    network.addLayer(std::move(sum));
  };
}

}  // namespace kiln::tensor_parallel
