#include <kiln/error.h>
#include <kiln/layer_precision_file.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kiln {
namespace {

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

std::pair<std::string, Precision> parseLayerPrecision(const std::string& spec, const std::string& where) {
  const size_t colon = spec.rfind(':');
  const auto precision = colon == std::string::npos ? std::nullopt : parsePrecision(trimmed(spec.substr(colon + 1)));
  const std::string layer = colon == std::string::npos ? "" : trimmed(spec.substr(0, colon));
  if (!precision || layer.empty())
    throw Error(ErrorCode::kInvalidArgument, where + ": '" + spec +
                                                 "' must look like LAYER:PRECISION, e.g. conv1:fp32 (precisions: "
                                                 "fp32, tf32, fp16, bf16, int8, fp8, fp4)");
  return {layer, *precision};
}

LayerPrecisions parseLayerPrecisionFile(const std::string& text, const std::string& path) {
  LayerPrecisions constraints;
  std::map<std::string, int> lineOf;
  std::istringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    line = trimmed(line);
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + " line " + std::to_string(number);
    auto [layer, precision] = parseLayerPrecision(line, where);
    auto [it, added] = constraints.emplace(layer, precision);
    if (!added && it->second != precision)
      throw Error(ErrorCode::kInvalidArgument, where + " asks for layer '" + layer + "' in " + toString(precision) +
                                                   " but line " + std::to_string(lineOf[layer]) + " asks for " +
                                                   toString(it->second) + "; keep one of the two");
    if (added) lineOf[layer] = number;
  }
  return constraints;
}

LayerPrecisions readLayerPrecisionFile(const std::string& path) {
  std::error_code ec;
  std::ifstream in(path, std::ios::binary);
  if (!std::filesystem::is_regular_file(path, ec) || !in)
    throw Error(ErrorCode::kInvalidArgument,
                "layer precision file '" + path + "' cannot be read (it does not exist or is not a readable file)");
  return parseLayerPrecisionFile(std::string(std::istreambuf_iterator<char>(in), {}), path);
}

LayerPrecisions withLayersAt(LayerPrecisions constraints, const std::vector<std::string>& layers, Precision precision) {
  for (const auto& layer : layers) constraints[layer] = precision;
  return constraints;
}

std::string formatLayerPrecisionFile(const std::vector<std::pair<std::string, Precision>>& constraints,
                                     const std::vector<std::string>& comments) {
  std::string text;
  for (const auto& line : comments) text += "# " + line + "\n";
  for (const auto& [layer, precision] : constraints) text += layer + ":" + toString(precision) + "\n";
  return text;
}

}  // namespace kiln
