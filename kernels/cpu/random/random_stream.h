#pragma once
// Random draws for the ONNX generator ops (RandomNormal, RandomUniform, Bernoulli, Multinomial, ...).
// A seed gives a repeatable stream: std::mt19937_64 with Kiln's own uniform and Box-Muller
// transforms, so draws do not depend on the C++ library's distributions.
#include <cstdint>
#include <random>

namespace kiln::kernels {

class RandomStream {
 public:
  explicit RandomStream(uint64_t seed) : engine_(seed) {}
  static RandomStream fromEntropy();

  double uniform();  // in [0, 1)
  double normal();   // standard normal

 private:
  std::mt19937_64 engine_;
  bool hasSpare_ = false;
  double spare_ = 0.0;
};

// For each of `batch` rows of `classes` unnormalised log-probabilities, draws `samples` class indices.
void sampleMultinomial(const double* logits, int64_t batch, int64_t classes, int64_t samples, RandomStream& stream,
                       int64_t* out);

}  // namespace kiln::kernels
