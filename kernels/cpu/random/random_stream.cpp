#include "random_stream.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace kiln::kernels {

RandomStream RandomStream::fromEntropy() {
  std::random_device device;
  return RandomStream((uint64_t(device()) << 32) ^ device());
}

double RandomStream::uniform() { return double(engine_() >> 11) * 0x1.0p-53; }  // 53 random mantissa bits

double RandomStream::normal() {
  if (hasSpare_) {
    hasSpare_ = false;
    return spare_;
  }
  double u1 = 1.0 - uniform();  // in (0, 1]: log stays finite
  double u2 = uniform();
  double radius = std::sqrt(-2.0 * std::log(u1));
  spare_ = radius * std::sin(2.0 * std::numbers::pi * u2);
  hasSpare_ = true;
  return radius * std::cos(2.0 * std::numbers::pi * u2);
}

void sampleMultinomial(const double* logits, int64_t batch, int64_t classes, int64_t samples, RandomStream& stream,
                       int64_t* out) {
  std::vector<double> cumulative(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = logits + b * classes;
    double peak = *std::max_element(row, row + classes);  // keeps exp from overflowing
    double total = 0.0;
    for (int64_t c = 0; c < classes; ++c) cumulative[size_t(c)] = total += std::exp(row[c] - peak);
    for (int64_t s = 0; s < samples; ++s) {
      double target = stream.uniform() * total;
      auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
      out[b * samples + s] = std::min<int64_t>(it - cumulative.begin(), classes - 1);
    }
  }
}

}  // namespace kiln::kernels
