#include "binary.h"

#include "broadcast_loops.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace kiln::kernels {
namespace {

constexpr int64_t kCheapGrain = 1 << 15;   // memory-bound ops: big chunks pay for the hand-off
constexpr int64_t kCostlyGrain = 1 << 12;  // divisions, fmod

// Integer division and remainder without the traps of x86 (division by zero, MIN / -1).
template <class T>
T divideIntegers(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));
  }
  return T(a / b);  // truncates toward zero, as ONNX Div specifies for integers
}

template <class T>
T truncatedRemainder(T a, T b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return T(a % b);
}

template <class T>
T flooredRemainder(T a, T b) {  // Python's %: the result takes the divisor's sign
  T r = truncatedRemainder(a, b);
  if constexpr (std::is_signed_v<T>) {
    if (r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
  }
  return r;
}

template <class T>
T shiftLeft(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return U(b) >= std::numeric_limits<U>::digits ? T(0) : T(U(a) << U(b));
}

template <class T>
T shiftRight(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return U(b) >= std::numeric_limits<U>::digits ? T(0) : T(U(a) >> U(b));
}

template <class T, class Out, class Fn>
void run(const T* a, const T* b, Out* out, const BroadcastPlan& plan, int64_t grain, Fn fn) {
  broadcastBinary(a, b, out, plan, grain, fn);
}

[[noreturn]] void unsupported(const char* what);

template <class T>
void bitwise(BinaryOp op, const T* a, const T* b, T* out, const BroadcastPlan& plan) {
  switch (op) {
    case BinaryOp::kBitwiseAnd: return run(a, b, out, plan, kCheapGrain, [](T x, T y) { return T(x & y); });
    case BinaryOp::kBitwiseOr: return run(a, b, out, plan, kCheapGrain, [](T x, T y) { return T(x | y); });
    case BinaryOp::kBitwiseXor: return run(a, b, out, plan, kCheapGrain, [](T x, T y) { return T(x ^ y); });
    case BinaryOp::kBitShiftLeft: return run(a, b, out, plan, kCheapGrain, [](T x, T y) { return shiftLeft(x, y); });
    case BinaryOp::kBitShiftRight:
      return run(a, b, out, plan, kCheapGrain, [](T x, T y) { return shiftRight(x, y); });
    default: unsupported("not a bitwise op");
  }
}

[[noreturn]] void unsupported(const char* what) { throw std::invalid_argument(what); }

}  // namespace

bool isComparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::kEqual: case BinaryOp::kLess: case BinaryOp::kLessOrEqual:
    case BinaryOp::kGreater: case BinaryOp::kGreaterOrEqual:
      return true;
    default:
      return false;
  }
}

template <class T>
void binary(BinaryOp op, const T* a, const T* b, T* out, const BroadcastPlan& plan) {
  using C = ComputeType<T>;
  constexpr bool kFloat = !std::is_integral_v<T>;
  switch (op) {
    case BinaryOp::kAdd: return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return C(x + y); });
    case BinaryOp::kSub: return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return C(x - y); });
    case BinaryOp::kMul: return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return C(x * y); });
    case BinaryOp::kDiv:
      if constexpr (kFloat) return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return x / y; });
      else return run(a, b, out, plan, kCostlyGrain, [](T x, T y) { return divideIntegers(x, y); });
    case BinaryOp::kMin:  // NaN in either input gives NaN, as numpy.minimum
      return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return (x < y || x != x) ? x : y; });
    case BinaryOp::kMax:
      return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return (x > y || x != x) ? x : y; });
    case BinaryOp::kMod:
      if constexpr (kFloat) unsupported("Mod with fmod=0 is only defined for integer tensors");
      else return run(a, b, out, plan, kCostlyGrain, [](T x, T y) { return flooredRemainder(x, y); });
    case BinaryOp::kFMod:
      if constexpr (kFloat) return run(a, b, out, plan, kCostlyGrain, [](C x, C y) { return C(std::fmod(x, y)); });
      else return run(a, b, out, plan, kCostlyGrain, [](T x, T y) { return truncatedRemainder(x, y); });
    case BinaryOp::kPRelu:
      return run(a, b, out, plan, kCheapGrain, [](C x, C slope) { return x < 0 ? C(x * slope) : x; });
    case BinaryOp::kBitwiseAnd: case BinaryOp::kBitwiseOr: case BinaryOp::kBitwiseXor:
    case BinaryOp::kBitShiftLeft: case BinaryOp::kBitShiftRight:
      if constexpr (kFloat) unsupported("bitwise ops are only defined for integer tensors");
      else return bitwise(op, a, b, out, plan);
    default: unsupported("binary() takes arithmetic ops; use compare() or logical()");
  }
}

template <class T>
void compare(BinaryOp op, const T* a, const T* b, bool* out, const BroadcastPlan& plan) {
  using C = ComputeType<T>;
  switch (op) {
    case BinaryOp::kEqual: return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return x == y; });
    case BinaryOp::kLess: return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return x < y; });
    case BinaryOp::kLessOrEqual: return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return x <= y; });
    case BinaryOp::kGreater: return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return x > y; });
    case BinaryOp::kGreaterOrEqual: return run(a, b, out, plan, kCheapGrain, [](C x, C y) { return x >= y; });
    default: unsupported("compare() takes comparison ops");
  }
}

void logical(BinaryOp op, const bool* a, const bool* b, bool* out, const BroadcastPlan& plan) {
  switch (op) {
    case BinaryOp::kAnd: return run(a, b, out, plan, kCheapGrain, [](bool x, bool y) { return x && y; });
    case BinaryOp::kOr: return run(a, b, out, plan, kCheapGrain, [](bool x, bool y) { return x || y; });
    case BinaryOp::kXor: return run(a, b, out, plan, kCheapGrain, [](bool x, bool y) { return x != y; });
    case BinaryOp::kEqual: return run(a, b, out, plan, kCheapGrain, [](bool x, bool y) { return x == y; });
    default: unsupported("logical() takes And, Or, Xor and Equal");
  }
}

#define KILN_INSTANTIATE_BINARY(T)                                                 \
  template void binary<T>(BinaryOp, const T*, const T*, T*, const BroadcastPlan&); \
  template void compare<T>(BinaryOp, const T*, const T*, bool*, const BroadcastPlan&);
KILN_ELEMENTWISE_NUMERIC_TYPES(KILN_INSTANTIATE_BINARY)
#undef KILN_INSTANTIATE_BINARY

}  // namespace kiln::kernels
