#!/usr/bin/env bash
# Regenerates the fuzzer's seed corpus (tests/fuzz/corpus/*.onnx): tiny models written as protobuf
# text and encoded with protoc, each reaching a different part of the importer.
# Usage: tests/fuzz/make_corpus.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
proto_dir=/usr/include
mkdir -p "$here/corpus"

encode() {  # encode NAME < TEXT
  protoc --encode=onnx.ModelProto -I"$proto_dir" "$proto_dir/onnx/onnx.proto" >"$here/corpus/$1.onnx"
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

ls -l "$here/corpus"
