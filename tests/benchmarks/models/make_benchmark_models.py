#!/usr/bin/python3
"""Writes the CPU benchmark's models and their inputs (seeded, so every run measures the same thing).

  /usr/bin/python3 tests/benchmarks/models/make_benchmark_models.py OUT_DIR [--real-models CACHE_DIR]

For each model NAME it writes OUT_DIR/NAME.onnx, one raw little-endian float32 file per input
(OUT_DIR/NAME.input<i>.bin) and OUT_DIR/NAME.inputs.json listing them ({"inputs": [{name, dims,
file}]}), which both the Kiln benchmark and tests/benchmarks/ort_bench.js read.

  resnet18     ResNet-18-like CNN at 1x3x224x224: Conv+BatchNorm+Relu, residual Add, MaxPool,
               GlobalAveragePool, Flatten, Gemm (as exported by torchvision, BN not folded).
  bert_tiny    BERT-like encoder, 4 layers, hidden 256, 4 heads, FFN 1024, seq 128, batch 1, in the
               exporters' decomposed form: LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div, GELU via Erf,
               attention through Reshape/Transpose/MatMul/Softmax with an additive mask.

With --real-models CACHE_DIR (where scripts/fetch_test_models.sh put openWakeWord's trained models)
it also copies those and writes their inputs; their dynamic batch is fixed by the input's dims:

  owkw_embedding      openWakeWord's embedding CNN, one window [1, 76, 32, 1] (one streaming step)
  owkw_embedding_b32  the same on 32 windows at once (offline scoring of ~3 s of audio)
  owkw_melspec        openWakeWord's melspectrogram on 1 s of audio [1, 16000]
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class GraphWriter:
    """Collects nodes and initializers with unique names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.initializers = [], []
        self.counter = 0

    def name(self, prefix):
        self.counter += 1
        return f"{prefix}_{self.counter}"

    def constant(self, prefix, array):
        name = self.name(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, prefix, shape, fan_in):
        # He-style scale keeps activations in a sane range through deep stacks.
        values = self.rng.standard_normal(shape).astype(np.float32) * np.float32(np.sqrt(2.0 / fan_in))
        return self.constant(prefix, values)

    def op(self, op_type, inputs, prefix=None, **attrs):
        out = self.name(prefix or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out


# ---------------------------------------------------------------------------------------------
# ResNet-18-like CNN


def conv_bn(g, x, in_ch, out_ch, kernel, stride, relu):
    w = g.weight("conv_w", (out_ch, in_ch, kernel, kernel), in_ch * kernel * kernel)
    pad = kernel // 2
    y = g.op("Conv", [x, w], "conv", kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4)
    scale = g.constant("bn_scale", (1.0 + 0.1 * g.rng.standard_normal(out_ch)).astype(np.float32))
    bias = g.constant("bn_bias", (0.1 * g.rng.standard_normal(out_ch)).astype(np.float32))
    mean = g.constant("bn_mean", (0.1 * g.rng.standard_normal(out_ch)).astype(np.float32))
    var = g.constant("bn_var", (1.0 + 0.1 * g.rng.random(out_ch)).astype(np.float32))
    y = g.op("BatchNormalization", [y, scale, bias, mean, var], "bn", epsilon=1e-5)
    return g.op("Relu", [y], "relu") if relu else y


def basic_block(g, x, in_ch, out_ch, stride):
    y = conv_bn(g, x, in_ch, out_ch, 3, stride, relu=True)
    y = conv_bn(g, y, out_ch, out_ch, 3, 1, relu=False)
    shortcut = x if stride == 1 and in_ch == out_ch else conv_bn(g, x, in_ch, out_ch, 1, stride, relu=False)
    return g.op("Relu", [g.op("Add", [y, shortcut], "residual")], "relu")


def make_resnet18():
    g = GraphWriter(seed=18)
    x = conv_bn(g, "input", 3, 64, 7, 2, relu=True)
    x = g.op("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 64
    for stage, out_ch in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            x = basic_block(g, x, channels, out_ch, stride)
            channels = out_ch
    x = g.op("GlobalAveragePool", [x], "gap")
    x = g.op("Flatten", [x], "flatten", axis=1)
    w = g.weight("fc_w", (1000, 512), 512)
    b = g.constant("fc_b", (0.01 * g.rng.standard_normal(1000)).astype(np.float32))
    g.nodes.append(helper.make_node("Gemm", [x, w, b], ["logits"], name="fc", transB=1))
    inputs = {"input": g.rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
    graph = helper.make_graph(g.nodes, "resnet18_like",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])],
                              g.initializers)
    return graph, inputs


# ---------------------------------------------------------------------------------------------
# BERT-like transformer encoder


def linear(g, x, in_dim, out_dim):
    w = g.weight("dense_w", (in_dim, out_dim), in_dim)
    b = g.constant("dense_b", (0.02 * g.rng.standard_normal(out_dim)).astype(np.float32))
    return g.op("Add", [g.op("MatMul", [x, w], "matmul"), b], "bias_add")


def layer_norm(g, x, hidden):
    """LayerNormalization as PyTorch's exporter writes it before opset 17."""
    mean = g.op("ReduceMean", [x], "ln_mean", axes=[-1])
    centered = g.op("Sub", [x, mean], "ln_sub")
    squared = g.op("Pow", [centered, g.constant("two", np.array(2.0, np.float32))], "ln_pow")
    variance = g.op("ReduceMean", [squared], "ln_var", axes=[-1])
    std = g.op("Sqrt", [g.op("Add", [variance, g.constant("eps", np.array(1e-12, np.float32))], "ln_add_eps")],
               "ln_sqrt")
    normalized = g.op("Div", [centered, std], "ln_div")
    gamma = g.constant("ln_gamma", (1.0 + 0.1 * g.rng.standard_normal(hidden)).astype(np.float32))
    beta = g.constant("ln_beta", (0.1 * g.rng.standard_normal(hidden)).astype(np.float32))
    return g.op("Add", [g.op("Mul", [normalized, gamma], "ln_scale"), beta], "ln_shift")


def gelu(g, x):
    """0.5 * x * (1 + erf(x / sqrt(2))), as exported from torch.nn.GELU."""
    scaled = g.op("Div", [x, g.constant("sqrt2", np.array(np.sqrt(2.0), np.float32))], "gelu_div")
    shifted = g.op("Add", [g.op("Erf", [scaled], "gelu_erf"), g.constant("one", np.array(1.0, np.float32))], "gelu_add")
    return g.op("Mul", [g.op("Mul", [x, shifted], "gelu_mul"), g.constant("half", np.array(0.5, np.float32))],
                "gelu_half")


def split_heads(g, x, seq, heads, head_dim, perm):
    shape = g.constant("heads_shape", np.array([1, seq, heads, head_dim], np.int64))
    return g.op("Transpose", [g.op("Reshape", [x, shape], "reshape")], "transpose", perm=perm)


def encoder_layer(g, x, mask, seq, hidden, heads, ffn):
    head_dim = hidden // heads
    q = split_heads(g, linear(g, x, hidden, hidden), seq, heads, head_dim, [0, 2, 1, 3])
    k = split_heads(g, linear(g, x, hidden, hidden), seq, heads, head_dim, [0, 2, 3, 1])
    v = split_heads(g, linear(g, x, hidden, hidden), seq, heads, head_dim, [0, 2, 1, 3])
    scores = g.op("MatMul", [q, k], "scores")
    scores = g.op("Div", [scores, g.constant("scale", np.array(np.sqrt(head_dim), np.float32))], "scores_scaled")
    scores = g.op("Add", [scores, mask], "scores_masked")
    probs = g.op("Softmax", [scores], "softmax", axis=-1)
    context = g.op("Transpose", [g.op("MatMul", [probs, v], "context")], "context_t", perm=[0, 2, 1, 3])
    context = g.op("Reshape", [context, g.constant("merge_shape", np.array([1, seq, hidden], np.int64))], "merge")
    x = layer_norm(g, g.op("Add", [linear(g, context, hidden, hidden), x], "attn_residual"), hidden)
    y = linear(g, gelu(g, linear(g, x, hidden, ffn)), ffn, hidden)
    return layer_norm(g, g.op("Add", [y, x], "ffn_residual"), hidden)


def make_bert_tiny(layers=4, hidden=256, heads=4, ffn=1024, seq=128):
    g = GraphWriter(seed=128)
    # The additive mask as BERT exporters compute it: (1 - attention_mask) * -10000, [1, 1, 1, seq].
    mask = g.op("Mul", [g.op("Sub", [g.constant("one", np.array(1.0, np.float32)), "attention_mask"], "mask_inv"),
                        g.constant("mask_fill", np.array(-10000.0, np.float32))], "mask_add")
    x = layer_norm(g, "embeddings", hidden)
    for _ in range(layers):
        x = encoder_layer(g, x, mask, seq, hidden, heads, ffn)
    g.nodes.append(helper.make_node("Identity", [x], ["hidden_states"], name="output"))
    attention_mask = np.ones((1, 1, 1, seq), np.float32)
    attention_mask[..., seq - seq // 8:] = 0  # padded tail, so the mask matters
    inputs = {"embeddings": g.rng.standard_normal((1, seq, hidden)).astype(np.float32),
              "attention_mask": attention_mask}
    graph = helper.make_graph(g.nodes, "bert_tiny_like",
                              [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [1, seq, hidden]),
                               helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [1, 1, 1, seq])],
                              [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [1, seq, hidden])],
                              g.initializers)
    return graph, inputs


MODELS = {"resnet18": make_resnet18, "bert_tiny": make_bert_tiny}


# Trained models fetched into the cache: name -> (file, input name, the input's seeded values).
# Timing does not depend on the values; they are kept in each model's working range: the embedding
# model reads mel / 10 + 2 of 16-bit audio (about 4-12 on speech), the melspectrogram 16-bit audio.
def real_inputs(seed, shape, low, high):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


REAL_MODELS = {
    "owkw_embedding": ("embedding_model.onnx", "input_1", lambda: real_inputs(1, (1, 76, 32, 1), 2.0, 12.0)),
    "owkw_embedding_b32": ("embedding_model.onnx", "input_1", lambda: real_inputs(32, (32, 76, 32, 1), 2.0, 12.0)),
    "owkw_melspec": ("melspectrogram.onnx", "input", lambda: real_inputs(16, (1, 16000), -3000.0, 3000.0)),
}


def write_inputs(out_dir, name, inputs):
    listing = []
    for index, (input_name, array) in enumerate(inputs.items()):
        file_name = f"{name}.input{index}.bin"
        array.astype("<f4").tofile(os.path.join(out_dir, file_name))
        listing.append({"name": input_name, "dims": list(array.shape), "file": file_name})
    with open(os.path.join(out_dir, f"{name}.inputs.json"), "w") as f:
        json.dump({"inputs": listing}, f, indent=1)


def write(out_dir, name, graph, inputs):
    model = helper.make_model(graph, producer_name="kiln-benchmarks", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out_dir, f"{name}.onnx"))
    write_inputs(out_dir, name, inputs)


def main():
    parser = argparse.ArgumentParser(description="Writes the CPU benchmark's models and inputs.")
    parser.add_argument("out_dir")
    parser.add_argument("--real-models", metavar="CACHE_DIR", help="also the fetched trained models (owkw_*)")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for name, make in MODELS.items():
        graph, inputs = make()
        write(args.out_dir, name, graph, inputs)
        print(f"wrote {os.path.join(args.out_dir, name + '.onnx')} ({len(graph.node)} nodes)")
    if args.real_models:
        for name, (file, input_name, make_input) in REAL_MODELS.items():
            source = os.path.join(args.real_models, file)
            if not os.path.isfile(source):
                sys.exit(f"{sys.argv[0]}: {source} is missing (run scripts/fetch_test_models.sh)")
            shutil.copyfile(source, os.path.join(args.out_dir, f"{name}.onnx"))
            write_inputs(args.out_dir, name, {input_name: make_input()})
            print(f"wrote {os.path.join(args.out_dir, name + '.onnx')} (copy of {source})")


if __name__ == "__main__":
    main()
