#pragma once
// The signal_misc op family's schema files: signal processing here (signal_misc.cpp), detection and
// sampling, text, and random generation in signal_misc_*.cpp.
#include "op_schema.h"

#include <kernels/cpu/sampling/grid_sample.h>

namespace kiln {

void registerDetectionSchemas(OpSchemaRegistry& registry);
void registerTextSchemas(OpSchemaRegistry& registry);
void registerRandomSchemas(OpSchemaRegistry& registry);

// A one-value integer input (sizes, lengths, steps) when its value is known now: the value, else nullopt.
// Fails when the input is not an integer scalar.
std::optional<int64_t> knownScalarInput(const InferenceContext& ctx, size_t i, const char* what);

// TfIdfVectorizer's attributes, checked, with the pool split into n-grams by length. String pools
// become token ids: a string's id is its index in `vocabulary`.
struct TfIdfAttributes {
  enum class Mode { kTf, kIdf, kTfIdf } mode = Mode::kTf;
  int64_t minLength = 1, maxLength = 1, maxSkip = 0;
  std::vector<std::vector<std::vector<int64_t>>> grams;  // [n - 1][i]: the i-th pool n-gram of length n
  std::vector<std::vector<int64_t>> slots;               // its output position
  bool stringPool = false;
  std::vector<std::string> vocabulary;
  std::vector<float> weights;  // by output position; empty for all ones
  int64_t outputSize = 0;
};
TfIdfAttributes tfIdfAttributes(const Layer& layer);

// GridSample's mode, padding_mode and align_corners; throws kiln::Error naming the layer when invalid.
kernels::GridSampleConfig gridSampleAttributes(const Layer& layer);

}  // namespace kiln
