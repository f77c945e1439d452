#pragma once
// A tactic lock file (`kiln build --tactic-lock FILE`): every layer's chosen tactic and its payload,
// written by one build and replayed by the next, so timing noise cannot change a plan. Text, one
// layer a line: "layer<TAB>tactic<TAB>payload as hex", after a header naming the backend and
// device it was made on (a lock from another device is refused: its choices were timed there).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct LockedTactic {
  std::string tactic;
  std::vector<uint8_t> payload;
};

class TacticLock {
 public:
  // Reads `path` when it exists (a malformed file, or one made for another backend or device, is
  // an error naming it); otherwise the lock is empty and will be written.
  TacticLock(std::string path, std::string backend, std::string device);
  bool replaying() const { return replaying_; }
  // The locked choice of a layer (replaying), or nothing.
  std::optional<LockedTactic> find(const std::string& layer) const;
  void record(const std::string& layer, LockedTactic choice);
  // Writes the choices atomically (only when not replaying).
  void save() const;

 private:
  std::string path_, backend_, device_;
  bool replaying_ = false;
  std::map<std::string, LockedTactic> layers_;
};

}  // namespace kiln
