#!/usr/bin/env python3
"""Writes sample.onnx: a small residual CNN (TinyResNet) with seeded random weights.

It exercises what Kiln Studio shows best: Conv+BatchNorm+Relu chains that fuse, residual Adds,
pooling, a Gemm head and Softmax, with a symbolic batch dimension. Run with Debian's python3-onnx:
    python3 resources/models/make_sample_model.py resources/models/sample.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261130)
nodes, inits = [], []


def weight(name, shape, scale=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    scale = scale if scale is not None else np.sqrt(2.0 / fan_in)
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
    return name


def conv_bn(prefix, x, cin, cout, k, stride, relu=True):
    w = weight(f"{prefix}.conv.weight", [cout, cin, k, k])
    nodes.append(helper.make_node("Conv", [x, w], [f"{prefix}.conv"], name=f"{prefix}/Conv",
                                  kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4))
    bn = [weight(f"{prefix}.bn.{p}", [cout], 0.1) for p in ("scale", "bias", "mean")]
    inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, cout).astype(np.float32), f"{prefix}.bn.var"))
    nodes.append(helper.make_node("BatchNormalization", [f"{prefix}.conv", *bn, f"{prefix}.bn.var"],
                                  [f"{prefix}.bn"], name=f"{prefix}/BatchNormalization", epsilon=1e-5))
    if not relu:
        return f"{prefix}.bn"
    nodes.append(helper.make_node("Relu", [f"{prefix}.bn"], [f"{prefix}.relu"], name=f"{prefix}/Relu"))
    return f"{prefix}.relu"


def basic_block(prefix, x, cin, cout, stride):
    y = conv_bn(f"{prefix}.0", x, cin, cout, 3, stride)
    y = conv_bn(f"{prefix}.1", y, cout, cout, 3, 1, relu=False)
    shortcut = x if (cin == cout and stride == 1) else conv_bn(f"{prefix}.down", x, cin, cout, 1, stride, relu=False)
    nodes.append(helper.make_node("Add", [y, shortcut], [f"{prefix}.add"], name=f"{prefix}/Add"))
    nodes.append(helper.make_node("Relu", [f"{prefix}.add"], [f"{prefix}.out"], name=f"{prefix}/Relu"))
    return f"{prefix}.out"


def main(path):
    x = conv_bn("stem", "image", 3, 16, 3, 1)
    nodes.append(helper.make_node("MaxPool", [x], ["stem.pool"], name="stem/MaxPool",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    x, cin = "stem.pool", 16
    for i, (cout, stride) in enumerate([(16, 1), (32, 2), (64, 2)]):
        x = basic_block(f"layer{i + 1}", x, cin, cout, stride)
        cin = cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="head/GlobalAveragePool"))
    nodes.append(helper.make_node("Flatten", ["pool"], ["features"], name="head/Flatten", axis=1))
    w = weight("head.fc.weight", [10, 64])
    b = weight("head.fc.bias", [10], 0.01)
    nodes.append(helper.make_node("Gemm", ["features", w, b], ["logits"], name="head/Gemm", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="head/Softmax", axis=-1))
    graph = helper.make_graph(
        nodes, "TinyResNet",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 64, 64])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 10])],
        inits)
    model = helper.make_model(graph, producer_name="kiln-sample", producer_version="1",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.doc_string = "TinyResNet: a 3-stage residual CNN with seeded random weights, Kiln's bundled sample."
    onnx.checker.check_model(model)
    onnx.save(model, path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample.onnx")
