#include <kiln/error.h>
#include <kiln/onnx_importer.h>

#include "../ops/op_schema.h"
#include "function_expansion.h"
#include "tensor_proto.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <unordered_set>

namespace kiln {
namespace {

using namespace onnx_import;

struct ImportContext {
  std::string baseDir;
  OnnxImportOptions options;
  std::map<std::string, int64_t> opsets;                              // domain -> version
  std::map<std::string, const onnx::FunctionProto*> localFunctions;  // "domain::name"
  int depth = 0;                                                      // function/subgraph nesting
  int generatedNames = 0;
  std::vector<std::string> warnings;  // lenient imports only
};

std::string domainName(const std::string& d) { return d.empty() || d == "ai.onnx" ? "" : d; }

std::shared_ptr<Network> importGraph(const onnx::GraphProto& graph, ImportContext& ctx,
                                     const std::vector<std::string>& outerScope);
void importNode(const onnx::NodeProto& node, Network& net, ImportContext& ctx,
                const std::map<std::string, int64_t>& opsets);

// TYPE_PROTO attributes (Optional's `type`) become a type string in ONNX's notation with Kiln's
// element type names, e.g. "seq(tensor(float32))".
std::string typeString(const onnx::TypeProto& type, const std::string& what) {
  if (type.has_sequence_type()) return "seq(" + typeString(type.sequence_type().elem_type(), what) + ")";
  if (type.has_optional_type()) return "optional(" + typeString(type.optional_type().elem_type(), what) + ")";
  if (type.has_tensor_type())
    return "tensor(" + std::string(toString(fromOnnxType(type.tensor_type().elem_type(), what))) + ")";
  throw Error(ErrorCode::kUnsupported, what + " names a type Kiln does not support (tensor, seq and optional are)");
}

Attribute convertAttribute(const onnx::AttributeProto& a, ImportContext& ctx, const std::string& where,
                           const std::vector<std::string>& scope) {
  using A = onnx::AttributeProto;
  std::string what = where + ", attribute '" + a.name() + "'";
  switch (a.type()) {
    case A::FLOAT: return a.f();
    case A::INT: return a.i();
    case A::STRING: return a.s();
    case A::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case A::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case A::TENSOR: return tensorFromProto(a.t(), ctx.baseDir, what);
    case A::SPARSE_TENSOR: return tensorFromSparseProto(a.sparse_tensor(), ctx.baseDir, what);
    case A::TYPE_PROTO: return typeString(a.tp(), what);
    case A::GRAPH: return Attribute::Graph(importGraph(a.g(), ctx, scope));
    case A::GRAPHS: {
      std::vector<Attribute::Graph> graphs;
      for (const auto& g : a.graphs()) graphs.push_back(importGraph(g, ctx, scope));
      return graphs;
    }
    default: break;
  }
  // Old files omit the type; infer it from the populated field.
  if (a.has_f()) return a.f();
  if (a.has_i()) return a.i();
  if (a.has_s()) return a.s();
  if (a.has_t()) return tensorFromProto(a.t(), ctx.baseDir, what);
  if (a.has_g()) return Attribute::Graph(importGraph(a.g(), ctx, scope));
  if (a.ints_size()) return std::vector<int64_t>(a.ints().begin(), a.ints().end());
  if (a.floats_size()) return std::vector<float>(a.floats().begin(), a.floats().end());
  if (a.strings_size()) return std::vector<std::string>(a.strings().begin(), a.strings().end());
  throw Error(ErrorCode::kUnsupported, what + " has an attribute type (" + std::to_string(int(a.type())) +
                                           ") that Kiln does not support");
}

// Constant nodes become initializers: they are data, not work.
bool importConstantNode(const onnx::NodeProto& node, Network& net, ImportContext& ctx, const std::string& where) {
  if (node.op_type() != "Constant" || !domainName(node.domain()).empty() || node.output_size() != 1) return false;
  if (node.attribute_size() != 1)
    throw Error(ErrorCode::kInvalidModel, where + ": a Constant needs exactly one value attribute");
  const auto& a = node.attribute(0);
  const std::string& n = a.name();
  HostTensor value;
  std::string what = where + ", attribute '" + n + "'";
  if (n == "value") value = tensorFromProto(a.t(), ctx.baseDir, what);
  else if (n == "sparse_value") value = tensorFromSparseProto(a.sparse_tensor(), ctx.baseDir, what);
  else if (n == "value_float") value = HostTensor::scalar<float>(a.f());
  else if (n == "value_int") value = HostTensor::scalar<int64_t>(a.i());
  else if (n == "value_string") value = HostTensor::scalar<std::string>(a.s());
  else if (n == "value_floats")
    value = HostTensor::fromVector<float>({a.floats_size()}, {a.floats().begin(), a.floats().end()});
  else if (n == "value_ints")
    value = HostTensor::fromVector<int64_t>({a.ints_size()}, {a.ints().begin(), a.ints().end()});
  else if (n == "value_strings")
    value = HostTensor::fromVector<std::string>({a.strings_size()}, {a.strings().begin(), a.strings().end()});
  else
    throw Error(ErrorCode::kUnsupported, what + " is not a Constant value attribute Kiln knows");
  net.addConstant(node.output(0), std::move(value));
  return true;
}

void importNode(const onnx::NodeProto& node, Network& net, ImportContext& ctx,
                const std::map<std::string, int64_t>& opsets) {
  std::string domain = domainName(node.domain());
  auto opset = opsets.find(domain);
  std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(ctx.generatedNames++) : node.name();
  std::string where = "node '" + name + "' (" + (domain.empty() ? "" : domain + "::") + node.op_type() + ")";
  if (node.op_type().empty()) throw Error(ErrorCode::kInvalidModel, where + " has no op_type");
  if (importConstantNode(node, net, ctx, where)) return;

  // Model-local functions are inlined.
  auto local = ctx.localFunctions.find(domain + "::" + node.op_type());
  if (local != ctx.localFunctions.end()) {
    if (++ctx.depth > 64) throw Error(ErrorCode::kInvalidModel, where + ": functions nest too deeply (recursion?)");
    std::map<std::string, int64_t> fnOpsets = opsets;
    for (const auto& imp : local->second->opset_import()) fnOpsets[domainName(imp.domain())] = imp.version();
    for (const auto& inner : inlineFunction(node, name, *local->second)) importNode(inner, net, ctx, fnOpsets);
    --ctx.depth;
    return;
  }
  if (opset == opsets.end())
    throw Error(ErrorCode::kInvalidModel, where + " uses domain '" + (domain.empty() ? "ai.onnx" : domain) +
                                              "', which the model's opset_import does not declare");

  Layer layer;
  layer.name = name;
  layer.opType = node.op_type();
  layer.domain = domain;
  layer.opsetVersion = opset->second;
  layer.inputs.assign(node.input().begin(), node.input().end());
  layer.outputs.assign(node.output().begin(), node.output().end());
  std::vector<std::string> scope = net.tensorNames();
  for (const auto& a : node.attribute()) {
    if (!a.ref_attr_name().empty())
      throw Error(ErrorCode::kInvalidModel, where + ": attribute '" + a.name() + "' refers to a function attribute "
                                                "outside a function body");
    layer.attributes[a.name()] = convertAttribute(a, ctx, where, scope);
  }

  // Ops ONNX defines as functions expand into their bodies when Kiln has no kernel of its own.
  if (ctx.options.expandFunctions && !OpSchemaRegistry::instance().find(domain, node.op_type())) {
    auto types = inputTypesFor(layer, net);
    if (auto body = expandStandardFunction(node, name, opset->second, types)) {
      if (++ctx.depth > 64) throw Error(ErrorCode::kInvalidModel, where + ": functions nest too deeply");
      for (const auto& inner : body->nodes) importNode(inner, net, ctx, body->opsets.empty() ? opsets : body->opsets);
      --ctx.depth;
      return;
    }
    std::string why = where + ": op '" + node.op_type() + "' (domain '" + (domain.empty() ? "ai.onnx" : domain) +
                      "', opset " + std::to_string(opset->second) +
                      ") is not supported by Kiln; replace it, or register a plugin for it";
    if (!ctx.options.allowUnsupportedOps) throw Error(ErrorCode::kUnsupported, why);
    ctx.warnings.push_back(why);
    net.addLayer(std::move(layer));
    return;
  }
  net.addLayer(std::move(layer));
  // Type the outputs now, so later function expansions see their input types. Errors wait for the
  // full pass at the end (the file's node order may not be topological).
  try {
    net.inferLayer(net.layers().size() - 1);
  } catch (const Error&) {
  }
}

std::shared_ptr<Network> importGraph(const onnx::GraphProto& graph, ImportContext& ctx,
                                     const std::vector<std::string>& outerScope) {
  if (++ctx.depth > 64) throw Error(ErrorCode::kInvalidModel, "subgraphs nest more than 64 deep");
  auto net = std::make_shared<Network>();
  net->info().graphName = graph.name();
  std::unordered_set<std::string> initializerNames;
  for (const auto& init : graph.initializer()) {
    if (init.name().empty()) throw Error(ErrorCode::kInvalidModel, "an initializer has no name");
    net->addConstant(init.name(), tensorFromProto(init, ctx.baseDir, "initializer '" + init.name() + "'"));
    initializerNames.insert(init.name());
  }
  for (const auto& sp : graph.sparse_initializer()) {
    const std::string& n = sp.values().name();
    net->addConstant(n, tensorFromSparseProto(sp, ctx.baseDir, "sparse initializer '" + n + "'"));
    initializerNames.insert(n);
  }
  for (const auto& in : graph.input()) {
    if (initializerNames.count(in.name())) {
      // Old-style: initializer listed as an input too; it is a constant with a default value.
      continue;
    }
    Tensor t;
    t.name = in.name();
    applyTypeProto(in.type(), t);
    net->addInput(in.name(), t.dtype, t.shape, t.kind);
  }
  for (const auto& vi : graph.value_info()) applyTypeProto(vi.type(), net->addTensor(vi.name()));
  (void)outerScope;
  for (const auto& node : graph.node()) importNode(node, *net, ctx, ctx.opsets);
  for (const auto& out : graph.output()) {
    if (out.name().empty()) throw Error(ErrorCode::kInvalidModel, "a graph output has no name");
    Tensor& t = net->addTensor(out.name());
    Tensor declared;
    declared.name = out.name();
    applyTypeProto(out.type(), declared);
    if (t.dtype == DataType::kUndefined) t.dtype = declared.dtype;
    if (!t.shape.hasRank()) t.shape = declared.shape;
    t.kind = declared.kind == ValueKind::kTensor ? t.kind : declared.kind;
    net->markOutput(out.name());
  }
  --ctx.depth;
  return net;
}

std::shared_ptr<Network> importModel(const onnx::ModelProto& model, const std::string& baseDir,
                                     const OnnxImportOptions& options) {
  if (!model.has_graph())
    throw Error(ErrorCode::kInvalidModel, "the file is not an ONNX model: it has no graph");
  if (model.ir_version() <= 0)
    throw Error(ErrorCode::kInvalidModel, "the file is not an ONNX model: it declares no IR version");
  ImportContext ctx;
  ctx.baseDir = baseDir;
  ctx.options = options;
  for (const auto& imp : model.opset_import()) ctx.opsets[domainName(imp.domain())] = imp.version();
  if (model.opset_import_size() == 0) ctx.opsets[""] = 1;
  for (const auto& f : model.functions()) ctx.localFunctions[domainName(f.domain()) + "::" + f.name()] = &f;

  auto net = importGraph(model.graph(), ctx, {});
  ModelInfo& info = net->info();
  info.producerName = model.producer_name();
  info.producerVersion = model.producer_version();
  info.domain = model.domain();
  info.docString = model.doc_string();
  info.irVersion = model.ir_version();
  info.modelVersion = model.model_version();
  info.opsetImports = ctx.opsets;
  for (const auto& kv : model.metadata_props()) info.metadata[kv.key()] = kv.value();
  net->validate();
  if (options.inferShapes && !options.allowUnsupportedOps) net->inferShapes();
  if (options.inferShapes && options.allowUnsupportedOps) {
    for (size_t index : net->topologicalOrder()) {
      try {
        net->inferLayer(index);
      } catch (const Error& e) {
        ctx.warnings.push_back(e.what());
      }
    }
  }
  info.importWarnings = std::move(ctx.warnings);
  return net;
}

}  // namespace

std::shared_ptr<Network> OnnxImporter::importBytes(const std::string& bytes, const std::string& baseDir) const {
  if (bytes.empty()) throw Error(ErrorCode::kInvalidModel, "the model is empty (0 bytes)");
  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream array(bytes.data(), int(std::min<size_t>(bytes.size(), INT_MAX)));
  google::protobuf::io::CodedInputStream coded(&array);
  coded.SetTotalBytesLimit(INT_MAX);
  coded.SetRecursionLimit(256);
  if (bytes.size() > size_t(INT_MAX) || !model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    throw Error(ErrorCode::kInvalidModel,
                "the data is not a valid ONNX model (protobuf parsing failed); check that the file is a "
                "complete .onnx file, not truncated and not another format");
  return importModel(model, baseDir, options_);
}

std::shared_ptr<Network> OnnxImporter::importFile(const std::string& path) const {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(ErrorCode::kIoError, "model file '" + path + "' does not exist or is not a regular file");
  auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorCode::kIoError, "cannot read the size of model file '" + path + "'");
  if (size > size_t(INT_MAX))
    throw Error(ErrorCode::kInvalidModel, "model file '" + path +
                                              "' is over 2 GB; ONNX keeps large weights in external data files "
                                              "(save it with onnx.save(..., save_as_external_data=True))");
  std::ifstream in(path, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), std::streamsize(size)))
    throw Error(ErrorCode::kIoError, "cannot read model file '" + path + "'");
  try {
    return importBytes(bytes, std::filesystem::path(path).parent_path().string());
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

}  // namespace kiln
