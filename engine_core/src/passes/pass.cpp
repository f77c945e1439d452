#include "pass.h"

#include "passes.h"

#include <chrono>

namespace kiln {

PassRecord Pass::run(Network& network, PassContext& context) {
  PassRecord record;
  record.name = name();
  record.layersBefore = int64_t(network.layers().size());
  context.changes.clear();
  auto start = std::chrono::steady_clock::now();
  apply(network, context);
  record.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  record.layersAfter = int64_t(network.layers().size());
  record.changes = std::move(context.changes);
  context.changes.clear();
  return record;
}

std::vector<PassRecord> PassManager::run(Network& network, PassContext& context) const {
  // Layers built in code may lack origins; the fusion view needs every layer to name its sources.
  for (Layer& layer : network.layers())
    if (layer.origins.empty()) layer.origins.push_back(layer.name);
  std::vector<PassRecord> records;
  for (const auto& pass : passes_) {
    records.push_back(pass->run(network, context));
    network.removeUnusedTensors();
    network.inferShapes();
  }
  return records;
}

PassManager PassManager::standard(int optimizationLevel) {
  PassManager manager;
  if (optimizationLevel <= 0) return manager;
  manager.add(createFoldConstantsPass());
  manager.add(createRemoveNoopsPass());
  manager.add(createEliminateDeadCodePass());
  if (optimizationLevel >= 3) {
    // Recognise the exporters' decompositions before the generic fusions take their pieces.
    manager.add(createRecognizeLayerNormPass());
    manager.add(createRecognizeGeluPass());
    manager.add(createFuseAttentionPass());
    manager.add(createFoldAttentionOutputLayoutPass());
  }
  if (optimizationLevel >= 2) {
    manager.add(createFoldBatchNormPass());
    manager.add(createFuseConvEpiloguePass());
    manager.add(createFuseConvMaxPoolPass());
    manager.add(createFuseSqueezeExcitationPass());
    manager.add(createUnflattenGemmPass());
    manager.add(createFuseMatMulEpiloguePass());
  }
  if (optimizationLevel >= 3) {
    manager.add(createMergeSiblingMatMulsPass());
    manager.add(createPackAttentionInputsPass());
    manager.add(createFusePointwisePass());
  }
  if (optimizationLevel >= 2) manager.add(createEliminateDeadCodePass());
  return manager;
}

PassManager PassManager::tensorParallelSplit(int worldSize, int rank) {
  PassManager manager;
  manager.add(createFoldConstantsPass());
  manager.add(createRemoveNoopsPass());
  manager.add(createEliminateDeadCodePass());
  manager.add(createTensorParallelSplitPass(worldSize, rank));
  return manager;
}

}  // namespace kiln
