// Reading and writing single values as protobuf files (the format of ONNX's test data sets).
#include <kiln/error.h>
#include <kiln/file_io.h>
#include <kiln/onnx_importer.h>

#include "tensor_proto.h"

#include <onnx/onnx-data.pb.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln {
namespace {

std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIoError, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class Proto>
Proto parseFile(const std::string& path, const char* what) {
  Proto proto;
  std::string bytes = readWholeFile(path);
  if (!proto.ParseFromString(bytes))
    throw Error(ErrorCode::kInvalidArgument, "'" + path + "' is not a valid ONNX " + what + " file");
  return proto;
}

std::filesystem::path baseDirOf(const std::string& path) { return std::filesystem::path(path).parent_path(); }

Value sequenceFromProto(const onnx::SequenceProto& seq, const std::string& path) {
  std::vector<HostTensor> items;
  for (const auto& t : seq.tensor_values())
    items.push_back(onnx_import::tensorFromProto(t, baseDirOf(path).string(), "'" + path + "'"));
  return Value::ofSequence(std::move(items));
}

}  // namespace

HostTensor readTensorProtoFile(const std::string& path) {
  auto proto = parseFile<onnx::TensorProto>(path, "TensorProto");
  return onnx_import::tensorFromProto(proto, baseDirOf(path).string(), "'" + path + "'");
}

Value readValueProtoFile(const std::string& path, ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor: return Value(readTensorProtoFile(path));
    case ValueKind::kSequence: return sequenceFromProto(parseFile<onnx::SequenceProto>(path, "SequenceProto"), path);
    case ValueKind::kOptionalTensor:
    case ValueKind::kOptionalSequence: {
      auto opt = parseFile<onnx::OptionalProto>(path, "OptionalProto");
      if (opt.has_tensor_value()) {
        Value v(onnx_import::tensorFromProto(opt.tensor_value(), baseDirOf(path).string(), "'" + path + "'"));
        v.kind = ValueKind::kOptionalTensor;
        return v;
      }
      if (opt.has_sequence_value()) {
        Value v = sequenceFromProto(opt.sequence_value(), path);
        v.kind = ValueKind::kOptionalSequence;
        return v;
      }
      return Value::emptyOptional(kind);
    }
  }
  throw Error(ErrorCode::kInternal, "unknown value kind");
}

void writeTensorProtoFile(const HostTensor& tensor, const std::string& path, const std::string& name) {
  writeFileAtomically(path, onnx_import::tensorToProto(tensor, name).SerializeAsString());
}

}  // namespace kiln
