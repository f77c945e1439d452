// The CPU backend's device side: aligned host allocations, stream copies, and events whose
// elapsed times follow the steady clock.
#include <kiln/error.h>

#include "backends/backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace kiln;

TEST(CpuDevice, AllocationsAreAlignedAndWritable) {
  auto backend = makeCpuBackend();
  for (uint64_t alignment : {1u, 8u, 64u, 256u, 4096u}) {
    for (uint64_t bytes : {0u, 1u, 100u, 5000u}) {
      DeviceBuffer buffer = allocateBuffer(backend->allocator(), bytes, alignment);
      ASSERT_NE(buffer.get(), nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.get()) % alignment, 0u) << alignment;
      std::memset(buffer.get(), 0x5a, bytes);
    }
  }
  EXPECT_THROW(backend->allocator().allocate(16, 48), Error);  // not a power of two
}

TEST(CpuDevice, StreamCopiesInOrder) {
  auto backend = makeCpuBackend();
  auto stream = backend->createStream();
  EXPECT_EQ(stream->native(), nullptr);
  std::vector<float> host = {1.5f, -2.0f, 3.25f, 7.0f};
  DeviceBuffer device = allocateBuffer(backend->allocator(), host.size() * sizeof(float));
  std::vector<float> back(host.size(), 0.0f);
  stream->copy(device.get(), host.data(), host.size() * sizeof(float));
  stream->copy(back.data(), device.get(), back.size() * sizeof(float));
  stream->synchronize();
  EXPECT_EQ(back, host);
}

TEST(CpuDevice, EventsMeasureTheTimeBetweenThem) {
  auto backend = makeCpuBackend();
  auto stream = backend->createStream();
  auto start = backend->createEvent(), end = backend->createEvent();
  EXPECT_THROW(end->millisecondsSince(*start), Error);  // neither was recorded
  const auto before = std::chrono::steady_clock::now();
  start->record(*stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  end->record(*stream);
  const auto after = std::chrono::steady_clock::now();
  stream->wait(*end);
  end->synchronize();
  const double ms = end->millisecondsSince(*start);
  EXPECT_GE(ms, 3.0);  // sleep_for waits at least that long
  const double outside = std::chrono::duration<double, std::milli>(after - before).count();
  EXPECT_LE(ms, outside);
  EXPECT_DOUBLE_EQ(start->millisecondsSince(*end), -ms);
}

TEST(CpuDevice, TensorFormatsHaveStableNames) {
  EXPECT_STREQ(toString(TensorFormat::kLinear), "linear");
  EXPECT_STREQ(toString(TensorFormat::kNHWC), "nhwc");
}
