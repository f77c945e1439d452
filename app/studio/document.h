#pragma once
// The open model: its file, its Network (imported on a worker thread), what went wrong, and the
// engine built from it (plan bytes, report, loaded engine).
#include "engine_controller.h"

#include <kiln/network.h>

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <memory>

class Document : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;

  void open(const QString& path);  // asynchronous: loaded() or loadFailed() follows
  bool isLoading() const { return watcher_ && !watcher_->isFinished(); }
  const QString& path() const { return path_; }
  const std::shared_ptr<const kiln::Network>& network() const { return network_; }
  // Set when the model opened without full shape inference (ops Kiln does not know yet).
  const QString& warning() const { return warning_; }

  // The engine last built from this model (nullptr before the first build).
  const std::shared_ptr<const BuiltEngine>& built() const { return built_; }
  void setBuilt(std::shared_ptr<const BuiltEngine> built);
  // Every engine built from this model: the latest of each precision ("fp32", "fp16", "int8"), in
  // the order the precisions were first built (the accuracy panel compares them side by side).
  const std::vector<std::shared_ptr<const BuiltEngine>>& engines() const { return engines_; }
  // Writes the plan atomically (temporary file + rename); throws kiln::Error.
  void savePlan(const QString& path) const;

 signals:
  void loadStarted(const QString& path);
  void loaded();
  void loadFailed(const QString& path, const QString& message);
  void builtChanged();

 private:
  struct LoadResult {
    std::shared_ptr<const kiln::Network> network;
    QString error;
    QString warning;
  };
  static LoadResult load(const QString& path);

  QString path_;
  std::shared_ptr<const kiln::Network> network_;
  QString warning_;
  std::shared_ptr<const BuiltEngine> built_;
  std::vector<std::shared_ptr<const BuiltEngine>> engines_;
  std::unique_ptr<QFutureWatcher<LoadResult>> watcher_;
};
