#include "pool.h"

#include "../common/parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace kiln::kernels {
namespace {

template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

int64_t planeGrain(int64_t workPerPlane) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, workPerPlane)); }

// Runs fn(plane, od, oh, ow, outIndexInPlane) for every output position, planes split across threads.
template <class Fn>
void forEachOutput(const SpatialWindow& w, int64_t planes, Fn&& fn) {
  parallelFor(planes, planeGrain(w.outSize() * w.kernelSize()), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t o = 0;
      for (int64_t od = 0; od < w.out[0]; ++od)
        for (int64_t oh = 0; oh < w.out[1]; ++oh)
          for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) fn(p, od, oh, ow, o);
    }
  });
}

// Taps of output position `o` on axis `a` that fall inside the image, or (countPadding) inside the
// padded extent [-padBegin, in + padEnd): the window is separable, so an output's tap count is the
// product of its per-axis counts.
std::vector<int64_t> tapCounts(const SpatialWindow& w, int a, bool countPadding) {
  std::vector<int64_t> counts(size_t(w.out[a]), 0);
  const int64_t lo = countPadding ? -w.padBegin[a] : 0, hi = countPadding ? w.in[a] + w.padEnd[a] : w.in[a];
  for (int64_t o = 0; o < w.out[a]; ++o)
    for (int64_t k = 0; k < w.kernel[a]; ++k) {
      int64_t c = w.inputCoord(a, o, k);
      counts[size_t(o)] += c >= lo && c < hi;
    }
  return counts;
}

// Pools one output row at a time: for every in-image tap (kd, kh, kw), row[o] = combine(row[o], tap
// value) over the contiguous range of outputs whose tap is inside the image, so the innermost loop
// has no bounds checks. finish(plane, od, oh, row) then writes the row out.
// When combine is associative on values (max, sum: `separable`), the window's in-image input rows
// are first combined into one row along W (contiguous, vectorised), then the width taps read that:
// kd*kh + kw passes over a row instead of kd*kh*kw strided ones.
template <bool separable, class T, class Combine, class Finish>
void poolRows(const SpatialWindow& w, int64_t planes, const T* x, Acc<T> init, Combine combine, Finish finish) {
  const std::vector<WidthTap> taps = widthTaps(w);
  const int64_t s = w.stride[2], inSize = w.inSize(), width = w.in[2];
  parallelFor(planes, planeGrain(w.outSize() * w.kernelSize()), [&](int64_t begin, int64_t end) {
    std::vector<Acc<T>> row(size_t(w.out[2])), window(separable ? size_t(width) : 0);
    for (int64_t p = begin; p < end; ++p) {
      const T* plane = x + p * inSize;
      for (int64_t od = 0; od < w.out[0]; ++od) {
        for (int64_t oh = 0; oh < w.out[1]; ++oh) {
          std::fill(row.begin(), row.end(), init);
          if constexpr (separable) {
            std::fill(window.begin(), window.end(), init);
            forEachInImageRow(w, od, oh, [&](int64_t, int64_t, int64_t inputRow) {
              const T* line = plane + inputRow;
              for (int64_t i = 0; i < width; ++i) window[size_t(i)] = combine(window[size_t(i)], Acc<T>(line[i]));
            });
            for (const WidthTap& t : taps)
              for (int64_t o = t.begin; o < t.end; ++o)
                row[size_t(o)] = combine(row[size_t(o)], window[size_t(o * s + t.offset)]);
          } else {
            forEachInImageRow(w, od, oh, [&](int64_t, int64_t, int64_t inputRow) {
              const T* line = plane + inputRow;
              for (const WidthTap& t : taps)
                for (int64_t o = t.begin; o < t.end; ++o)
                  row[size_t(o)] = combine(row[size_t(o)], Acc<T>(line[o * s + t.offset]));
            });
          }
          finish(p, od, oh, row.data());
        }
      }
    }
  });
}

// The argmax form of MaxPool: per output position, remembering where the maximum came from.
template <class T>
void maxPoolWithIndices(const SpatialWindow& w, int64_t planes, const T* x, T* y, int64_t* indices,
                        bool columnMajorIndices) {
  const std::vector<WidthTap> taps = widthTaps(w);
  const int64_t inSize = w.inSize(), outSize = w.outSize(), s = w.stride[2];
  forEachOutput(w, planes, [&](int64_t p, int64_t od, int64_t oh, int64_t ow, int64_t o) {
    const T* plane = x + p * inSize;
    Acc<T> best = std::numeric_limits<Acc<T>>::lowest();
    int64_t bestAt = 0;  // row-major offset within the plane
    bool found = false;
    forEachInImageRow(w, od, oh, [&](int64_t, int64_t, int64_t inputRow) {
      for (const WidthTap& t : taps) {
        if (ow < t.begin || ow >= t.end) continue;
        const int64_t at = inputRow + ow * s + t.offset;
        const Acc<T> v = Acc<T>(plane[at]);
        if (!found || v > best) best = v, bestAt = at, found = true;
      }
    });
    y[p * outSize + o] = T(best);
    const int64_t bestW = bestAt % w.in[2], bestH = bestAt / w.in[2] % w.in[1], bestD = bestAt / w.in[2] / w.in[1];
    const int64_t local = columnMajorIndices ? bestD + (bestH + bestW * w.in[1]) * w.in[0] : bestAt;
    indices[p * outSize + o] = p * inSize + local;
  });
}

// Output row (od, oh) of plane p.
template <class T>
T* outputRow(const SpatialWindow& w, T* y, int64_t p, int64_t od, int64_t oh) {
  return y + p * w.outSize() + (od * w.out[1] + oh) * w.out[2];
}

}  // namespace

template <class T>
void maxPool(const SpatialWindow& w, int64_t planes, const T* x, T* y, int64_t* indices, bool columnMajorIndices) {
  if (indices) return maxPoolWithIndices(w, planes, x, y, indices, columnMajorIndices);
  poolRows<true>(w, planes, x, std::numeric_limits<Acc<T>>::lowest(), [](Acc<T> a, Acc<T> v) { return v > a ? v : a; },
           [&](int64_t p, int64_t od, int64_t oh, const Acc<T>* row) {
             T* out = outputRow(w, y, p, od, oh);
             for (int64_t o = 0; o < w.out[2]; ++o) out[o] = T(row[o]);
           });
}

template <class T>
void averagePool(const SpatialWindow& w, int64_t planes, const T* x, T* y, bool countIncludePad) {
  const std::vector<int64_t> countD = tapCounts(w, 0, countIncludePad), countH = tapCounts(w, 1, countIncludePad),
                             countW = tapCounts(w, 2, countIncludePad);
  poolRows<true>(w, planes, x, Acc<T>(0), [](Acc<T> a, Acc<T> v) { return a + v; },
           [&](int64_t p, int64_t od, int64_t oh, const Acc<T>* row) {
             T* out = outputRow(w, y, p, od, oh);
             const int64_t rowCount = countD[size_t(od)] * countH[size_t(oh)];
             for (int64_t o = 0; o < w.out[2]; ++o) {
               int64_t count = rowCount * countW[size_t(o)];
               out[o] = T(count > 0 ? row[o] / Acc<T>(count) : Acc<T>(0));
             }
           });
}

template <class T>
void lpPool(const SpatialWindow& w, int64_t planes, const T* x, T* y, float p) {
  const Acc<T> power = Acc<T>(p);
  poolRows<false>(w, planes, x, Acc<T>(0), [&](Acc<T> a, Acc<T> v) { return a + std::pow(std::abs(v), power); },
           [&](int64_t plane, int64_t od, int64_t oh, const Acc<T>* row) {
             T* out = outputRow(w, y, plane, od, oh);
             for (int64_t o = 0; o < w.out[2]; ++o) out[o] = T(std::pow(row[o], Acc<T>(1) / power));
           });
}

template <class T>
void globalPool(GlobalPoolKind kind, int64_t planes, int64_t planeSize, const T* x, T* y, float p) {
  parallelFor(planes, planeGrain(planeSize), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* in = x + plane * planeSize;
      Acc<T> result = kind == GlobalPoolKind::kMax ? std::numeric_limits<Acc<T>>::lowest() : Acc<T>(0);
      for (int64_t i = 0; i < planeSize; ++i) {
        Acc<T> v = Acc<T>(in[i]);
        if (kind == GlobalPoolKind::kAverage) result += v;
        else if (kind == GlobalPoolKind::kMax) result = std::max(result, v);
        else result += std::pow(std::abs(v), Acc<T>(p));
      }
      if (kind == GlobalPoolKind::kAverage) result /= Acc<T>(planeSize);
      if (kind == GlobalPoolKind::kLp) result = std::pow(result, Acc<T>(1) / Acc<T>(p));
      y[plane] = T(result);
    }
  });
}

template <class T>
void maxRoiPool(int64_t channels, int64_t height, int64_t width, const T* x, int64_t numRois, const float* rois,
                float spatialScale, int64_t pooledH, int64_t pooledW, T* y) {
  parallelFor(numRois * channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const float* roi = rois + task / channels * 5;
      const int64_t c = task % channels;
      const T* plane = x + (int64_t(roi[0]) * channels + c) * height * width;
      const int64_t startW = std::lround(roi[1] * spatialScale), startH = std::lround(roi[2] * spatialScale);
      const int64_t endW = std::lround(roi[3] * spatialScale), endH = std::lround(roi[4] * spatialScale);
      const float binH = float(std::max<int64_t>(endH - startH + 1, 1)) / float(pooledH);
      const float binW = float(std::max<int64_t>(endW - startW + 1, 1)) / float(pooledW);
      T* out = y + task * pooledH * pooledW;
      for (int64_t ph = 0; ph < pooledH; ++ph) {
        int64_t h0 = std::clamp<int64_t>(int64_t(std::floor(ph * binH)) + startH, 0, height);
        int64_t h1 = std::clamp<int64_t>(int64_t(std::ceil((ph + 1) * binH)) + startH, 0, height);
        for (int64_t pw = 0; pw < pooledW; ++pw) {
          int64_t w0 = std::clamp<int64_t>(int64_t(std::floor(pw * binW)) + startW, 0, width);
          int64_t w1 = std::clamp<int64_t>(int64_t(std::ceil((pw + 1) * binW)) + startW, 0, width);
          Acc<T> best = (h1 <= h0 || w1 <= w0) ? Acc<T>(0) : std::numeric_limits<Acc<T>>::lowest();
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) best = std::max(best, Acc<T>(plane[h * width + w]));
          out[ph * pooledW + pw] = T(best);
        }
      }
    }
  });
}

namespace {

// One bilinear sample of RoiAlign: four neighbour offsets and their weights (all zero outside).
struct BilinearSample {
  int64_t pos[4] = {0, 0, 0, 0};
  float weight[4] = {0, 0, 0, 0};
};

BilinearSample bilinearSample(float y, float x, int64_t height, int64_t width) {
  BilinearSample s;
  if (y < -1.0f || y > float(height) || x < -1.0f || x > float(width)) return s;
  y = std::max(y, 0.0f);
  x = std::max(x, 0.0f);
  int64_t yLow = int64_t(y), xLow = int64_t(x), yHigh, xHigh;
  if (yLow >= height - 1) yHigh = yLow = height - 1, y = float(yLow);
  else yHigh = yLow + 1;
  if (xLow >= width - 1) xHigh = xLow = width - 1, x = float(xLow);
  else xHigh = xLow + 1;
  float ly = y - float(yLow), lx = x - float(xLow), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = yLow * width + xLow, s.pos[1] = yLow * width + xHigh;
  s.pos[2] = yHigh * width + xLow, s.pos[3] = yHigh * width + xHigh;
  s.weight[0] = hy * hx, s.weight[1] = hy * lx, s.weight[2] = ly * hx, s.weight[3] = ly * lx;
  return s;
}

}  // namespace

template <class T>
void roiAlign(const RoiAlignParams& prm, const T* x, int64_t numRois, const float* rois, const int64_t* batchIndices,
              T* y) {
  const int64_t planeSize = prm.height * prm.width, outPlane = prm.outputH * prm.outputW;
  parallelFor(numRois, 1, [&](int64_t begin, int64_t end) {
    std::vector<BilinearSample> samples;
    for (int64_t r = begin; r < end; ++r) {
      const float* roi = rois + r * 4;
      const float offset = prm.halfPixel ? 0.5f : 0.0f;
      const float startW = roi[0] * prm.spatialScale - offset, startH = roi[1] * prm.spatialScale - offset;
      float roiW = roi[2] * prm.spatialScale - offset - startW, roiH = roi[3] * prm.spatialScale - offset - startH;
      if (!prm.halfPixel) roiW = std::max(roiW, 1.0f), roiH = std::max(roiH, 1.0f);
      const float binH = roiH / float(prm.outputH), binW = roiW / float(prm.outputW);
      const int64_t gridH = prm.samplingRatio > 0 ? prm.samplingRatio : int64_t(std::ceil(roiH / float(prm.outputH)));
      const int64_t gridW = prm.samplingRatio > 0 ? prm.samplingRatio : int64_t(std::ceil(roiW / float(prm.outputW)));
      const int64_t perBin = gridH * gridW;
      const float count = float(std::max<int64_t>(perBin, 1));
      // Sample positions are the same for every channel: compute them once per roi.
      samples.clear();
      for (int64_t ph = 0; ph < prm.outputH; ++ph)
        for (int64_t pw = 0; pw < prm.outputW; ++pw)
          for (int64_t iy = 0; iy < gridH; ++iy)
            for (int64_t ix = 0; ix < gridW; ++ix)
              samples.push_back(bilinearSample(startH + float(ph) * binH + (float(iy) + 0.5f) * binH / float(gridH),
                                               startW + float(pw) * binW + (float(ix) + 0.5f) * binW / float(gridW),
                                               prm.height, prm.width));
      for (int64_t c = 0; c < prm.channels; ++c) {
        const T* plane = x + (batchIndices[r] * prm.channels + c) * planeSize;
        T* out = y + (r * prm.channels + c) * outPlane;
        for (int64_t bin = 0; bin < outPlane; ++bin) {
          float value = 0;
          for (int64_t i = 0; i < perBin; ++i) {
            const BilinearSample& s = samples[size_t(bin * perBin + i)];
            float v[4];
            for (int k = 0; k < 4; ++k) v[k] = s.weight[k] * float(plane[s.pos[k]]);
            if (prm.maxMode) {  // the max of the weighted corners, as ONNX Runtime and the ONNX reference do
              float m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
              value = i == 0 ? m : std::max(value, m);
            } else {
              value += v[0] + v[1] + v[2] + v[3];
            }
          }
          out[bin] = T(prm.maxMode ? value : value / count);
        }
      }
    }
  });
}

#define KILN_POOL_FLOAT_INSTANTIATIONS(T)                                                                      \
  template void averagePool<T>(const SpatialWindow&, int64_t, const T*, T*, bool);                              \
  template void lpPool<T>(const SpatialWindow&, int64_t, const T*, T*, float);                                  \
  template void globalPool<T>(GlobalPoolKind, int64_t, int64_t, const T*, T*, float);                           \
  template void maxRoiPool<T>(int64_t, int64_t, int64_t, const T*, int64_t, const float*, float, int64_t, int64_t, \
                              T*);                                                                               \
  template void roiAlign<T>(const RoiAlignParams&, const T*, int64_t, const float*, const int64_t*, T*);
KILN_POOL_FLOAT_INSTANTIATIONS(float)
KILN_POOL_FLOAT_INSTANTIATIONS(double)
#undef KILN_POOL_FLOAT_INSTANTIATIONS
template void maxPool<float>(const SpatialWindow&, int64_t, const float*, float*, int64_t*, bool);
template void maxPool<double>(const SpatialWindow&, int64_t, const double*, double*, int64_t*, bool);
template void maxPool<int8_t>(const SpatialWindow&, int64_t, const int8_t*, int8_t*, int64_t*, bool);
template void maxPool<uint8_t>(const SpatialWindow&, int64_t, const uint8_t*, uint8_t*, int64_t*, bool);

}  // namespace kiln::kernels
