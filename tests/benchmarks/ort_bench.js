// Times a model on ONNX Runtime's CPU execution provider, for the side-by-side CPU benchmark
// (scripts/run_cpu_benchmark.sh). Reads the inputs written by make_benchmark_models.py, runs
// `warmup` untimed and `runs` timed inferences on the same inputs, prints one JSON line and writes
// the outputs (raw float32) plus NAME.ort.json next to the model for the Kiln side to compare with.
//
//   NODE_PATH=build/bench-node/node_modules node tests/benchmarks/ort_bench.js DIR NAME \
//       [--runs N] [--warmup N] [--threads N]
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const options = {runs: 30, warmup: 5, threads: 2};
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    const flag = argv[i].replace(/^--/, '');
    if (argv[i].startsWith('--') && flag in options && i + 1 < argv.length) options[flag] = Number(argv[++i]);
    else if (argv[i].startsWith('--')) throw new Error(`unknown option ${argv[i]}; expected --runs, --warmup or --threads`);
    else positional.push(argv[i]);
  }
  if (positional.length !== 2) throw new Error('usage: ort_bench.js DIR NAME [--runs N] [--warmup N] [--threads N]');
  [options.dir, options.name] = positional;
  return options;
}

function readInputs(dir, name) {
  const listing = JSON.parse(fs.readFileSync(path.join(dir, `${name}.inputs.json`), 'utf8'));
  const feeds = {};
  for (const input of listing.inputs) {
    const bytes = fs.readFileSync(path.join(dir, input.file));
    const values = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    feeds[input.name] = new ort.Tensor('float32', values, input.dims);
  }
  return feeds;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const session = await ort.InferenceSession.create(path.join(options.dir, `${options.name}.onnx`), {
    executionProviders: ['cpu'],
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = readInputs(options.dir, options.name);
  let outputs;
  for (let i = 0; i < options.warmup; ++i) outputs = await session.run(feeds);
  const times = [];
  for (let i = 0; i < options.runs; ++i) {
    const start = process.hrtime.bigint();
    outputs = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const written = [];
  session.outputNames.forEach((outputName, index) => {
    const tensor = outputs[outputName];
    if (tensor.type !== 'float32') throw new Error(`output ${outputName} is ${tensor.type}; only float32 is compared`);
    const file = `${options.name}.ort_output${index}.bin`;
    fs.writeFileSync(path.join(options.dir, file), Buffer.from(tensor.data.buffer, tensor.data.byteOffset,
                                                               tensor.data.byteLength));
    written.push({name: outputName, dims: tensor.dims, file});
  });
  const version = require('onnxruntime-node/package.json').version;
  const result = {model: options.name, ort_version: version, threads: options.threads, runs: options.runs,
                  warmup: options.warmup, median_ms: median(times), min_ms: Math.min(...times), outputs: written};
  fs.writeFileSync(path.join(options.dir, `${options.name}.ort.json`), JSON.stringify(result, null, 1));
  console.log(JSON.stringify({model: result.model, ort_version: version, median_ms: result.median_ms,
                              min_ms: result.min_ms}));
}

main().catch((error) => {
  console.error(`ort_bench: ${error.message}`);
  process.exit(1);
});
