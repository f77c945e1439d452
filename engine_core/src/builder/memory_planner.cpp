#include "memory_planner.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <unordered_map>

namespace kiln {

bool isAliasOp(const Layer& layer) {
  static const std::set<std::string> aliasOps = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Dropout"};
  return layer.domain.empty() && aliasOps.count(layer.opType) != 0;
}

namespace {

uint64_t alignUp(uint64_t v) { return (v + 63) / 64 * 64; }

struct Buffer {
  std::vector<std::string> tensors;
  uint64_t bytes = 0;
  size_t first = SIZE_MAX, last = 0;
  bool pinned = false;  // holds a graph input/output or unknown size: stays out of the arena
  uint64_t offset = 0;
};

}  // namespace

MemoryPlan planMemory(const Network& network, const std::vector<size_t>& order,
                      const std::map<std::string, uint64_t>& tensorBytes) {
  // Union-find over tensors: alias outputs join their input's buffer.
  std::unordered_map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> find = [&](const std::string& t) -> std::string {
    auto it = parent.find(t);
    if (it == parent.end() || it->second == t) return t;
    return it->second = find(it->second);
  };
  auto join = [&](const std::string& a, const std::string& b) { parent[find(a)] = find(b); };
  for (size_t index : order) {
    const Layer& l = network.layers()[index];
    for (const auto& out : l.outputs)
      if (!out.empty()) parent.emplace(out, out);
    if (isAliasOp(l) && l.hasInput(0) && l.hasOutput(0)) {
      parent.emplace(l.inputs[0], l.inputs[0]);
      join(l.outputs[0], l.inputs[0]);
    }
  }

  std::map<std::string, Buffer> buffers;  // keyed by root tensor
  auto touch = [&](const std::string& tensor, size_t step) {
    if (tensor.empty() || !parent.count(tensor)) return;
    Buffer& b = buffers[find(tensor)];
    b.first = std::min(b.first, step);
    b.last = std::max(b.last, step);
  };
  for (size_t step = 0; step < order.size(); ++step) {
    const Layer& l = network.layers()[order[step]];
    for (const auto& in : l.inputs) touch(in, step);
    for (const auto& out : l.outputs) touch(out, step);
    for (const auto& [key, attr] : l.attributes)  // subgraphs read outer tensors implicitly
      if (auto g = attr.get<Attribute::Graph>(); g && *g)
        for (const auto& ref : (*g)->outerScopeReferences()) touch(ref, step);
  }
  MemoryPlan plan;
  for (const auto& [tensor, root] : parent) {
    (void)root;
    std::string r = find(tensor);
    Buffer& b = buffers[r];
    b.tensors.push_back(tensor);
    const Tensor* t = network.findTensor(tensor);
    auto size = tensorBytes.find(tensor);
    bool isIO = std::find(network.inputs().begin(), network.inputs().end(), tensor) != network.inputs().end() ||
                std::find(network.outputs().begin(), network.outputs().end(), tensor) != network.outputs().end();
    if (isIO || !t || t->isConstant() || size == tensorBytes.end()) b.pinned = true;
    else b.bytes = std::max(b.bytes, alignUp(size->second));
  }
  for (auto& [root, b] : buffers)
    if (!b.pinned) plan.naiveBytes += b.bytes;

  // Greedy by size: each buffer goes to the lowest offset free for its whole lifetime.
  std::vector<Buffer*> placed, pending;
  for (auto& [root, b] : buffers)
    if (!b.pinned && b.bytes > 0 && b.first != SIZE_MAX) pending.push_back(&b);
  std::sort(pending.begin(), pending.end(), [](const Buffer* a, const Buffer* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
  for (Buffer* b : pending) {
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const Buffer* p : placed)
      if (p->first <= b->last && b->first <= p->last) busy.emplace_back(p->offset, p->offset + p->bytes);
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto& [start, end] : busy) {
      if (offset + b->bytes <= start) break;
      offset = std::max(offset, end);
    }
    b->offset = offset;
    placed.push_back(b);
    plan.arenaBytes = std::max(plan.arenaBytes, offset + b->bytes);
  }
  for (const Buffer* b : placed)
    for (const auto& t : b->tensors) plan.assignments.push_back({t, b->offset, b->bytes});
  std::sort(plan.assignments.begin(), plan.assignments.end(),
            [](const MemoryAssignment& a, const MemoryAssignment& b) { return a.tensor < b.tensor; });
  return plan;
}

}  // namespace kiln
