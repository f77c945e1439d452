// CPU kernels for the text ops: TfIdfVectorizer (n-gram counting in kernels/cpu/text/) and
// StringNormalizer.
#include "../../../ops/signal_misc.h"
#include "signal_misc.h"

#include <kernels/cpu/common/parallel.h>
#include <kernels/cpu/text/ngram_counter.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

namespace kiln {
namespace {

void tfIdfVectorizerKernel(KernelContext& ctx) {
  TfIdfAttributes a = tfIdfAttributes(ctx.layer());
  const HostTensor& x = ctx.input(0);
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("X must be [C] or [N, C], got shape " + dimsToString(x.dims()));
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, length = x.dims().back();
  std::vector<int64_t> tokens;
  if (a.stringPool) {
    if (x.dtype() != DataType::kString) ctx.fail("X must be string for a pool_strings vocabulary");
    std::unordered_map<std::string, int64_t> ids;
    for (size_t i = 0; i < a.vocabulary.size(); ++i) ids.emplace(a.vocabulary[i], int64_t(i));
    const std::string* words = x.data<std::string>();
    tokens.resize(size_t(x.elementCount()));
    for (int64_t i = 0; i < x.elementCount(); ++i) {
      auto it = ids.find(words[i]);
      tokens[size_t(i)] = it == ids.end() ? -1 : it->second;  // -1 matches no pool entry
    }
  } else {
    if (x.dtype() != DataType::kInt32 && x.dtype() != DataType::kInt64)
      ctx.fail("X must be int32 or int64 for a pool_int64s vocabulary, got " + std::string(toString(x.dtype())));
    tokens = x.toInt64Vector();
  }
  const kernels::NgramCounter counter(a.grams, a.slots, a.minLength, a.maxLength, a.maxSkip);
  std::vector<int64_t> dims = x.rank() == 2 ? std::vector<int64_t>{rows, a.outputSize} : std::vector<int64_t>{a.outputSize};
  HostTensor& out = ctx.allocateZeroedOutput(0, DataType::kFloat32, dims);  // counts add up from zero
  float* y = out.data<float>();
  kernels::parallelFor(rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* counts = y + r * a.outputSize;
      counter.count(tokens.data() + r * length, length, counts);
      if (a.mode == TfIdfAttributes::Mode::kTf) continue;
      for (int64_t s = 0; s < a.outputSize; ++s) {
        float weight = a.weights.empty() ? 1.0f : a.weights[size_t(s)];
        counts[s] = a.mode == TfIdfAttributes::Mode::kIdf ? (counts[s] > 0 ? weight : 0.0f) : counts[s] * weight;
      }
    }
  });
}

std::string changeCase(std::string s, int (*convert)(int)) {
  std::transform(s.begin(), s.end(), s.begin(), [&](unsigned char c) { return char(convert(c)); });
  return s;
}

// Case changes and case-insensitive matching cover ASCII letters; other bytes pass through.
void stringNormalizerKernel(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.dtype() != DataType::kString || (x.rank() != 1 && !(x.rank() == 2 && x.dim(0) == 1)))
    ctx.fail("X must be a string tensor of shape [C] or [1, C], got " + std::string(toString(x.dtype())) + " " +
             dimsToString(x.dims()));
  bool caseSensitive = ctx.layer().attrInt("is_case_sensitive", 0) != 0;
  auto key = [&](const std::string& s) { return caseSensitive ? s : changeCase(s, ::tolower); };
  std::unordered_set<std::string> stopwords;
  if (ctx.layer().hasAttr("stopwords"))
    for (const auto& w : ctx.layer().attrStrings("stopwords")) stopwords.insert(key(w));
  std::string action = ctx.layer().attrString("case_change_action", "NONE");
  std::vector<std::string> kept;
  const std::string* words = x.data<std::string>();
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    if (stopwords.count(key(words[i]))) continue;
    if (action == "LOWER") kept.push_back(changeCase(words[i], ::tolower));
    else if (action == "UPPER") kept.push_back(changeCase(words[i], ::toupper));
    else kept.push_back(words[i]);
  }
  if (kept.empty()) kept.emplace_back();  // ONNX returns one empty string when every word is removed
  int64_t count = int64_t(kept.size());
  std::vector<int64_t> dims = x.rank() == 2 ? std::vector<int64_t>{1, count} : std::vector<int64_t>{count};
  ctx.setOutput(0, HostTensor::fromVector<std::string>(dims, kept));
}

}  // namespace

void registerTextCpuKernels(CpuKernelRegistry& registry) {
  registry.add("TfIdfVectorizer", tfIdfVectorizerKernel);
  registry.add("StringNormalizer", stringNormalizerKernel);
}

}  // namespace kiln
