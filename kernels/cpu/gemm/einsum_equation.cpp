// Einsum equation parsing and output shapes (also used by shape inference).
#include <kernels/cpu/gemm/einsum.h>

#include <algorithm>
#include <map>

namespace kiln::kernels {
namespace {

int letterLabel(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

char labelLetter(int label) { return label < 26 ? char('a' + label) : char('A' + label - 26); }

std::string labelName(int label) {
  if (label < kFirstEllipsisLabel) return std::string("'") + labelLetter(label) + "'";
  return "ellipsis dim " + std::to_string(label - kFirstEllipsisLabel);
}

// One term's letters, and where its ellipsis is (-1: none), e.g. "b...ij" -> {1, 8, 9}, 1.
std::string parseTerm(const std::string& term, std::vector<int>& letters, int& ellipsisAt) {
  ellipsisAt = -1;
  for (size_t i = 0; i < term.size();) {
    if (term.compare(i, 3, "...") == 0) {
      if (ellipsisAt >= 0) return "term '" + term + "' has more than one ellipsis";
      ellipsisAt = int(letters.size());
      i += 3;
      continue;
    }
    const int label = letterLabel(term[i]);
    if (label < 0) return "term '" + term + "' has '" + term[i] + "', expected letters and '...'";
    letters.push_back(label);
    ++i;
  }
  return {};
}

}  // namespace

std::string parseEinsumEquation(const std::string& equation, const std::vector<int64_t>& ranks, EinsumEquation& out) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  if (terms.size() != ranks.size())
    return "equation '" + equation + "' has " + std::to_string(terms.size()) + " input terms for " +
           std::to_string(ranks.size()) + " inputs";

  std::vector<std::vector<int>> letters(terms.size());
  std::vector<int> ellipsisAt(terms.size());
  int64_t ellipsisRank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (auto err = parseTerm(terms[i], letters[i], ellipsisAt[i]); !err.empty()) return err;
    const int64_t extra = ranks[i] - int64_t(letters[i].size());
    if (extra < 0 || (ellipsisAt[i] < 0 && extra != 0))
      return "term '" + terms[i] + "' does not match input " + std::to_string(i) + " of rank " +
             std::to_string(ranks[i]);
    ellipsisRank = std::max(ellipsisRank, extra);
  }

  out.inputLabels.assign(terms.size(), {});
  std::map<int, int> occurrences;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto& labels = out.inputLabels[i];
    const int64_t extra = ranks[i] - int64_t(letters[i].size());
    for (size_t p = 0; p <= letters[i].size(); ++p) {
      if (int(p) == ellipsisAt[i])
        for (int64_t e = 0; e < extra; ++e) labels.push_back(kFirstEllipsisLabel + int(ellipsisRank - extra + e));
      if (p < letters[i].size()) {
        labels.push_back(letters[i][p]);
        ++occurrences[letters[i][p]];
      }
    }
  }

  out.outputLabels.clear();
  if (arrow == std::string::npos) {  // implicit: broadcast dims, then letters used once, alphabetically
    for (int64_t e = 0; e < ellipsisRank; ++e) out.outputLabels.push_back(kFirstEllipsisLabel + int(e));
    std::vector<int> once;
    for (auto [label, count] : occurrences)
      if (count == 1) once.push_back(label);
    std::sort(once.begin(), once.end(), [](int a, int b) { return labelLetter(a) < labelLetter(b); });
    out.outputLabels.insert(out.outputLabels.end(), once.begin(), once.end());
    return {};
  }
  std::vector<int> outLetters;
  int outEllipsis = -1;
  if (auto err = parseTerm(eq.substr(arrow + 2), outLetters, outEllipsis); !err.empty()) return err;
  for (size_t p = 0; p <= outLetters.size(); ++p) {
    if (int(p) == outEllipsis)
      for (int64_t e = 0; e < ellipsisRank; ++e) out.outputLabels.push_back(kFirstEllipsisLabel + int(e));
    if (p == outLetters.size()) break;
    const int label = outLetters[p];
    if (!occurrences.count(label)) return "output label " + labelName(label) + " appears in no input";
    if (std::count(outLetters.begin(), outLetters.end(), label) > 1)
      return "output label " + labelName(label) + " appears more than once";
    out.outputLabels.push_back(label);
  }
  return {};
}

std::string einsumOutputDims(const EinsumEquation& equation, const std::vector<std::vector<int64_t>>& inputDims,
                             std::vector<int64_t>& outputDims) {
  std::map<int, int64_t> sizes;
  for (size_t i = 0; i < equation.inputLabels.size(); ++i) {
    const auto& labels = equation.inputLabels[i];
    if (labels.size() != inputDims[i].size()) return "input " + std::to_string(i) + " has the wrong rank";
    std::map<int, int64_t> own;  // a label repeated in one operand is a diagonal: sizes must agree
    for (size_t d = 0; d < labels.size(); ++d) {
      const int label = labels[d];
      const int64_t size = inputDims[i][d];
      if (auto it = own.find(label); it != own.end() && it->second != size)
        return "label " + labelName(label) + " repeats in input " + std::to_string(i) + " with sizes " +
               std::to_string(it->second) + " and " + std::to_string(size);
      own[label] = size;
      auto [it, fresh] = sizes.emplace(label, size);
      if (fresh || it->second == size || size == 1) continue;
      if (it->second != 1)
        return "label " + labelName(label) + " has size " + std::to_string(it->second) + " and " +
               std::to_string(size) + " in different inputs";
      it->second = size;
    }
  }
  outputDims.clear();
  for (int label : equation.outputLabels) outputDims.push_back(sizes.at(label));
  return {};
}

}  // namespace kiln::kernels
