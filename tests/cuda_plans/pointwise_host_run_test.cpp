// The generated pointwise kernels run on the host against the CPU reference, without a GPU: the
// module's source (pointwise_codegen.cpp) is compiled by this build's C++ compiler into a shared
// library, with __global__ / __device__ and the thread indices defined away, then each kernel the
// launch plan (pointwise_launch.cpp) picks runs block by block, thread by thread (a small grid,
// so the grid-stride loops and the packed kernel's tail run too). This checks the per-element math
// against the CPU kernels, the loads and stores of every storage type, the packing, the index math
// and the parameter block's layout; the GPU tests (tests/gpu/pointwise_nvrtc_agreement_test.cpp)
// then only confirm what NVRTC and the device do.
#include "backends/cuda/ops/pointwise_codegen.h"
#include "backends/cuda/ops/pointwise_launch.h"
#include "cuda_plans/pointwise_bodies.h"

#include <kiln/reference_executor.h>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

using namespace kiln;
using namespace kiln::cuda;
using test::BodyBuilder;

namespace {

// Ahead of the generated source: CUDA's spellings on the host.
constexpr const char* kHostPrelude = R"(#include <math.h>
#include <string.h>
#define __device__
#define __global__
#define __grid_constant__
#define __forceinline__ inline
struct kp_uint3 { unsigned x, y, z; };
static kp_uint3 threadIdx, blockIdx, blockDim, gridDim;
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
extern "C" void kp_set_thread(unsigned block, unsigned thread, unsigned blocks, unsigned threads) {
  blockIdx.x = block; threadIdx.x = thread; gridDim.x = blocks; blockDim.x = threads;
}
)";

constexpr const char* kHostEntryPoints = R"(
extern "C" void kp_run_packed(const void* p) { kiln_pointwise_packed(*(const KpParams*)p); }
extern "C" void kp_run_general32(const void* p) { kiln_pointwise_general32(*(const KpParams*)p); }
extern "C" void kp_run_general64(const void* p) { kiln_pointwise_general64(*(const KpParams*)p); }
)";

class HostModule {
 public:
  explicit HostModule(const std::string& source) {
    static int serial = 0;
    const std::string stem =
        testing::TempDir() + "kiln_pointwise_host_" + std::to_string(::getpid()) + "_" + std::to_string(serial++);
    std::ofstream(stem + ".cpp") << kHostPrelude << source << kHostEntryPoints;
    const std::string command =
        std::string(KILN_HOST_CXX) + " -std=c++17 -O1 -w -shared -fPIC -o " + stem + ".so " + stem + ".cpp";
    if (std::system(command.c_str()) != 0) {
      ADD_FAILURE() << "could not compile the generated source on the host: " << command;
      return;
    }
    handle_ = dlopen((stem + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    std::remove((stem + ".cpp").c_str());
    std::remove((stem + ".so").c_str());
    if (!handle_) {
      ADD_FAILURE() << dlerror();
      return;
    }
    setThread_ = reinterpret_cast<void (*)(unsigned, unsigned, unsigned, unsigned)>(dlsym(handle_, "kp_set_thread"));
    for (const char* name : {"kp_run_packed", "kp_run_general32", "kp_run_general64"})
      kernels_.push_back(reinterpret_cast<void (*)(const void*)>(dlsym(handle_, name)));
  }
  ~HostModule() {
    if (handle_) dlclose(handle_);
  }
  bool loaded() const { return handle_ != nullptr; }

  void launch(const PointwiseLaunch& launch) const {
    const std::vector<int64_t> words = packPointwiseParams(launch.params);
    constexpr unsigned kThreads = 32, kMaxBlocks = 3;
    const unsigned blocks =
        unsigned(std::clamp<int64_t>((launch.threads + kThreads - 1) / kThreads, 1, int64_t(kMaxBlocks)));
    for (unsigned b = 0; b < blocks; ++b)
      for (unsigned t = 0; t < kThreads; ++t) {
        setThread_(b, t, blocks, kThreads);
        kernels_[size_t(launch.kernel)](words.data());
      }
  }

 private:
  void* handle_ = nullptr;
  void (*setThread_)(unsigned, unsigned, unsigned, unsigned) = nullptr;
  std::vector<void (*)(const void*)> kernels_;
};

// Random values of `dims` in `type` (never zero; bools both ways).
HostTensor randomTensor(DataType type, const std::vector<int64_t>& dims, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> magnitude(0.05f, 2.0f);
  HostTensor wide(DataType::kFloat32, dims);
  float* v = wide.data<float>();
  for (int64_t i = 0; i < wide.elementCount(); ++i) {
    const float m = magnitude(rng);
    v[i] = (rng() & 1) ? m : -m;
    if (type == DataType::kBool) v[i] = v[i] > 0 ? 1.0f : 0.0f;
  }
  if (type == DataType::kBool) {
    HostTensor b(DataType::kBool, dims);
    for (int64_t i = 0; i < b.elementCount(); ++i) static_cast<uint8_t*>(b.rawData())[i] = v[i] != 0;
    return b;
  }
  return type == DataType::kFloat32 ? wide : narrowInPlace(wide, type);
}

// A 4-D tensor's bytes laid out [N, H, W, C] from [N, C, H, W], or back.
HostTensor relaid(const HostTensor& t, bool toChannelsLast) {
  const auto& d = t.dims();
  HostTensor out(t.dtype(), d);
  const size_t bytes = size_t(t.byteSize() / uint64_t(t.elementCount()));
  const auto* from = static_cast<const uint8_t*>(t.rawData());
  auto* to = static_cast<uint8_t*>(out.rawData());
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w) {
          const size_t linear = size_t(((n * d[1] + c) * d[2] + h) * d[3] + w) * bytes;
          const size_t channelsLast = size_t(((n * d[2] + h) * d[3] + w) * d[1] + c) * bytes;
          std::memcpy(to + (toChannelsLast ? channelsLast : linear), from + (toChannelsLast ? linear : channelsLast),
                      bytes);
        }
  return out;
}

double nmseBound(DataType storage) {
  return storage == DataType::kFloat32 ? 1e-10 : storage == DataType::kFloat16 ? 1e-5 : 1e-4;
}

// Runs the generated kernel of `builder`'s body typed for `storage` on random inputs of that type
// (4-D inputs and the output channels-last where asked) and compares it with the CPU reference
// running the float32 body on the same values (its intermediates in float32 as the kernel's).
void expectKernelMatchesReference(const BodyBuilder& builder, DataType storage, bool channelsLastInputs,
                                  bool channelsLastOutput, PointwiseKernelChoice expected, bool checkChoice = true) {
  const Network body = builder.done("out", storage), reference = builder.done("out");
  const PointwiseCodegen generated = generatePointwiseKernel(body);
  ASSERT_TRUE(generated.kernel) << generated.refusal;
  const PointwiseKernel& kernel = *generated.kernel;
  HostModule module(kernel.source);
  ASSERT_TRUE(module.loaded());

  std::vector<HostTensor> values;      // each body input, as the kernel reads it
  std::vector<Value> referenceInputs;  // the same values widened to the reference's float32
  std::vector<HostTensor> stored;      // each kernel input laid out as the kernel reads it
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    const Tensor& t = body.tensor(body.inputs()[i]);
    values.push_back(randomTensor(t.dtype, t.shape.knownDims(), 700 + uint32_t(i)));
    if (t.dtype == DataType::kBool) {
      referenceInputs.emplace_back(values.back());
      continue;
    }
    HostTensor wide(DataType::kFloat32, values.back().dims());
    const std::vector<double> v = values.back().toDoubleVector();
    for (size_t k = 0; k < v.size(); ++k) wide.data<float>()[k] = float(v[k]);
    referenceInputs.emplace_back(std::move(wide));
  }
  const Tensor& out = body.tensor(body.outputs()[0]);
  const HostTensor want =
      executeGraph(reference, referenceInputs, [](const std::string&) -> const Value* { return nullptr; }).at(0).tensor;

  std::vector<PointwiseOperand> operands;
  for (const PointwiseKernelInput& in : kernel.inputs) {
    if (in.constant) {
      operands.push_back({in.constant->dims(), false, in.constant->rawData(), in.storage});
      continue;
    }
    const HostTensor& value = values.at(*in.layerInput);
    const bool nhwc = channelsLastInputs && value.dims().size() == 4;
    stored.push_back(nhwc ? relaid(value, true) : value);
    operands.push_back({value.dims(), nhwc, stored.back().rawData(), in.storage});
  }
  const bool nhwcOut = channelsLastOutput && want.dims().size() == 4;
  HostTensor got(out.dtype, want.dims());
  const PointwiseLaunch launch =
      planPointwiseLaunch(operands, {want.dims(), nhwcOut, got.rawData(), kernel.outputStorage}, kernel.pack, "body");
  if (checkChoice) EXPECT_EQ(launch.kernel, expected);
  module.launch(launch);
  if (nhwcOut) got = relaid(got, false);

  const std::vector<double> g = got.toDoubleVector(), w = want.toDoubleVector();
  ASSERT_EQ(g.size(), w.size());
  double error = 0, norm = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_EQ(std::isnan(g[i]), std::isnan(w[i])) << "element " << i << ": " << g[i] << " vs " << w[i];
    if (std::isnan(w[i])) continue;
    error += (g[i] - w[i]) * (g[i] - w[i]);
    norm += w[i] * w[i];
  }
  EXPECT_LE(error / std::max(norm, 1e-12 * double(w.size())), nmseBound(out.dtype)) << kernel.source;
}

constexpr DataType kStorages[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};

TEST(PointwiseHostRun, SwishGeluTanhAndHardSwish) {
  for (DataType storage : kStorages) {
    SCOPED_TRACE(toString(storage));
    const BodyBuilder body = test::swishGeluHardSwishBody(3, 41);
    // y and the bias vary along the last axis: "per channel" of a 2-D output (41: not whole packs).
    expectKernelMatchesReference(body, storage, false, false, PointwiseKernelChoice::kGeneral32);
  }
}

TEST(PointwiseHostRun, ActivationsDenseAtOddSizes) {
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{1}, {7}, {1023}, {33, 17, 5, 3}})
    for (DataType storage : kStorages) {
      SCOPED_TRACE(dimsToString(dims) + " " + std::string(toString(storage)));
      const BodyBuilder body = BodyBuilder()
                                   .input("x", dims)
                                   .constant("one", HostTensor::scalar<float>(1.0f))
                                   .constant("lo", HostTensor::scalar<float>(-0.6f))
                                   .constant("hi", HostTensor::scalar<float>(0.9f))
                                   .layer("Abs", {"x"}, "a")
                                   .layer("Add", {"a", "one"}, "a1")
                                   .layer("Log", {"a1"}, "l")
                                   .layer("Sqrt", {"a1"}, "q")
                                   .layer("Sub", {"l", "q"}, "d")
                                   .layer("LeakyRelu", {"d"}, "lr", {{"alpha", 0.2f}})
                                   .layer("Elu", {"lr"}, "el")
                                   .layer("Selu", {"el"}, "se")
                                   .layer("Celu", {"x"}, "ce", {{"alpha", 1.5f}})
                                   .layer("Add", {"se", "ce"}, "sc")
                                   .layer("Softplus", {"sc"}, "sp")
                                   .layer("Erf", {"sp"}, "er")
                                   .layer("Neg", {"er"}, "ng")
                                   .layer("Softsign", {"ng"}, "ss")
                                   .layer("HardSigmoid", {"x"}, "hsg", {{"alpha", 0.3f}, {"beta", 0.4f}})
                                   .layer("Mul", {"ss", "hsg"}, "m")
                                   .layer("Tanh", {"m"}, "t")
                                   .layer("Exp", {"t"}, "e")
                                   .layer("Reciprocal", {"e"}, "r")
                                   .layer("Gelu", {"r"}, "g", {}, 20)
                                   .layer("Clip", {"g", "lo", "hi"}, "out");
      expectKernelMatchesReference(body, storage, false, false, PointwiseKernelChoice::kPacked);
    }
}

TEST(PointwiseHostRun, BroadcastsPowAndVariadics) {
  for (DataType storage : kStorages) {
    SCOPED_TRACE(toString(storage));
    const BodyBuilder body = BodyBuilder()
                                 .input("a", {3, 1, 6})
                                 .input("b", {1, 5, 1})
                                 .constant("one", HostTensor::scalar<float>(1.0f))
                                 .constant("two", HostTensor::scalar<float>(2.0f))
                                 .constant("row", test::ramp(6))
                                 .layer("Sub", {"a", "b"}, "d")
                                 .layer("Pow", {"d", "two"}, "d2")
                                 .layer("Abs", {"b"}, "ab")
                                 .layer("Add", {"ab", "one"}, "pb")
                                 .layer("Pow", {"pb", "a"}, "p")
                                 .layer("Max", {"d2", "p", "a"}, "mx")
                                 .layer("Min", {"mx", "row"}, "mn")
                                 .layer("Div", {"mn", "pb"}, "q")
                                 .layer("Mean", {"q", "d", "row"}, "mean")
                                 .layer("Sum", {"mean", "b"}, "out");
    expectKernelMatchesReference(body, storage, false, false, PointwiseKernelChoice::kGeneral32);
  }
}

TEST(PointwiseHostRun, BoolsWhereAndCasts) {
  for (DataType storage : kStorages) {
    SCOPED_TRACE(toString(storage));
    const BodyBuilder body = BodyBuilder()
                                 .input("a", {5, 7})
                                 .input("b", {7})
                                 .input("flag", {5, 1}, DataType::kBool)
                                 .layer("Less", {"a", "b"}, "less")
                                 .layer("Not", {"less"}, "not")
                                 .layer("Xor", {"not", "flag"}, "x")
                                 .layer("Cast", {"x"}, "mask", {{"to", int64_t(1)}})
                                 .layer("Mul", {"mask", "a"}, "kept")
                                 .layer("GreaterOrEqual", {"kept", "b"}, "ge")
                                 .layer("Where", {"ge", "kept", "b"}, "w")
                                 .layer("Cast", {"w"}, "h", {{"to", int64_t(10)}})  // float16, and back
                                 .layer("Cast", {"h"}, "out", {{"to", int64_t(1)}});
    expectKernelMatchesReference(body, storage, false, false, PointwiseKernelChoice::kGeneral32);
  }
}

// A chain whose output is bool (stored as bytes 0 / 1), with IsNaN / IsInf / And / Or in it.
TEST(PointwiseHostRun, BoolOutput) {
  for (DataType storage : kStorages) {
    SCOPED_TRACE(toString(storage));
    const BodyBuilder body = BodyBuilder()
                                 .input("a", {3, 1, 9})
                                 .input("b", {4, 9})
                                 .layer("Greater", {"a", "b"}, "gt")
                                 .layer("IsNaN", {"a"}, "nan")
                                 .layer("IsInf", {"b"}, "inf")
                                 .layer("Or", {"nan", "inf"}, "odd")
                                 .layer("Not", {"odd"}, "normal")
                                 .layer("And", {"gt", "normal"}, "out");
    expectKernelMatchesReference(body, storage, false, false, PointwiseKernelChoice::kGeneral32);
  }
}

// Rounding, sign and periodic functions in fp32, where host and CPU agree to the bit.
TEST(PointwiseHostRun, RoundingAndTrigonometry) {
  const BodyBuilder body = BodyBuilder()
                               .input("x", {4, 3, 5})
                               .input("slope", {3, 1})
                               .constant("three", HostTensor::scalar<float>(3.0f))
                               .layer("Mul", {"x", "three"}, "x3")
                               .layer("Floor", {"x3"}, "f")
                               .layer("Ceil", {"x3"}, "c")
                               .layer("Round", {"x3"}, "r")
                               .layer("Sign", {"x"}, "s")
                               .layer("Sum", {"f", "c", "r", "s"}, "fcrs")
                               .layer("Sin", {"fcrs"}, "sn")
                               .layer("Cos", {"x3"}, "cs")
                               .layer("PRelu", {"sn", "slope"}, "pr")
                               .layer("ThresholdedRelu", {"cs"}, "tr", {{"alpha", 0.1f}})
                               .layer("Add", {"pr", "tr"}, "out");
  expectKernelMatchesReference(body, DataType::kFloat32, false, false, PointwiseKernelChoice::kGeneral32);
}

// Squeeze-and-excitation over a channels-last map: x * sigmoid(s) + x, the scale [N, C, 1, 1].
TEST(PointwiseHostRun, ChannelsLastPerChannelScale) {
  struct Layouts {
    bool in, out;
    int64_t channels;
    PointwiseKernelChoice packedFp16;  // fp16 packs are 8 channels
  };
  for (const Layouts& l : {Layouts{true, true, 16, PointwiseKernelChoice::kPacked},
                           Layouts{true, true, 12, PointwiseKernelChoice::kGeneral32},
                           Layouts{true, false, 16, PointwiseKernelChoice::kGeneral32},
                           Layouts{false, true, 16, PointwiseKernelChoice::kGeneral32}})
    for (DataType storage : kStorages) {
      SCOPED_TRACE(std::string(l.in ? "nhwc" : "nchw") + " -> " + (l.out ? "nhwc " : "nchw ") +
                   std::to_string(l.channels) + " " + std::string(toString(storage)));
      const BodyBuilder body = BodyBuilder()
                                   .input("x", {2, l.channels, 3, 5})
                                   .input("s", {2, l.channels, 1, 1})
                                   .layer("Sigmoid", {"s"}, "g")
                                   .layer("Mul", {"x", "g"}, "m")
                                   .layer("Add", {"m", "x"}, "out");
      expectKernelMatchesReference(body, storage, l.in, l.out, l.packedFp16, storage != DataType::kFloat32);
    }
}

}  // namespace
