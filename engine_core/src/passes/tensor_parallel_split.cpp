// Tensor parallelism for transformers, Megatron-LM's split (issue #12): rank r of N keeps 1/N of
// every attention block's heads and of every MLP's hidden width. The products that make Q, K and V
// (or a packed QKV, as GPT-2's c_attn) and an MLP's first product are split by columns, the
// attention's output product and the MLP's second by rows, and a kiln.AllReduce (sum) after each
// row-split product completes its partial sums, so every rank holds the whole block output again;
// the rest (embeddings, norms, residuals, heads) is replicated. It runs before the other passes, on
// the graph as the exporter wrote it (constants folded). The sharding rules are
// tensor_parallel_shards.cpp; this file finds the blocks and refuses what it cannot split.
#include <kiln/error.h>

#include "graph_utils.h"
#include "passes.h"
#include "tensor_parallel_shards.h"

#include <algorithm>
#include <deque>

namespace kiln {
namespace {

using namespace passes;
using namespace tensor_parallel;

struct AttentionBlock {
  std::vector<size_t> columns;  // the Q, K, V products (one when packed)
  int64_t heads = -1;           // dim -3 of the scores, when they are [..., H, L, S]
};

bool isAnyOf(const Layer& layer, std::initializer_list<const char*> ops) {
  return std::any_of(ops.begin(), ops.end(), [&](const char* op) { return isOp(layer, op); });
}

// The product with constant weights behind an attention operand: back through layout ops,
// constant scalings and biases (and a Split of a packed product).
std::optional<size_t> productBefore(const Network& network, const GraphIndex& index, std::string tensor) {
  for (int step = 0; step < 16; ++step) {
    const auto at = index.producer(tensor);
    if (!at) return std::nullopt;
    const Layer& l = index.layer(*at);
    if (isLinear(network, l)) return at;
    if (isAnyOf(l, {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Cast", "Identity", "Split"})) {
      tensor = l.inputs[0];
      continue;
    }
    if (!isAnyOf(l, {"Add", "Sub", "Mul", "Div"}) || l.inputs.size() != 2) return std::nullopt;
    const bool firstConstant = constantValue(network, l.inputs[0]) != nullptr;
    if (!firstConstant && !constantValue(network, l.inputs[1])) return std::nullopt;
    tensor = l.inputs[firstConstant ? 1 : 0];
  }
  return std::nullopt;
}

// Softmax(MatMul(Q, Kᵀ) scaled and masked) read by MatMul(·, V), with Q, K and V from products
// with constant weights; nullopt for anything else.
std::optional<AttentionBlock> attentionAround(const Network& network, const GraphIndex& index, size_t softmax) {
  const Layer& s = index.layer(softmax);
  std::optional<size_t> scores;
  std::deque<std::pair<std::string, int>> frontier = {{s.inputs[0], 0}};
  while (!frontier.empty()) {  // back through the scaling and the mask
    const auto [tensor, depth] = frontier.front();
    frontier.pop_front();
    const auto at = index.producer(tensor);
    if (!at || depth > 6) continue;
    const Layer& l = index.layer(*at);
    if (isOp(l, "MatMul") && !constantValue(network, l.inputs[0]) && !constantValue(network, l.inputs[1])) {
      if (scores && *scores != *at) return std::nullopt;
      scores = *at;
    } else if (isAnyOf(l, {"Add", "Sub", "Mul", "Div", "Where", "Cast", "Neg", "Identity", "Max", "Min"})) {
      for (const auto& in : l.inputs)
        if (!in.empty()) frontier.push_back({in, depth + 1});
    }
  }
  if (!scores) return std::nullopt;
  std::string probabilities = s.outputs[0];
  for (auto next = index.soleConsumer(probabilities);
       next && isAnyOf(index.layer(*next), {"Cast", "Dropout", "Identity"}); next = index.soleConsumer(probabilities))
    probabilities = index.layer(*next).outputs[0];
  std::optional<size_t> context;
  for (size_t reader : index.consumers(probabilities))
    if (isOp(index.layer(reader), "MatMul") && index.layer(reader).inputs[0] == probabilities) context = reader;
  if (!context) return std::nullopt;
  AttentionBlock block;
  const Layer &qk = index.layer(*scores), &pv = index.layer(*context);
  for (const std::string& operand : {qk.inputs[0], qk.inputs[1], pv.inputs[1]}) {
    const auto product = productBefore(network, index, operand);
    if (!product) return std::nullopt;
    if (std::find(block.columns.begin(), block.columns.end(), *product) == block.columns.end())
      block.columns.push_back(*product);
  }
  const Tensor* scoresTensor = network.findTensor(qk.outputs[0]);
  if (scoresTensor && scoresTensor->shape.hasRank() && scoresTensor->shape.rank() >= 4) {
    const Dim& heads = scoresTensor->shape[scoresTensor->shape.rank() - 3];
    if (heads.isKnown()) block.heads = heads.value();
  }
  return block;
}

// The product behind a whole operand that stopped a split: a gated MLP's second product (SwiGLU's
// up projection beside the gate), directly or through its bias.
std::optional<size_t> productBehind(const Network& network, const GraphIndex& index, const std::string& tensor) {
  auto at = index.producer(tensor);
  if (at && isOp(index.layer(*at), "Add") && index.layer(*at).inputs.size() == 2) {
    const Layer& add = index.layer(*at);
    const bool biasFirst = constantValue(network, add.inputs[0]) != nullptr;
    if (biasFirst || constantValue(network, add.inputs[1])) at = index.producer(add.inputs[biasFirst ? 1 : 0]);
  }
  if (at && isLinear(network, index.layer(*at))) return at;
  return std::nullopt;
}

std::string names(const Network& network, const std::vector<size_t>& layers) {
  std::string text;
  for (size_t at : layers) text += (text.empty() ? "'" : ", '") + network.layers()[at].name + "'";
  return text;
}

class TensorParallelSplitPass final : public Pass {
 public:
  TensorParallelSplitPass(int worldSize, int rank) : split_{worldSize, rank} {}
  std::string name() const override { return "TensorParallelSplit"; }

 private:
  void apply(Network& network, PassContext& context) override {
    const int n = split_.worldSize;
    if (n < 1 || split_.rank < 0 || split_.rank >= n)
      throw Error(ErrorCode::kInvalidArgument, "tensor-parallel rank " + std::to_string(split_.rank) +
                                                   " is not one of the " + std::to_string(n) + " ranks");
    if (n == 1) return;
    const std::string ranks = std::to_string(n) + " ranks";
    const GraphIndex index(network);
    const std::vector<size_t> order = network.topologicalOrder();
    std::set<size_t> claimed;
    std::vector<BlockPlan> plans;
    auto overlaps = [&](const BlockPlan& plan) {
      return std::any_of(plan.layers.begin(), plan.layers.end(), [&](size_t at) { return claimed.count(at) != 0; });
    };
    auto take = [&](BlockPlan plan, const std::string& what) {
      claimed.insert(plan.layers.begin(), plan.layers.end());
      context.note("split " + what + ": " + names(network, plan.columnProducts) + " by columns, " +
                   names(network, plan.rowProducts) + " by rows + AllReduce (rank " + std::to_string(split_.rank) +
                   " of " + std::to_string(n) + ")");
      plans.push_back(std::move(plan));
    };

    for (size_t at : order) {
      if (!isOp(network.layers()[at], "Softmax") || claimed.count(at)) continue;
      const auto block = attentionAround(network, index, at);
      if (!block) continue;
      const std::string what = "the attention block around Softmax '" + network.layers()[at].name + "'";
      if (block->heads > 0 && block->heads % n != 0)
        throw Error(ErrorCode::kInvalidArgument,
                    what + " has " + std::to_string(block->heads) + " heads, which " + ranks +
                        " do not divide; the tensor-parallel size must divide every block's head count");
      BlockPlan plan = planBlock(network, index, order, block->columns, split_);
      if (!plan.failure.empty())
        throw Error(ErrorCode::kUnsupported, "cannot split " + what + " over " + ranks + ": " + plan.failure);
      if (!plan.indivisible.empty())
        throw Error(ErrorCode::kInvalidArgument,
                    "cannot split " + what + " over " + ranks + ": they do not divide " + plan.indivisible);
      if (overlaps(plan)) continue;
      take(std::move(plan), what);
    }

    for (size_t at : order) {  // MLPs: a product -> activation -> product chain among the rest
      if (claimed.count(at) || !isLinear(network, network.layers()[at])) continue;
      std::vector<size_t> columns = {at};
      BlockPlan plan = planBlock(network, index, order, columns, split_);
      while (!plan.failure.empty() && !plan.wholeOperand.empty() && columns.size() < 3) {
        const auto gate = productBehind(network, index, plan.wholeOperand);
        if (!gate || claimed.count(*gate) || std::count(columns.begin(), columns.end(), *gate) ||
            network.layers()[*gate].inputs[0] != network.layers()[at].inputs[0])
          break;
        columns.push_back(*gate);
        plan = planBlock(network, index, order, columns, split_);
      }
      if (!plan.failure.empty() || !plan.nonlinear || overlaps(plan)) continue;
      const std::string what =
          "the MLP block " + names(network, plan.columnProducts) + " -> " + names(network, plan.rowProducts);
      if (!plan.indivisible.empty())
        throw Error(ErrorCode::kInvalidArgument,
                    "cannot split " + what + " over " + ranks + ": they do not divide " + plan.indivisible);
      take(std::move(plan), what);
    }

    if (plans.empty())
      throw Error(ErrorCode::kUnsupported,
                  "found no transformer block to split over " + ranks +
                      ": tensor parallelism splits attention blocks (Q, K, V products with constant weights -> heads "
                      "-> Softmax attention -> output product) and MLPs (product -> activation -> product)");
    applyPlans(network, plans);
    try {
      network.inferShapes();
    } catch (const Error& e) {
      throw Error(ErrorCode::kInternal,
                  std::string("the tensor-parallel split left shapes that do not agree (a Kiln bug): ") + e.what());
    }
  }

  RankSplit split_;
};

}  // namespace

std::unique_ptr<Pass> createTensorParallelSplitPass(int worldSize, int rank) {
  return std::make_unique<TensorParallelSplitPass>(worldSize, rank);
}

}  // namespace kiln
