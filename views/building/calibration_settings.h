#pragma once
// The INT8 calibration settings of the Build panel: where the data comes from (a folder of .npy
// batches or PNG / JPEG images, or one .npy file), the calibrator, how many batches, the cache
// file, and the mean / std images are normalised with. A CalibrationConfig editor: the build
// reports calibration's progress, and its Cancel stops it, like any other phase.
#include <kiln/builder_config.h>

#include <QGroupBox>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace kiln::views {

// What a calibration data path holds, in a few words ("12 images (PNG / JPEG)", "3 .npy files",
// "one .npy file"), or why it cannot be used (then `usable` is false).
struct CalibrationDataSummary {
  QString text;
  bool usable = false;
  bool images = false;
};
CalibrationDataSummary summarizeCalibrationData(const QString& path);

class CalibrationSettings : public QGroupBox {
  Q_OBJECT
 public:
  explicit CalibrationSettings(QWidget* parent = nullptr);

  CalibrationConfig config() const;
  // Empty when an INT8 build can start with these settings; else what to fix.
  QString problem() const;

  // For tests and the app.
  QLineEdit* dataEdit() const { return data_; }
  QLineEdit* cacheEdit() const { return cache_; }
  QComboBox* calibratorBox() const { return calibrator_; }
  QSpinBox* batchesBox() const { return batches_; }
  QLineEdit* meanEdit() const { return mean_; }
  QLineEdit* stdEdit() const { return std_; }
  QString dataSummary() const;

  void saveSettings() const;
  void restoreSettings();

 signals:
  void changed();

 private:
  void refresh();  // the summary, normalisation rows and problem after an edit

  QLineEdit* data_;
  QLabel* dataSummary_;
  QComboBox* calibrator_;
  QDoubleSpinBox* percentile_;
  QSpinBox* batches_;
  QLineEdit* cache_;
  QLineEdit* mean_;
  QLineEdit* std_;
  QWidget* imageRows_;
  QLabel* problem_;
};

}  // namespace kiln::views
