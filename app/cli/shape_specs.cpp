#include "shape_specs.h"

#include <kiln/error.h>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace kiln::cli {

std::vector<int64_t> parseDims(const std::string& text, const std::string& spec, const std::string& option) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;  // "NAME:" is a scalar
  size_t start = 0;
  while (true) {
    size_t end = text.find('x', start);
    std::string token = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (token.empty() || token.size() > 12 ||
        !std::all_of(token.begin(), token.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw Error(ErrorCode::kInvalidArgument,
                  option + " '" + spec + "': '" + token + "' is not a dimension; write dims as 1x3x224x224");
    dims.push_back(std::stoll(token));
    if (end == std::string::npos) return dims;
    start = end + 1;
  }
}

ShapeMap parseShapeList(const std::vector<std::string>& lists, const std::string& option) {
  ShapeMap shapes;
  for (const auto& list : lists) {
    std::stringstream pieces(list);
    std::string spec;
    while (std::getline(pieces, spec, ',')) {
      if (spec.empty()) continue;
      size_t colon = spec.rfind(':');  // names may contain ':' (e.g. "input:0"), dims never do
      if (colon == std::string::npos || colon == 0)
        throw Error(ErrorCode::kInvalidArgument, option + " '" + spec + "' must look like NAME:1x3x224x224");
      std::string name = spec.substr(0, colon);
      if (!shapes.emplace(name, parseDims(spec.substr(colon + 1), spec, option)).second)
        throw Error(ErrorCode::kInvalidArgument, option + " gives input '" + name + "' twice");
    }
  }
  return shapes;
}

}  // namespace kiln::cli
