#pragma once
// Whole-file reads and atomic writes (temporary file + rename): a failed write leaves no file.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

void writeFileAtomically(const std::string& path, std::string_view bytes);
inline void writeFileAtomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  writeFileAtomically(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}
std::vector<uint8_t> readFileBytes(const std::string& path);

}  // namespace kiln
