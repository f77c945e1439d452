#include "builder/memory_planner.h"

#include <gtest/gtest.h>

using namespace kiln;

namespace {

// A chain x -> a -> b -> c -> y of unary layers.
Network chain(const std::vector<std::string>& ops) {
  Network net;
  net.addInput("x", DataType::kFloat32, Shape({1024}));
  std::string prev = "x";
  for (size_t i = 0; i < ops.size(); ++i) {
    Layer l;
    l.name = "l" + std::to_string(i);
    l.opType = ops[i];
    l.inputs = {prev};
    l.outputs = {i + 1 == ops.size() ? "y" : "t" + std::to_string(i)};
    prev = l.outputs[0];
    net.addLayer(l);
  }
  net.markOutput("y");
  return net;
}

// Every layer launched, every tensor float32 in host memory, linear.
MemoryPlan planHost(const Network& net, const std::map<std::string, uint64_t>& bytes) {
  std::vector<PlannedLayer> layers(net.layers().size());
  std::map<std::string, PlannedTensor> tensors;
  for (const auto& name : net.tensorNames()) tensors[name] = {DataType::kFloat32, TensorFormat::kLinear, MemorySpace::kHost, name, false};
  auto plans = planMemory(net, layers, tensors, bytes);
  return plans.empty() ? MemoryPlan{} : plans.at(0);
}

}  // namespace

TEST(MemoryPlanner, ChainReusesBuffersByLiveness) {
  Network net = chain({"Relu", "Relu", "Relu", "Relu", "Relu"});
  std::map<std::string, uint64_t> bytes;
  for (int i = 0; i < 4; ++i) bytes["t" + std::to_string(i)] = 4096;
  auto plan = planHost(net, bytes);
  EXPECT_EQ(plan.naiveBytes, 4u * 4096);
  EXPECT_EQ(plan.arenaBytes, 2u * 4096);  // a chain needs two live buffers at a time
  // Tensors alive at the same step never overlap.
  std::map<std::string, MemoryAssignment> at;
  for (const auto& a : plan.assignments) at[a.tensor] = a;
  for (int i = 0; i + 1 < 4; ++i)
    EXPECT_NE(at["t" + std::to_string(i)].offset, at["t" + std::to_string(i + 1)].offset);
}

TEST(MemoryPlanner, AliasOutputsShareTheirInputsBufferAndLifetime) {
  Network net = chain({"Relu", "Reshape", "Relu", "Relu"});
  std::map<std::string, uint64_t> bytes{{"t0", 4096}, {"t1", 4096}, {"t2", 4096}};
  auto plan = planHost(net, bytes);
  std::map<std::string, MemoryAssignment> at;
  for (const auto& a : plan.assignments) at[a.tensor] = a;
  EXPECT_EQ(at["t0"].offset, at["t1"].offset);  // Reshape's output is a view of its input
  EXPECT_NE(at["t1"].offset, at["t2"].offset);  // t1 is read while t2 is written
}

TEST(MemoryPlanner, GraphOutputsAndUnknownSizesStayOutOfTheArena) {
  Network net = chain({"Relu", "Relu"});
  auto plan = planHost(net, {});
  EXPECT_EQ(plan.arenaBytes, 0u);
  EXPECT_TRUE(plan.assignments.empty());
}
