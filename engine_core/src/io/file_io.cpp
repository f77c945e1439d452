#include <kiln/error.h>
#include <kiln/file_io.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kiln {

void writeFileAtomically(const std::string& path, std::string_view bytes) {
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  bool written = false;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    written = out && out.write(bytes.data(), std::streamsize(bytes.size())) && out.flush();
  }
  std::error_code ec;
  if (written) std::filesystem::rename(temporary, path, ec);
  if (!written || ec) {
    std::filesystem::remove(temporary, ec);
    throw Error(ErrorCode::kIoError, "cannot write '" + path + "'; check that its folder exists and is writable");
  }
}

std::vector<uint8_t> readFileBytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(ErrorCode::kIoError, "'" + path + "' does not exist or is not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes(std::filesystem::file_size(path, ec));
  if (ec || !in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size())))
    throw Error(ErrorCode::kIoError, "cannot read '" + path + "'");
  return bytes;
}

}  // namespace kiln
