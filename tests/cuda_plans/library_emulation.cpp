#include "cuda_plans/library_emulation.h"

#include <kernels/cuda/layout/pad.h>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kiln::test {
namespace {

template <class T>
T layoutValue(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute) {
  T value{};
  size_t written = 0;
  cuda::checkCublas(cublasLtMatrixLayoutGetAttribute(layout, attribute, &value, sizeof(value), &written),
                    "reading a layout");
  return value;
}

template <class T>
T descValue(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute) {
  T value{};
  size_t written = 0;
  cuda::checkCublas(cublasLtMatmulDescGetAttribute(desc, attribute, &value, sizeof(value), &written),
                    "reading a matmul descriptor");
  return value;
}

struct Matrix {
  int64_t rows, cols, ld, stride, batch;
  explicit Matrix(cublasLtMatrixLayout_t l)
      : rows(int64_t(layoutValue<uint64_t>(l, CUBLASLT_MATRIX_LAYOUT_ROWS))),
        cols(int64_t(layoutValue<uint64_t>(l, CUBLASLT_MATRIX_LAYOUT_COLS))),
        ld(layoutValue<int64_t>(l, CUBLASLT_MATRIX_LAYOUT_LD)),
        stride(layoutValue<int64_t>(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)),
        batch(layoutValue<int32_t>(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)) {}
  int64_t at(int64_t b, int64_t r, int64_t c) const { return b * stride + r + c * ld; }  // column-major
};

std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    index[i] = linear % dims[i];
    linear /= dims[i];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  int64_t linear = 0;
  for (size_t i = 0; i < dims.size(); ++i) linear = linear * dims[i] + index[i];
  return linear;
}

}  // namespace

int64_t countOf(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<float> randomValues(int64_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = uniform(generator);
  return values;
}

float broadcastAt(const std::vector<float>& t, const std::vector<int64_t>& dims, const std::vector<int64_t>& outDims,
                  int64_t linear, size_t base) {
  const std::vector<int64_t> index = unravel(linear, outDims);
  int64_t offset = 0, stride = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t d = dims.size() - 1 - i, o = outDims.size() - 1 - i;
    offset += (dims[d] == 1 ? 0 : index[o]) * stride;
    stride *= dims[d];
  }
  return t[base + size_t(offset)];
}

float geluTanh(float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); }

void emulateLtMatmul(const cuda::LtGemm& gemm, float alpha, const float* kilnA, const float* kilnB, float beta,
                     const float* c, float* d, const float* bias) {
  const cuda::LtGemm::Descriptors descriptors = gemm.descriptors();
  const float* a = kilnB;  // cuBLASLt's A is Kiln's B (cublaslt_matmul.h)
  const float* b = kilnA;
  const bool transA = descValue<int32_t>(descriptors.desc, CUBLASLT_MATMUL_DESC_TRANSA) == CUBLAS_OP_T;
  const bool transB = descValue<int32_t>(descriptors.desc, CUBLASLT_MATMUL_DESC_TRANSB) == CUBLAS_OP_T;
  const uint32_t epilogue = descValue<uint32_t>(descriptors.desc, CUBLASLT_MATMUL_DESC_EPILOGUE);
  const Matrix A(descriptors.a), B(descriptors.b), C(descriptors.c), D(descriptors.d);
  const int64_t m = transA ? A.cols : A.rows, k = transA ? A.rows : A.cols;
  const int64_t n = transB ? B.rows : B.cols, kB = transB ? B.cols : B.rows;
  if (k != kB || D.rows != m || D.cols != n || C.rows != m || C.cols != n) {
    ADD_FAILURE() << "cuBLASLt layouts do not fit: op(A) " << m << "x" << k << ", op(B) " << kB << "x" << n << ", D "
                  << D.rows << "x" << D.cols;
    return;
  }
  if (A.batch != D.batch || B.batch != D.batch || C.batch != D.batch) {
    ADD_FAILURE() << "cuBLASLt batch counts differ";
    return;
  }
  if (A.ld < A.rows || B.ld < B.rows || C.ld < C.rows || D.ld < D.rows) {
    ADD_FAILURE() << "a cuBLASLt leading dimension is below its rows";
    return;
  }
  const uint32_t activation = epilogue & ~uint32_t(CUBLASLT_EPILOGUE_BIAS);
  for (int64_t batch = 0; batch < D.batch; ++batch)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += double(transA ? a[A.at(batch, p, i)] : a[A.at(batch, i, p)]) *
                 double(transB ? b[B.at(batch, j, p)] : b[B.at(batch, p, j)]);
        float v = float(alpha * sum);
        if (beta != 0.0f) v += beta * c[C.at(batch, i, j)];
        if (epilogue & CUBLASLT_EPILOGUE_BIAS) v += bias[i];
        if (activation == CUBLASLT_EPILOGUE_RELU) v = std::max(v, 0.0f);
        if (activation == CUBLASLT_EPILOGUE_GELU) v = geluTanh(v);
        d[D.at(batch, i, j)] = v;
      }
}

std::vector<float> emulateCudnnConvolution(const cuda::ConvProblem& p, const std::vector<float>& x,
                                           const std::vector<float>& w) {
  const size_t rank = p.x.size() - 2;
  // The forward convolution runs from `in` to `out`: x to y, or (backward data) y to x.
  const std::vector<int64_t>& in = p.backwardData ? p.y : p.x;
  const std::vector<int64_t>& out = p.backwardData ? p.x : p.y;
  for (size_t a = 0; a < rank; ++a) {
    const int64_t span = (p.w[a + 2] - 1) * p.dilations[a] + 1, reach = in[a + 2] + 2 * p.pads[a] - span;
    EXPECT_TRUE(reach >= 0 && reach / p.strides[a] + 1 == out[a + 2])
        << "cuDNN's forward output on spatial axis " << a << " would not be " << out[a + 2];
  }
  const int64_t filters = p.w[0], channelsPerGroup = p.w[1], filtersPerGroup = filters / p.groups;
  EXPECT_EQ(in[1], channelsPerGroup * p.groups);
  EXPECT_EQ(out[1], filters);
  std::vector<float> y(size_t(countOf(p.y)), 0.0f);
  const std::vector<int64_t> kernel(p.w.begin() + 2, p.w.end());
  for (int64_t o = 0; o < countOf(out); ++o) {
    const std::vector<int64_t> oi = unravel(o, out);
    const int64_t group = oi[1] / filtersPerGroup;
    for (int64_t c = 0; c < channelsPerGroup; ++c)
      for (int64_t r = 0; r < countOf(kernel); ++r) {
        const std::vector<int64_t> ri = unravel(r, kernel);
        std::vector<int64_t> ii{oi[0], group * channelsPerGroup + c};
        bool inside = true;
        for (size_t a = 0; a < rank; ++a) {
          const int64_t i = oi[a + 2] * p.strides[a] - p.pads[a] + ri[a] * p.dilations[a];
          inside = inside && i >= 0 && i < in[a + 2];
          ii.push_back(i);
        }
        if (!inside) continue;
        std::vector<int64_t> wi{oi[1], c};
        wi.insert(wi.end(), ri.begin(), ri.end());
        const float weight = w[size_t(ravel(wi, p.w))];
        if (p.backwardData) y[size_t(ravel(ii, in))] += x[size_t(o)] * weight;  // dx[i] += dy[o] · w
        else y[size_t(o)] += x[size_t(ravel(ii, in))] * weight;
      }
  }
  return y;
}

std::vector<float> emulateZeroPad(const std::vector<float>& src, const std::vector<int64_t>& srcDims,
                                  const std::vector<int64_t>& padsBegin, const std::vector<int64_t>& dstDims) {
  const auto geometry = kernels::cuda::padGeometry(srcDims, padsBegin, dstDims, kernels::cuda::PadMode::kConstant);
  std::vector<float> dst(size_t(countOf(dstDims)), 0.0f);
  if (!geometry) {
    ADD_FAILURE() << "the pad kernel refuses these arguments";
    return dst;
  }
  for (int64_t i = 0; i < countOf(dstDims); ++i) {
    const int64_t from = geometry->sourceOffset(i);
    dst[size_t(i)] = from < 0 ? 0.0f : src[size_t(from)];
  }
  return dst;
}

}  // namespace kiln::test
