#pragma once
// NCCL's unique id as Kiln passes it between the ranks of a group, without NCCL itself (so CI
// tests it): 128 opaque bytes, written as 256 hex digits in a file or an environment variable.
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::nccl {

inline constexpr size_t kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
using UniqueId = std::array<uint8_t, kUniqueIdBytes>;

std::string toHex(const UniqueId& id);
// The id `hex` spells (256 hex digits, either case, surrounding whitespace ignored); throws
// kiln::Error(kInvalidArgument) naming `where` it came from otherwise.
UniqueId fromHex(std::string_view hex, const std::string& where);

// Writes `id` to `path` as a temporary file beside it renamed into place, so a reader never sees
// half of it. Throws kiln::Error(kIoError) naming the path.
void publishIdFile(const std::string& path, const UniqueId& id);

// Waits for `path` to hold an id, reading it every few milliseconds, for at most `timeout`; throws
// kiln::Error(kRuntimeError) naming the path, `rank` and the timeout when none came (or what it
// held was not an id).
UniqueId waitForIdFile(const std::string& path, std::chrono::milliseconds timeout, int rank);

// The id in environment variable `variable`; throws kiln::Error(kInvalidArgument) when it is unset
// or malformed.
UniqueId idFromEnvironment(const std::string& variable);

}  // namespace kiln::nccl
