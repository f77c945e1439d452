#pragma once
// Parsing of the command line's shape lists: "NAME:1x3x224x224,NAME2:..." (names may contain ':').
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::cli {

using ShapeMap = std::map<std::string, std::vector<int64_t>>;

// "1x3x224x224" -> {1,3,224,224}; "" is a scalar. `spec` and `option` name the text in errors.
std::vector<int64_t> parseDims(const std::string& text, const std::string& spec, const std::string& option);
// Every "NAME:DIMS" of one or more comma-joined lists; a name given twice is an error.
ShapeMap parseShapeList(const std::vector<std::string>& lists, const std::string& option);

}  // namespace kiln::cli
