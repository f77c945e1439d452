#pragma once
// Test hook for the activation arena. Arena outputs are not cleared before a kernel writes them, so
// every kernel must write all of its output; fresh arena pages read as zeros, which would hide one
// that does not. With poisoning on, each run starts with every arena byte 0xFF (NaN in floats, -1
// in integers), so such a kernel gives visibly wrong results.
namespace kiln {

void setArenaPoisoningForTesting(bool enabled);

}  // namespace kiln
