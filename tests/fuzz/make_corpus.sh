#!/usr/bin/env bash
# Regenerates the fuzzers' seed corpora:
#   corpus/onnx_importer/*.onnx  tiny models written as protobuf text and encoded with protoc, each
#                                reaching a different part of the importer
#   corpus/plan_reader/*.plan    real plans that the kiln CLI builds from two small models (weights,
#                                a subgraph, fp16 storage, a shape profile), a few KB each
# Usage: tests/fuzz/make_corpus.sh [KILN_CLI]   (default: build/default/app/cli/kiln; build it first)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kiln=${1:-$here/../../build/default/app/cli/kiln}
[[ -x "$kiln" ]] || { echo "no kiln CLI at '$kiln': build the 'kiln' target of the default preset, or pass its path" >&2; exit 1; }
proto_dir=/usr/include
onnx_corpus="$here/corpus/onnx_importer" plan_corpus="$here/corpus/plan_reader"
mkdir -p "$onnx_corpus" "$plan_corpus"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

encode() {  # encode NAME [FOLDER] < TEXT
  protoc --encode=onnx.ModelProto -I"$proto_dir" "$proto_dir/onnx/onnx.proto" >"${2:-$onnx_corpus}/$1.onnx"
}

header='ir_version: 8 producer_name: "kiln-corpus" opset_import { domain: "" version: 17 }'
float_input() { echo "input { name: \"$1\" type { tensor_type { elem_type: 1 shape { $2 } } } }"; }

encode identity <<EOT
$header
graph { name: "g" node { op_type: "Identity" input: "x" output: "y" name: "id" }
  $(float_input x 'dim { dim_param: "batch" } dim { dim_value: 3 }')
  output { name: "y" type { tensor_type { elem_type: 1 } } } }
EOT

encode initializers <<EOT
$header
graph { name: "g"
  node { op_type: "Identity" input: "w" output: "y" }
  node { op_type: "Identity" input: "b" output: "z" }
  initializer { name: "w" data_type: 1 dims: 2 dims: 2 raw_data: "\000\000\200?\000\000\000@\000\000@@\000\000\200@" }
  initializer { name: "b" data_type: 7 dims: 3 int64_data: 1 int64_data: -2 int64_data: 3 }
  sparse_initializer { values { name: "s" data_type: 1 dims: 1 float_data: 5 } indices { data_type: 7 dims: 1 int64_data: 2 } dims: 4 }
  $(float_input x 'dim { dim_value: 1 }')
  output { name: "y" } output { name: "z" } }
EOT

encode constant_node <<EOT
$header
graph { name: "g"
  node { op_type: "Constant" output: "c" attribute { name: "value_floats" type: FLOATS floats: 1 floats: 2 } }
  node { op_type: "Identity" input: "c" output: "y" attribute { name: "unused" type: INTS ints: 1 ints: 2 } }
  output { name: "y" } }
EOT

encode external_data <<EOT
$header
graph { name: "g"
  node { op_type: "Identity" input: "w" output: "y" }
  initializer { name: "w" data_type: 1 dims: 4 data_location: EXTERNAL
    external_data { key: "location" value: "weights.bin" }
    external_data { key: "offset" value: "0" } external_data { key: "length" value: "16" } }
  output { name: "y" } }
EOT

encode subgraph <<EOT
$header
graph { name: "g"
  node { op_type: "If" input: "cond" output: "y"
    attribute { name: "then_branch" type: GRAPH g { name: "then"
      node { op_type: "Identity" input: "x" output: "t" } output { name: "t" } } }
    attribute { name: "else_branch" type: GRAPH g { name: "else"
      node { op_type: "Identity" input: "x" output: "e" } output { name: "e" } } } }
  input { name: "cond" type { tensor_type { elem_type: 9 shape { } } } }
  $(float_input x 'dim { dim_value: 2 }')
  output { name: "y" } }
EOT

encode local_function <<EOT
ir_version: 8 producer_name: "kiln-corpus"
opset_import { domain: "" version: 17 } opset_import { domain: "local" version: 1 }
graph { name: "g" node { op_type: "Twice" domain: "local" input: "x" output: "y" }
  $(float_input x 'dim { dim_value: 2 }')
  output { name: "y" } }
functions { name: "Twice" domain: "local" input: "a" output: "b"
  opset_import { domain: "" version: 17 }
  node { op_type: "Identity" input: "a" output: "m" } node { op_type: "Identity" input: "m" output: "b" } }
EOT

# A deterministic, never-zero float list of N values for initializers: float_data: v float_data: ...
floats() { awk -v n="$1" -v seed="$2" 'BEGIN { for (i = 0; i < n; i++) printf "float_data: %.3f ", sin(seed + i * 0.7) * 0.5 + 0.01 }'; }

# Conv + Relu + MaxPool + Flatten + Gemm + Softmax on a static 1x3x6x6 image, and an If whose
# branches are subgraphs (plans store them as graph attributes).
encode conv_gemm "$scratch" <<EOT
$header
graph { name: "conv_gemm"
  node { op_type: "Conv" input: "x" input: "w" input: "b" output: "c" name: "conv"
    attribute { name: "pads" type: INTS ints: 1 ints: 1 ints: 1 ints: 1 } }
  node { op_type: "Relu" input: "c" output: "r" name: "relu" }
  node { op_type: "MaxPool" input: "r" output: "p" name: "pool"
    attribute { name: "kernel_shape" type: INTS ints: 2 ints: 2 } attribute { name: "strides" type: INTS ints: 2 ints: 2 } }
  node { op_type: "Flatten" input: "p" output: "f" name: "flatten" }
  node { op_type: "Gemm" input: "f" input: "w2" input: "b2" output: "g" name: "fc" }
  node { op_type: "Softmax" input: "g" output: "probs" name: "softmax" }
  node { op_type: "If" input: "cond" output: "chosen" name: "branch"
    attribute { name: "then_branch" type: GRAPH g { name: "then"
      node { op_type: "Relu" input: "g" output: "t" } output { name: "t" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 5 } } } } } } }
    attribute { name: "else_branch" type: GRAPH g { name: "else"
      node { op_type: "Neg" input: "g" output: "e" } output { name: "e" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } dim { dim_value: 5 } } } } } } } }
  initializer { name: "w" data_type: 1 dims: 4 dims: 3 dims: 3 dims: 3 $(floats 108 1) }
  initializer { name: "b" data_type: 1 dims: 4 $(floats 4 2) }
  initializer { name: "w2" data_type: 1 dims: 36 dims: 5 $(floats 180 3) }
  initializer { name: "b2" data_type: 1 dims: 5 $(floats 5 4) }
  input { name: "cond" type { tensor_type { elem_type: 9 shape { } } } }
  $(float_input x 'dim { dim_value: 1 } dim { dim_value: 3 } dim { dim_value: 6 } dim { dim_value: 6 }')
  output { name: "probs" } output { name: "chosen" } }
EOT
"$kiln" build "$scratch/conv_gemm.onnx" --save "$plan_corpus/conv_gemm.plan" >/dev/null

# MatMul + Add + a tanh gate + ReduceSum on a symbolic batch: fp16 weight storage and one shape profile.
encode dynamic_mlp "$scratch" <<EOT
$header
graph { name: "dynamic_mlp"
  node { op_type: "MatMul" input: "x" input: "w" output: "m" name: "matmul" }
  node { op_type: "Add" input: "m" input: "b" output: "a" name: "bias" }
  node { op_type: "Tanh" input: "a" output: "t" name: "tanh" }
  node { op_type: "Mul" input: "t" input: "a" output: "y" name: "gate" }
  node { op_type: "ReduceSum" input: "y" input: "axes" output: "s" name: "sum" attribute { name: "keepdims" type: INT i: 0 } }
  initializer { name: "w" data_type: 1 dims: 8 dims: 6 $(floats 48 5) }
  initializer { name: "b" data_type: 1 dims: 6 $(floats 6 6) }
  initializer { name: "axes" data_type: 7 dims: 1 int64_data: 1 }
  $(float_input x 'dim { dim_param: "batch" } dim { dim_value: 8 }')
  output { name: "s" } }
EOT
"$kiln" build "$scratch/dynamic_mlp.onnx" --save "$plan_corpus/dynamic_mlp.plan" --fp16 --profile x:1x8/4x8/16x8 >/dev/null

ls -l "$onnx_corpus" "$plan_corpus"
