#pragma once
// Calibration data from a folder of PNG / JPEG images, for a model with one image input: each
// image preprocessed as image_preprocessing.h says, batched by the input's batch dim.
#include "calibrate.h"
#include "calibration_data.h"

namespace kiln::calibration {

// What a calibration data path holds. Throws kiln::Error for a folder that holds neither .npy
// files nor images, or both.
enum class CalibrationDataKind { kNpy, kImages };
CalibrationDataKind calibrationDataKind(const std::string& path);

// The batches the images in config.calibration.dataPath give `network`'s one runtime input, in
// file name order: batches of the input's batch dim (a dynamic one: the first profile's opt, else
// 1), at most maxBatches of them; with a fixed batch dim, images past the last whole batch are
// left out. `progress` hears each image read (and may throw to cancel). Throws kiln::Error
// naming the model's inputs when it has more than one, the input when it is not an image, the
// file when an image cannot be read, and the folder when it has too few images for one batch.
std::vector<Batch> loadCalibrationImages(const Network& network, const BuilderConfig& config,
                                         const CalibrationProgress& progress);

}  // namespace kiln::calibration
