#pragma once
// Builds small ONNX models in code through the ONNX protobuf API, for importer and op tests.
#include <kiln/host_tensor.h>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace kiln::test {

// Short names for the ONNX element types of models built in tests (`using namespace kiln::test::onnx_types;`).
namespace onnx_types {
inline constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
inline constexpr int32_t kInt32 = onnx::TensorProto::INT32;
inline constexpr int32_t kInt64 = onnx::TensorProto::INT64;
inline constexpr int32_t kBool = onnx::TensorProto::BOOL;
}  // namespace onnx_types

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17);
  // dims: -1 for an unknown dim; use symbolicInput for named dims.
  ModelBuilder& input(const std::string& name, int32_t onnxType, std::vector<int64_t> dims);
  ModelBuilder& symbolicInput(const std::string& name, int32_t onnxType, std::vector<std::string> dims);
  ModelBuilder& output(const std::string& name, int32_t onnxType = 0, std::vector<int64_t> dims = {},
                       bool withShape = false);
  ModelBuilder& initializer(const std::string& name, const HostTensor& value);
  // An initializer whose bytes live in an external file: `externalData` holds the key/value entries
  // (location, offset, length) in order; entries with an empty value are left out.
  ModelBuilder& externalInitializer(const std::string& name, int32_t onnxType, const std::vector<int64_t>& dims,
                                    const std::vector<std::pair<std::string, std::string>>& externalData);
  onnx::NodeProto& node(const std::string& opType, std::vector<std::string> inputs, std::vector<std::string> outputs,
                        const std::string& name = "");
  onnx::ModelProto& model() { return model_; }
  std::string bytes() const;

  static void setInt(onnx::NodeProto& n, const std::string& name, int64_t v);
  static void setFloat(onnx::NodeProto& n, const std::string& name, float v);
  static void setInts(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v);
  static void setString(onnx::NodeProto& n, const std::string& name, const std::string& v);
  // A subgraph attribute (If branches, Loop/Scan bodies): `body`'s graph.
  static void setGraph(onnx::NodeProto& n, const std::string& name, ModelBuilder& body);

 private:
  onnx::ModelProto model_;
};

// Seeded random tensor with values in [lo, hi); never all zeros.
HostTensor randomFloats(std::vector<int64_t> dims, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// x[1, channels, size, size] through `layers` 3x3 convolutions (pad 1, random weights, no bias)
// named conv0, conv1, ..., each followed by a Relu, into y; conv i writes channels + 4 (i + 1)
// channels, so no two layers share a timing-cache entry. Several CPU tactics a layer, for tests of
// tactic timing, its progress and its cancellation.
ModelBuilder convReluStack(int layers, int64_t channels, int64_t size);

}  // namespace kiln::test
