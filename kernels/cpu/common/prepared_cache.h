#pragma once
// Objects prepared once per key (a oneDNN primitive per shape: JIT compiling takes milliseconds)
// and shared by every later call, from any thread.
#include <memory>
#include <mutex>
#include <vector>

namespace kiln::kernels {

template <class Prepared>
class PreparedCache {
 public:
  // The first entry `matches` accepts, or a new one from make() (returning std::unique_ptr<Prepared>).
  // Entries live as long as the cache, so the reference stays valid.
  template <class Matches, class Make>
  Prepared& findOrMake(Matches&& matches, Make&& make) {
    std::lock_guard lock(mutex_);
    for (auto& p : prepared_)
      if (matches(*p)) return *p;
    prepared_.push_back(make());
    return *prepared_.back();
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Prepared>> prepared_;
};

}  // namespace kiln::kernels
