#include <kiln/error.h>
#include <kiln/network.h>

namespace kiln {
namespace {

template <class T>
const T& typedAttr(const Layer& layer, const std::string& key, const char* wanted) {
  auto it = layer.attributes.find(key);
  if (it == layer.attributes.end())
    throw Error(ErrorCode::kInvalidModel, layer.describe() + " is missing required attribute '" + key + "'");
  const T* v = it->second.get<T>();
  if (!v)
    throw Error(ErrorCode::kInvalidModel, layer.describe() + ": attribute '" + key + "' is " +
                                              std::string(it->second.typeName()) + ", expected " + wanted);
  return *v;
}

}  // namespace

std::string_view Attribute::typeName() const {
  switch (value_.index()) {
    case 0: return "int";
    case 1: return "float";
    case 2: return "string";
    case 3: return "ints";
    case 4: return "floats";
    case 5: return "strings";
    case 6: return "tensor";
    case 7: return "graph";
    case 8: return "graphs";
  }
  return "unknown";
}

std::string Layer::describe() const {
  std::string s = "node '" + name + "' (" + (domain.empty() ? "" : domain + "::") + opType;
  if (opsetVersion > 0) s += ", opset " + std::to_string(opsetVersion);
  return s + ")";
}

int64_t Layer::attrInt(const std::string& key, int64_t fallback) const {
  return hasAttr(key) ? attrInt(key) : fallback;
}
int64_t Layer::attrInt(const std::string& key) const { return typedAttr<int64_t>(*this, key, "int"); }

float Layer::attrFloat(const std::string& key, float fallback) const {
  return hasAttr(key) ? attrFloat(key) : fallback;
}
float Layer::attrFloat(const std::string& key) const {
  auto it = attributes.find(key);
  if (it != attributes.end())
    if (const int64_t* i = it->second.get<int64_t>()) return float(*i);  // tolerate ints for floats
  return typedAttr<float>(*this, key, "float");
}

std::string Layer::attrString(const std::string& key, const std::string& fallback) const {
  return hasAttr(key) ? attrString(key) : fallback;
}
std::string Layer::attrString(const std::string& key) const {
  return typedAttr<std::string>(*this, key, "string");
}

std::vector<int64_t> Layer::attrInts(const std::string& key, std::vector<int64_t> fallback) const {
  return hasAttr(key) ? typedAttr<std::vector<int64_t>>(*this, key, "ints") : fallback;
}
std::vector<float> Layer::attrFloats(const std::string& key, std::vector<float> fallback) const {
  return hasAttr(key) ? typedAttr<std::vector<float>>(*this, key, "floats") : fallback;
}
std::vector<std::string> Layer::attrStrings(const std::string& key) const {
  return hasAttr(key) ? typedAttr<std::vector<std::string>>(*this, key, "strings") : std::vector<std::string>{};
}
const HostTensor& Layer::attrTensor(const std::string& key) const {
  return typedAttr<HostTensor>(*this, key, "tensor");
}
const Network& Layer::attrGraph(const std::string& key) const {
  const auto& g = typedAttr<Attribute::Graph>(*this, key, "graph");
  if (!g) throw Error(ErrorCode::kInvalidModel, describe() + ": graph attribute '" + key + "' is empty");
  return *g;
}

}  // namespace kiln
