#include "qdq_models.h"

#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include <kernels/cuda/common/small_floats.h>

#include <algorithm>
#include <cmath>

namespace kiln::test {
namespace {

// A float8e4m3fn tensor of `dims` holding `values` (rounded to nearest even, saturated).
HostTensor float8(std::vector<int64_t> dims, const std::vector<float>& values) {
  HostTensor t(DataType::kFloat8E4M3, std::move(dims));
  auto* codes = static_cast<uint8_t*>(t.rawData());
  for (int64_t i = 0; i < t.elementCount(); ++i) codes[i] = kernels::encodeE4M3(values[size_t(i)]);
  return t;
}

}  // namespace

onnx::NodeProto& QdqWriter::add(const std::string& op, std::vector<std::string> inputs, const std::string& output,
                                const std::string& name) {
  nodes_.push_back(name);
  return mb_.node(op, std::move(inputs), {output}, name);
}

std::string QdqWriter::activation(const std::string& tensor, float lo, float hi) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  const bool ort = style_ == QdqStyle::kOnnxRuntime, fp8 = style_ == QdqStyle::kFloat8;
  const float scale = ort ? (hi - lo) / 255.0f : std::max(-lo, hi) / (fp8 ? kernels::kE4M3Max : 127.0f);
  const std::string scaleName = tensor + "_scale", zeroName = tensor + "_zero_point";
  mb_.initializer(scaleName, HostTensor::scalar<float>(scale));
  if (fp8)
    mb_.initializer(zeroName, float8({}, {0.0f}));
  else if (ort)
    mb_.initializer(zeroName, HostTensor::scalar<uint8_t>(uint8_t(std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f))));
  else
    mb_.initializer(zeroName, HostTensor::scalar<int8_t>(0));
  const std::string quantized = tensor + "_quantized", dequantized = tensor + "_dequantized";
  add("QuantizeLinear", {tensor, scaleName, zeroName}, quantized, tensor + "_QuantizeLinear");
  add("DequantizeLinear", {quantized, scaleName, zeroName}, dequantized, tensor + "_DequantizeLinear");
  activationScales_[dequantized] = scale;
  return dequantized;
}

std::string QdqWriter::weights(const std::string& name, const HostTensor& w, int64_t axis) {
  const bool perChannel = perChannelWeights_;
  const int64_t channels = perChannel ? w.dim(size_t(axis)) : 1;
  int64_t inner = 1;
  for (size_t d = size_t(axis) + 1; d < w.rank(); ++d) inner *= w.dim(d);
  auto channelOf = [&](int64_t i) { return channels == 1 ? 0 : (i / inner) % channels; };
  std::vector<float> scales(size_t(channels), 0.0f);
  for (int64_t i = 0; i < w.elementCount(); ++i)
    scales[size_t(channelOf(i))] = std::max(scales[size_t(channelOf(i))], std::fabs(w.data<float>()[i]));
  const bool fp8 = style_ == QdqStyle::kFloat8;
  for (float& s : scales) s = s > 0 ? s / (fp8 ? kernels::kE4M3Max : 127.0f) : 1.0f;
  const std::vector<int64_t> scaleDims = perChannel ? std::vector<int64_t>{channels} : std::vector<int64_t>{};
  if (fp8) {
    std::vector<float> scaled(size_t(w.elementCount()));
    for (int64_t i = 0; i < w.elementCount(); ++i) scaled[size_t(i)] = w.data<float>()[i] / scales[size_t(channelOf(i))];
    mb_.initializer(name + "_quantized", float8(w.dims(), scaled));
    mb_.initializer(name + "_zero_point", float8(scaleDims, std::vector<float>(scales.size(), 0.0f)));
  } else {
    HostTensor q(DataType::kInt8, w.dims());
    for (int64_t i = 0; i < w.elementCount(); ++i)
      q.data<int8_t>()[i] =
          int8_t(std::clamp(std::nearbyint(w.data<float>()[i] / scales[size_t(channelOf(i))]), -127.0f, 127.0f));
    mb_.initializer(name + "_quantized", q);
    mb_.initializer(name + "_zero_point", HostTensor::fromVector<int8_t>(scaleDims, std::vector<int8_t>(scales.size(), 0)));
  }
  mb_.initializer(name + "_scale", HostTensor::fromVector<float>(scaleDims, scales));
  const std::string dequantized = name + "_dequantized";
  auto& dq = add("DequantizeLinear", {name + "_quantized", name + "_scale", name + "_zero_point"}, dequantized,
                 name + "_DequantizeLinear");
  if (perChannel) ModelBuilder::setInt(dq, "axis", axis);
  weightScales_[dequantized] = scales;
  return dequantized;
}

std::string QdqWriter::bias(const std::string& name, const HostTensor& b, const std::string& activation,
                            const std::string& weights) {
  if (style_ == QdqStyle::kFloat8) {
    mb_.initializer(name, b);
    return name;
  }
  const float xScale = activationScales_.at(activation);
  const std::vector<float>& wScales = weightScales_.at(weights);
  std::vector<float> scales;
  std::vector<int32_t> values;
  for (int64_t c = 0; c < b.elementCount(); ++c) {
    scales.push_back(xScale * wScales[wScales.size() == 1 ? 0 : size_t(c)]);
    values.push_back(int32_t(std::nearbyint(b.data<float>()[c] / scales.back())));
  }
  mb_.initializer(name + "_quantized", HostTensor::fromVector<int32_t>({b.elementCount()}, values));
  mb_.initializer(name + "_scale", HostTensor::fromVector<float>({b.elementCount()}, scales));
  const std::string dequantized = name + "_dequantized";
  auto& dq = add("DequantizeLinear", {name + "_quantized", name + "_scale"}, dequantized, name + "_DequantizeLinear");
  ModelBuilder::setInt(dq, "axis", 0);
  return dequantized;
}

namespace {

constexpr auto kFloat = onnx::TensorProto::FLOAT;

struct CnnWeights {
  HostTensor w1 = randomFloats({8, 3, 3, 3}, 1, -0.5f, 0.5f), b1 = randomFloats({8}, 2, -0.2f, 0.2f);
  HostTensor w2 = randomFloats({6, 8, 3, 3}, 3, -0.3f, 0.3f), b2 = randomFloats({6}, 4, -0.2f, 0.2f);
  HostTensor wg = randomFloats({5, 150}, 5, -0.2f, 0.2f), bg = randomFloats({5}, 6, -0.5f, 0.5f);
};

void addPool(ModelBuilder& mb, const std::string& in) {
  auto& pool = mb.node("MaxPool", {in}, {"p1"}, "pool");
  ModelBuilder::setInts(pool, "kernel_shape", {2, 2});
  ModelBuilder::setInts(pool, "strides", {2, 2});
}

// [lo, hi] of r1 and c2 in the float CNN on a random input.
std::map<std::string, std::pair<float, float>> cnnRanges() {
  ModelBuilder mb = floatCnn();
  mb.output("r1").output("c2");
  auto network = OnnxImporter().importBytes(mb.bytes());
  const ValueMap values = ReferenceExecutor(network).run({{"x", randomFloats({2, 3, 10, 10}, 99)}});
  std::map<std::string, std::pair<float, float>> ranges;
  for (const char* name : {"r1", "c2"}) {
    const HostTensor& v = values.at(name).tensor;
    auto [lo, hi] = std::minmax_element(v.data<float>(), v.data<float>() + v.elementCount());
    ranges[name] = {*lo, *hi};
  }
  return ranges;
}

}  // namespace

ModelBuilder floatCnn() {
  const CnnWeights w;
  ModelBuilder mb;
  mb.input("x", kFloat, {2, 3, 10, 10});
  mb.initializer("w1", w.w1).initializer("b1", w.b1).initializer("w2", w.w2).initializer("b2", w.b2);
  mb.initializer("wg", w.wg).initializer("bg", w.bg);
  ModelBuilder::setInts(mb.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu1");
  addPool(mb, "r1");
  ModelBuilder::setInts(mb.node("Conv", {"p1", "w2", "b2"}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  mb.node("Flatten", {"c2"}, {"f"}, "flatten");
  ModelBuilder::setInt(mb.node("Gemm", {"f", "wg", "bg"}, {"y"}, "gemm"), "transB", 1);
  mb.output("y");
  return mb;
}

ModelBuilder qdqCnn(QdqStyle style, std::vector<std::string>* qdqNodes) {
  const CnnWeights w;
  auto r = cnnRanges();
  ModelBuilder mb(style == QdqStyle::kFloat8 ? 19 : 17);  // float8 Q/DQ came with opset 19
  mb.input("x", kFloat, {2, 3, 10, 10});
  QdqWriter q(mb, style);
  const std::string x = q.activation("x", -1, 1);
  const std::string w1 = q.weights("w1", w.w1, 0), b1 = q.bias("b1", w.b1, x, w1);
  ModelBuilder::setInts(mb.node("Conv", {x, w1, b1}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu1");
  addPool(mb, q.activation("r1", r["r1"].first, r["r1"].second));
  const std::string p1 = q.activation("p1", r["r1"].first, r["r1"].second);
  const std::string w2 = q.weights("w2", w.w2, 0), b2 = q.bias("b2", w.b2, p1, w2);
  ModelBuilder::setInts(mb.node("Conv", {p1, w2, b2}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  mb.node("Flatten", {q.activation("c2", r["c2"].first, r["c2"].second)}, {"f"}, "flatten");
  const std::string f = q.activation("f", r["c2"].first, r["c2"].second);
  const std::string wg = q.weights("wg", w.wg, 0), bg = q.bias("bg", w.bg, f, wg);
  ModelBuilder::setInt(mb.node("Gemm", {f, wg, bg}, {"y"}, "gemm"), "transB", 1);
  mb.output("y");
  if (qdqNodes) *qdqNodes = q.nodes();
  return mb;
}

}  // namespace kiln::test
