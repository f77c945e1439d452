#include "pointwise_nvrtc.h"

#include "pointwise_codegen.h"

#include <kiln/error.h>

#include <nvrtc.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace kiln::cuda {
namespace {

constexpr char kMagic[4] = {'K', 'P', 'W', 'C'};

std::mutex cacheMutex;
std::map<std::tuple<uint64_t, std::string, int>, std::shared_ptr<const std::vector<uint8_t>>> cache;
std::atomic<uint64_t> compiles{0};

std::string joined(const std::vector<std::string>& parts, const char* separator) {
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : separator) + p;
  return text;
}

void nvrtcCheck(nvrtcResult status, const char* what) {
  if (status != NVRTC_SUCCESS)
    throw Error(ErrorCode::kRuntimeError,
                std::string("NVRTC failed ") + what + " a pointwise kernel: " + nvrtcGetErrorString(status));
}

class Writer {
 public:
  template <class T>
  void put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
  }
  void putBytes(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + n);
  }
  std::vector<uint8_t> bytes;
};

class Reader {
 public:
  Reader(const std::vector<uint8_t>& bytes, const std::string& who) : bytes_(bytes), who_(who) {}
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string text(uint64_t n) {
    need(n);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }
  std::vector<uint8_t> block(uint64_t n) {
    need(n);
    std::vector<uint8_t> v(bytes_.begin() + at_, bytes_.begin() + at_ + n);
    at_ += n;
    return v;
  }
  bool atEnd() const { return at_ == bytes_.size(); }

 private:
  void need(uint64_t n) const {
    if (n > bytes_.size() - at_)
      throw Error(ErrorCode::kInvalidArgument, who_ + ": its NVRTC kernel in the plan is truncated (" +
                                                   std::to_string(bytes_.size()) +
                                                   " bytes); the plan is damaged: rebuild the plan on this GPU");
  }
  const std::vector<uint8_t>& bytes_;
  const std::string& who_;
  size_t at_ = 0;
};

}  // namespace

std::vector<std::string> nvrtcOptions(int arch) {
  return {"--gpu-architecture=sm_" + std::to_string(arch), "-std=c++17"};
}

int nvrtcVersionNumber() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return major * 1000 + minor * 10;
}

uint64_t nvrtcCompileCount() { return compiles.load(); }

std::shared_ptr<const std::vector<uint8_t>> compileCubin(const std::string& source, int arch) {
  const std::vector<std::string> options = nvrtcOptions(arch);
  const auto key = std::make_tuple(fnv1a64(source), joined(options, " "), arch);
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  nvrtcProgram program = nullptr;
  nvrtcCheck(nvrtcCreateProgram(&program, source.c_str(), "kiln_pointwise.cu", 0, nullptr, nullptr), "creating");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> owner(&program,
                                                               [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult status = nvrtcCompileProgram(program, int(argv.size()), argv.data());
  if (status != NVRTC_SUCCESS) {
    size_t logSize = 0;
    nvrtcGetProgramLogSize(program, &logSize);
    std::string log(logSize, '\0');
    if (logSize) nvrtcGetProgramLog(program, log.data());
    throw Error(ErrorCode::kRuntimeError, std::string("NVRTC could not compile a pointwise kernel for sm_") +
                                              std::to_string(arch) + " (" + nvrtcGetErrorString(status) + "): " + log);
  }
  size_t size = 0;
  nvrtcCheck(nvrtcGetCUBINSize(program, &size), "sizing the cubin of");
  auto cubin = std::make_shared<std::vector<uint8_t>>(size);
  nvrtcCheck(nvrtcGetCUBIN(program, reinterpret_cast<char*>(cubin->data())), "reading the cubin of");
  if (cubin->empty()) throw Error(ErrorCode::kRuntimeError, "NVRTC gave an empty cubin for a pointwise kernel");
  ++compiles;
  std::lock_guard<std::mutex> lock(cacheMutex);
  return cache.emplace(key, std::move(cubin)).first->second;
}

std::vector<uint8_t> encodePointwisePayload(const PointwisePayload& payload) {
  Writer w;
  w.putBytes(kMagic, 4);
  w.put<uint32_t>(PointwisePayload::kFormatVersion);
  w.put<uint32_t>(payload.arch);
  w.put<uint32_t>(payload.nvrtcVersion);
  w.put<uint64_t>(payload.sourceHash);
  w.put<uint32_t>(uint32_t(payload.options.size()));
  w.putBytes(payload.options.data(), payload.options.size());
  w.put<uint32_t>(uint32_t(payload.kernels.size()));
  w.putBytes(payload.kernels.data(), payload.kernels.size());
  w.put<uint64_t>(payload.cubin.size());
  w.putBytes(payload.cubin.data(), payload.cubin.size());
  return std::move(w.bytes);
}

PointwisePayload decodePointwisePayload(const std::vector<uint8_t>& bytes, int deviceArch, const std::string& who) {
  const std::string rebuild = "; rebuild the plan on this GPU";
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic, 4) != 0)
    throw Error(ErrorCode::kInvalidArgument, who +
                                                 ": its tactic's payload in the plan is no NVRTC pointwise kernel (the "
                                                 "plan is damaged or from another Kiln)" +
                                                 rebuild);
  Reader r(bytes, who);
  r.text(4);
  PointwisePayload p;
  const uint32_t version = r.get<uint32_t>();
  if (version != PointwisePayload::kFormatVersion)
    throw Error(ErrorCode::kInvalidArgument, who + ": its NVRTC kernel in the plan has format version " +
                                                 std::to_string(version) + ", this Kiln reads " +
                                                 std::to_string(PointwisePayload::kFormatVersion) + rebuild);
  p.arch = r.get<uint32_t>();
  p.nvrtcVersion = r.get<uint32_t>();
  p.sourceHash = r.get<uint64_t>();
  p.options = r.text(r.get<uint32_t>());
  p.kernels = r.text(r.get<uint32_t>());
  p.cubin = r.block(r.get<uint64_t>());
  if (!r.atEnd() || p.cubin.empty())
    throw Error(ErrorCode::kInvalidArgument, who + ": its NVRTC kernel in the plan has " +
                                                 (p.cubin.empty() ? "no cubin" : "bytes after its cubin") +
                                                 " (the plan is damaged)" + rebuild);
  if (int(p.arch) != deviceArch)
    throw Error(ErrorCode::kInvalidArgument, who + ": its NVRTC kernel was compiled for sm_" + std::to_string(p.arch) +
                                                 ", this GPU is sm_" + std::to_string(deviceArch) + rebuild);
  return p;
}

}  // namespace kiln::cuda
