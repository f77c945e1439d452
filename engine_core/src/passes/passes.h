#pragma once
// Factories for Kiln's passes (one pass a file in this folder). PassManager::standard picks them by
// optimisation level; tests create them one at a time.
#include "pass.h"

#include <cstdint>
#include <memory>

namespace kiln {

// Evaluates layers whose inputs are all constants (including shape subgraphs) on the CPU kernels.
std::unique_ptr<Pass> createFoldConstantsPass(int64_t maxResultBytes = int64_t(16) << 20);
// Removes layers none of whose outputs are read.
std::unique_ptr<Pass> createEliminateDeadCodePass();
// Removes Identity, inference Dropout, same-type Cast, same-shape Reshape/Expand, cancelling
// Squeeze/Unsqueeze pairs and identity Transposes.
std::unique_ptr<Pass> createRemoveNoopsPass();
// Folds BatchNormalization into a preceding Conv/ConvTranspose/Gemm with constant weights.
std::unique_ptr<Pass> createFoldBatchNormPass();
// Conv/ConvTranspose + bias + activation + residual Add -> kiln.FusedConv.
std::unique_ptr<Pass> createFuseConvEpiloguePass();
// A few-channel 2-D (Fused)Conv read only by a MaxPool -> kiln.FusedConvPool (CUDA builds).
std::unique_ptr<Pass> createFuseConvMaxPoolPass();
// GlobalAveragePool -> 1x1 (Fused)Conv -> 1x1 (Fused)Conv, a squeeze-and-excitation gate ->
// kiln.SqueezeExcitation (CUDA builds).
std::unique_ptr<Pass> createFuseSqueezeExcitationPass();
// Reshape -> Gemm -> Reshape around a linear layer on an N-D activation -> MatMul + Add on it.
std::unique_ptr<Pass> createUnflattenGemmPass();
// Gemm/MatMul + bias + activation + residual Add -> kiln.FusedMatMul.
std::unique_ptr<Pass> createFuseMatMulEpiloguePass();
// Sibling MatMuls on one activation with constant weights -> one wide kiln.FusedMatMul + Split.
std::unique_ptr<Pass> createMergeSiblingMatMulsPass();
// Trees of single-consumer elementwise ops -> kiln.Pointwise.
std::unique_ptr<Pass> createFusePointwisePass();
// Decomposed LayerNorm (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add) -> LayerNormalization.
std::unique_ptr<Pass> createRecognizeLayerNormPass();
// Decomposed GELU (erf or tanh form) -> Gelu (opset 20).
std::unique_ptr<Pass> createRecognizeGeluPass();
// MatMul(Q, K^T) -> scale -> [+ mask] -> Softmax -> MatMul(., V) -> kiln.Attention.
std::unique_ptr<Pass> createFuseAttentionPass();
// kiln.Attention -> Transpose -> Reshape -> projection -> Reshape -> Transpose (sequence-first
// nn.MultiheadAttention) -> the attention writes batch-first rows, the projection reads them.
std::unique_ptr<Pass> createFoldAttentionOutputLayoutPass();
// kiln.Attention whose Q, K, V are re-indexed slices of one [..., L, 3, H, D] tensor -> reads it in place.
std::unique_ptr<Pass> createPackAttentionInputsPass();
// Tensor parallelism: rank `rank` of `worldSize` keeps its share of every attention block's heads
// and MLP width, a kiln.AllReduce after each block (tensor_parallel_split.cpp).
std::unique_ptr<Pass> createTensorParallelSplitPass(int worldSize, int rank);

}  // namespace kiln
