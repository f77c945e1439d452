// kiln compare A B [inputs] [--atol X --rtol Y] [--per-layer] [--export JSON]: runs two models or
// plans on the same inputs and reports how far their outputs are apart (Polygraphy-style).
#include "artifact.h"
#include "commands.h"
#include "run_inputs.h"

#include <kiln/builder.h>
#include <kiln/compare.h>
#include <kiln/error.h>

#include <iomanip>
#include <iostream>

namespace kiln::cli {
namespace {

struct CompareOptions {
  std::string first, second, exportPath;
  InputRequest inputs;
  Tolerance tolerance;
  bool perLayer = false;
};

void printMetrics(const TensorMetrics& m) {
  std::cout << "  " << std::left << std::setw(28) << m.name << std::right << std::scientific << std::setprecision(3)
            << std::setw(12) << m.maxAbsError << std::setw(12) << m.maxRelError << std::fixed << std::setprecision(6)
            << std::setw(11) << m.cosineSimilarity << std::setprecision(1) << std::setw(9) << m.snrDb << "  "
            << (m.pass ? "PASS" : "FAIL") << (m.why.empty() ? "" : " (" + m.why + ")") << "\n";
}

void runCompare(const CompareOptions& o) {
  Artifact a = loadArtifact(o.first);
  Artifact b = loadArtifact(o.second);
  std::map<std::string, Value> values;
  InputRequest request = o.inputs;
  request.defaultShapes = a.isPlan() ? a.defaultShapes : b.defaultShapes;
  for (auto& input : prepareInputs(*a.network, request)) values[input.name] = std::move(input.value);
  auto report = compareRunners(a.runner, b.runner, tensorInputs(values), o.tolerance, o.perLayer);
  std::cout << "comparing " << o.second << " against " << o.first << " (atol " << o.tolerance.atol << ", rtol "
            << o.tolerance.rtol << ")\n";
  std::cout << "  " << std::left << std::setw(28) << "output" << std::right << std::setw(12) << "max abs" << std::setw(12)
            << "max rel" << std::setw(11) << "cosine" << std::setw(9) << "SNR dB" << "\n";
  for (const auto& m : report.outputs) printMetrics(m);
  if (o.perLayer) {
    std::cout << "per-layer (tensors both computed, in execution order):\n";
    for (const auto& m : report.layers) printMetrics(m);
  }
  if (!o.exportPath.empty()) {
    std::string json = report.toJson();
    writeFileAtomically(o.exportPath, std::vector<uint8_t>(json.begin(), json.end()));
  }
  std::cout << (report.pass ? "PASSED" : "FAILED") << "\n";
  if (!report.pass)
    throw Error(ErrorCode::kRuntimeError, "outputs differ beyond the tolerance (see the table above)");
}

}  // namespace

Command addCompareCommand(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand("compare", "Run two models or plans on the same inputs and compare their outputs");
  sub->add_option("REFERENCE", o->first, "Model (.onnx) or plan: the reference")->required();
  sub->add_option("CANDIDATE", o->second, "Model (.onnx) or plan: compared with the reference")->required();
  sub->add_option("--input", o->inputs.inputFiles, "NAME=FILE (.npy or .pb), repeatable; others are random")
      ->allow_extra_args(false);
  sub->add_option("--shapes", o->inputs.shapes, "NAME:1x3x224x224,...: shapes of random inputs")->allow_extra_args(false);
  sub->add_option("--seed", o->inputs.seed, "Seed of the random inputs (default 0)");
  sub->add_option("--atol", o->tolerance.atol, "Absolute tolerance (default 1e-4)");
  sub->add_option("--rtol", o->tolerance.rtol, "Relative tolerance (default 1e-3)");
  sub->add_flag("--per-layer", o->perLayer, "Also compare every intermediate tensor both sides compute");
  sub->add_option("--export", o->exportPath, "Write the comparison as JSON");
  return {sub, [o] { runCompare(*o); }};
}

}  // namespace kiln::cli
