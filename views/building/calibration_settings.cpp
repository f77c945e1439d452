#include "building/calibration_settings.h"

#include "common/cache_file_field.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSettings>
#include <QSpinBox>
#include <QToolButton>

namespace kiln::views {
namespace {

const QString kDefaultMean = QStringLiteral("0.485, 0.456, 0.406");
const QString kDefaultStd = QStringLiteral("0.229, 0.224, 0.225");

// "0.485, 0.456, 0.406" -> three floats; empty when it is not three numbers (positive ones for std).
std::vector<float> channelValues(const QString& text, bool positive) {
  std::vector<float> values;
  for (const QString& part : text.split(QLatin1Char(','))) {
    bool ok = false;
    const float v = part.trimmed().toFloat(&ok);
    if (!ok || (positive && !(v > 0))) return {};
    values.push_back(v);
  }
  return values.size() == 3 ? values : std::vector<float>{};
}

QLineEdit* channelEdit(const QString& text, const QString& tip, QWidget* parent) {
  auto* edit = new QLineEdit(text, parent);
  edit->setToolTip(tip);
  return edit;
}

}  // namespace

CalibrationDataSummary summarizeCalibrationData(const QString& path) {
  if (path.trimmed().isEmpty()) return {QObject::tr("no data: a calibration cache must exist"), false, false};
  const QFileInfo info(path);
  if (info.isFile())
    return info.suffix() == QLatin1String("npy")
               ? CalibrationDataSummary{QObject::tr("one .npy file (for a model with one input)"), true, false}
               : CalibrationDataSummary{QObject::tr("not a .npy file or a folder"), false, false};
  if (!info.isDir()) return {QObject::tr("no such file or folder"), false, false};
  const QDir folder(path);
  const int npy = int(folder.entryList({QStringLiteral("*.npy")}, QDir::Files).size());
  const int images = int(folder
                             .entryList({QStringLiteral("*.png"), QStringLiteral("*.jpg"), QStringLiteral("*.jpeg"),
                                         QStringLiteral("*.PNG"), QStringLiteral("*.JPG"), QStringLiteral("*.JPEG")},
                                        QDir::Files)
                             .size());
  if (npy && images) return {QObject::tr("holds both .npy files and images: keep one kind"), false, false};
  if (images) return {QObject::tr("%n image(s) (PNG / JPEG)", nullptr, images), true, true};
  if (npy) return {QObject::tr("%n .npy file(s)", nullptr, npy), true, false};
  return {QObject::tr("holds no .npy files and no PNG / JPEG images"), false, false};
}

CalibrationSettings::CalibrationSettings(QWidget* parent) : QGroupBox(tr("INT8 calibration"), parent) {
  auto* form = new QFormLayout(this);
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);

  auto* dataRow = new QHBoxLayout;
  data_ = new QLineEdit(this);
  data_->setObjectName(QStringLiteral("calibrationData"));
  data_->setPlaceholderText(tr("folder of .npy files or images"));
  data_->setToolTip(tr("A folder of .npy batches named by input (NAME.npy or NAME.0.npy, NAME.1.npy, ...), one .npy "
                       "file for a model with one input, or a folder of PNG / JPEG images for a model with one image "
                       "input: each resized to cover the input's height and width, centre-cropped, scaled to [0, 1] "
                       "and normalised by the mean and std below"));
  data_->setClearButtonEnabled(true);
  auto* browse = new QToolButton(this);
  browse->setText(QStringLiteral("…"));
  browse->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(browse);
  menu->addAction(tr("Folder (.npy files or images)…"), this, [this] {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Calibration Data"), data_->text());
    if (!folder.isEmpty()) data_->setText(folder);
  });
  menu->addAction(tr(".npy File…"), this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, tr("Calibration Data"), data_->text(),
                                                      tr("NumPy arrays (*.npy)"));
    if (!file.isEmpty()) data_->setText(file);
  });
  browse->setMenu(menu);
  dataRow->addWidget(data_, 1);
  dataRow->addWidget(browse);
  form->addRow(tr("Data"), dataRow);
  dataSummary_ = new QLabel(this);
  dataSummary_->setWordWrap(true);
  form->addRow(QString(), dataSummary_);

  auto* calibratorRow = new QHBoxLayout;
  calibrator_ = new QComboBox(this);
  calibrator_->addItem(tr("Entropy"), int(CalibratorKind::kEntropy));
  calibrator_->addItem(tr("Min-max"), int(CalibratorKind::kMinMax));
  calibrator_->addItem(tr("Percentile"), int(CalibratorKind::kPercentile));
  calibrator_->setToolTip(tr("Entropy: TensorRT's KL-divergence threshold. Min-max: the largest |x|. Percentile: "
                             "that percentile of |x|."));
  percentile_ = new QDoubleSpinBox(this);
  percentile_->setRange(50, 100);
  percentile_->setDecimals(3);
  percentile_->setValue(99.99);
  percentile_->setSuffix(QStringLiteral(" %"));
  calibratorRow->addWidget(calibrator_, 1);
  calibratorRow->addWidget(percentile_);
  form->addRow(tr("Calibrator"), calibratorRow);

  batches_ = new QSpinBox(this);
  batches_->setRange(0, 1'000'000);
  batches_->setSpecialValueText(tr("all"));
  batches_->setToolTip(tr("Calibrate on the first N batches"));
  form->addRow(tr("Batches"), batches_);

  cache_ = new QLineEdit(this);
  cache_->setObjectName(QStringLiteral("calibrationCache"));
  cache_->setToolTip(tr("A calibration cache: used instead of the data when it exists (it must be for this model and "
                        "calibrator), written after a build that calibrated otherwise"));
  form->addRow(tr("Cache"), cacheFileRow(cache_, tr("Calibration Cache"),
                                         tr("Calibration caches (*.cache);;All files (*)"),
                                         tr("Choose a calibration cache file (written when it does not exist)")));

  // Only images use the normalisation.
  imageRows_ = new QWidget(this);
  auto* imageForm = new QFormLayout(imageRows_);
  imageForm->setContentsMargins(0, 0, 0, 0);
  mean_ = channelEdit(kDefaultMean, tr("Subtracted from each [0, 1] RGB channel (ImageNet's by default)"), imageRows_);
  std_ = channelEdit(kDefaultStd, tr("Each RGB channel is divided by it after the mean (1, 1, 1 keeps [0, 1])"),
                     imageRows_);
  imageForm->addRow(tr("Mean (RGB)"), mean_);
  imageForm->addRow(tr("Std (RGB)"), std_);
  form->addRow(imageRows_);

  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("color: #B91C1C;"));
  form->addRow(problem_);

  for (QLineEdit* edit : {data_, cache_, mean_, std_})
    connect(edit, &QLineEdit::textChanged, this, &CalibrationSettings::refresh);
  connect(calibrator_, &QComboBox::currentIndexChanged, this, &CalibrationSettings::refresh);
  connect(batches_, &QSpinBox::valueChanged, this, &CalibrationSettings::changed);
  connect(percentile_, &QDoubleSpinBox::valueChanged, this, &CalibrationSettings::changed);
  refresh();
}

void CalibrationSettings::refresh() {
  const CalibrationDataSummary summary = summarizeCalibrationData(data_->text());
  dataSummary_->setText(summary.text);
  dataSummary_->setStyleSheet(summary.usable || data_->text().isEmpty() ? QStringLiteral("color: #6B7280;")
                                                                       : QStringLiteral("color: #B91C1C;"));
  imageRows_->setVisible(summary.images);
  percentile_->setEnabled(CalibratorKind(calibrator_->currentData().toInt()) == CalibratorKind::kPercentile);
  const QString why = problem();
  problem_->setText(why);
  problem_->setVisible(!why.isEmpty());
  emit changed();
}

QString CalibrationSettings::dataSummary() const { return dataSummary_->text(); }

QString CalibrationSettings::problem() const {
  const QString data = data_->text().trimmed();
  if (data.isEmpty()) {
    if (cache_->text().trimmed().isEmpty())
      return tr("INT8 and FP8 need calibration data or an existing calibration cache.");
    if (!QFileInfo::exists(cache_->text().trimmed()))
      return tr("The calibration cache does not exist yet: give calibration data to make it.");
    return {};
  }
  const CalibrationDataSummary summary = summarizeCalibrationData(data);
  if (!summary.usable) return tr("Calibration data: %1.").arg(summary.text);
  if (summary.images && channelValues(mean_->text(), false).empty())
    return tr("The mean needs three numbers, one per RGB channel.");
  if (summary.images && channelValues(std_->text(), true).empty())
    return tr("The std needs three positive numbers, one per RGB channel.");
  return {};
}

CalibrationConfig CalibrationSettings::config() const {
  CalibrationConfig c;
  c.dataPath = data_->text().trimmed().toStdString();
  c.calibrator = CalibratorKind(calibrator_->currentData().toInt());
  c.percentile = percentile_->value();
  c.maxBatches = batches_->value();
  c.cachePath = cache_->text().trimmed().toStdString();
  if (auto mean = channelValues(mean_->text(), false); !mean.empty()) c.imageMean = mean;
  if (auto stdev = channelValues(std_->text(), true); !stdev.empty()) c.imageStd = stdev;
  return c;
}

void CalibrationSettings::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("calibration"));
  settings.setValue(QStringLiteral("data"), data_->text());
  settings.setValue(QStringLiteral("calibrator"), calibrator_->currentIndex());
  settings.setValue(QStringLiteral("percentile"), percentile_->value());
  settings.setValue(QStringLiteral("batches"), batches_->value());
  settings.setValue(QStringLiteral("cache"), cache_->text());
  settings.setValue(QStringLiteral("mean"), mean_->text());
  settings.setValue(QStringLiteral("std"), std_->text());
}

void CalibrationSettings::restoreSettings() {
  QSettings settings;
  settings.beginGroup(QStringLiteral("calibration"));
  data_->setText(settings.value(QStringLiteral("data")).toString());
  calibrator_->setCurrentIndex(settings.value(QStringLiteral("calibrator"), 0).toInt());
  percentile_->setValue(settings.value(QStringLiteral("percentile"), 99.99).toDouble());
  batches_->setValue(settings.value(QStringLiteral("batches"), 0).toInt());
  cache_->setText(settings.value(QStringLiteral("cache")).toString());
  mean_->setText(settings.value(QStringLiteral("mean"), kDefaultMean).toString());
  std_->setText(settings.value(QStringLiteral("std"), kDefaultStd).toString());
}

}  // namespace kiln::views
