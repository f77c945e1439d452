#pragma once
// Kiln Studio's window: the graph in the middle, inspector / overview / search docks around it,
// the Build panel on the left and the Fusion / Timings / Accuracy panels below (EnginePanels).
#include <QMainWindow>

class QAction;
class QLabel;
class QLineEdit;
class QTreeView;
class QMenu;
class QProgressBar;
class QToolButton;
class Document;
class EnginePanels;

namespace kiln::views {
class GraphScene;
class GraphView;
class InspectorPanel;
class SearchResultModel;
}  // namespace kiln::views

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  void openModel(const QString& path);
  Document* document() const { return document_; }
  kiln::views::GraphScene* scene() const { return scene_; }
  kiln::views::GraphView* graphView() const { return view_; }
  QMenu* buildMenu() const { return buildMenu_; }
  EnginePanels* engine() const { return engine_; }
  // Opens a model (.onnx) or a timing profile (.json).
  void openFile(const QString& path);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void createActions();
  void createDocks();
  void applyDefaultDockSizes();
  void chooseAndOpen();
  void chooseAndExport();
  void onLoaded();
  void onLoadFailed(const QString& path, const QString& message);
  void showBusy(const QString& message, bool cancellable);
  void hideBusy();
  void updateInspector();
  void runSearch();
  void jumpToResult(int row);
  void rememberRecent(const QString& path);
  void rebuildRecentMenu();
  void updateTitle();

  Document* document_;
  EnginePanels* engine_;
  kiln::views::GraphScene* scene_;
  kiln::views::GraphView* view_;
  kiln::views::InspectorPanel* inspector_;
  kiln::views::SearchResultModel* searchResults_;
  QTreeView* searchList_;
  QLineEdit* searchField_;
  QMenu* recentMenu_;
  QMenu* buildMenu_;
  QMenu* viewMenu_;
  QAction* exportAction_;
  QProgressBar* progress_;
  QToolButton* cancelButton_;
  QLabel* countLabel_;
  int searchCursor_ = -1;
  bool needsDefaultDockSizes_ = false;  // no saved layout: size the docks once the window shows
};
