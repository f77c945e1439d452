#include "int8_conv.h"

#include "quant_math.h"

#include <kernels/cuda/common/device_types.cuh>
#include <kernels/cuda/common/launch.cuh>
#include <kernels/cuda/common/warp_matrix.cuh>
#include <kernels/cuda/elementwise/fused_activation.cuh>

#include <cstring>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

constexpr int kTileK = 64;  // reduction bytes a stage: 4 chunks of 16, two mma k-steps of 32
constexpr int kChunks = 4;  // 16-byte chunks of a shared row (one row: 64 bytes)
constexpr int64_t kIndexLimit = int64_t(1) << 31;

// A block of kWarpsM x kWarpsN warps over kRows pixels x kColumns output channels; kStages tiles in
// flight; int8 kernels held to registers for kMinBlocks blocks an SM (fp8's mma needs more). Every thread copies the
// same chunk column (thread % 4) of kAChunks pixel rows and kBChunks filter rows a stage.
template <int kRowsT, int kColumnsT, int kWarpsMT, int kWarpsNT, int kStagesT, int kMinBlocksT>
struct Tile {
  static constexpr int kRows = kRowsT, kColumns = kColumnsT, kWarpsM = kWarpsMT, kWarpsN = kWarpsNT;
  static constexpr int kStages = kStagesT, kMinBlocks = kMinBlocksT;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kWarpRows = kRows / kWarpsM, kWarpColumns = kColumns / kWarpsN;
  static constexpr int kTilesM = kWarpRows / 16, kTilesN = kWarpColumns / 8;
  static constexpr int kAChunks = kRows * kChunks / kThreads, kBChunks = kColumns * kChunks / kThreads;
  static constexpr int kRowStep = kThreads / kChunks;  // rows between a thread's chunks
  static constexpr int kStageBytes = (kRows + kColumns) * kTileK;
  // The epilogue stages the block's sums (4 bytes each) in the pipeline's shared memory, rows padded
  // by 8 words: a half-warp's 8-byte writes (rows g..g+3, columns 2t) then hit distinct banks.
  static constexpr int kSumStride = kColumns + 8;
  static constexpr int kSumBytes = kRows * kSumStride * 4;
  static constexpr int kPipelineBytes = kStages * kStageBytes;
  static constexpr int kSharedBytes = kPipelineBytes > kSumBytes ? kPipelineBytes : kSumBytes;
  static_assert(kTilesM >= 1 && kTilesN >= 2 && kTilesN % 2 == 0, "whole 16 x 16 ldmatrix tiles of B");
  static_assert(kAChunks * kThreads == kRows * kChunks && kBChunks * kThreads == kColumns * kChunks,
                "the tiles in whole chunks a thread");
};
using Large = Tile<128, 128, 2, 4, 4, 2>;  // 68 KiB of shared memory (the epilogue's staged sums)
using Wide = Tile<128, 64, 4, 2, 4, 2>;    // 48 KiB
using Small = Tile<64, 64, 2, 2, 4, 4>;    // 32 KiB
using Tall = Tile<256, 64, 4, 2, 4, 2>;    // 80 KiB

// Output kinds; 8-bit ones are quantized by quant_math.h's functions, as the CPU's.
enum class Out { kF32, kF16, kBF16, kI8, kE4M3 };

struct ConvArgs {
  const uint8_t* x;
  const uint8_t* w;
  void* y;
  int32_t inH, inW, channels, outChannels, kernelW, strideH, strideW, dilationH, dilationW, padTop, padLeft;
  int32_t rows, plane, outW;       // M; P * Q; Q
  int32_t kChunks, channelChunks;  // reduction chunks (R * S * Cp / 16); Cp / 16
  int32_t kTiles, columnBlocks;
  const float* multipliers;
  const float* bias;
  const void* residual;
  ElementType residualType;
  float residualScale;
  bool residualVectors;  // an int8 residual 16-byte aligned: a thread's values in one load
  bool residualBeforeActivation;
  Activation activation;
  float alpha, beta, outputScale;
  int32_t outputZero;
};

// Chunk j of row r is stored at j ^ ((r / 2) % 4): the eight 16-byte rows an ldmatrix reads (rows
// r..r+7, one chunk column) then fall in eight distinct 16-byte bank groups (64-byte rows: rows r
// and r + 2 would share them).
__device__ __forceinline__ int swizzled(int row, int chunk) { return row * kTileK + ((chunk ^ ((row >> 1) & 3)) << 4); }

#if defined(KILN_CUDA_EMULATION)
// The host emulator (scripts/cuda_emulation) runs the warp-wide instructions by their PTX layouts.
__device__ __forceinline__ void copyChunk(uint8_t* shared, const uint8_t* global, bool valid) {
  if (valid)
    std::memcpy(shared, global, 16);
  else
    std::memset(shared, 0, 16);
}
template <class Acc>
__device__ __forceinline__ void mma(Acc (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  kiln_emu::mma16832(c, a, b[0], b[1]);
}
#else
// 16 bytes global -> shared, bypassing L1; a chunk outside the image or the reduction is zero-filled
// (source size 0: nothing is read, the address only has to be one).
__device__ __forceinline__ void copyChunk(uint8_t* shared, const uint8_t* global, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sharedAddress(shared)), "l"(global),
               "r"(valid ? 16 : 0)
               : "memory");
}

// c (16x8) += a (16x32, row-major) · b (32x8, column-major), 8-bit operands. Lane l = 4g + t holds
// of a the bytes (row g, k 4t..4t+3), (g + 8, 4t..), (g, 16 + 4t..), (g + 8, 16 + 4t..), lowest k in
// the lowest byte; of b (k 4t..4t+3, column g) and (k 16 + 4t.., column g); of c row g then g + 8,
// columns 2t and 2t + 1.
__device__ __forceinline__ void mma(int32_t (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(__CUDA_ARCH__)
  __trap();  // the fp8 tactics are offered on sm_89 and later only
#endif
}
#endif

template <Out kOut>
struct OutType;
template <>
struct OutType<Out::kF32> {
  using T = float;
};
template <>
struct OutType<Out::kF16> {
  using T = __half;
};
template <>
struct OutType<Out::kBF16> {
  using T = __nv_bfloat16;
};
template <>
struct OutType<Out::kI8> {
  using T = int8_t;
};
template <>
struct OutType<Out::kE4M3> {
  using T = uint8_t;
};

template <Out kOut>
__device__ __forceinline__ typename OutType<kOut>::T storeValue(float v, const ConvArgs& p) {
  if constexpr (kOut == Out::kE4M3)
    return quantizeToFloat8(v, p.outputScale, uint8_t(p.outputZero), Float8Kind::kE4M3, true);
  else if constexpr (kOut == Out::kI8)
    return quantizeToInteger<int8_t>(v, p.outputScale, int8_t(p.outputZero));
  else
    return fromCompute<typename OutType<kOut>::T>(v);
}

// Residual elements at `at` and at + 1 (4-byte-aligned pairs or better: checked at launch).
__device__ __forceinline__ void loadResidualPair(const ConvArgs& p, size_t at, float& r0, float& r1) {
  if (p.residualType == ElementType::kFloat16) {
    const __half2 h = *reinterpret_cast<const __half2*>(static_cast<const __half*>(p.residual) + at);
    r0 = __low2float(h), r1 = __high2float(h);
  } else if (p.residualType == ElementType::kBFloat16) {
    const __nv_bfloat162 b =
        *reinterpret_cast<const __nv_bfloat162*>(static_cast<const __nv_bfloat16*>(p.residual) + at);
    r0 = __low2float(b), r1 = __high2float(b);
  } else {
    const float2 f = *reinterpret_cast<const float2*>(static_cast<const float*>(p.residual) + at);
    r0 = f.x, r1 = f.y;
  }
}

// The residual of a thread's V consecutive channels at `at` (V = 16 / sizeof(Y): 4, 8 or 16; `at`
// a multiple of V): an int8 one dequantized as one vector load of V bytes where it is aligned
// (one rounding, not fused into the add that follows), a float one in pairs.
template <int V>
__device__ __forceinline__ void loadResidual(const ConvArgs& p, size_t at, float (&r)[V]) {
  if (p.residualType == ElementType::kInt8) {
    const int8_t* q = static_cast<const int8_t*>(p.residual) + at;
    int8_t values[V];
    if (p.residualVectors) {
      using Vector = std::conditional_t<V == 16, uint4, std::conditional_t<V == 8, uint2, uint32_t>>;
      static_assert(sizeof(Vector) == V, "one vector of V int8 values");
      const Vector vector = *reinterpret_cast<const Vector*>(q);
      std::memcpy(values, &vector, V);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) values[j] = q[j];
    }
#pragma unroll
    for (int j = 0; j < V; ++j) r[j] = __fmul_rn(float(values[j]), p.residualScale);
    return;
  }
#pragma unroll
  for (int j = 0; j < V; j += 2) loadResidualPair(p, at + size_t(j), r[j], r[j + 1]);
}

// The epilogue of dequantizeEpilogue on one value (two roundings, as the CPU: the dequantized sum,
// then the bias onto it).
__device__ __forceinline__ float finish(const ConvArgs& p, float v, float multiplier, float bias, float residual) {
  v = __fmul_rn(v, multiplier);
  if (p.bias) v = __fadd_rn(v, bias);
  if (p.residual && p.residualBeforeActivation) v = __fadd_rn(v, residual);
  v = fusedActivation(v, p.activation, p.alpha, p.beta);
  if (p.residual && !p.residualBeforeActivation) v = __fadd_rn(v, residual);
  return v;
}

// Block b: pixel tile b / columnBlocks, channel tile b % columnBlocks (the tiles of one pixel block
// run together and share its input rows in L2).
template <class C, bool kFp8, Out kOut>
__global__ void __launch_bounds__(C::kThreads, kFp8 ? 1 : C::kMinBlocks)
    int8ConvKernel(const __grid_constant__ ConvArgs p) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800) || defined(KILN_CUDA_EMULATION)
  using Acc = std::conditional_t<kFp8, float, int32_t>;
  extern __shared__ uint4 shared[];
  uint8_t* const stages = reinterpret_cast<uint8_t*>(shared);
  const int tid = int(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int columnBlock = int(blockIdx.x % unsigned(p.columnBlocks));
  const int m0 = int(blockIdx.x / unsigned(p.columnBlocks)) * C::kRows, n0 = columnBlock * C::kColumns;
  const int chunk = tid % kChunks, firstRow = tid / kChunks;

  // The pixels of this thread's A rows: the image's offset and the window's corner; a row past M
  // gets a corner no tap reaches (every read of it zero-filled).
  int32_t imageAt[C::kAChunks], ih0[C::kAChunks], iw0[C::kAChunks];
#pragma unroll
  for (int i = 0; i < C::kAChunks; ++i) {
    const int m = m0 + firstRow + i * C::kRowStep;
    imageAt[i] = 0, ih0[i] = -(1 << 30), iw0[i] = -(1 << 30);
    if (m < p.rows) {
      const int n = m / p.plane, pixel = m - n * p.plane, oh = pixel / p.outW, ow = pixel - oh * p.outW;
      imageAt[i] = n * p.inH * p.inW * p.channels;
      ih0[i] = oh * p.strideH - p.padTop;
      iw0[i] = ow * p.strideW - p.padLeft;
    }
  }
  const int kBytes = p.kChunks * 16;
  // This thread's next reduction chunk: index, tap (kh, kw) and channel chunk.
  int kc = chunk, kh = 0, kw = 0, cc = chunk;
  while (cc >= p.channelChunks) {
    cc -= p.channelChunks;
    if (++kw == p.kernelW) kw = 0, ++kh;
  }

  auto loadStage = [&](int stage) {
    uint8_t* a = stages + stage * C::kStageBytes;
    uint8_t* b = a + C::kRows * kTileK;
    const bool inReduction = kc < p.kChunks;
    const int dh = kh * p.dilationH, dw = kw * p.dilationW, c = cc * 16;
#pragma unroll
    for (int i = 0; i < C::kAChunks; ++i) {
      const int row = firstRow + i * C::kRowStep, ih = ih0[i] + dh, iw = iw0[i] + dw;
      const bool valid = inReduction && unsigned(ih) < unsigned(p.inH) && unsigned(iw) < unsigned(p.inW);
      const uint8_t* src = valid ? p.x + imageAt[i] + (ih * p.inW + iw) * p.channels + c : p.x;
      copyChunk(a + swizzled(row, chunk), src, valid);
    }
#pragma unroll
    for (int i = 0; i < C::kBChunks; ++i) {
      const int row = firstRow + i * C::kRowStep, n = n0 + row;
      const bool valid = inReduction && n < p.outChannels;
      const uint8_t* src = valid ? p.w + n * kBytes + kc * 16 : p.w;
      copyChunk(b + swizzled(row, chunk), src, valid);
    }
    // On to the chunk a stage later: 4 chunks on.
    kc += kChunks, cc += kChunks;
    while (cc >= p.channelChunks) {
      cc -= p.channelChunks;
      if (++kw == p.kernelW) kw = 0, ++kh;
    }
  };

  Acc acc[C::kTilesM][C::kTilesN][4];
#pragma unroll
  for (int tm = 0; tm < C::kTilesM; ++tm)
#pragma unroll
    for (int tn = 0; tn < C::kTilesN; ++tn)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[tm][tn][e] = Acc(0);

#pragma unroll
  for (int s = 0; s < C::kStages - 1; ++s) {
    if (s < p.kTiles) loadStage(s);
    commitCopies();
  }
  const int warpRow = (warp % C::kWarpsM) * C::kWarpRows, warpColumn = (warp / C::kWarpsM) * C::kWarpColumns;
  for (int tile = 0; tile < p.kTiles; ++tile) {
    waitCopies<C::kStages - 2>();  // this tile's copies have landed (this thread's)
    __syncthreads();               // everyone's; and the stage refilled below is no longer read
    if (tile + C::kStages - 1 < p.kTiles) loadStage((tile + C::kStages - 1) % C::kStages);
    commitCopies();
    const uint8_t* a = stages + (tile % C::kStages) * C::kStageBytes;
    const uint8_t* b = a + C::kRows * kTileK;
#pragma unroll
    for (int ks = 0; ks < kTileK / 32; ++ks) {
      uint32_t af[C::kTilesM][4], bf[C::kTilesN][2];
#pragma unroll
      for (int tm = 0; tm < C::kTilesM; ++tm) {
        // Matrices: rows 0-7 / 8-15 of the 16-row tile, k bytes 0-15 then 16-31 of the k-step.
        const int row = warpRow + tm * 16 + lane % 8 + (lane / 8 % 2) * 8;
        loadMatrices(af[tm], a + swizzled(row, ks * 2 + lane / 16));
      }
#pragma unroll
      for (int tp = 0; tp < C::kTilesN / 2; ++tp) {
        // Matrices: channels 0-7 k 0-15, channels 0-7 k 16-31, channels 8-15 k 0-15, 8-15 k 16-31.
        const int row = warpColumn + tp * 16 + lane % 8 + (lane / 16) * 8;
        uint32_t r[4];
        loadMatrices(r, b + swizzled(row, ks * 2 + lane / 8 % 2));
        bf[2 * tp][0] = r[0], bf[2 * tp][1] = r[1], bf[2 * tp + 1][0] = r[2], bf[2 * tp + 1][1] = r[3];
      }
#pragma unroll
      for (int tm = 0; tm < C::kTilesM; ++tm)
#pragma unroll
        for (int tn = 0; tn < C::kTilesN; ++tn) mma(acc[tm][tn], af[tm], bf[tn]);
    }
  }
  waitCopies<0>();  // no copy outlives the block (the last groups are empty)

  // The epilogue in two steps, so that the stores are coalesced: the warps put their sums in shared
  // memory (the fragments' pairs of columns), then each thread takes kVector consecutive channels of
  // a pixel (16 bytes of Y), finishes them and stores them (and reads their residual) together.
  __syncthreads();  // every warp is done with the stages
  Acc* const sums = reinterpret_cast<Acc*>(stages);
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int tm = 0; tm < C::kTilesM; ++tm)
#pragma unroll
    for (int tn = 0; tn < C::kTilesN; ++tn)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        using Two = std::conditional_t<kFp8, float2, int2>;  // one 8-byte store
        const Two two{acc[tm][tn][2 * h], acc[tm][tn][2 * h + 1]};
        *reinterpret_cast<Two*>(sums + (warpRow + tm * 16 + g + h * 8) * C::kSumStride + warpColumn + tn * 8 + 2 * t) =
            two;
      }
  __syncthreads();

  using Y = typename OutType<kOut>::T;
  constexpr int kVector = 16 / int(sizeof(Y));  // divides 16, so K (a multiple of 16) ends a vector
  constexpr int kRowThreads = C::kColumns / kVector, kRowsAPass = C::kThreads / kRowThreads;
  static_assert(kRowThreads <= C::kThreads && C::kThreads % kRowThreads == 0, "whole rows a pass");
  const int localColumn = (tid % kRowThreads) * kVector, column = n0 + localColumn;
  if (column >= p.outChannels) return;  // a partial channel tile
  float multiplier[kVector], bias[kVector];
#pragma unroll
  for (int j = 0; j < kVector; ++j) {
    multiplier[j] = p.multipliers[column + j];
    bias[j] = p.bias ? p.bias[column + j] : 0.0f;
  }
  // y is only pair-aligned at the API: 16-byte stores where it is 16-byte aligned (y's rows, K
  // elements, and the vectors' starts are 16-byte multiples from there).
  const bool vectorStores = reinterpret_cast<uintptr_t>(p.y) % 16 == 0;
  for (int localRow = tid / kRowThreads; localRow < C::kRows; localRow += kRowsAPass) {
    const int row = m0 + localRow;
    if (row >= p.rows) break;
    const size_t at = size_t(row) * size_t(p.outChannels) + size_t(column);
    const Acc* const rowSums = sums + localRow * C::kSumStride + localColumn;
    Acc v[kVector];
#pragma unroll
    for (int q = 0; q < kVector / 4; ++q) {
      const uint4 four = reinterpret_cast<const uint4*>(rowSums)[q];
      std::memcpy(&v[4 * q], &four, 16);
    }
    float residual[kVector] = {};
    if (p.residual) loadResidual<kVector>(p, at, residual);
    Y values[kVector];
#pragma unroll
    for (int j = 0; j < kVector; ++j)
      values[j] = storeValue<kOut>(finish(p, float(v[j]), multiplier[j], bias[j], residual[j]), p);
    Y* const y = static_cast<Y*>(p.y) + at;
    if (vectorStores) {
      uint4 vector;
      std::memcpy(&vector, values, 16);
      *reinterpret_cast<uint4*>(y) = vector;
    } else {
#pragma unroll
      for (int j = 0; j < kVector; ++j) y[j] = values[j];
    }
  }
#endif
}

template <class C, bool kFp8, Out kOut>
cudaError_t launch(const ConvArgs& args, cudaStream_t stream) {
  auto kernel = int8ConvKernel<C, kFp8, kOut>;
#if !defined(KILN_CUDA_EMULATION)
  // Above 48 KiB a block's dynamic shared memory has to be asked for (per device: every launch).
  if (C::kSharedBytes > 48 * 1024)
    if (const cudaError_t status =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSharedBytes);
        status != cudaSuccess)
      return status;
#endif
  const int64_t rowBlocks = (args.rows + C::kRows - 1) / C::kRows;
  const int64_t blocks = rowBlocks * args.columnBlocks;
  if (blocks > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  kernel<<<unsigned(blocks), C::kThreads, C::kSharedBytes, stream>>>(args);
  return launchStatus();
}

template <class C, bool kFp8>
cudaError_t launchFor(const ConvArgs& args, ElementType yType, cudaStream_t stream) {
  switch (yType) {
    case ElementType::kFloat32:
      return launch<C, kFp8, Out::kF32>(args, stream);
    case ElementType::kFloat16:
      return launch<C, kFp8, Out::kF16>(args, stream);
    case ElementType::kBFloat16:
      return launch<C, kFp8, Out::kBF16>(args, stream);
    case ElementType::kInt8:
      return kFp8 ? cudaErrorInvalidValue : launch<C, kFp8, Out::kI8>(args, stream);
    case ElementType::kFloat8E4M3:
      return kFp8 ? launch<C, kFp8, Out::kE4M3>(args, stream) : cudaErrorInvalidValue;
    default:
      return cudaErrorInvalidValue;
  }
}

template <class C>
cudaError_t launchTile(const ConvArgs& args, bool fp8, ElementType yType, cudaStream_t stream) {
  ConvArgs a = args;
  a.columnBlocks = (args.outChannels + C::kColumns - 1) / C::kColumns;
  return fp8 ? launchFor<C, true>(a, yType, stream) : launchFor<C, false>(a, yType, stream);
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

size_t residualBytes(ElementType type) {
  return type == ElementType::kFloat16 || type == ElementType::kBFloat16 ? 2
         : type == ElementType::kFloat32                                 ? 4
         : type == ElementType::kInt8                                    ? 1
                                                                         : 0;
}

}  // namespace

const char* toString(Int8ConvTile tile) {
  switch (tile) {
    case Int8ConvTile::k128x128:
      return "128x128";
    case Int8ConvTile::k128x64:
      return "128x64";
    case Int8ConvTile::k64x64:
      return "64x64";
    case Int8ConvTile::k256x64:
      return "256x64";
  }
  return "?";
}

const char* int8ConvRefusal(const Int8ConvProblem& p) {
  if (p.channels <= 0 || p.channels % 16 != 0) return "its input channels are not a positive multiple of 16";
  if (p.outChannels <= 0 || p.outChannels % 16 != 0) return "its output channels are not a positive multiple of 16";
  if (p.batch < 0 || p.inH < 0 || p.inW < 0 || p.outH < 0 || p.outW < 0) return "a negative dim";
  if (p.kernelH < 1 || p.kernelW < 1 || p.strideH < 1 || p.strideW < 1 || p.dilationH < 1 || p.dilationW < 1 ||
      p.padTop < 0 || p.padLeft < 0)
    return "its window is not positive";
  // Indices are 32-bit: the input, the filter, the output and every window corner.
  if (p.batch * p.inH * p.inW * p.channels >= kIndexLimit) return "its input has 2^31 elements or more";
  if (p.outChannels * p.kernelH * p.kernelW * p.channels >= kIndexLimit) return "its filter has 2^31 elements or more";
  if (p.rows() * p.outChannels >= kIndexLimit) return "its output has 2^31 elements or more";
  if (p.outH * p.strideH + p.kernelH * p.dilationH + p.inH >= (int64_t(1) << 29) ||
      p.outW * p.strideW + p.kernelW * p.dilationW + p.inW >= (int64_t(1) << 29))
    return "its window reaches past 2^29";
  if (!p.x || !p.w || !p.multipliers) return "its input, filter or multipliers are null";
  if (!aligned(p.x, 16) || !aligned(p.w, 16)) return "its input or filter is not 16-byte aligned";
  if (p.residual && (residualBytes(p.residualType) == 0 || !aligned(p.residual, 2 * residualBytes(p.residualType))))
    return "its residual is not float32 / float16 / bfloat16 / int8 aligned to a pair";
  if (p.residual && p.residualType == ElementType::kInt8 && p.fp8)
    return "an int8 residual is for int8 convolutions, not fp8 ones";
  return nullptr;
}

cudaError_t int8Conv(const Int8ConvProblem& p, Int8ConvTile tile, void* y, ElementType yType, cudaStream_t stream) {
  if (int8ConvRefusal(p)) return cudaErrorInvalidValue;
  const size_t yBytes = yType == ElementType::kFloat32                                      ? 4
                        : yType == ElementType::kFloat16 || yType == ElementType::kBFloat16 ? 2
                                                                                            : 1;
  if (!y || !aligned(y, 2 * yBytes)) return cudaErrorInvalidValue;
  if (p.rows() == 0) return cudaSuccess;
  ConvArgs a{};
  a.x = static_cast<const uint8_t*>(p.x), a.w = static_cast<const uint8_t*>(p.w), a.y = y;
  a.inH = int32_t(p.inH), a.inW = int32_t(p.inW), a.channels = int32_t(p.channels);
  a.outChannels = int32_t(p.outChannels), a.kernelW = int32_t(p.kernelW);
  a.strideH = int32_t(p.strideH), a.strideW = int32_t(p.strideW);
  a.dilationH = int32_t(p.dilationH), a.dilationW = int32_t(p.dilationW);
  a.padTop = int32_t(p.padTop), a.padLeft = int32_t(p.padLeft);
  a.rows = int32_t(p.rows()), a.plane = int32_t(p.outH * p.outW), a.outW = int32_t(p.outW);
  a.channelChunks = int32_t(p.channels / 16);
  a.kChunks = int32_t(p.kernelH * p.kernelW * a.channelChunks);
  a.kTiles = (a.kChunks + kChunks - 1) / kChunks;
  a.multipliers = p.multipliers, a.bias = p.bias, a.residual = p.residual, a.residualType = p.residualType;
  a.residualScale = p.residualScale;
  a.residualVectors = p.residual && p.residualType == ElementType::kInt8 && aligned(p.residual, 16);
  a.residualBeforeActivation = p.residualBeforeActivation;
  a.activation = p.activation, a.alpha = p.alpha, a.beta = p.beta;
  a.outputScale = p.outputScale, a.outputZero = p.outputZero;
  switch (tile) {
    case Int8ConvTile::k128x128:
      return launchTile<Large>(a, p.fp8, yType, stream);
    case Int8ConvTile::k128x64:
      return launchTile<Wide>(a, p.fp8, yType, stream);
    case Int8ConvTile::k64x64:
      return launchTile<Small>(a, p.fp8, yType, stream);
    case Int8ConvTile::k256x64:
      return launchTile<Tall>(a, p.fp8, yType, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace kiln::kernels::cuda
