#include "calibration_images.h"

#include "image_preprocessing.h"

#include <kiln/error.h>

#include <algorithm>
#include <filesystem>

namespace kiln::calibration {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "calibration images: " + why);
}

// The folder's PNG / JPEG files in name order, and whether it holds .npy files too.
std::vector<fs::path> imageFilesIn(const std::string& folder, bool* npy = nullptr) {
  std::vector<fs::path> images;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (isImageFileName(entry.path().string())) images.push_back(entry.path());
    if (npy && entry.path().extension() == ".npy") *npy = true;
  }
  if (ec) throw Error(ErrorCode::kInvalidArgument, "calibration data: cannot list '" + folder + "': " + ec.message());
  std::sort(images.begin(), images.end());
  return images;
}

void checkNormalisation(const std::vector<float>& mean, const std::vector<float>& std) {
  if (mean.size() != 3 || std.size() != 3)
    fail("the mean and std take one value per RGB channel (3 each), got " + std::to_string(mean.size()) + " and " +
         std::to_string(std.size()));
  for (float s : std)
    if (!(s > 0)) fail("every std must be above 0");
}

}  // namespace

CalibrationDataKind calibrationDataKind(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return CalibrationDataKind::kNpy;  // a file, or the .npy reader's error
  bool npy = false;
  const bool images = !imageFilesIn(path, &npy).empty();
  if (images && npy)
    throw Error(ErrorCode::kInvalidArgument, "calibration data: " + path + " holds both .npy files and images; "
                                             "keep one kind in the folder");
  if (!images && !npy)
    throw Error(ErrorCode::kInvalidArgument, "calibration data: " + path + " holds no .npy files and no PNG / JPEG "
                                             "images; give a folder of either");
  return images ? CalibrationDataKind::kImages : CalibrationDataKind::kNpy;
}

std::vector<Batch> loadCalibrationImages(const Network& network, const BuilderConfig& config,
                                         const CalibrationProgress& progress) {
  const CalibrationConfig& c = config.calibration;
  const auto& inputs = network.runtimeInputs();
  if (inputs.size() != 1) {
    std::string names;
    for (const auto& name : inputs) names += (names.empty() ? "'" : ", '") + name + "'";
    fail("the model has " + std::to_string(inputs.size()) + " inputs (" + names +
         ") but images fill one image input; give .npy files named by input instead");
  }
  checkNormalisation(c.imageMean, c.imageStd);
  const Tensor& input = network.tensor(inputs.front());
  ImageInput image = imageInputOf(input, config.profiles);
  const bool fixedBatch = input.shape[0].isKnown();  // else the profile's opt batch, a short last batch allowed
  if (image.batch <= 0) image.batch = 1;
  std::vector<fs::path> files = imageFilesIn(c.dataPath);
  if (fixedBatch && int64_t(files.size()) < image.batch)
    fail(c.dataPath + " has " + std::to_string(files.size()) + " image(s) but input '" + input.name +
         "' takes batches of " + std::to_string(image.batch) + "; give at least " + std::to_string(image.batch));
  int64_t count = int64_t(files.size());
  if (fixedBatch) count -= count % image.batch;
  if (c.maxBatches > 0) count = std::min(count, c.maxBatches * image.batch);
  files.resize(size_t(count));

  std::vector<Batch> batches;
  for (int64_t first = 0; first < count; first += image.batch) {
    const int64_t size = std::min(image.batch, count - first);
    HostTensor tensor = image.layout == ImageLayout::kNCHW
                            ? HostTensor(DataType::kFloat32, {size, 3, image.height, image.width})
                            : HostTensor(DataType::kFloat32, {size, image.height, image.width, 3});
    for (int64_t i = 0; i < size; ++i) {
      const fs::path& file = files[size_t(first + i)];
      progress(0.0, "image " + std::to_string(first + i + 1) + "/" + std::to_string(count) + ": " +
                        file.filename().string());
      writeImageSample(readImageFile(file.string()), image, c.imageMean, c.imageStd, tensor, i);
    }
    batches.push_back({{input.name, std::move(tensor)}});
  }
  return batches;
}

}  // namespace kiln::calibration
