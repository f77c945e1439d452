// Times what opening a big model in Kiln Studio costs, end to end and by phase: build a ResNet-like
// ONNX model of N layers (ModelBuilder), import it, then let GraphScene (the app's own path) build
// the view structure, measure the boxes, lay the graph out with Graphviz and create the scene items;
// first as opened (big graphs start with their deepest blocks collapsed), then after Expand All;
// and the same model with flat layer names (no blocks to collapse or to lay out one by one).
// Prints a table; asserts nothing.
//   QT_QPA_PLATFORM=offscreen ./build/default/tests/views/kiln_graph_layout_bench [--repeat N] [blocks-per-stage...]
#include "sample_networks.h"

#include <graph/graph_scene.h>

#include <kiln/onnx_importer.h>

#include <QApplication>
#include <QEventLoop>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using kiln::views::GraphScene;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double cpuSeconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

struct ViewTiming {
  size_t boxes = 0;
  size_t blocks = 0;  // expanded groups drawn as frames
  GraphScene::LayoutTimings phases;
  double wall = 0;
  QString method;
};

struct Run {
  size_t layers = 0;
  double import = 0;
  ViewTiming opened, expanded;
  double cpu = 0;  // process CPU seconds from import to the last scene
  double total() const { return import + opened.wall + expanded.wall; }
  bool expandable = true;
};

// Runs `change` (which starts a layout) and waits for the scene to be rebuilt.
template <class Change>
ViewTiming timeLayout(GraphScene& scene, Change change) {
  QEventLoop loop;
  QObject::connect(&scene, &GraphScene::layoutFinished, &loop, &QEventLoop::quit);
  QObject::connect(&scene, &GraphScene::layoutFailed, &loop, [&](const QString& message) {
    std::fprintf(stderr, "layout failed: %s\n", qPrintable(message));
    loop.quit();
  });
  const auto start = Clock::now();
  change();
  loop.exec();
  return {scene.nodeItems().size(), scene.clusterItems().size(), scene.layoutTimings(), secondsSince(start),
          scene.layoutMethod()};
}

Run openAndExpand(const std::string& bytes, bool expand) {
  Run run;
  run.expandable = expand;
  const double cpuStart = cpuSeconds();
  const auto start = Clock::now();
  auto network = kiln::OnnxImporter({.inferShapes = false, .expandFunctions = false}).importBytes(bytes);
  run.import = secondsSince(start);
  run.layers = network->layers().size();
  GraphScene scene;
  run.opened = timeLayout(scene, [&] { scene.setNetwork(network); });
  if (expand) run.expanded = timeLayout(scene, [&] { scene.setAllGroupsCollapsed(false); });
  run.cpu = cpuSeconds() - cpuStart;
  return run;
}

void printRow(const Run& run, const char* view, const ViewTiming& timing, double total) {
  std::printf("%7zu %-9s %6zu %6zu | %6.2f %9.2f %6.2f %6.2f | %7.2f %6.2f | %s\n", run.layers, view, timing.boxes,
              timing.blocks, run.import, timing.phases.structure, timing.phases.layout, timing.phases.scene, total,
              run.cpu, qPrintable(timing.method));
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  int repeat = 3;
  std::vector<int> blocksPerStage;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--repeat" && i + 1 < argc) repeat = std::max(1, std::stoi(argv[++i]));
    else blocksPerStage.push_back(std::stoi(argv[i]));
  }
  if (blocksPerStage.empty()) blocksPerStage = {18, 71, 178};  // ~500, ~2,000, ~5,000 layers

  std::printf("%7s %-9s %6s %6s | %6s %9s %6s %6s | %7s %6s | %s\n", "layers", "view", "boxes", "blocks", "import",
              "structure", "layout", "scene", "total s", "cpu s", "method");
  auto medianRun = [repeat](const std::string& bytes, bool expand) {
    std::vector<Run> runs;
    for (int r = 0; r < repeat; ++r) runs.push_back(openAndExpand(bytes, expand));
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.total() < b.total(); });
    return runs[runs.size() / 2];
  };
  for (int blocks : blocksPerStage) {
    kiln::test::SampleNetworkOptions options{.stages = 4, .blocksPerStage = blocks, .channels = 4};
    const Run run = medianRun(kiln::test::sampleNetworkOnnx(options), true);
    printRow(run, "collapsed", run.opened, run.import + run.opened.wall);
    printRow(run, "expanded", run.expanded, run.total());
    options.blockNames = false;
    const Run flat = medianRun(kiln::test::sampleNetworkOnnx(options), false);
    printRow(flat, "flat", flat.opened, flat.total());
    std::fflush(stdout);
  }
  std::printf(
      "collapsed: as Kiln Studio opens the model (big graphs start with their deepest blocks collapsed).\n"
      "expanded: after View > Expand All Groups; its total runs end to end: import, open, expand.\n"
      "flat: the same model with flat layer names (\"layer1_0_conv1_Conv\"): no blocks; laid out in bands.\n"
      "Phases in seconds: structure (groups, visible graph, measuring boxes), layout (Graphviz, worker thread),\n"
      "scene (creating items). cpu s: process CPU time from import to the last scene. Median of %d runs.\n",
      repeat);
  return 0;
}
