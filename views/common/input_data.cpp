#include "common/input_data.h"

#include "common/npy_file.h"

#include <kiln/error.h>
#include <kiln/onnx_importer.h>
#include <kiln/random_data.h>

#include <QDir>
#include <QFileInfo>

namespace kiln::views {
namespace {

// ONNX names may hold characters that cannot be in file names.
QString fileStem(const std::string& name) {
  QString stem = QString::fromStdString(name);
  stem.replace(QChar('/'), QChar('_')).replace(QChar(':'), QChar('_'));
  return stem;
}

HostTensor readInputFile(const QDir& folder, const IOTensorInfo& input, int position) {
  const QStringList candidates = {fileStem(input.name) + ".npy", fileStem(input.name) + ".pb",
                                  QStringLiteral("input_%1.npy").arg(position),
                                  QStringLiteral("input_%1.pb").arg(position)};
  for (const QString& candidate : candidates) {
    const QString path = folder.filePath(candidate);
    if (!QFileInfo(path).isFile()) continue;
    HostTensor tensor = candidate.endsWith(".npy") ? readNpyFile(path.toStdString())
                                                   : readTensorProtoFile(path.toStdString());
    if (tensor.dtype() != input.dtype)
      throw Error(ErrorCode::kInvalidArgument, "'" + path.toStdString() + "' holds " +
                                                   std::string(toString(tensor.dtype())) + ", input '" + input.name +
                                                   "' takes " + std::string(toString(input.dtype)));
    return tensor;
  }
  throw Error(ErrorCode::kIoError, "no file for input '" + input.name + "' in '" + folder.path().toStdString() +
                                        "'; add " + candidates.first().toStdString() + " or " +
                                        candidates[2].toStdString());
}

}  // namespace

std::map<std::string, std::vector<int64_t>> runShapes(const std::vector<IOTensorInfo>& io,
                                                      const std::vector<OptimizationProfile>& profiles) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& tensor : io) {
    if (!tensor.isInput) continue;
    if (tensor.shape.isFullyKnown()) {
      shapes[tensor.name] = tensor.shape.knownDims();
    } else if (!profiles.empty() && profiles.front().inputs.count(tensor.name)) {
      shapes[tensor.name] = profiles.front().inputs.at(tensor.name).opt;
    } else {
      throw Error(ErrorCode::kInvalidArgument, "input '" + tensor.name + "' has dynamic shape " +
                                                   tensor.shape.toString() + " and the engine has no profile for it");
    }
  }
  return shapes;
}

std::map<std::string, HostTensor> makeInputs(const std::vector<IOTensorInfo>& io,
                                             const std::vector<OptimizationProfile>& profiles,
                                             const InputSource& source) {
  std::map<std::string, HostTensor> inputs;
  if (source.kind == InputSource::Kind::kFolder) {
    const QDir folder(source.folder);
    if (!folder.exists())
      throw Error(ErrorCode::kIoError, "input folder '" + source.folder.toStdString() + "' does not exist");
    int position = 0;
    for (const auto& tensor : io)
      if (tensor.isInput) inputs[tensor.name] = readInputFile(folder, tensor, position++);
    return inputs;
  }
  const auto shapes = runShapes(io, profiles);
  for (const auto& tensor : io)
    if (tensor.isInput) inputs[tensor.name] = randomTensor(tensor.dtype, shapes.at(tensor.name), seedForTensor(source.seed, tensor.name));
  return inputs;
}

}  // namespace kiln::views
