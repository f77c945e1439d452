#include "grid_sample.h"

#include <kernels/cpu/common/numeric_types.h>
#include <kernels/cpu/common/parallel.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace kiln::kernels {
namespace {

// The input pixels one output location reads, with their weights (out-of-range pixels are left out:
// they read as zero).
struct Taps {
  int count = 0;
  int64_t index[16];
  float weight[16];
};

class Sampler {
 public:
  explicit Sampler(const GridSampleConfig& config) : cfg_(config) {}

  Taps taps(float gx, float gy) const {
    Taps t;
    if (!std::isfinite(gx) || !std::isfinite(gy)) return t;
    const int64_t W = cfg_.inWidth, H = cfg_.inHeight;
    float x = unnormalize(gx, W), y = unnormalize(gy, H);
    if (cfg_.padding == GridSamplePadding::kZeros) {
      // Far outside the image every tap reads zero; bounding keeps the integer casts defined (the
      // other paddings bring coordinates inside themselves).
      x = std::clamp(x, -float(W) - 8, 2.0f * float(W) + 8);
      y = std::clamp(y, -float(H) - 8, 2.0f * float(H) + 8);
    }
    switch (cfg_.mode) {
      case GridSampleMode::kNearest:
        add(t, int64_t(std::nearbyint(pad(x, W))), int64_t(std::nearbyint(pad(y, H))), 1.0f);
        break;
      case GridSampleMode::kBilinear: {
        x = pad(x, W);
        y = pad(y, H);
        float x0 = std::floor(x), y0 = std::floor(y), wx = x - x0, wy = y - y0;
        int64_t ix = int64_t(x0), iy = int64_t(y0);
        add(t, ix, iy, (1 - wx) * (1 - wy));
        add(t, ix + 1, iy, wx * (1 - wy));
        add(t, ix, iy + 1, (1 - wx) * wy);
        add(t, ix + 1, iy + 1, wx * wy);
        break;
      }
      case GridSampleMode::kBicubic: {  // weights from the unpadded position; each tap padded alone
        float x0 = std::floor(x), y0 = std::floor(y);
        float cx[4], cy[4];
        cubicCoefficients(x - x0, cx);
        cubicCoefficients(y - y0, cy);
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            float px = pad(x0 - 1 + float(j), W), py = pad(y0 - 1 + float(i), H);
            add(t, int64_t(px), int64_t(py), cx[j] * cy[i]);
          }
        break;
      }
    }
    return t;
  }

 private:
  float unnormalize(float v, int64_t size) const {
    return cfg_.alignCorners ? (v + 1) / 2 * float(size - 1) : ((v + 1) * float(size) - 1) / 2;
  }

  static float reflect(float v, float twiceLow, float twiceHigh) {
    if (twiceLow == twiceHigh) return 0;
    float low = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
    v = std::fabs(v - low);
    float extra = std::fmod(v, span);
    int64_t flips = int64_t(std::floor(v / span));
    return flips % 2 == 0 ? extra + low : span - extra + low;
  }

  float pad(float v, int64_t size) const {
    float last = float(size - 1);
    switch (cfg_.padding) {
      case GridSamplePadding::kZeros: return v;
      case GridSamplePadding::kBorder: return std::clamp(v, 0.0f, last);
      case GridSamplePadding::kReflection:
        v = cfg_.alignCorners ? reflect(v, 0, 2 * last) : reflect(v, -1, 2 * float(size) - 1);
        return std::clamp(v, 0.0f, last);
    }
    return v;
  }

  static void cubicCoefficients(float t, float c[4]) {
    constexpr float A = -0.75f;
    auto near = [](float x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
    auto far = [](float x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
    c[0] = far(t + 1);
    c[1] = near(t);
    c[2] = near(1 - t);
    c[3] = far(2 - t);
  }

  void add(Taps& t, int64_t x, int64_t y, float weight) const {
    if (x < 0 || y < 0 || x >= cfg_.inWidth || y >= cfg_.inHeight) return;
    t.index[t.count] = y * cfg_.inWidth + x;
    t.weight[t.count++] = weight;
  }

  const GridSampleConfig& cfg_;
};

template <class T>
float load(T v) {
  if constexpr (std::is_arithmetic_v<T>) return float(v);
  else return toFloat(v);
}

template <class T>
T store(float v) {
  if constexpr (std::is_arithmetic_v<T>) return T(v);
  else return fromFloat<T>(v);
}

}  // namespace

template <class T>
void gridSample2d(const GridSampleConfig& cfg, const T* input, const T* grid, T* output) {
  const Sampler sampler(cfg);
  const int64_t inPlane = cfg.inHeight * cfg.inWidth, outPlane = cfg.outHeight * cfg.outWidth;
  parallelFor(cfg.batch * cfg.outHeight, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t n = row / cfg.outHeight, h = row % cfg.outHeight;
      for (int64_t w = 0; w < cfg.outWidth; ++w) {
        const T* g = grid + ((n * cfg.outHeight + h) * cfg.outWidth + w) * 2;
        Taps taps = sampler.taps(load(g[0]), load(g[1]));
        for (int64_t c = 0; c < cfg.channels; ++c) {
          const T* plane = input + (n * cfg.channels + c) * inPlane;
          float sum = 0;
          for (int k = 0; k < taps.count; ++k) sum += taps.weight[k] * load(plane[taps.index[k]]);
          output[(n * cfg.channels + c) * outPlane + h * cfg.outWidth + w] = store<T>(sum);
        }
      }
    }
  });
}

template void gridSample2d<float>(const GridSampleConfig&, const float*, const float*, float*);
template void gridSample2d<double>(const GridSampleConfig&, const double*, const double*, double*);
template void gridSample2d<Float16>(const GridSampleConfig&, const Float16*, const Float16*, Float16*);
template void gridSample2d<BFloat16>(const GridSampleConfig&, const BFloat16*, const BFloat16*, BFloat16*);

}  // namespace kiln::kernels
