#include "models/support/engine_checks.h"

#include <kiln/builder.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

namespace kiln::test {

std::shared_ptr<Engine> buildEngine(const Network& network, bool fp16,
                                    const std::vector<OptimizationProfile>& profiles) {
  BuilderConfig config;
  config.allowFP16 = fp16;
  // fp32 checks hold to 1e-5, which TF32's 10-bit mantissa in the device's products would not.
  config.allowTF32 = false;
  config.backend = testBackend();
  config.profiles = profiles;
  return Runtime().load(Builder().build(network, config).plan);
}

BackendKind testBackend() {
  // KILN_TEST_BACKEND=cpu-device runs the same checks on the test device backend.
  if (const char* backend = std::getenv("KILN_TEST_BACKEND"))
    if (auto kind = parseBackendKind(backend)) return *kind;
  return BackendKind::kCpu;
}

ShapeRange rangeAlong(std::vector<int64_t> dims, size_t axis, int64_t lo, int64_t opt, int64_t hi) {
  ShapeRange range{dims, dims, dims};
  range.min[axis] = lo;
  range.opt[axis] = opt;
  range.max[axis] = hi;
  return range;
}

Tensors runEngine(ExecutionContext& context, const Tensors& inputs) {
  Tensors given;
  for (const auto& [name, tensor] : inputs) given[name] = tensor.clone();
  Tensors outputs = context.run(given);
  for (const auto& [name, tensor] : inputs) {
    const HostTensor& after = given.at(name);
    if (after.dtype() != tensor.dtype() || after.dims() != tensor.dims() ||
        std::memcmp(after.rawData(), tensor.rawData(), tensor.byteSize()) != 0)
      ADD_FAILURE() << "ExecutionContext::run wrote into the caller's input '" << name << "' (now "
                    << toString(after.dtype()) << ", relative L2 change "
                    << (after.dtype() == DataType::kFloat32 ? relativeL2(after, tensor) : NAN)
                    << "); an engine must leave its inputs as given";
  }
  return outputs;
}

Tensors runReference(const ReferenceExecutor& reference, const Tensors& inputs) {
  Tensors outputs;
  for (const auto& [name, value] : reference.run(ValueMap(inputs.begin(), inputs.end()))) outputs[name] = value.tensor;
  return outputs;
}

double relativeL2(const HostTensor& actual, const HostTensor& expected) {
  if (actual.dims() != expected.dims() || actual.dtype() != DataType::kFloat32 ||
      expected.dtype() != DataType::kFloat32)
    return NAN;
  const float *a = actual.data<float>(), *e = expected.data<float>();
  double error = 0, norm = 0;
  for (int64_t i = 0; i < expected.elementCount(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(e[i])) return NAN;
    error += (double(a[i]) - e[i]) * (double(a[i]) - e[i]);
    norm += double(e[i]) * e[i];
  }
  return norm > 0 ? std::sqrt(error / norm) : std::sqrt(error);
}

namespace {

// The worst relative L2 error each test saw against its tolerance, printed as a table when the
// tests end, so a run on a backend (KILN_TEST_BACKEND=cuda) reports its errors, not only passes.
class WorstErrorReport : public ::testing::Environment {
 public:
  void record(double error, double tolerance) {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    if (!test) return;
    auto& [worst, limit] = worst_[std::string(test->test_suite_name()) + "." + test->name()];
    if (!std::isnan(worst) && !(error <= worst)) worst = error;  // a NaN, once seen, stays
    limit = tolerance;
  }
  void TearDown() override {
    if (worst_.empty()) return;
    std::printf("\nWorst relative L2 error per test (backend %s):\n", std::getenv("KILN_TEST_BACKEND") ? std::getenv("KILN_TEST_BACKEND") : "cpu");
    for (const auto& [name, entry] : worst_)
      std::printf("  %-76s %9.3g %s %.0e\n", name.c_str(), entry.first, entry.first <= entry.second ? "<=" : "> ",
                  entry.second);
  }

 private:
  std::map<std::string, std::pair<double, double>> worst_;
};

WorstErrorReport* const worstErrors =
    static_cast<WorstErrorReport*>(::testing::AddGlobalTestEnvironment(new WorstErrorReport));

}  // namespace

::testing::AssertionResult matchesReference(const Tensors& actual, const Tensors& expected, double tolerance) {
  if (expected.empty()) return ::testing::AssertionFailure() << "the reference produced no outputs";
  std::ostringstream report;
  bool pass = true;
  for (const auto& [name, reference] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) return ::testing::AssertionFailure() << "the engine gave no output '" << name << "'";
    const double error = relativeL2(it->second, reference);
    const bool ok = error <= tolerance;  // false for NaN
    worstErrors->record(error, tolerance);
    pass = pass && ok;
    report << " " << name << ": relative L2 " << error << (ok ? " <= " : " > ") << tolerance << ";";
  }
  return (pass ? ::testing::AssertionSuccess() : ::testing::AssertionFailure()) << report.str();
}

::testing::AssertionResult isNonTrivial(const std::vector<float>& values, const std::string& what) {
  if (values.empty()) return ::testing::AssertionFailure() << what << " is empty";
  for (float v : values)
    if (!std::isfinite(v)) return ::testing::AssertionFailure() << what << " holds " << v;
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  if (*lo == *hi) return ::testing::AssertionFailure() << what << ": all " << values.size() << " values are " << *lo;
  return ::testing::AssertionSuccess() << what << " spans [" << *lo << ", " << *hi << "]";
}

::testing::AssertionResult isNonTrivial(const HostTensor& tensor, const std::string& what) {
  if (tensor.dtype() != DataType::kFloat32) return ::testing::AssertionFailure() << what << " is not float32";
  return isNonTrivial(valuesOf(tensor), what);
}

std::vector<float> valuesOf(const HostTensor& tensor) {
  const float* p = tensor.data<float>();
  return std::vector<float>(p, p + tensor.elementCount());
}

HostTensor tensorOf(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  HostTensor tensor(DataType::kFloat32, dims);
  if (int64_t(values.size()) != tensor.elementCount())
    throw std::invalid_argument("tensorOf: " + std::to_string(values.size()) + " values for " +
                                std::to_string(tensor.elementCount()) + " elements");
  std::copy(values.begin(), values.end(), tensor.data<float>());
  return tensor;
}

}  // namespace kiln::test
