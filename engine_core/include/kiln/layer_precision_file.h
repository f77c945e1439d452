#pragma once
// Per-layer precision constraints as text. One constraint is `LAYER:PRECISION` (the name is
// everything before the last ':'), as `kiln build --layer-precision` takes it; a constraints file
// (`kiln build --layer-precision-file`, written by `kiln debug precision` and `kiln debug advise`)
// holds one a line, with '#' comment lines and blank lines skipped. Names are the engine's layer
// names after the graph passes, as `kiln inspect PLAN` lists them.
#include <kiln/builder_config.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

using LayerPrecisions = std::map<std::string, Precision>;

// "conv1:fp32" -> {"conv1", kFP32}. `where` names the text in errors ("--layer-precision 'x'",
// "constraints.txt line 3"); a malformed one is kiln::Error(kInvalidArgument).
std::pair<std::string, Precision> parseLayerPrecision(const std::string& spec, const std::string& where);

// A constraints file's text; `path` names it in errors. A layer given twice with different
// precisions is an error naming both lines.
LayerPrecisions parseLayerPrecisionFile(const std::string& text, const std::string& path);
// Reads and parses the file (one that cannot be read is kInvalidArgument naming it).
LayerPrecisions readLayerPrecisionFile(const std::string& path);

// `constraints` with each of `layers` at `precision` (replacing what they had).
LayerPrecisions withLayersAt(LayerPrecisions constraints, const std::vector<std::string>& layers, Precision precision);

// A constraints file: `comments` as '#' lines, then one LAYER:PRECISION a line in the given order.
std::string formatLayerPrecisionFile(const std::vector<std::pair<std::string, Precision>>& constraints,
                                     const std::vector<std::string>& comments);

}  // namespace kiln
