// kiln run MODEL [--input NAME=FILE]... [--shapes NAME:DIMS,...] [--output-dir DIR] [--seed N]:
// runs a model on the CPU reference backend and summarizes (and optionally saves) its outputs.
// kiln run PLAN --ranks N runs the N rank plans of a tensor-parallel build, one thread a rank, and
// saves rank 0's outputs (every rank holds the same).
#include "artifact.h"
#include "commands.h"
#include "run_inputs.h"

#include <kiln/error.h>
#include <kiln/npy.h>
#include <kiln/onnx_importer.h>
#include <kiln/reference_executor.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

namespace kiln::cli {
namespace {

struct RunOptions {
  std::string modelPath;
  InputRequest inputs;
  std::string outputDir;
  int ranks = 1;
};

struct OutputFile {
  std::string path;
  std::string bytes;
};

// Output names become file names: keep [A-Za-z0-9._-], no leading dot, unique within the run.
std::string uniqueFileStem(const std::string& name, std::set<std::string>& used) {
  std::string stem = name;
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  for (char& c : stem) {
    if (c != '.') break;
    c = '_';
  }
  std::string candidate = stem;
  for (int n = 2; !used.insert(candidate).second; ++n) candidate = stem + "_" + std::to_string(n);
  return candidate;
}

std::string summarize(const HostTensor& t) {
  std::ostringstream text;
  text << toString(t.dtype()) << " " << Shape::fromDims(t.dims()).toString();
  if (t.dtype() == DataType::kString || t.elementCount() == 0) return text.str();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t nans = 0;
  for (double v : t.toDoubleVector()) {
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  text.precision(6);
  if (nans < t.elementCount()) text << "  min " << lo << "  max " << hi << "  mean " << sum / double(t.elementCount() - nans);
  if (nans) text << "  NaN: " << nans;
  return text.str();
}

// bfloat16 and fp8 have no numpy dtype: they are saved as float32 (exactly representable).
HostTensor npyCompatible(const HostTensor& t) {
  DataType d = t.dtype();
  if (d != DataType::kBFloat16 && d != DataType::kFloat8E4M3 && d != DataType::kFloat8E5M2) return t;
  HostTensor wide(DataType::kFloat32, t.dims());
  auto values = t.toDoubleVector();
  std::copy(values.begin(), values.end(), wide.data<float>());
  return wide;
}

// Prints one output tensor's summary and queues its file when an output dir is given.
void addTensorOutput(const std::string& label, const HostTensor& t, const RunOptions& options,
                     std::set<std::string>& usedStems, std::vector<OutputFile>& files) {
  std::cout << "  " << label << "  " << summarize(t);
  if (!options.outputDir.empty()) {
    if (t.dtype() == DataType::kString) {
      std::cout << "  (not saved: .npy files cannot hold strings)";
    } else {
      auto path = std::filesystem::path(options.outputDir) / (uniqueFileStem(label, usedStems) + ".npy");
      files.push_back({path.string(), serializeNpy(npyCompatible(t))});
      std::cout << "  -> " << path.string();
    }
  }
  std::cout << "\n";
}

// Writes every file or none: a failure part-way removes the files already written.
void writeAll(const std::vector<OutputFile>& files, const std::string& dir) {
  if (files.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::kIoError, "cannot create output folder '" + dir + "': " + ec.message());
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      writeFileAtomically(files[i].path, files[i].bytes);
    } catch (const Error&) {
      for (size_t j = 0; j < i; ++j) std::filesystem::remove(files[j].path, ec);
      throw;
    }
  }
}

void runModel(const RunOptions& options) {
  Artifact artifact = loadArtifact(options.modelPath, options.ranks);
  const std::shared_ptr<Network>& net = artifact.network;
  InputRequest request = options.inputs;
  request.defaultShapes = artifact.defaultShapes;
  std::vector<PreparedInput> inputs = prepareInputs(*net, request);
  ValueMap feed;
  std::cout << "inputs:\n";
  for (auto& input : inputs) {
    std::cout << "  " << input.name << "  "
              << (input.value.isSequence() ? "sequence of " + std::to_string(input.value.sequence.size())
                                           : summarize(input.value.tensor))
              << "  (" << (input.file.empty() ? "random, seed " + std::to_string(options.inputs.seed) : input.file)
              << ")\n";
    feed[input.name] = std::move(input.value);
  }
  ValueMap results;
  if (artifact.isPlan()) {
    for (auto& [name, tensor] : artifact.runner(tensorInputs(feed), {})) results[name] = Value(std::move(tensor));
  } else {
    results = ReferenceExecutor(net).run(feed);
  }

  // Every file is encoded before any is written, so a failure leaves no partial output.
  std::vector<OutputFile> files;
  std::set<std::string> usedStems;
  std::cout << "outputs:\n";
  for (const auto& name : net->outputs()) {
    const Value& value = results.at(name);
    if (!value.hasElement) {
      std::cout << "  " << name << "  empty optional\n";
    } else if (value.isSequence()) {
      std::cout << "  " << name << "  sequence of " << value.sequence.size() << "\n";
      for (size_t i = 0; i < value.sequence.size(); ++i)
        addTensorOutput(name + "_" + std::to_string(i), value.sequence[i], options, usedStems, files);
    } else {
      addTensorOutput(name, value.tensor, options, usedStems, files);
    }
  }
  writeAll(files, options.outputDir);
}

}  // namespace

Command addRunCommand(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run a model (CPU reference backend) or a plan (its engine) and summarize the outputs");
  sub->add_option("MODEL", options->modelPath, "ONNX model file (.onnx) or plan made by `kiln build`")->required();
  sub->add_option("--input", options->inputs.inputFiles,
                  "NAME=FILE: value of input NAME from a NumPy .npy or ONNX TensorProto .pb file (repeatable); "
                  "inputs not given get seeded random values")
      ->allow_extra_args(false);  // one value per --input, so a MODEL after it stays positional
  sub->add_option("--shapes", options->inputs.shapes,
                  "NAME:1x3x224x224[,NAME2:...]: shapes of random inputs, required where the model leaves dims open")
      ->allow_extra_args(false);
  sub->add_option("--output-dir", options->outputDir,
                  "Save each output as DIR/<output name>.npy (unsafe characters become '_'); without it outputs are "
                  "only summarized");
  sub->add_option("--seed", options->inputs.seed, "Seed of the random inputs (default 0)");
  sub->add_option("--ranks", options->ranks,
                  "Run the N plans of `kiln build --tensor-parallel N --save PLAN` (PLAN.rank0 ... on the CPU, one "
                  "thread a rank); outputs are rank 0's");
  return {sub, [options] { runModel(*options); }};
}

}  // namespace kiln::cli
