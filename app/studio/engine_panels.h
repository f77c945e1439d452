#pragma once
// The engine side of the window: the Build, Fusion, Timings, Accuracy and Precision docks, their
// actions (Build ▸ Build Engine Ctrl+B, Cancel, Profile, Compare, Compare All Engines, Find Layers
// to Keep, Advise; File ▸ Save Plan…, profiles opened from File ▸ Open or dropped), and the
// EngineController that runs the jobs in the background.
#include "engine_controller.h"

#include <QObject>

class QAction;
class QDockWidget;
class QMainWindow;
class QMenu;
class Document;

namespace kiln::views {
class AccuracyPanel;
class BuildPanel;
class FusionPanel;
class GraphScene;
class PrecisionDebugPanel;
class TimingPanel;
}  // namespace kiln::views

class EnginePanels : public QObject {
  Q_OBJECT
 public:
  enum class Heatmap { kNone, kTime, kError, kPrecision };

  EnginePanels(QMainWindow* window, Document* document, kiln::views::GraphScene* scene);

  void addActions(QMenu* fileMenu, QMenu* buildMenu);
  void modelLoaded();
  void openProfile(const QString& path);
  void saveSettings() const;
  void shutdown();  // cancels and waits for the running job

  // For --screenshot and tests: failures go to the status bar and jobFailed only, no modal dialog.
  void setDialogsEnabled(bool enabled) { dialogsEnabled_ = enabled; }
  void startBuild();
  void startProfile();
  void startComparison();
  void startEngineComparison();
  void startBisect();
  void startAdvice();
  void showHeatmap(Heatmap heatmap);
  void raise(QDockWidget* dock);
  EngineController* controller() const { return controller_; }
  kiln::views::BuildPanel* buildPanel() const { return build_; }
  kiln::views::FusionPanel* fusionPanel() const { return fusion_; }
  kiln::views::TimingPanel* timingPanel() const { return timing_; }
  kiln::views::AccuracyPanel* accuracyPanel() const { return accuracy_; }
  kiln::views::PrecisionDebugPanel* precisionPanel() const { return precision_; }
  QDockWidget* precisionDock() const { return precisionDock_; }
  QDockWidget* buildDock() const { return buildDock_; }
  QDockWidget* fusionDock() const { return fusionDock_; }
  QDockWidget* timingDock() const { return timingDock_; }
  QDockWidget* accuracyDock() const { return accuracyDock_; }

 signals:
  void profileShown();

 private:
  QDockWidget* addDock(const QString& title, const QString& objectName, QWidget* panel, Qt::DockWidgetArea area);
  void chooseAndSavePlan();
  void onBuilt(std::shared_ptr<const BuiltEngine> built);
  void onFailed(EngineController::Job job, const QString& message);
  void onCancelled(EngineController::Job job);
  void updateActions();
  void status(const QString& message);
  void makeRoomForResults(QDockWidget* shown);
  // The precision tools' options: the current engine's config, the accuracy panel's inputs, the
  // precision panel's criterion. Throws kiln::Error when the inputs cannot be made.
  kiln::PrecisionDebugOptions precisionDebugOptions() const;

  QMainWindow* window_;
  Document* document_;
  kiln::views::GraphScene* scene_;
  EngineController* controller_;
  kiln::views::BuildPanel* build_;
  kiln::views::FusionPanel* fusion_;
  kiln::views::TimingPanel* timing_;
  kiln::views::AccuracyPanel* accuracy_;
  kiln::views::PrecisionDebugPanel* precision_;
  QDockWidget* buildDock_;
  QDockWidget* fusionDock_;
  QDockWidget* timingDock_;
  QDockWidget* accuracyDock_;
  QDockWidget* precisionDock_;
  QAction* buildAction_ = nullptr;
  QAction* cancelAction_ = nullptr;
  QAction* savePlanAction_ = nullptr;
  QAction* profileAction_ = nullptr;
  QAction* compareAction_ = nullptr;
  QAction* compareEnginesAction_ = nullptr;
  QAction* bisectAction_ = nullptr;
  QAction* adviseAction_ = nullptr;
  Heatmap heatmap_ = Heatmap::kNone;
  kiln::AccuracyCriterion debugCriterion_;  // of the running or last precision bisect
  bool dialogsEnabled_ = true;
  bool madeRoomForResults_ = false;
};
