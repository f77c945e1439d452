// The CUDA engine run the way an application runs it: device memory bound with setTensorAddress,
// enqueue on the application's streams, several contexts at once on their own streams and threads,
// and CUDA-graph replay, each giving the same outputs as a plain run.
#include <kiln/builder.h>
#include <kiln/onnx_importer.h>
#include <kiln/runtime.h>

#include "common/test_models.h"
#include "gpu/backend_agreement.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#ifdef KILN_TESTS_HAVE_CUDA_RUNTIME
#include <cuda_runtime.h>

using namespace kiln;
using kiln::test::ModelBuilder;
using namespace kiln::test::onnx_types;

namespace {

// y = tanh(x * w + b) * sigmoid(x) with a dynamic batch: elementwise work the CUDA backend runs.
std::shared_ptr<Engine> elementwiseEngine() {
  ModelBuilder mb;
  mb.symbolicInput("x", kFloat, {"N", "257"}).output("y");
  mb.initializer("w", test::randomFloats({257}, 1)).initializer("b", test::randomFloats({257}, 2));
  mb.node("Mul", {"x", "w"}, {"xw"}, "mul");
  mb.node("Add", {"xw", "b"}, {"z"}, "add");
  mb.node("Tanh", {"z"}, {"t"}, "tanh");
  mb.node("Sigmoid", {"x"}, {"s"}, "sigmoid");
  mb.node("Mul", {"t", "s"}, {"y"}, "gate");
  BuilderConfig config;
  config.backend = BackendKind::kCuda;
  config.strictDevice = true;
  config.optimizationLevel = 0;  // five layers: five launches to capture
  config.profiles.push_back({{{"x", ShapeRange{{1, 257}, {8, 257}, {64, 257}}}}});
  return Runtime().load(Builder().build(*OnnxImporter().importBytes(mb.bytes()), config).plan);
}

// Device buffers for one run of the engine, on `stream`.
struct DeviceRun {
  void* x = nullptr;
  void* y = nullptr;
  size_t bytes = 0;
  explicit DeviceRun(int64_t rows) : bytes(size_t(rows) * 257 * sizeof(float)) {
    EXPECT_EQ(cudaMalloc(&x, bytes), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&y, bytes), cudaSuccess);
  }
  ~DeviceRun() {
    cudaFree(x);
    cudaFree(y);
  }
  std::vector<float> run(ExecutionContext& context, const HostTensor& input, cudaStream_t stream) {
    EXPECT_EQ(cudaMemcpyAsync(x, input.rawData(), bytes, cudaMemcpyHostToDevice, stream), cudaSuccess);
    context.setInputShape("x", input.dims());
    context.setTensorAddress("x", x);
    context.setTensorAddress("y", y);
    context.enqueue(stream);
    std::vector<float> out(bytes / sizeof(float));
    EXPECT_EQ(cudaMemcpyAsync(out.data(), y, bytes, cudaMemcpyDeviceToHost, stream), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    return out;
  }
};

std::vector<float> hostRun(const Engine& engine, const HostTensor& x) {
  const HostTensor y = engine.createExecutionContext()->run({{"x", x}}).at("y");
  return std::vector<float>(y.data<float>(), y.data<float>() + y.elementCount());
}

TEST(CudaRuntime, GraphReplayGivesThePlainRunsOutputs) {
  KILN_REQUIRE_CUDA_BACKEND();
  auto engine = elementwiseEngine();
  ASSERT_TRUE(engine->report().graphCapturable());
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  auto context = engine->createExecutionContext();
  context->setGraphCapture(true);
  for (int64_t rows : {8, 8, 8, 33, 33, 1}) {  // warm-up, record, replay; new shapes record anew
    SCOPED_TRACE("rows " + std::to_string(rows));
    DeviceRun buffers(rows);
    const HostTensor x = test::randomFloats({rows, 257}, uint32_t(10 + rows));
    for (int repeat = 0; repeat < 3; ++repeat)
      EXPECT_EQ(buffers.run(*context, x, stream), hostRun(*engine, x)) << "repeat " << repeat;
  }
  cudaStreamDestroy(stream);
}

TEST(CudaRuntime, ContextsRunAtOnceOnTheirOwnStreams) {
  KILN_REQUIRE_CUDA_BACKEND();
  auto engine = elementwiseEngine();
  constexpr int kThreads = 4, kRuns = 6;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      cudaStream_t stream;
      if (cudaStreamCreate(&stream) != cudaSuccess) return void(failures[t] = "no stream");
      auto context = engine->createExecutionContext();
      context->setGraphCapture(t % 2 == 1);  // half of them replaying graphs
      for (int r = 0; r < kRuns && failures[t].empty(); ++r) {
        const int64_t rows = 1 + (t * 7 + r * 5) % 64;
        DeviceRun buffers(rows);
        const HostTensor x = test::randomFloats({rows, 257}, uint32_t(100 + t * kRuns + r));
        if (buffers.run(*context, x, stream) != hostRun(*engine, x))
          failures[t] = "thread " + std::to_string(t) + " run " + std::to_string(r);
      }
      cudaStreamDestroy(stream);
    });
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) EXPECT_EQ(failure, "");
}

}  // namespace
#endif
