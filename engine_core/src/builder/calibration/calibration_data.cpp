#include "calibration_data.h"

#include <kiln/input_batches.h>

#include <kiln/error.h>
#include <kiln/npy.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

namespace kiln::calibration {
namespace {

namespace fs = std::filesystem;

// `what` names the data in errors: "calibration data", "input data".
[[noreturn]] void fail(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, what + ": " + why);
}

std::string shapeText(const std::vector<int64_t>& dims) { return Shape::fromDims(dims).toString(); }

// The files of one input, in batch order: NAME.npy alone, or NAME.0.npy, NAME.1.npy, ...
std::vector<fs::path> filesOf(const std::string& what, const fs::path& folder, const std::string& input,
                              const std::set<std::string>& present, std::set<std::string>& claimed) {
  const std::string stem = fileStemOf(input);
  std::vector<fs::path> files;
  if (present.count(stem + ".npy")) {
    claimed.insert(stem + ".npy");
    files.push_back(folder / (stem + ".npy"));
  }
  for (int64_t k = 0; present.count(stem + "." + std::to_string(k) + ".npy"); ++k) {
    claimed.insert(stem + "." + std::to_string(k) + ".npy");
    files.push_back(folder / (stem + "." + std::to_string(k) + ".npy"));
  }
  const size_t numbered = files.size() - (present.count(stem + ".npy") ? 1 : 0);
  for (const auto& name : present) {  // NAME.K.npy past a gap
    const std::string middle = name.size() > stem.size() + 5 && name.rfind(stem + ".", 0) == 0
                                   ? name.substr(stem.size() + 1, name.size() - stem.size() - 5)
                                   : "";
    if (!middle.empty() && middle.find_first_not_of("0123456789") == std::string::npos && !claimed.count(name))
      fail(what, name + " in " + folder.string() + " follows a gap: " + stem + "." + std::to_string(numbered) +
           ".npy is missing (number the batches of input '" + input + "' from 0 without gaps)");
  }
  if (files.size() > 1 && present.count(stem + ".npy"))
    fail(what, "input '" + input + "' has both " + stem + ".npy and numbered files " + stem +
         ".0.npy, ... in " + folder.string() + "; keep one of the two forms");
  if (files.empty())
    fail(what, "no file for input '" + input + "' in " + folder.string() + " (expected " + stem + ".npy, or " + stem +
         ".0.npy, " + stem + ".1.npy, ... one batch a file)");
  return files;
}

void checkFinite(const std::string& what, const HostTensor& t, const fs::path& file) {
  if (t.dtype() != DataType::kFloat32 && t.dtype() != DataType::kFloat64 && t.dtype() != DataType::kFloat16) return;
  for (double v : t.toDoubleVector())
    if (!std::isfinite(v)) fail(what, file.string() + " holds a non-finite value (NaN or infinity)");
}

// The batches a file gives for an input of `declared` type and shape.
std::vector<HostTensor> batchesOf(const std::string& what, const HostTensor& data, const Tensor& declared,
                                  const fs::path& file) {
  if (data.dtype() != declared.dtype)
    fail(what, file.string() + " holds " + std::string(toString(data.dtype())) + " values but input '" + declared.name +
         "' is " + std::string(toString(declared.dtype)) + " (convert it, e.g. with numpy's astype)");
  const Shape& shape = declared.shape;
  const auto mismatch = [&](const std::string& why) {
    fail(what, file.string() + " has shape " + shapeText(data.dims()) + " but input '" + declared.name + "' is " +
         shape.toString() + ": " + why);
  };
  if (shape.hasRank() && data.rank() != shape.rank())
    mismatch("the ranks differ (dim 0 of a file is the batch)");
  if (data.rank() == 0) mismatch("a file needs a batch dim (dim 0)");
  if (data.dim(0) == 0) mismatch("it holds no samples");
  for (size_t d = 1; shape.hasRank() && d < shape.rank(); ++d)
    if (shape[d].isKnown() && shape[d].value() != data.dim(d)) mismatch("dim " + std::to_string(d) + " differs");
  checkFinite(what, data, file);
  if (!shape.hasRank() || !shape[0].isKnown()) return {data};
  const int64_t batch = shape[0].value();
  if (data.dim(0) % batch != 0)
    mismatch("the model's batch is " + std::to_string(batch) + ", so the samples must be a multiple of it");
  if (data.dim(0) == batch) return {data};
  // Cut into batches of the model's size: copies, each a tensor of its own.
  std::vector<HostTensor> out;
  std::vector<int64_t> dims = data.dims();
  dims[0] = batch;
  const size_t bytes = data.byteSize() / size_t(data.dim(0) / batch);
  for (int64_t first = 0; first < data.dim(0); first += batch) {
    HostTensor part(data.dtype(), dims);
    std::memcpy(part.rawData(), static_cast<const char*>(data.rawData()) + size_t(first / batch) * bytes, bytes);
    out.push_back(std::move(part));
  }
  return out;
}

// One .npy file for a model with one input: its batches.
std::vector<Batch> batchesOfFile(const Network& network, const std::string& file, int64_t maxBatches,
                                 const std::string& what) {
  const auto& inputs = network.runtimeInputs();
  if (inputs.size() != 1)
    fail(what, "one file, " + file + ", serves a model with one input, but this one has " +
                   std::to_string(inputs.size()) + "; give a folder with files named by input");
  std::vector<Batch> batches;
  for (HostTensor& batch : batchesOf(what, readNpyFile(file), network.tensor(inputs.front()), file))
    if (maxBatches <= 0 || int64_t(batches.size()) < maxBatches) batches.push_back({{inputs.front(), std::move(batch)}});
  return batches;
}

}  // namespace

std::string fileStemOf(const std::string& inputName) {
  std::string stem = inputName;
  for (char& c : stem)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
  return stem;
}

std::vector<Batch> loadCalibrationData(const Network& network, const std::string& folder, int64_t maxBatches,
                                       const std::string& what) {
  std::error_code ec;
  if (fs::path(folder).extension() == ".npy" && fs::is_regular_file(folder, ec))
    return batchesOfFile(network, folder, maxBatches, what);
  if (!fs::is_directory(folder, ec))
    fail(what, "'" + folder + "' is not a folder (give a folder of .npy files named by input, or one .npy file "
               "for a model with one input)");
  std::set<std::string> present;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.path().extension() == ".npy") present.insert(entry.path().filename().string());
  if (ec) fail(what, "cannot list '" + folder + "': " + ec.message());

  std::set<std::string> claimed;
  std::map<std::string, std::vector<HostTensor>> perInput;
  for (const auto& name : network.runtimeInputs()) {
    const Tensor& declared = network.tensor(name);
    for (const fs::path& file : filesOf(what, folder, name, present, claimed))
      for (HostTensor& batch : batchesOf(what, readNpyFile(file.string()), declared, file))
        perInput[name].push_back(std::move(batch));
  }
  for (const auto& file : present)
    if (!claimed.count(file)) {
      std::string inputs;
      for (const auto& name : network.runtimeInputs()) inputs += (inputs.empty() ? "'" : ", '") + name + "'";
      fail(what, (fs::path(folder) / file).string() + " names no input of the model (its inputs: " + inputs +
           "); remove it or rename it after an input");
    }

  size_t count = perInput.empty() ? 0 : perInput.begin()->second.size();
  for (const auto& [name, batches] : perInput)
    if (batches.size() != count)
      fail(what, "input '" + perInput.begin()->first + "' has " + std::to_string(count) + " batch(es) but '" + name +
           "' has " + std::to_string(batches.size()) + "; every input needs the same number");
  if (maxBatches > 0) count = std::min(count, size_t(maxBatches));
  std::vector<Batch> batches(count);
  for (auto& [name, list] : perInput)
    for (size_t b = 0; b < count; ++b) batches[b][name] = std::move(list[b]);
  return batches;
}

}  // namespace kiln::calibration

namespace kiln {

std::vector<std::map<std::string, HostTensor>> loadInputBatches(const Network& network, const std::string& folder,
                                                                int64_t maxBatches) {
  return calibration::loadCalibrationData(network, folder, maxBatches, "input data");
}

}  // namespace kiln
