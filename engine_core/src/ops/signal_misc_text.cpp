// Type and shape inference for the text ops: TfIdfVectorizer and StringNormalizer.
#include "signal_misc.h"

#include <algorithm>
#include <unordered_map>

namespace kiln {

TfIdfAttributes tfIdfAttributes(const Layer& layer) {
  auto fail = [&](const std::string& why) { throw Error(ErrorCode::kInvalidModel, layer.describe() + ": " + why); };
  TfIdfAttributes a;
  std::string mode = layer.attrString("mode", "");
  if (mode == "TF") a.mode = TfIdfAttributes::Mode::kTf;
  else if (mode == "IDF") a.mode = TfIdfAttributes::Mode::kIdf;
  else if (mode == "TFIDF") a.mode = TfIdfAttributes::Mode::kTfIdf;
  else fail("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  a.minLength = layer.attrInt("min_gram_length", 0);
  a.maxLength = layer.attrInt("max_gram_length", 0);
  a.maxSkip = layer.attrInt("max_skip_count", 0);
  if (a.minLength < 1 || a.maxLength < a.minLength)
    fail("min_gram_length and max_gram_length must satisfy 1 <= min <= max, got " + std::to_string(a.minLength) +
         " and " + std::to_string(a.maxLength));
  if (a.maxSkip < 0) fail("max_skip_count must not be negative, got " + std::to_string(a.maxSkip));

  a.stringPool = layer.hasAttr("pool_strings");
  if (a.stringPool == layer.hasAttr("pool_int64s")) fail("exactly one of pool_int64s and pool_strings is required");
  std::vector<int64_t> pool;
  if (a.stringPool) {
    std::unordered_map<std::string, int64_t> ids;
    for (const auto& s : layer.attrStrings("pool_strings")) {
      auto [it, added] = ids.emplace(s, int64_t(a.vocabulary.size()));
      if (added) a.vocabulary.push_back(s);
      pool.push_back(it->second);
    }
  } else {
    pool = layer.attrInts("pool_int64s");
  }
  std::vector<int64_t> starts = layer.attrInts("ngram_counts");
  std::vector<int64_t> indexes = layer.attrInts("ngram_indexes");
  if (starts.empty() || indexes.empty()) fail("ngram_counts and ngram_indexes are required");
  size_t next = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t n = int64_t(k) + 1;
    int64_t begin = starts[k], end = k + 1 < starts.size() ? starts[k + 1] : int64_t(pool.size());
    if (begin < 0 || end < begin || end > int64_t(pool.size()) || (end - begin) % n != 0)
      fail("ngram_counts entry " + std::to_string(k) + " (" + std::to_string(begin) +
           ") does not split the pool into whole " + std::to_string(n) + "-grams");
    a.grams.emplace_back();
    a.slots.emplace_back();
    for (int64_t i = begin; i < end; i += n, ++next) {
      if (next >= indexes.size()) fail("the pool holds more n-grams than ngram_indexes lists");
      if (indexes[next] < 0) fail("ngram_indexes must not be negative, got " + std::to_string(indexes[next]));
      a.grams.back().emplace_back(pool.begin() + i, pool.begin() + i + n);
      a.slots.back().push_back(indexes[next]);
    }
  }
  if (next != indexes.size())
    fail("ngram_indexes lists " + std::to_string(indexes.size()) + " entries but the pool holds " +
         std::to_string(next) + " n-grams");
  a.outputSize = *std::max_element(indexes.begin(), indexes.end()) + 1;
  a.weights = layer.attrFloats("weights");
  if (!a.weights.empty() && int64_t(a.weights.size()) < a.outputSize)
    fail("weights has " + std::to_string(a.weights.size()) + " values for " + std::to_string(a.outputSize) + " outputs");
  return a;
}

namespace {

void inferTfIdfVectorizer(InferenceContext& ctx) {
  TfIdfAttributes a = tfIdfAttributes(ctx.layer());
  DataType t = ctx.inputType(0);
  if (t != DataType::kUndefined) {
    bool ok = a.stringPool ? t == DataType::kString : t == DataType::kInt32 || t == DataType::kInt64;
    if (!ok)
      ctx.fail(std::string("X must be ") + (a.stringPool ? "string (the pool is pool_strings)" : "int32 or int64 (the pool is pool_int64s)") +
               ", got " + std::string(toString(t)));
  }
  const Shape& in = ctx.inputShape(0);
  if (!in.hasRank()) {
    ctx.setOutput(0, DataType::kFloat32, Shape::unknownRank());
    return;
  }
  if (in.rank() == 1) ctx.setOutput(0, DataType::kFloat32, Shape{a.outputSize});
  else if (in.rank() == 2) ctx.setOutput(0, DataType::kFloat32, Shape{in[0], a.outputSize});
  else ctx.fail("X must be [C] or [N, C], got shape " + in.toString());
}

void inferStringNormalizer(InferenceContext& ctx) {
  std::string action = ctx.layer().attrString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.fail("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
  DataType t = ctx.inputType(0);
  if (t != DataType::kUndefined && t != DataType::kString) ctx.fail("X must be a string tensor, got " + std::string(toString(t)));
  const Shape& in = ctx.inputShape(0);
  if (!in.hasRank()) {
    ctx.setOutput(0, DataType::kString, Shape::unknownRank());
    return;
  }
  if (in.rank() == 2 && in[0].isKnown() && in[0].value() != 1)
    ctx.fail("X must be [C] or [1, C], got shape " + in.toString());
  if (in.rank() == 1) ctx.setOutput(0, DataType::kString, Shape{Dim::unknown()});
  else if (in.rank() == 2) ctx.setOutput(0, DataType::kString, Shape{1, Dim::unknown()});
  else ctx.fail("X must be [C] or [1, C], got shape " + in.toString());
}

}  // namespace

void registerTextSchemas(OpSchemaRegistry& registry) {
  registry.add({"", "TfIdfVectorizer", inferTfIdfVectorizer, 1, 1});
  registry.add({"", "StringNormalizer", inferStringNormalizer, 1, 1});
}

}  // namespace kiln
