#include "main_window.h"

#include "document.h"
#include "engine_panels.h"

#include <graph/graph_export.h>
#include <graph/graph_scene.h>
#include <graph/graph_view.h>
#include <graph/search_result_model.h>
#include <inspector/inspector_panel.h>

#include <kiln/error.h>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>
#include <QToolBar>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

using kiln::views::GraphScene;

namespace {

constexpr int kMaxRecentFiles = 10;
constexpr int kStatusTimeoutMs = 8000;
constexpr int kDefaultLeftDockWidth = 270;  // Search and Build: the Build panel wraps and scrolls to fit
constexpr int kDefaultRightDockWidth = 380;

QIcon icon(const char* name) { return QIcon(QStringLiteral(":/icons/%1.svg").arg(QLatin1String(name))); }

bool isProfileFile(const QString& path) { return path.endsWith(".json", Qt::CaseInsensitive); }

bool isOpenableFile(const QUrl& url) {
  return url.isLocalFile() &&
         (url.toLocalFile().endsWith(".onnx", Qt::CaseInsensitive) || isProfileFile(url.toLocalFile()));
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setObjectName(QStringLiteral("MainWindow"));
  setWindowIcon(icon("kiln"));
  setAcceptDrops(true);
  setDockOptions(AnimatedDocks | AllowNestedDocks | AllowTabbedDocks);
  document_ = new Document(this);
  scene_ = new GraphScene(this);
  view_ = new kiln::views::GraphView(scene_, this);
  setCentralWidget(view_);

  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(220);
  progress_->setTextVisible(false);
  cancelButton_ = new QToolButton(this);
  cancelButton_->setIcon(icon("cancel"));
  cancelButton_->setToolTip(tr("Cancel the layout"));
  cancelButton_->setAutoRaise(true);
  countLabel_ = new QLabel(this);
  statusBar()->addPermanentWidget(countLabel_);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancelButton_);
  hideBusy();
  connect(cancelButton_, &QToolButton::clicked, scene_, &GraphScene::cancelLayout);

  createDocks();
  createActions();

  connect(document_, &Document::loadStarted, this,
          [this](const QString& path) { showBusy(tr("Opening %1…").arg(QFileInfo(path).fileName()), false); });
  connect(document_, &Document::loaded, this, &MainWindow::onLoaded);
  connect(document_, &Document::loadFailed, this, &MainWindow::onLoadFailed);
  connect(scene_, &GraphScene::layoutStarted, this,
          [this](int items) { showBusy(tr("Laying out %n node(s)…", nullptr, items), true); });
  connect(scene_, &GraphScene::layoutProgress, this, [this](int percent, const QString& phase) {
    progress_->setRange(0, 100);
    progress_->setValue(percent);
    progress_->setToolTip(phase);
  });
  connect(scene_, &GraphScene::layoutFinished, this, [this](double seconds) {
    const bool first = !view_->property("laidOut").toBool();
    hideBusy();
    if (first) view_->fitGraph();
    view_->setProperty("laidOut", true);
    countLabel_->setText(tr("%1 layers · %2 shown").arg(scene_->structure().layerCount()).arg(scene_->nodeItems().size()));
    statusBar()->showMessage(tr("Laid out in %1 s (%2)").arg(seconds, 0, 'f', 2).arg(scene_->layoutMethod()),
                             kStatusTimeoutMs);
  });
  connect(scene_, &GraphScene::layoutCancelled, this, [this] {
    hideBusy();
    statusBar()->showMessage(tr("Layout cancelled; the previous layout stays shown"), kStatusTimeoutMs);
  });
  connect(scene_, &GraphScene::layoutFailed, this, [this](const QString& message) {
    hideBusy();
    QMessageBox::warning(this, tr("Layout failed"),
                         tr("The graph could not be laid out.\n\n%1\n\nCollapse some groups and try again.").arg(message));
  });
  connect(scene_, &GraphScene::selectionTargetChanged, this, &MainWindow::updateInspector);

  QSettings settings;
  if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) resize(1400, 900);
  needsDefaultDockSizes_ = !restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  rebuildRecentMenu();
  updateTitle();
}

void MainWindow::createDocks() {
  inspector_ = new kiln::views::InspectorPanel(this);
  auto* inspectorDock = new QDockWidget(tr("Inspector"), this);
  inspectorDock->setObjectName(QStringLiteral("InspectorDock"));
  inspectorDock->setWidget(inspector_);
  addDockWidget(Qt::RightDockWidgetArea, inspectorDock);

  auto* overviewDock = new QDockWidget(tr("Overview"), this);
  overviewDock->setObjectName(QStringLiteral("OverviewDock"));
  overviewDock->setWidget(new kiln::views::Overview(scene_, view_, overviewDock));
  addDockWidget(Qt::RightDockWidgetArea, overviewDock);

  searchResults_ = new kiln::views::SearchResultModel(this);
  searchField_ = new QLineEdit(this);
  searchField_->setPlaceholderText(tr("Filter by node, op type or tensor…"));
  searchField_->setClearButtonEnabled(true);
  searchField_->addAction(icon("search"), QLineEdit::LeadingPosition);
  searchList_ = new QTreeView(this);
  searchList_->setModel(searchResults_);
  searchList_->setRootIsDecorated(false);
  searchList_->setUniformRowHeights(true);
  searchList_->setAlternatingRowColors(true);
  searchList_->setTextElideMode(Qt::ElideMiddle);  // long paths differ at both ends
  searchList_->header()->setStretchLastSection(false);
  searchList_->header()->setSectionResizeMode(kiln::views::SearchResultModel::kName, QHeaderView::Stretch);
  searchList_->header()->setSectionResizeMode(kiln::views::SearchResultModel::kOpType, QHeaderView::ResizeToContents);
  searchList_->header()->setMaximumSectionSize(120);  // "BatchNormalization" must not squeeze the names
  auto* searchPanel = new QWidget(this);
  auto* layout = new QVBoxLayout(searchPanel);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(searchField_);
  layout->addWidget(searchList_, 1);
  auto* searchDock = new QDockWidget(tr("Search"), this);
  searchDock->setObjectName(QStringLiteral("SearchDock"));
  searchDock->setWidget(searchPanel);
  addDockWidget(Qt::LeftDockWidgetArea, searchDock);
  engine_ = new EnginePanels(this, document_, scene_);
  tabifyDockWidget(searchDock, engine_->buildDock());
  searchDock->raise();
  connect(searchField_, &QLineEdit::textChanged, this, &MainWindow::runSearch);
  connect(searchField_, &QLineEdit::returnPressed, this, [this] {
    if (searchResults_->rowCount() == 0) return;
    searchCursor_ = (searchCursor_ + 1) % searchResults_->rowCount();
    jumpToResult(searchCursor_);
  });
  connect(searchList_, &QTreeView::activated, this, [this](const QModelIndex& index) { jumpToResult(index.row()); });
  connect(searchList_, &QTreeView::clicked, this, [this](const QModelIndex& index) { jumpToResult(index.row()); });
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (!needsDefaultDockSizes_) return;
  needsDefaultDockSizes_ = false;
  // Dock sizes only stick once the window has its size: after this show, not in the constructor.
  QTimer::singleShot(0, this, &MainWindow::applyDefaultDockSizes);
}

// The graph gets most of the window: narrow side docks, and engine panels only as high as their
// hints until the first build (EnginePanels makes room for results then).
void MainWindow::applyDefaultDockSizes() {
  auto* search = findChild<QDockWidget*>(QStringLiteral("SearchDock"));
  auto* inspector = findChild<QDockWidget*>(QStringLiteral("InspectorDock"));
  auto* overview = findChild<QDockWidget*>(QStringLiteral("OverviewDock"));
  resizeDocks({search, inspector}, {kDefaultLeftDockWidth, kDefaultRightDockWidth}, Qt::Horizontal);
  const int hintHeight = std::max({engine_->fusionDock()->sizeHint().height(), engine_->timingDock()->sizeHint().height(),
                                   engine_->accuracyDock()->sizeHint().height()});
  resizeDocks({engine_->fusionDock()}, {hintHeight}, Qt::Vertical);
  resizeDocks({inspector, overview}, {4 * height() / 5, height() / 5}, Qt::Vertical);
}

void MainWindow::createActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(icon("open"), tr("&Open…"), this, &MainWindow::chooseAndOpen);
  open->setShortcut(QKeySequence::Open);
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  file->addSeparator();
  exportAction_ = file->addAction(icon("export"), tr("&Export Graph Image…"), this, &MainWindow::chooseAndExport);
  exportAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  exportAction_->setEnabled(false);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
  quit->setShortcut(QKeySequence::Quit);
  quit->setMenuRole(QAction::QuitRole);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* find = edit->addAction(icon("search"), tr("&Find…"), this, [this] {
    searchField_->parentWidget()->parentWidget()->show();
    searchField_->setFocus();
    searchField_->selectAll();
  });
  find->setShortcut(QKeySequence::Find);
  QAction* findNext = edit->addAction(tr("Find &Next"), searchField_, &QLineEdit::returnPressed);
  findNext->setShortcut(QKeySequence::FindNext);

  viewMenu_ = menuBar()->addMenu(tr("&View"));
  QAction* zoomIn = viewMenu_->addAction(icon("zoom-in"), tr("Zoom &In"), view_, &kiln::views::GraphView::zoomIn);
  zoomIn->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Equal), QKeySequence::ZoomIn});
  QAction* zoomOut = viewMenu_->addAction(icon("zoom-out"), tr("Zoom &Out"), view_, &kiln::views::GraphView::zoomOut);
  zoomOut->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Minus), QKeySequence::ZoomOut});
  QAction* fit = viewMenu_->addAction(icon("zoom-fit"), tr("&Fit Graph"), view_, &kiln::views::GraphView::fitGraph);
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  QAction* actual = viewMenu_->addAction(tr("&Actual Size"), view_, [this] { view_->setZoom(1.0); });
  actual->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
  viewMenu_->addSeparator();
  QAction* expandAll = viewMenu_->addAction(icon("expand-all"), tr("E&xpand All Groups"), this,
                                            [this] { scene_->setAllGroupsCollapsed(false); });
  expandAll->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Equal));
  QAction* collapseAll = viewMenu_->addAction(icon("collapse-all"), tr("&Collapse All Groups"), this,
                                              [this] { scene_->setAllGroupsCollapsed(true); });
  collapseAll->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Minus));
  viewMenu_->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) viewMenu_->addAction(dock->toggleViewAction());

  buildMenu_ = menuBar()->addMenu(tr("&Build"));
  engine_->addActions(file, buildMenu_);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Kiln Studio"), this, [this] {
    QMessageBox::about(this, tr("About Kiln Studio"),
                       tr("<h3>Kiln Studio %1</h3><p>Looks inside ONNX models and the engines Kiln bakes from them.</p>")
                           .arg(QStringLiteral(KILN_VERSION)));
  });

  QToolBar* toolbar = addToolBar(tr("Main"));
  toolbar->setObjectName(QStringLiteral("MainToolBar"));
  toolbar->setMovable(false);
  toolbar->setIconSize(QSize(20, 20));
  toolbar->addActions({open, exportAction_});
  toolbar->addSeparator();
  toolbar->addActions({zoomIn, zoomOut, fit});
  toolbar->addSeparator();
  toolbar->addActions({expandAll, collapseAll});
}

void MainWindow::openModel(const QString& path) {
  if (!QFileInfo(path).isFile()) {
    onLoadFailed(path, tr("the file does not exist"));
    return;
  }
  scene_->cancelLayout();
  document_->open(path);
}

void MainWindow::chooseAndOpen() {
  QSettings settings;
  const QString path =
      QFileDialog::getOpenFileName(this, tr("Open Model or Profile"), settings.value("files/lastDir").toString(),
                                   tr("ONNX models (*.onnx);;Kiln profiles (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue("files/lastDir", QFileInfo(path).absolutePath());
  openFile(path);
}

void MainWindow::openFile(const QString& path) {
  if (isProfileFile(path)) return engine_->openProfile(path);
  openModel(path);
}

void MainWindow::chooseAndExport() {
  QSettings settings;
  const QString suggested = QFileInfo(settings.value("files/lastExportDir").toString(),
                                      QFileInfo(document_->path()).completeBaseName() + ".svg")
                                .filePath();
  const QString path = QFileDialog::getSaveFileName(this, tr("Export Graph Image"), suggested,
                                                    tr("SVG image (*.svg);;PNG image (*.png)"));
  if (path.isEmpty()) return;
  settings.setValue("files/lastExportDir", QFileInfo(path).absolutePath());
  try {
    kiln::views::exportGraph(*scene_, path);
    statusBar()->showMessage(tr("Exported %1").arg(QFileInfo(path).fileName()), kStatusTimeoutMs);
  } catch (const kiln::Error& e) {
    QMessageBox::warning(this, tr("Export failed"), QString::fromUtf8(e.what()));
  }
}

void MainWindow::onLoaded() {
  rememberRecent(document_->path());
  updateTitle();
  view_->setProperty("laidOut", false);
  searchResults_->setStructure(nullptr);
  inspector_->clear();
  scene_->setNetwork(document_->network());
  searchResults_->setStructure(&scene_->structure());
  engine_->modelLoaded();
  runSearch();
  exportAction_->setEnabled(true);
  updateInspector();
  if (!document_->warning().isEmpty()) statusBar()->showMessage(document_->warning());
}

void MainWindow::onLoadFailed(const QString& path, const QString& message) {
  hideBusy();
  QMessageBox box(QMessageBox::Critical, tr("Could not open model"),
                  tr("Kiln Studio could not open %1.").arg(QFileInfo(path).fileName()), QMessageBox::Ok, this);
  box.setInformativeText(message + tr("\n\nCheck that the file is an ONNX model (.onnx) and that its external "
                                      "data files, if any, sit next to it."));
  box.setDetailedText(QFileInfo(path).absoluteFilePath());
  box.exec();
  statusBar()->showMessage(tr("Could not open %1").arg(QFileInfo(path).fileName()), kStatusTimeoutMs);
}

void MainWindow::showBusy(const QString& message, bool cancellable) {
  statusBar()->showMessage(message);
  progress_->setRange(0, 0);  // indeterminate until the worker reports
  progress_->show();
  cancelButton_->setVisible(cancellable);
}

void MainWindow::hideBusy() {
  statusBar()->clearMessage();
  progress_->hide();
  cancelButton_->hide();
}

void MainWindow::updateInspector() {
  const auto* structure = &scene_->structure();
  if (!structure->network()) return inspector_->clear();
  if (int node = scene_->selectedNode(); node >= 0) return inspector_->showNode(structure, node);
  if (int group = scene_->selectedGroup(); group >= 0) return inspector_->showGroup(structure, group);
  inspector_->showModel(structure);
}

void MainWindow::runSearch() {
  searchResults_->search(searchField_->text());
  searchCursor_ = -1;
  if (!searchField_->text().isEmpty())
    statusBar()->showMessage(tr("%n match(es)", nullptr, searchResults_->rowCount()), kStatusTimeoutMs);
}

void MainWindow::jumpToResult(int row) {
  if (row < 0 || row >= searchResults_->rowCount()) return;
  searchList_->setCurrentIndex(searchResults_->index(row, kiln::views::SearchResultModel::kName));
  scene_->revealNode(searchResults_->nodeAt(row));
}

void MainWindow::rememberRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("files/recent").toStringList();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > kMaxRecentFiles) recent.removeLast();
  settings.setValue("files/recent", recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings().value("files/recent").toStringList();
  for (const QString& path : recent) {
    QAction* action = recentMenu_->addAction(QFileInfo(path).fileName(), this, [this, path] { openModel(path); });
    action->setToolTip(path);
  }
  if (!recent.isEmpty()) {
    recentMenu_->addSeparator();
    recentMenu_->addAction(tr("Clear List"), this, [this] {
      QSettings().remove("files/recent");
      rebuildRecentMenu();
    });
  }
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::updateTitle() {
  setWindowTitle(document_->path().isEmpty() ? tr("Kiln Studio")
                                             : tr("%1 — Kiln Studio").arg(QFileInfo(document_->path()).fileName()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  engine_->saveSettings();
  engine_->shutdown();
  scene_->cancelLayout();
  event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (std::any_of(urls.begin(), urls.end(), isOpenableFile)) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  for (const QUrl& url : event->mimeData()->urls()) {
    if (!isOpenableFile(url)) continue;
    openFile(url.toLocalFile());
    event->acceptProposedAction();
    return;
  }
}
