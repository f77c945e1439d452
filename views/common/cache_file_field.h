#pragma once
// A cache file setting (timing cache, calibration cache): a line edit that may stay empty ("none")
// and a "…" button that picks a file to write, created when missing, so the dialog does not ask
// about overwriting.
#include <QString>

class QHBoxLayout;
class QLineEdit;
class QWidget;

namespace kiln::views {

// The row holding `edit` (placeholder "none", clear button) and its "…" button; `title` names the
// dialog, `filter` its file types ("Timing caches (*.cache);;All files (*)").
QHBoxLayout* cacheFileRow(QLineEdit* edit, const QString& title, const QString& filter, const QString& buttonTip = {});

}  // namespace kiln::views
