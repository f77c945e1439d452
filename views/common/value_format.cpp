#include "common/value_format.h"

#include <onnx/defs/schema.h>

#include <QLocale>

#include <cmath>

namespace kiln::views {
namespace {

template <class T, class Format>
QString joinList(const std::vector<T>& values, int maxItems, Format format) {
  QStringList parts;
  for (size_t i = 0; i < values.size() && int(i) < maxItems; ++i) parts << format(values[i]);
  QString text = parts.join(QStringLiteral(", "));
  if (int(values.size()) > maxItems) text += QStringLiteral(", … (%1)").arg(values.size());
  return text;
}

QString formatFloat(double value) { return QString::number(value, 'g', 6); }

// "1e-05" -> "1e-5", "2.5e+06" -> "2.5e+6": Qt pads exponents to two digits.
QString trimExponent(QString text) {
  const qsizetype e = text.indexOf(QLatin1Char('e'));
  if (e < 0) return text;
  qsizetype digits = e + 2;  // after the sign
  while (digits + 1 < text.size() && text[digits] == QLatin1Char('0')) text.remove(digits, 1);
  return text;
}

QString infinityOr(double value, const QString& finite) {
  if (std::isnan(value)) return QStringLiteral("NaN");
  if (std::isinf(value)) return value > 0 ? QStringLiteral("∞") : QStringLiteral("−∞");
  return finite;
}

const onnx::OpSchema* schemaFor(const Layer& layer) {
  try {
    return onnx::OpSchemaRegistry::Schema(layer.opType, int(std::max<int64_t>(layer.opsetVersion, 1)),
                                          layer.domain.empty() ? onnx::ONNX_DOMAIN : layer.domain);
  } catch (const std::exception&) {
    return nullptr;
  }
}

QString roleName(const std::vector<onnx::OpSchema::FormalParameter>* params, size_t index, const char* fallback) {
  if (params && !params->empty()) {
    if (index < params->size()) return QString::fromStdString((*params)[index].GetName());
    if (params->back().GetOption() == onnx::OpSchema::Variadic) return QString::fromStdString(params->back().GetName());
  }
  return QStringLiteral("%1 %2").arg(QLatin1String(fallback)).arg(index);
}

}  // namespace

QString formatDims(const std::vector<int64_t>& dims) {
  if (dims.empty()) return QStringLiteral("scalar");
  QStringList parts;
  for (int64_t d : dims) parts << QString::number(d);
  return parts.join(QChar(0x00D7));
}

QString formatShape(const Shape& shape) {
  if (!shape.hasRank()) return QStringLiteral("?");
  if (shape.rank() == 0) return QStringLiteral("scalar");
  QStringList parts;
  for (const Dim& d : shape.dims()) parts << QString::fromStdString(d.toString());
  return parts.join(QChar(0x00D7));
}

QString formatShapeList(const std::string& spec) {
  QStringList parts;
  for (const QString& item : QString::fromStdString(spec).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    const qsizetype colon = item.lastIndexOf(QLatin1Char(':'));  // names may hold colons ("input:0")
    if (colon < 0) {
      parts << item;
      continue;
    }
    parts << item.left(colon) + QLatin1Char(' ') + item.mid(colon + 1).replace(QLatin1Char('x'), QChar(0x00D7));
  }
  return parts.join(QStringLiteral(", "));
}

QString formatTensorType(const Tensor& tensor) {
  QString type = tensor.dtype == DataType::kUndefined ? QStringLiteral("?") : QString::fromUtf8(toString(tensor.dtype));
  if (tensor.kind != ValueKind::kTensor) type = QString::fromUtf8(toString(tensor.kind)) + QChar(' ') + type;
  return QStringLiteral("%1 ⟨%2⟩").arg(type, formatShape(tensor.shape));
}

QString formatAttribute(const Attribute& attribute, int maxItems) {
  return std::visit(
      [maxItems](const auto& value) -> QString {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, int64_t>) return QString::number(value);
        else if constexpr (std::is_same_v<T, float>) return formatFloat(value);
        else if constexpr (std::is_same_v<T, std::string>) return QString::fromStdString(value);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return joinList(value, maxItems, [](int64_t v) { return QString::number(v); });
        else if constexpr (std::is_same_v<T, std::vector<float>>)
          return joinList(value, maxItems, [](float v) { return formatFloat(v); });
        else if constexpr (std::is_same_v<T, std::vector<std::string>>)
          return joinList(value, maxItems, [](const std::string& v) { return QString::fromStdString(v); });
        else if constexpr (std::is_same_v<T, HostTensor>)
          return QStringLiteral("⟨%1⟩ %2").arg(formatDims(value.dims()), QString::fromUtf8(toString(value.dtype())));
        else if constexpr (std::is_same_v<T, Attribute::Graph>)
          return QStringLiteral("graph (%1 nodes)").arg(value ? value->layers().size() : 0);
        else return QStringLiteral("%1 graphs").arg(value.size());
      },
      attribute.value());
}

QString formatCount(int64_t count) {
  static const char* suffixes[] = {"", " K", " M", " G", " T"};
  double value = double(count);
  int unit = 0;
  while (std::abs(value) >= 1000 && unit < 4) {
    value /= 1000;
    ++unit;
  }
  return unit == 0 ? QString::number(count) : QString::number(value, 'f', 1) + QLatin1String(suffixes[unit]);
}

QString formatBytes(int64_t bytes) { return QLocale::c().formattedDataSize(bytes, 1, QLocale::DataSizeIecFormat); }

QString formatCompactNumber(double value) {
  return infinityOr(value, trimExponent(QString::number(value, 'g', 6)));
}

QString formatError(double value, int decimals) {
  return infinityOr(value, value == 0 ? QStringLiteral("0") : trimExponent(QString::number(value, 'e', decimals)));
}

QString formatCosine(double value) { return infinityOr(value, QString::number(value, 'f', 6)); }

QString formatDecibels(double value) {
  constexpr double kExactMatchDb = 999;  // what the comparator reports for identical tensors
  return value >= kExactMatchDb ? QStringLiteral("∞") : infinityOr(value, QString::number(value, 'f', 1));
}

QString inputRoleName(const Layer& layer, size_t index) {
  const onnx::OpSchema* schema = schemaFor(layer);
  return roleName(schema ? &schema->inputs() : nullptr, index, "input");
}

QString outputRoleName(const Layer& layer, size_t index) {
  const onnx::OpSchema* schema = schemaFor(layer);
  return roleName(schema ? &schema->outputs() : nullptr, index, "output");
}

}  // namespace kiln::views
