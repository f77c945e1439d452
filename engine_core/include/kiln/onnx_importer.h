#pragma once
// Reads ONNX models (protobuf through Debian's libonnx) into a kiln::Network.
#include <kiln/network.h>

#include <cstdint>
#include <memory>
#include <string>

namespace kiln {

struct OnnxImportOptions {
  // Run type and shape inference after import (fills every intermediate tensor's dtype/shape).
  bool inferShapes = true;
  // Expand ops that ONNX defines as functions when Kiln has no kernel of its own for them.
  bool expandFunctions = true;
  // For viewers: keep ops Kiln cannot run (their outputs stay untyped) and tolerate inference
  // errors, recording each in ModelInfo::importWarnings instead of failing.
  bool allowUnsupportedOps = false;
};

class OnnxImporter {
 public:
  explicit OnnxImporter(OnnxImportOptions options = {}) : options_(options) {}

  // Parses a model file; external-data files are looked up next to it.
  std::shared_ptr<Network> importFile(const std::string& path) const;
  // Parses serialized ModelProto bytes; external data is resolved relative to `baseDir`.
  std::shared_ptr<Network> importBytes(const std::string& bytes, const std::string& baseDir = "") const;

 private:
  OnnxImportOptions options_;
};

// Reads a serialized ONNX TensorProto (.pb file, as in ONNX's test data sets).
HostTensor readTensorProtoFile(const std::string& path);
// Reads a .pb file holding a value of `kind`: a TensorProto, or a SequenceProto / OptionalProto.
Value readValueProtoFile(const std::string& path, ValueKind kind);
// Serializes a tensor as a TensorProto .pb file (atomically).
void writeTensorProtoFile(const HostTensor& tensor, const std::string& path, const std::string& name = "");

}  // namespace kiln
