#pragma once
// Building engines from the real models through the public API and checking them against Kiln's
// reference executor (the ground truth every backend is held to).
#include <kiln/builder_config.h>
#include <kiln/host_tensor.h>
#include <kiln/network.h>
#include <kiln/reference_executor.h>
#include <kiln/runtime.h>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::test {

using Tensors = std::map<std::string, HostTensor>;

// Largest relative L2 error, ||engine - reference|| / ||reference||, allowed per output.
inline constexpr double kFp32Tolerance = 1e-5;
inline constexpr double kFp16Tolerance = 1e-2;
// A wake-word head's probabilities: a sigmoid in its tail (p ~ e^z) turns the logit's absolute
// rounding into relative error, so two float32 orders of summation over 1536 products (the timed
// cuBLASLt algorithm's against the CPU's) differ by up to ~2e-5 (seen on the H200: hey_mycroft).
inline constexpr double kFp32ProbabilityTolerance = 5e-5;

// The backend the model tests build for: KILN_TEST_BACKEND's, else the CPU.
BackendKind testBackend();

// An engine for `network` from kiln::Builder (CPU backend, or the one KILN_TEST_BACKEND names;
// default optimisation level), with fp16 allowed or not, for the given profiles; loaded back from
// its plan like an application would.
std::shared_ptr<Engine> buildEngine(const Network& network, bool fp16,
                                    const std::vector<OptimizationProfile>& profiles = {});

// min/opt/max dims that differ from `dims` only in dimension `axis`: lo / opt / hi there.
ShapeRange rangeAlong(std::vector<int64_t> dims, size_t axis, int64_t lo, int64_t opt, int64_t hi);

// Runs `context` on `inputs` as an application would, and records a test failure (naming the input)
// if the engine wrote into any of the caller's input tensors. The caller's tensors come back
// unchanged either way (the engine is given copies), so a reference run on them stays valid.
Tensors runEngine(ExecutionContext& context, const Tensors& inputs);

// The reference executor's outputs as plain tensors.
Tensors runReference(const ReferenceExecutor& reference, const Tensors& inputs);

// ||actual - expected||_2 / ||expected||_2 over float32 tensors of equal dims; NaN when the dims or
// types differ or a value is not finite.
double relativeL2(const HostTensor& actual, const HostTensor& expected);

// Every output of `expected` is in `actual` with its dims, float32, finite, within `tolerance`
// relative L2. The message names the output and its error.
::testing::AssertionResult matchesReference(const Tensors& actual, const Tensors& expected, double tolerance);

// All finite and not all the same value: a real signal, not a constant, zero or NaN output.
::testing::AssertionResult isNonTrivial(const std::vector<float>& values, const std::string& what);
::testing::AssertionResult isNonTrivial(const HostTensor& tensor, const std::string& what);

// The tensor's float32 values, and a float32 tensor of `dims` holding `values`.
std::vector<float> valuesOf(const HostTensor& tensor);
HostTensor tensorOf(const std::vector<int64_t>& dims, const std::vector<float>& values);

}  // namespace kiln::test
