// Schemas of the conversion layers the builder inserts (ops/conversion.h).
#include "conversion.h"

#include "fused.h"
#include "op_families.h"
#include "op_schema.h"

#include "../ir/tensor_placement.h"

namespace kiln {
namespace {

void inferCopy(InferenceContext& ctx) {
  const std::string to = ctx.layer().attrString(conversion::kTo, "");
  if (!parseMemorySpace(to)) ctx.fail("attribute 'to' must be 'host' or 'device', got '" + to + "'");
  inferSameAsInput(ctx);
}

void inferCast(InferenceContext& ctx) {
  const int64_t to = ctx.layer().attrInt(conversion::kTo, -1);
  if (to <= 0 || to > int64_t(DataType::kString)) ctx.fail("attribute 'to' must be a data type code, got " + std::to_string(to));
  inferSameAsInput(ctx);
}

void inferReformat(InferenceContext& ctx) {
  for (const char* key : {conversion::kFrom, conversion::kTo}) {
    const std::string format = ctx.layer().attrString(key, "");
    if (!parseTensorFormat(format)) ctx.fail(std::string("attribute '") + key + "' must be 'linear' or 'nhwc', got '" + format + "'");
  }
  if (ctx.inputShape(0).hasRank() && ctx.inputShape(0).rank() != 4)
    ctx.fail("only 4-D tensors change layout, got shape " + ctx.inputShape(0).toString());
  inferSameAsInput(ctx);
}

}  // namespace

void registerConversionSchemas(OpSchemaRegistry& registry) {
  registry.add({fused::kDomain, conversion::kCopy, inferCopy, 1, 1});
  registry.add({fused::kDomain, conversion::kCast, inferCast, 1, 1});
  registry.add({fused::kDomain, conversion::kReformat, inferReformat, 1, 1});
}

}  // namespace kiln
