// The in-process Communicator (kiln/communicator.h): N ranks as threads of one process meeting at
// a shared rendezvous. Each call copies its send buffer into a posting for its call number; when
// all ranks have posted, each computes its own recv from the postings (reductions in rank order,
// so the result does not depend on arrival order). Copying the sends lets a rank move on to its
// next collective while others still read this one, and makes send == recv safe.
#include <kiln/communicator.h>
#include <kiln/error.h>

#include "precision_convert.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>

namespace kiln {
namespace {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kGather, kScatter };

const char* nameOf(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "AllReduce";
    case Collective::kAllGather:
      return "AllGather";
    case Collective::kReduceScatter:
      return "ReduceScatter";
    case Collective::kBroadcast:
      return "Broadcast";
    case Collective::kReduce:
      return "Reduce";
    case Collective::kAllToAll:
      return "AllToAll";
    case Collective::kGather:
      return "Gather";
    case Collective::kScatter:
      return "Scatter";
  }
  return "?";
}

// What one rank brought to one call.
struct Posting {
  Collective kind;
  DataType type;
  int64_t count;
  ReduceOp op;
  int root;
  std::vector<std::byte> data;
};
using Postings = std::vector<std::shared_ptr<const Posting>>;

struct Round {
  Postings posted;
  int arrived = 0;
  int taken = 0;
};

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

class Rendezvous {
 public:
  Rendezvous(int size, std::chrono::milliseconds timeout) : size_(size), timeout_(timeout) {}
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Posts `mine` as rank `rank`'s call number `call` and returns every rank's posting once all
  // have arrived; throws after the timeout naming the ranks that did not.
  Postings exchange(int rank, uint64_t call, std::shared_ptr<const Posting> mine) {
    std::unique_lock lock(mutex_);
    const std::string what = std::string("collective ") + nameOf(mine->kind) + " (call " + std::to_string(call) + ", " +
                             std::to_string(mine->count) + " " + std::string(toString(mine->type)) +
                             " values) on rank " + std::to_string(rank) + " of " + std::to_string(size_);
    if (!failure_.empty()) throw Error(ErrorCode::kRuntimeError, what + ": the group failed earlier: " + failure_);
    Round& round = rounds_[call];
    if (round.posted.empty()) round.posted.resize(size_t(size_));
    round.posted[size_t(rank)] = std::move(mine);
    if (++round.arrived == size_) arrivedAll_.notify_all();
    const bool complete =
        arrivedAll_.wait_for(lock, timeout_, [&] { return round.arrived == size_ || !failure_.empty(); });
    if (!complete) {
      std::vector<int> missing;
      for (int r = 0; r < size_; ++r)
        if (!round.posted[size_t(r)]) missing.push_back(r);
      failure_ = what + " timed out after " + std::to_string(timeout_.count()) + " ms waiting for rank(s) " +
                 rankList(missing) + ", which never arrived: a rank stalled, failed or ran other collectives";
      arrivedAll_.notify_all();
      throw Error(ErrorCode::kRuntimeError, failure_);
    }
    if (round.arrived != size_) throw Error(ErrorCode::kRuntimeError, what + ": the group failed: " + failure_);
    Postings all = round.posted;
    if (++round.taken == size_) rounds_.erase(call);
    return all;
  }

  void abort(const std::string& reason) {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) failure_ = reason;
    arrivedAll_.notify_all();
  }

 private:
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable arrivedAll_;
  std::map<uint64_t, Round> rounds_;
  std::string failure_;  // set once: the first timeout or abort; every later call fails with it
};

template <class T>
T combine(T a, T b, ReduceOp op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // ONNX integers wrap; C++ signed overflow may not
    switch (op) {
      case ReduceOp::kSum:
        return T(U(a) + U(b));
      case ReduceOp::kProd:
        return T(U(a) * U(b));
      case ReduceOp::kMax:
        return std::max(a, b);
      case ReduceOp::kMin:
        return std::min(a, b);
    }
  } else {
    switch (op) {
      case ReduceOp::kSum:
        return a + b;
      case ReduceOp::kProd:
        return a * b;
      case ReduceOp::kMax:
        return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
      case ReduceOp::kMin:
        return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    }
  }
  return a;
}

// out[i] = op over ranks (in rank order) of block `block` of each posting; `count` elements.
template <class T>
void reduceBlocks(const Postings& all, int64_t block, int64_t count, ReduceOp op, T* out) {
  const T* first = reinterpret_cast<const T*>(all[0]->data.data()) + block * count;
  std::copy(first, first + count, out);
  for (size_t r = 1; r < all.size(); ++r) {
    const T* in = reinterpret_cast<const T*>(all[r]->data.data()) + block * count;
    for (int64_t i = 0; i < count; ++i) out[i] = combine(out[i], in[i], op);
  }
}

void reduceInto(const Postings& all, int64_t block, int64_t count, DataType type, ReduceOp op, void* recv) {
  switch (type) {
    case DataType::kFloat32:
      return reduceBlocks(all, block, count, op, static_cast<float*>(recv));
    case DataType::kFloat64:
      return reduceBlocks(all, block, count, op, static_cast<double*>(recv));
    case DataType::kInt32:
      return reduceBlocks(all, block, count, op, static_cast<int32_t*>(recv));
    case DataType::kInt64:
      return reduceBlocks(all, block, count, op, static_cast<int64_t*>(recv));
    case DataType::kFloat16:
    case DataType::kBFloat16: {  // widened, reduced in fp32, rounded once
      Postings wide;
      for (const auto& p : all) {
        auto w = std::make_shared<Posting>(Posting{p->kind, DataType::kFloat32, count, p->op, p->root, {}});
        w->data.resize(size_t(count) * 4);
        convertFloatStorage(type, p->data.data() + block * count * 2, DataType::kFloat32, w->data.data(), count);
        wide.push_back(std::move(w));
      }
      std::vector<float> reduced(static_cast<size_t>(count));
      reduceBlocks(wide, 0, count, op, reduced.data());
      return convertFloatStorage(DataType::kFloat32, reduced.data(), type, recv, count);
    }
    default:
      throw Error(ErrorCode::kUnsupported,
                  "collective reductions take float32, float16, bfloat16, float64, int32 "
                  "and int64, not " +
                      std::string(toString(type)));
  }
}

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<Rendezvous> group, int rank) : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::chrono::milliseconds timeout() const override { return group_->timeout(); }
  std::string describe() const override {
    return "in-process rank " + std::to_string(rank_) + " of " + std::to_string(size());
  }

  void allReduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, void*) override {
    const Postings all = exchange(Collective::kAllReduce, send, count, count, type, op, 0);
    reduceInto(all, 0, count, type, op, recv);
  }
  void allGather(const void* send, void* recv, int64_t count, DataType type, void*) override {
    concatenate(exchange(Collective::kAllGather, send, count, count, type, ReduceOp::kSum, 0), recv);
  }
  void gather(const void* send, void* recv, int64_t count, DataType type, int root, void*) override {
    checkRoot(root, "Gather");
    const Postings all = exchange(Collective::kGather, send, count, count, type, ReduceOp::kSum, root);
    if (rank_ == root) concatenate(all, recv);
  }
  void scatter(const void* send, void* recv, int64_t count, DataType type, int root, void*) override {
    checkRoot(root, "Scatter");
    // Only the root's blocks travel; the others post nothing.
    const Postings all =
        exchange(Collective::kScatter, send, rank_ == root ? count * size() : 0, count, type, ReduceOp::kSum, root);
    const size_t bytes = size_t(count) * byteSize(type);
    copyBytes(recv, all[size_t(root)]->data.data() + size_t(rank_) * bytes, bytes);
  }
  void reduceScatter(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, void*) override {
    const Postings all = exchange(Collective::kReduceScatter, send, count * size(), count, type, op, 0);
    reduceInto(all, rank_, count, type, op, recv);
  }
  void broadcast(const void* send, void* recv, int64_t count, DataType type, int root, void*) override {
    checkRoot(root, "Broadcast");
    const Postings all = exchange(Collective::kBroadcast, send, count, count, type, ReduceOp::kSum, root);
    copyBytes(recv, all[size_t(root)]->data.data(), size_t(count) * byteSize(type));
  }
  void reduce(const void* send, void* recv, int64_t count, DataType type, ReduceOp op, int root, void*) override {
    checkRoot(root, "Reduce");
    const Postings all = exchange(Collective::kReduce, send, count, count, type, op, root);
    if (rank_ == root) reduceInto(all, 0, count, type, op, recv);
  }
  void allToAll(const void* send, void* recv, int64_t count, DataType type, void*) override {
    const Postings all = exchange(Collective::kAllToAll, send, count * size(), count, type, ReduceOp::kSum, 0);
    const size_t bytes = size_t(count) * byteSize(type);
    for (size_t r = 0; r < all.size(); ++r)
      copyBytes(static_cast<std::byte*>(recv) + r * bytes, all[r]->data.data() + size_t(rank_) * bytes, bytes);
  }
  void abort(const std::string& reason) override {
    group_->abort("rank " + std::to_string(rank_) + " failed: " + reason);
  }

 private:
  // recv = the postings' data one after another in rank order.
  static void concatenate(const Postings& all, void* recv) {
    size_t offset = 0;
    for (const auto& p : all) {
      copyBytes(static_cast<std::byte*>(recv) + offset, p->data.data(), p->data.size());
      offset += p->data.size();
    }
  }
  static void copyBytes(void* to, const void* from, size_t bytes) {
    if (bytes) std::memcpy(to, from, bytes);
  }
  void checkRoot(int root, const char* what) const {
    if (root < 0 || root >= size())
      throw Error(ErrorCode::kInvalidArgument, std::string("collective ") + what + ": root " + std::to_string(root) +
                                                   " is not a rank of a group of " + std::to_string(size()));
  }

  // Posts `sendCount` elements and checks that every rank called the same collective alike.
  Postings exchange(Collective kind, const void* send, int64_t sendCount, int64_t count, DataType type, ReduceOp op,
                    int root) {
    if (byteSize(type) == 0)
      throw Error(ErrorCode::kUnsupported, std::string("collective ") + nameOf(kind) + " cannot move " +
                                               std::string(toString(type)) + " values");
    auto mine = std::make_shared<Posting>(Posting{kind, type, count, op, root, {}});
    mine->data.resize(size_t(sendCount) * byteSize(type));
    copyBytes(mine->data.data(), send, mine->data.size());
    const uint64_t call = calls_++;
    Postings all = group_->exchange(rank_, call, std::move(mine));
    for (size_t r = 0; r < all.size(); ++r) {
      const Posting& p = *all[r];
      if (p.kind != kind || p.type != type || p.count != count || p.op != op || p.root != root)
        throw Error(ErrorCode::kRuntimeError,
                    "collective call " + std::to_string(call) + " differs between ranks: rank " +
                        std::to_string(rank_) + " ran " + nameOf(kind) + " of " + std::to_string(count) + " " +
                        std::string(toString(type)) + " (" + std::string(toString(op)) + ", root " +
                        std::to_string(root) + "), rank " + std::to_string(r) + " " + nameOf(p.kind) + " of " +
                        std::to_string(p.count) + " " + std::string(toString(p.type)) + " (" +
                        std::string(toString(p.op)) + ", root " + std::to_string(p.root) +
                        "); every rank must run the same collectives in the same order");
    }
    return all;
  }

  std::shared_ptr<Rendezvous> group_;
  int rank_;
  uint64_t calls_ = 0;  // this rank's calls so far: the round its next call joins
};

}  // namespace

std::vector<std::shared_ptr<Communicator>> createInProcessCommunicators(int worldSize,
                                                                        std::chrono::milliseconds timeout) {
  if (worldSize < 1)
    throw Error(ErrorCode::kInvalidArgument,
                "an in-process group needs at least one rank, got " + std::to_string(worldSize));
  if (timeout.count() <= 0)
    throw Error(ErrorCode::kInvalidArgument,
                "a collective timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  auto group = std::make_shared<Rendezvous>(worldSize, timeout);
  std::vector<std::shared_ptr<Communicator>> ranks;
  for (int r = 0; r < worldSize; ++r) ranks.push_back(std::make_shared<InProcessCommunicator>(group, r));
  return ranks;
}

}  // namespace kiln
