#include "nccl_unique_id.h"

#include <kiln/error.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace kiln::nccl {
namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trimmed(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::optional<UniqueId> parse(std::string_view text) {
  text = trimmed(text);
  if (text.size() != 2 * kUniqueIdBytes) return std::nullopt;
  UniqueId id{};
  for (size_t i = 0; i < kUniqueIdBytes; ++i) {
    const int high = hexDigit(text[2 * i]), low = hexDigit(text[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    id[i] = uint8_t(high * 16 + low);
  }
  return id;
}

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string toHex(const UniqueId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * id.size());
  for (uint8_t byte : id) {
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 15];
  }
  return hex;
}

UniqueId fromHex(std::string_view hex, const std::string& where) {
  if (auto id = parse(hex)) return *id;
  throw Error(ErrorCode::kInvalidArgument, where + " does not hold an NCCL unique id: expected " +
                                               std::to_string(2 * kUniqueIdBytes) + " hex digits, got " +
                                               std::to_string(trimmed(hex).size()) + " characters");
}

void publishIdFile(const std::string& path, const UniqueId& id) {
  // The temporary name is unique to this process, in the same folder so that rename is atomic.
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << toHex(id) << '\n';
    out.close();
    if (!out)
      throw Error(ErrorCode::kIoError, "cannot write the NCCL id file '" + temporary +
                                           "': check that its folder exists and is writable by every rank");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw Error(ErrorCode::kIoError, "cannot move the NCCL id file into place at '" + path + "'");
  }
}

UniqueId waitForIdFile(const std::string& path, std::chrono::milliseconds timeout, int rank) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<std::string> lastText;
  for (;;) {
    lastText = readFile(path);
    if (lastText)
      if (auto id = parse(*lastText)) return *id;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (lastText)
    throw Error(ErrorCode::kRuntimeError, "rank " + std::to_string(rank) + ": the NCCL id file '" + path +
                                              "' does not hold an id (" + std::to_string(2 * kUniqueIdBytes) +
                                              " hex digits) after " + std::to_string(timeout.count()) + " ms");
  throw Error(ErrorCode::kRuntimeError, "rank " + std::to_string(rank) + " waited " + std::to_string(timeout.count()) +
                                            " ms for the NCCL id file '" + path +
                                            "', which rank 0 writes: is rank 0 running, with the same path?");
}

UniqueId idFromEnvironment(const std::string& variable) {
  const char* value = std::getenv(variable.c_str());
  if (!value || !*value)
    throw Error(ErrorCode::kInvalidArgument,
                "environment variable " + variable +
                    " is not set: the launcher sets it to createNcclUniqueIdHex() for every rank (or give the ranks "
                    "an id file instead)");
  return fromHex(value, "environment variable " + variable);
}

}  // namespace kiln::nccl
