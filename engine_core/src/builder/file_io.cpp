#include <kiln/builder.h>
#include <kiln/error.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace kiln {

void writeFileAtomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorCode::kIoError, "cannot create '" + path + "': check the folder exists and is writable");
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw Error(ErrorCode::kIoError, "cannot write '" + path + "' (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIoError, "cannot write '" + path + "': " + ec.message());
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
