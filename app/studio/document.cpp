#include "document.h"

#include <kiln/builder.h>
#include <kiln/error.h>
#include <kiln/onnx_importer.h>

#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

Document::LoadResult Document::load(const QString& path) {
  LoadResult result;
  const std::string file = path.toStdString();
  try {
    result.network = kiln::OnnxImporter().importFile(file);
    return result;
  } catch (const kiln::Error& e) {
    if (e.code() == kiln::ErrorCode::kIoError) {
      result.error = QString::fromUtf8(e.what());
      return result;
    }
    // The graph can still be shown when only shape inference or an unknown op stopped the import;
    // shapes come from the file's value_info then.
    try {
      result.network = kiln::OnnxImporter({.inferShapes = false, .expandFunctions = false}).importFile(file);
      result.warning = QObject::tr("Shown without full shape inference: %1").arg(QString::fromUtf8(e.what()));
    } catch (const kiln::Error&) {
      result.error = QString::fromUtf8(e.what());
    }
  } catch (const std::exception& e) {
    result.error = QObject::tr("unexpected error while reading the model: %1").arg(QString::fromUtf8(e.what()));
  }
  return result;
}

void Document::open(const QString& path) {
  if (watcher_) watcher_->disconnect(this);  // a newer request wins; the old load finishes unseen
  watcher_ = std::make_unique<QFutureWatcher<LoadResult>>();
  connect(watcher_.get(), &QFutureWatcherBase::finished, this, [this, path] {
    LoadResult result = watcher_->result();
    if (!result.network) {
      emit loadFailed(path, result.error);
      return;
    }
    path_ = path;
    network_ = std::move(result.network);
    warning_ = result.warning;
    built_.reset();  // an engine belongs to the model it was built from
    engines_.clear();
    emit loaded();
    emit builtChanged();
  });
  emit loadStarted(path);
  watcher_->setFuture(QtConcurrent::run(&Document::load, path));
}

void Document::setBuilt(std::shared_ptr<const BuiltEngine> built) {
  const auto same = std::find_if(engines_.begin(), engines_.end(),
                                 [&](const auto& engine) { return engine->precision == built->precision; });
  if (same != engines_.end()) *same = built;
  else engines_.push_back(built);
  built_ = std::move(built);
  emit builtChanged();
}

void Document::savePlan(const QString& path) const {
  if (!built_) throw kiln::Error(kiln::ErrorCode::kInvalidArgument, "there is no engine to save; build one first");
  kiln::writeFileAtomically(path.toStdString(), built_->plan);
}
