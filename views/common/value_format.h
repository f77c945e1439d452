#pragma once
// How engine values read in the UI: shapes as 1×3×224×224, attributes as Netron shows them,
// counts as 11.7 M.
#include <kiln/network.h>

#include <QString>

namespace kiln::views {

QString formatDims(const std::vector<int64_t>& dims);  // "64×3×7×7", "scalar"
QString formatShape(const Shape& shape);              // "batch×3×224×224", "?" for unknown rank
// The CLI's input shape list "x:1x3x224x224,mask:1x128" as "x 1×3×224×224, mask 1×128".
QString formatShapeList(const std::string& spec);
QString formatTensorType(const Tensor& tensor);       // "float32 ⟨1×3×224×224⟩"
// Attribute values, lists cut after `maxItems` ("1, 1, 1, 1", "⟨3×3⟩ float32", "graph (12 nodes)").
QString formatAttribute(const Attribute& attribute, int maxItems = 16);
QString formatCount(int64_t count);  // "11.7 M"
QString formatBytes(int64_t bytes);  // "44.7 MiB"
// Numbers a person types and reads back, as short as they are exact to 6 digits: "0.001", "1e-5",
// "2.5e+6" (exponents without padding zeros).
QString formatCompactNumber(double value);
// Errors in scientific notation: "2.68e-5" (2 decimals), "3e-5" (0 decimals), "0", "∞".
QString formatError(double value, int decimals = 2);
QString formatCosine(double value);    // "0.999987"
QString formatDecibels(double value);  // "77.0", "∞" for an exact match (999 dB and above)
// The name ONNX gives the layer's i-th input ("X", "W", "B"), or "input i" when the op is unknown.
QString inputRoleName(const Layer& layer, size_t index);
QString outputRoleName(const Layer& layer, size_t index);

}  // namespace kiln::views
