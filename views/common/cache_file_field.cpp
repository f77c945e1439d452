#include "common/cache_file_field.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QToolButton>

namespace kiln::views {

QHBoxLayout* cacheFileRow(QLineEdit* edit, const QString& title, const QString& filter, const QString& buttonTip) {
  edit->setPlaceholderText(QObject::tr("none"));
  edit->setClearButtonEnabled(true);
  auto* browse = new QToolButton(edit->parentWidget());
  browse->setText(QStringLiteral("…"));
  browse->setToolTip(buttonTip);
  QObject::connect(browse, &QToolButton::clicked, edit, [edit, title, filter] {
    const QString path = QFileDialog::getSaveFileName(edit, title, edit->text(), filter, nullptr,
                                                      QFileDialog::DontConfirmOverwrite);
    if (!path.isEmpty()) edit->setText(path);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(edit, 1);
  row->addWidget(browse);
  return row;
}

}  // namespace kiln::views
