#include "memory_planner.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

namespace kiln {

bool isAliasOp(const Layer& layer) {
  static const std::set<std::string> aliasOps = {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Dropout"};
  return layer.domain.empty() && aliasOps.count(layer.opType) != 0;
}

namespace {

uint64_t alignUp(uint64_t v) { return (v + 255) / 256 * 256; }  // device kernels like 256-byte alignment

struct Buffer {
  std::vector<std::string> tensors;
  uint64_t bytes = 0;
  size_t first = SIZE_MAX, last = 0;
  MemorySpace space = MemorySpace::kHost;
  uint64_t offset = 0;
};

// Greedy by size: each buffer goes to the lowest offset free for its whole lifetime.
MemoryPlan placeBuffers(MemorySpace space, std::vector<Buffer*> pending) {
  MemoryPlan plan;
  plan.space = space;
  for (const Buffer* b : pending) plan.naiveBytes += b->bytes;
  std::sort(pending.begin(), pending.end(), [](const Buffer* a, const Buffer* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
  std::vector<Buffer*> placed;
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

}  // namespace

std::vector<MemoryPlan> planMemory(const Network& network, const std::vector<PlannedLayer>& layers,
                                   const std::map<std::string, PlannedTensor>& tensors,
                                   const std::map<std::string, uint64_t>& tensorBytes) {
  const auto& inputs = network.inputs();
  const auto& outputs = network.outputs();
  // The tensors the arenas hold: made by launched layers, sized, neither graph I/O nor host objects.
  std::set<std::string> inArena;
  for (size_t i = 0; i < network.layers().size(); ++i) {
    if (layers[i].phase != LayerPhase::kLaunch) continue;
    for (const auto& out : network.layers()[i].outputs) {
      if (out.empty() || !tensorBytes.count(out) || !tensors.count(out)) continue;
      const Tensor& t = network.tensor(out);
      if (t.kind != ValueKind::kTensor || t.dtype == DataType::kString) continue;
      if (std::find(inputs.begin(), inputs.end(), out) != inputs.end() ||
          std::find(outputs.begin(), outputs.end(), out) != outputs.end())
        continue;
      inArena.insert(out);
    }
  }

  // Union-find over tensors: an alias op's output joins its input's buffer when both live alike.
  std::unordered_map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> find = [&](const std::string& t) -> std::string {
    auto it = parent.find(t);
    if (it == parent.end() || it->second == t) return t;
    return it->second = find(it->second);
  };
  for (const auto& t : inArena) parent[t] = t;
  for (const Layer& l : network.layers()) {
    if (!isAliasOp(l) || !l.hasInput(0) || !l.hasOutput(0)) continue;
    const std::string &in = l.inputs[0], &out = l.outputs[0];
    if (!inArena.count(in) || !inArena.count(out)) continue;
    const PlannedTensor &a = tensors.at(in), &b = tensors.at(out);
    if (a.space == b.space && a.storage == b.storage && a.format == b.format) parent[find(out)] = find(in);
  }

  std::map<std::string, Buffer> buffers;  // keyed by root tensor
  auto touch = [&](const std::string& tensor, size_t step) {
    if (tensor.empty() || !parent.count(tensor)) return;
    Buffer& b = buffers[find(tensor)];
    b.first = std::min(b.first, step);
    b.last = std::max(b.last, step);
  };
  for (size_t step = 0; step < network.layers().size(); ++step) {
    const Layer& l = network.layers()[step];
    for (const auto& in : l.inputs) touch(in, step);
    for (const auto& out : l.outputs) touch(out, step);
    for (const auto& ref : layers[step].implicitInputs) touch(ref, step);  // read by subgraph bodies
  }
  for (const auto& t : inArena) {
    Buffer& b = buffers[find(t)];
    b.tensors.push_back(t);
    b.space = tensors.at(t).space;
    b.bytes = std::max(b.bytes, alignUp(tensorBytes.at(t)));
  }
  std::map<MemorySpace, std::vector<Buffer*>> bySpace;
  for (auto& [root, b] : buffers)
    if (b.bytes > 0 && b.first != SIZE_MAX) bySpace[b.space].push_back(&b);
  std::vector<MemoryPlan> plans;
  for (auto& [space, pending] : bySpace) plans.push_back(placeBuffers(space, pending));
  return plans;
}

}  // namespace kiln
