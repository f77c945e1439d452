// Times what opening a big model in Kiln Studio costs: build a ResNet-like ONNX model of N layers
// (ModelBuilder), import it, build the view structure, measure the boxes and lay the graph out with
// Graphviz through GraphScene (the app's own path). Prints a table; asserts nothing.
//   QT_QPA_PLATFORM=offscreen ./build/default/tests/views/kiln_graph_layout_bench [blocks-per-stage...]
#include "sample_networks.h"

#include <graph/graph_layout.h>
#include <graph/graph_scene.h>
#include <graph/graph_structure.h>

#include <kiln/onnx_importer.h>

#include <QApplication>
#include <QEventLoop>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double cpuSeconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

// Runs `change` (which starts a layout) and waits for it: (wall seconds, CPU seconds of the process).
template <class Change>
std::pair<double, double> timeLayout(kiln::views::GraphScene& scene, Change change) {
  QEventLoop loop;
  QObject::connect(&scene, &kiln::views::GraphScene::layoutFinished, &loop, &QEventLoop::quit);
  QObject::connect(&scene, &kiln::views::GraphScene::layoutFailed, &loop, [&](const QString& message) {
    std::fprintf(stderr, "layout failed: %s\n", qPrintable(message));
    loop.quit();
  });
  const auto start = Clock::now();
  const double cpuStart = cpuSeconds();
  change();
  loop.exec();
  return {secondsSince(start), cpuSeconds() - cpuStart};
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  std::vector<int> blocksPerStage;
  for (int i = 1; i < argc; ++i) blocksPerStage.push_back(std::stoi(argv[i]));
  if (blocksPerStage.empty()) blocksPerStage = {18, 71, 178};  // ~500, ~2,000, ~5,000 layers

  std::printf("%7s %-10s %7s %7s | %8s %8s %9s %9s %9s | %s\n", "layers", "view", "shown", "groups", "build s",
              "import s", "layout s", "(cpu s)", "total s", "method");
  for (int blocks : blocksPerStage) {
    const kiln::test::SampleNetworkOptions options{.stages = 4, .blocksPerStage = blocks, .channels = 4};
    auto start = Clock::now();
    const std::string bytes = kiln::test::sampleNetworkOnnx(options);
    const double buildSeconds = secondsSince(start);
    start = Clock::now();
    auto network = kiln::OnnxImporter({.inferShapes = false, .expandFunctions = false}).importBytes(bytes);
    const double importSeconds = secondsSince(start);

    kiln::views::GraphScene scene;
    auto report = [&](const char* view, std::pair<double, double> layout, double import) {
      std::printf("%7zu %-10s %7zu %7zu | %8.2f %8.2f %9.2f %9.2f %9.2f | %s\n", network->layers().size(), view,
                  scene.nodeItems().size(), scene.structure().groups().size(), buildSeconds, import, layout.first,
                  layout.second, import + layout.first, qPrintable(scene.layoutMethod()));
      std::fflush(stdout);
    };
    report("open", timeLayout(scene, [&] { scene.setNetwork(network); }), importSeconds);
    report("expand all", timeLayout(scene, [&] { scene.setAllGroupsCollapsed(false); }), importSeconds);
  }
  std::printf("open: as Kiln Studio opens the model (big graphs start with their deepest blocks collapsed);\n"
              "expand all: every block expanded (View > Expand All Groups).\n"
              "layout s: structure + measuring boxes + Graphviz dot (worker thread) + building the scene items.\n"
              "cpu s: process CPU time over the same span (wall time grows when the machine is shared).\n");
  return 0;
}
