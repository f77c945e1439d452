// NonMaxSuppression (selection.h): one stable sort of every (batch, class) pair's boxes by
// descending score (those under the score threshold last), then per pair a block that walks its
// boxes in that order and keeps each one no kept box overlaps too much (the CPU's greedy loop,
// with the overlap test spread over the block), then an ordered scan of the per-pair counts.
#include "comparable.cuh"
#include "select_scan.cuh"
#include "selection.h"

namespace kiln::kernels::cuda {
namespace {

constexpr int kNmsThreads = 256;

struct Corners {
  float yMin, xMin, yMax, xMax, area;
};

// The same arithmetic as kernels/cpu/detection: either diagonal, or centre and size.
__device__ Corners cornersOf(const float* b, bool centerPointBox) {
  Corners c;
  if (centerPointBox) {
    c.xMin = b[0] - b[2] / 2;
    c.xMax = b[0] + b[2] / 2;
    c.yMin = b[1] - b[3] / 2;
    c.yMax = b[1] + b[3] / 2;
  } else {
    c.yMin = fminf(b[0], b[2]);
    c.yMax = fmaxf(b[0], b[2]);
    c.xMin = fminf(b[1], b[3]);
    c.xMax = fmaxf(b[1], b[3]);
  }
  c.area = productRounded(c.xMax - c.xMin, c.yMax - c.yMin);
  return c;
}

__device__ bool overlapsTooMuch(const Corners& a, const Corners& b, float threshold) {
  const float width = fminf(a.xMax, b.xMax) - fmaxf(a.xMin, b.xMin);
  const float height = fminf(a.yMax, b.yMax) - fmaxf(a.yMin, b.yMin);
  if (width <= 0 || height <= 0 || a.area <= 0 || b.area <= 0) return false;
  const float intersection = productRounded(width, height);
  const float unionArea = a.area + b.area - intersection;
  return unionArea > 0 && intersection / unionArea > threshold;
}

__device__ bool passes(float score, const float* scoreThreshold) { return !scoreThreshold || score > *scoreThreshold; }

// Keys are pair * boxes + box: by pair, then passing boxes first by descending score.
struct ScoreOrder {
  const float* scores;
  const float* scoreThreshold;
  int64_t boxes;
  __device__ bool operator()(int64_t a, int64_t b) const {
    const int64_t pa = a / boxes, pb = b / boxes;
    if (pa != pb) return pa < pb;
    const bool ka = passes(scores[a], scoreThreshold), kb = passes(scores[b], scoreThreshold);
    if (ka != kb) return ka;
    return ka && scores[a] > scores[b];
  }
};

// The workspace: two sort buffers and the kept boxes (one int64 per box of every pair), then per
// pair its count and offset, and the total.
struct NmsScratch {
  int64_t *sortA, *sortB, *kept, *counts, *offsets, *total;
  NmsScratch(void* memory, const NmsShape& s) {
    const int64_t pairs = s.batches * s.classes, keys = pairs * s.boxes;
    sortA = static_cast<int64_t*>(memory);
    sortB = sortA + keys;
    kept = sortB + keys;
    counts = kept + keys;
    offsets = counts + pairs;
    total = offsets + pairs;
  }
};

__global__ void __launch_bounds__(kNmsThreads) greedySelect(const float* boxes, const float* scores, NmsShape shape,
                                                            const int64_t* order, const int64_t* maxPerClass,
                                                            const float* iouThreshold, const float* scoreThreshold,
                                                            int64_t* kept, int64_t* counts) {
  __shared__ int64_t keptCount;
  __shared__ int suppressed;
  const int64_t pair = blockIdx.x, n = shape.boxes, batch = pair / shape.classes;
  const int64_t limit = maxPerClass ? *maxPerClass : 0;
  const float threshold = iouThreshold ? *iouThreshold : 0.0f;
  const float* batchBoxes = boxes + batch * n * 4;
  int64_t* mine = kept + pair * n;
  if (threadIdx.x == 0) keptCount = 0, suppressed = 0;
  __syncthreads();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t candidate = order[pair * n + k] - pair * n;
    if (keptCount >= limit || !passes(scores[pair * n + candidate], scoreThreshold)) break;  // the same for all
    const Corners c = cornersOf(batchBoxes + candidate * 4, shape.centerPointBox);
    for (int64_t j = threadIdx.x; j < keptCount; j += blockDim.x)
      if (overlapsTooMuch(cornersOf(batchBoxes + mine[j] * 4, shape.centerPointBox), c, threshold)) suppressed = 1;
    __syncthreads();
    if (threadIdx.x == 0) {
      if (!suppressed) mine[keptCount++] = candidate;
      suppressed = 0;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) counts[pair] = keptCount;
}

__global__ void writeTriples(NmsShape shape, const int64_t* kept, const int64_t* counts, const int64_t* offsets,
                             int64_t* out) {
  const int64_t pair = blockIdx.x, n = shape.boxes;
  for (int64_t j = threadIdx.x; j < counts[pair]; j += blockDim.x) {
    int64_t* triple = out + (offsets[pair] + j) * 3;
    triple[0] = pair / shape.classes;
    triple[1] = pair % shape.classes;
    triple[2] = kept[pair * n + j];
  }
}

}  // namespace

size_t nmsWorkspaceBytes(const NmsShape& shape) {
  const int64_t pairs = shape.batches * shape.classes;
  return size_t(3 * pairs * shape.boxes + 2 * pairs + 1) * sizeof(int64_t);
}

cudaError_t nmsSelect(const float* boxes, const float* scores, const NmsShape& shape, const int64_t* maxPerClass,
                      const float* iouThreshold, const float* scoreThreshold, void* workspace, int64_t* selected,
                      cudaStream_t stream) {
  const int64_t pairs = shape.batches * shape.classes;
  const NmsScratch w(workspace, shape);
  if (pairs == 0 || shape.boxes == 0) return cudaMemsetAsync(selected, 0, sizeof(int64_t), stream);
  const int64_t* order = stableSortIndices(pairs * shape.boxes, ScoreOrder{scores, scoreThreshold, shape.boxes},
                                           w.sortA, w.sortB, stream);
  greedySelect<<<unsigned(pairs), kNmsThreads, 0, stream>>>(boxes, scores, shape, order, maxPerClass, iouThreshold,
                                                             scoreThreshold, w.kept, w.counts);
  scanCounts<<<1, kSelectThreads, 0, stream>>>(w.counts, pairs, w.offsets, w.total);
  if (cudaError_t s = launchStatus(); s != cudaSuccess) return s;
  return cudaMemcpyAsync(selected, w.total, sizeof(int64_t), cudaMemcpyDeviceToDevice, stream);
}

cudaError_t nmsWrite(const NmsShape& shape, void* workspace, int64_t* out, cudaStream_t stream) {
  const int64_t pairs = shape.batches * shape.classes;
  if (pairs == 0 || shape.boxes == 0) return cudaSuccess;
  const NmsScratch w(workspace, shape);
  writeTriples<<<unsigned(pairs), kNmsThreads, 0, stream>>>(shape, w.kept, w.counts, w.offsets, out);
  return launchStatus();
}

}  // namespace kiln::kernels::cuda
