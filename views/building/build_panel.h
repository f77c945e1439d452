#pragma once
// The Build panel: what to build (backend, precisions, shape profile, optimisation level,
// workspace, timing cache, tactic sources, CUDA graphs for profiling, INT8 calibration) and the
// running build (progress with the phase, layer and tactic or calibration batch, log, Cancel). It
// only collects settings and shows progress; the app runs the build on a worker thread.
#include <kiln/builder_config.h>
#include <kiln/network.h>

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;

namespace kiln::views {

class CalibrationSettings;
class ProfileRangeModel;

class BuildPanel : public QWidget {
  Q_OBJECT
 public:
  explicit BuildPanel(QWidget* parent = nullptr);

  void setNetwork(const Network* network);  // nullptr: nothing to build
  BuilderConfig config() const;
  // A short name for what config() builds: "fp32", "fp16", "int8", "int8+fp16".
  QString precisionLabel() const;
  bool canBuild() const;
  bool isBuilding() const { return building_; }

  // For the app's actions and for tests.
  void setPrecisionAllowed(Precision precision, bool allowed);
  ProfileRangeModel* profileModel() const { return profileModel_; }
  QPushButton* buildButton() const { return buildButton_; }
  QPushButton* cancelButton() const { return cancelButton_; }
  QSpinBox* optimizationLevelBox() const { return optimizationLevel_; }
  QCheckBox* tacticSourceBox(const QString& source) const;  // "cudnn", "cublaslt", "cuda", "nvrtc", "cpu"
  QCheckBox* cudaGraphsBox() const { return cudaGraphs_; }
  QCheckBox* quantizeWhereFasterBox() const { return quantizeWhereFaster_; }
  QCheckBox* precisionBox(Precision precision) const;
  CalibrationSettings* calibrationSettings() const { return calibration_; }
  QString phaseText() const;
  QLabel* profileErrorLabel() const { return profileErrors_; }
  QString logText() const;

  void saveSettings() const;
  void restoreSettings();

 public slots:
  void buildStarted();
  void showProgress(double fraction, const QString& phase, const QString& layer, const QString& tactic = {});
  void appendLog(const QString& line);
  void buildFinished(const QString& summary);
  void buildFailed(const QString& message);
  void buildCancelled();

 signals:
  void buildRequested();
  void cancelRequested();
  void canBuildChanged(bool canBuild);

 private:
  QWidget* createTargetGroup(QWidget* parent);
  QWidget* createTacticsGroup(QWidget* parent);
  QWidget* createShapesGroup(QWidget* parent);
  QWidget* createRunGroup(QWidget* parent);
  void updateValidity();
  void updateBackendOptions();
  void fitProfileTable();
  void finishRun(const QString& status, const QString& logLine);
  void updatePrecisionChoices();
  // Whether an INT8 or FP8 box is ticked: the build then needs calibration data or a cache.
  bool quantizes() const;

  const Network* network_ = nullptr;
  bool building_ = false;
  QComboBox* backend_;
  std::vector<std::pair<Precision, QCheckBox*>> precisions_;
  QSpinBox* optimizationLevel_;
  QSpinBox* workspaceMiB_;
  QLineEdit* timingCache_;
  std::vector<std::pair<QString, QCheckBox*>> tacticSources_;
  QCheckBox* cudaGraphs_;
  QCheckBox* quantizeWhereFaster_;  // BuilderConfig::quantizeWhereFaster, for INT8 / FP8 builds
  ProfileRangeModel* profileModel_;
  QTableView* profileTable_;
  QLabel* profileErrors_;
  CalibrationSettings* calibration_;
  QPushButton* buildButton_;
  QPushButton* cancelButton_;
  QProgressBar* progress_;
  QLabel* phase_;
  QPlainTextEdit* log_;
};

}  // namespace kiln::views
