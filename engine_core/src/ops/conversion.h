#pragma once
// The layers the builder inserts where neighbouring layers disagree on where or how a tensor lives
// (domain "kiln"): Copy moves a tensor between host and device memory, Cast changes the type its
// memory holds, Reformat changes its layout (linear <-> NHWC). Each keeps its input's declared
// dims and type.
namespace kiln::conversion {

inline constexpr const char* kCopy = "Copy";
inline constexpr const char* kCast = "Cast";
inline constexpr const char* kReformat = "Reformat";
// Copy: "to" is "host" or "device". Cast: "to" is the storage type's ONNX code (the values keep
// their declared type: fp32 values stored as fp16, say). Reformat: "from" and "to" are tensor
// formats ("linear", "nhwc").
inline constexpr const char* kTo = "to";
inline constexpr const char* kFrom = "from";

}  // namespace kiln::conversion
