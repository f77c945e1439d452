#include "test_models.h"

#include "onnx/tensor_proto.h"

namespace kiln::test {

ModelBuilder::ModelBuilder(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("kiln-tests");
  auto* imp = model_.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

namespace {
void setType(onnx::ValueInfoProto* vi, int32_t type) { vi->mutable_type()->mutable_tensor_type()->set_elem_type(type); }
}  // namespace

ModelBuilder& ModelBuilder::input(const std::string& name, int32_t onnxType, std::vector<int64_t> dims) {
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  setType(vi, onnxType);
  auto* shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
  return *this;
}

ModelBuilder& ModelBuilder::symbolicInput(const std::string& name, int32_t onnxType, std::vector<std::string> dims) {
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  setType(vi, onnxType);
  auto* shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name, int32_t onnxType, std::vector<int64_t> dims,
                                   bool withShape) {
  auto* vi = model_.mutable_graph()->add_output();
  vi->set_name(name);
  if (onnxType) setType(vi, onnxType);
  if (withShape) {
    auto* shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }
  return *this;
}

ModelBuilder& ModelBuilder::initializer(const std::string& name, const HostTensor& value) {
  *model_.mutable_graph()->add_initializer() = onnx_import::tensorToProto(value, name);
  return *this;
}

ModelBuilder& ModelBuilder::externalInitializer(const std::string& name, int32_t onnxType,
                                                const std::vector<int64_t>& dims,
                                                const std::vector<std::pair<std::string, std::string>>& externalData) {
  auto* tensor = model_.mutable_graph()->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnxType);
  for (int64_t d : dims) tensor->add_dims(d);
  tensor->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : externalData) {
    if (value.empty()) continue;
    auto* entry = tensor->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  return *this;
}

onnx::NodeProto& ModelBuilder::node(const std::string& opType, std::vector<std::string> inputs,
                                    std::vector<std::string> outputs, const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(opType);
  n->set_name(name.empty() ? opType + "_" + std::to_string(model_.graph().node_size()) : name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return *n;
}

std::string ModelBuilder::bytes() const { return model_.SerializeAsString(); }

void ModelBuilder::setInt(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void ModelBuilder::setFloat(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void ModelBuilder::setInts(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void ModelBuilder::setString(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void ModelBuilder::setGraph(onnx::NodeProto& n, const std::string& name, ModelBuilder& body) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body.model().graph();
}

HostTensor randomFloats(std::vector<int64_t> dims, uint32_t seed, float lo, float hi) {
  HostTensor t(DataType::kFloat32, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.elementCount(); ++i) {
    float v = dist(rng);
    p[i] = v == 0.0f ? 0.5f : v;
  }
  return t;
}

ModelBuilder convReluStack(int layers, int64_t channels, int64_t size) {
  ModelBuilder mb;
  mb.input("x", onnx::TensorProto::FLOAT, {1, channels, size, size});
  std::string in = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string n = std::to_string(i);
    const int64_t inChannels = channels + 4 * i, outChannels = inChannels + 4;
    mb.initializer("w" + n, randomFloats({outChannels, inChannels, 3, 3}, uint32_t(100 + i), -0.1f, 0.1f));
    ModelBuilder::setInts(mb.node("Conv", {in, "w" + n}, {"c" + n}, "conv" + n), "pads", {1, 1, 1, 1});
    in = i + 1 < layers ? "r" + n : "y";
    mb.node("Relu", {"c" + n}, {in}, "relu" + n);
  }
  mb.output("y");
  return mb;
}

}  // namespace kiln::test
