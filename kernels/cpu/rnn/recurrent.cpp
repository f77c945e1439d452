#include "recurrent.h"

#include <kernels/cpu/common/parallel.h>

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln::kernels {
namespace {

// c[m, n] (row stride ldc) = a[m, k] · b[n, k]ᵀ.
void gemmTransposedB(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                     int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), 0.0f, c,
              int(ldc));
}

void clipValues(float* v, int64_t n, float clip) {
  if (clip <= 0.0f) return;
  for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], -clip, clip);
}

// gate[i] += x[i] + bias[i], then clip and activate.
void gatePreactivation(float* gate, const float* x, const float* bias, int64_t n, float clip,
                       const RecurrentActivation& f) {
  for (int64_t i = 0; i < n; ++i) gate[i] += x[i] + bias[i];
  clipValues(gate, n, clip);
  applyActivation(f, gate, n);
}

class DirectionRunner {
 public:
  DirectionRunner(const RecurrentConfig& config, const RecurrentTensors& tensors)
      : cfg_(config), t_(tensors), gateWidth_(gateCount(config.cell) * config.hidden) {}

  void run() {
    const int64_t B = cfg_.batch, H = cfg_.hidden;
    projectInputs();
    prepareBiases();
    loadState(t_.initialH, h_);
    if (cfg_.cell == RecurrentCell::kLstm) loadState(t_.initialC, c_);
    lengths_.assign(size_t(B), cfg_.steps);
    if (t_.lengths)
      for (int64_t b = 0; b < B; ++b) lengths_[size_t(b)] = std::clamp<int64_t>(t_.lengths[b], 0, cfg_.steps);
    int64_t longest = B ? *std::max_element(lengths_.begin(), lengths_.end()) : 0;
    gates_.assign(size_t(B * gateWidth_), 0.0f);
    scratch_.assign(size_t(B * H), 0.0f);
    for (int64_t s = 0; s < longest; ++s) step(s);
    storeState(h_, t_.finalH);
    if (cfg_.cell == RecurrentCell::kLstm) storeState(c_, t_.finalC);
  }

 private:
  void loadState(const float* from, std::vector<float>& state) const {
    const int64_t H = cfg_.hidden;
    state.assign(size_t(cfg_.batch * H), 0.0f);
    if (from)
      for (int64_t b = 0; b < cfg_.batch; ++b) std::copy_n(from + b * t_.stateStride, H, state.data() + b * H);
  }

  void storeState(const std::vector<float>& state, float* to) const {
    if (to)
      for (int64_t b = 0; b < cfg_.batch; ++b) std::copy_n(state.data() + b * cfg_.hidden, cfg_.hidden, to + b * t_.stateStride);
  }

  // Input projection of every step at once: one GEMM instead of one per step (rows in x's order).
  void projectInputs() {
    projected_.resize(size_t(cfg_.steps * cfg_.batch * gateWidth_));
    gemmTransposedB(cfg_.steps * cfg_.batch, gateWidth_, cfg_.inputSize, t_.x, cfg_.inputSize, t_.w, cfg_.inputSize,
                    projected_.data(), gateWidth_);
  }

  // Wb + Rb add onto the gates together, except GRU's linear-before-reset Rbh, which r multiplies.
  void prepareBiases() {
    const int64_t H = cfg_.hidden;
    bias_.assign(size_t(gateWidth_), 0.0f);
    recurrentBiasH_.assign(size_t(H), 0.0f);
    if (!t_.bias) return;
    for (int64_t i = 0; i < gateWidth_; ++i) bias_[size_t(i)] = t_.bias[i] + t_.bias[gateWidth_ + i];
    if (cfg_.cell == RecurrentCell::kGru && cfg_.linearBeforeReset)
      for (int64_t i = 0; i < H; ++i) {
        bias_[size_t(2 * H + i)] = t_.bias[2 * H + i];
        recurrentBiasH_[size_t(i)] = t_.bias[gateWidth_ + 2 * H + i];
      }
  }

  void step(int64_t s) {
    const int64_t B = cfg_.batch, H = cfg_.hidden;
    // The recurrent term for every batch entry (entries past their length are skipped below). GRU
    // without linear_before_reset needs r first: its h-gate term comes in a second GEMM.
    bool splitGru = cfg_.cell == RecurrentCell::kGru && !cfg_.linearBeforeReset;
    gemmTransposedB(B, splitGru ? 2 * H : gateWidth_, H, h_.data(), H, t_.r, H, gates_.data(), gateWidth_);
    forActive(s, [&](int64_t b, int64_t time) { firstPhase(b, time); });
    if (splitGru) {
      gemmTransposedB(B, H, H, scratch_.data(), H, t_.r + 2 * H * H, H, gates_.data() + 2 * H, gateWidth_);
      forActive(s, [&](int64_t b, int64_t time) { gruFinish(b, time); });
    }
  }

  template <class Fn>
  void forActive(int64_t s, Fn&& fn) {
    int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, gateWidth_));
    parallelFor(cfg_.batch, grain, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        int64_t length = lengths_[size_t(b)];
        if (s >= length) continue;
        fn(b, cfg_.reverse ? length - 1 - s : s);
      }
    });
  }

  const float* projectedRow(int64_t b, int64_t time) const {
    int64_t row = cfg_.batchMajor ? b * cfg_.steps + time : time * cfg_.batch + b;
    return projected_.data() + row * gateWidth_;
  }

  void emit(int64_t b, int64_t time, const float* hidden) {
    const int64_t H = cfg_.hidden;
    std::copy_n(hidden, H, h_.data() + b * H);
    if (t_.y) std::copy_n(hidden, H, t_.y + time * t_.yStepStride + b * t_.yBatchStride);
  }

  void firstPhase(int64_t b, int64_t time) {
    switch (cfg_.cell) {
      case RecurrentCell::kRnn: return rnnStep(b, time);
      case RecurrentCell::kGru: return gruGates(b, time);
      case RecurrentCell::kLstm: return lstmStep(b, time);
    }
  }

  void rnnStep(int64_t b, int64_t time) {
    float* gate = gates_.data() + b * gateWidth_;
    gatePreactivation(gate, projectedRow(b, time), bias_.data(), cfg_.hidden, cfg_.clip, cfg_.f);
    emit(b, time, gate);
  }

  // z and r; with linear_before_reset also the candidate and the new state.
  void gruGates(int64_t b, int64_t time) {
    const int64_t H = cfg_.hidden;
    float* gate = gates_.data() + b * gateWidth_;
    const float* x = projectedRow(b, time);
    gatePreactivation(gate, x, bias_.data(), 2 * H, cfg_.clip, cfg_.f);
    const float* r = gate + H;
    const float* hPrev = h_.data() + b * H;
    if (!cfg_.linearBeforeReset) {
      for (int64_t i = 0; i < H; ++i) scratch_[size_t(b * H + i)] = r[i] * hPrev[i];
      return;
    }
    float* candidate = gate + 2 * H;
    for (int64_t i = 0; i < H; ++i) candidate[i] = r[i] * (candidate[i] + recurrentBiasH_[size_t(i)]);
    gruFinish(b, time);
  }

  void gruFinish(int64_t b, int64_t time) {
    const int64_t H = cfg_.hidden;
    float* gate = gates_.data() + b * gateWidth_;
    float* candidate = gate + 2 * H;
    gatePreactivation(candidate, projectedRow(b, time) + 2 * H, bias_.data() + 2 * H, H, cfg_.clip, cfg_.g);
    const float* z = gate;
    const float* hPrev = h_.data() + b * H;
    float* next = scratch_.data() + b * H;
    for (int64_t i = 0; i < H; ++i) next[i] = (1.0f - z[i]) * candidate[i] + z[i] * hPrev[i];
    emit(b, time, next);
  }

  // Gate order i, o, f, c; peepholes P_i, P_o, P_f.
  void lstmStep(int64_t b, int64_t time) {
    const int64_t H = cfg_.hidden;
    float* gate = gates_.data() + b * gateWidth_;
    const float* x = projectedRow(b, time);
    float* in = gate;
    float* out = gate + H;
    float* forget = gate + 2 * H;
    float* cell = gate + 3 * H;
    float* cPrev = c_.data() + b * H;
    const float* p = t_.peephole;
    for (int64_t i = 0; i < gateWidth_; ++i) gate[i] += x[i] + bias_[size_t(i)];
    if (p)
      for (int64_t i = 0; i < H; ++i) {
        in[i] += p[i] * cPrev[i];
        forget[i] += p[2 * H + i] * cPrev[i];
      }
    clipValues(in, H, cfg_.clip);
    applyActivation(cfg_.f, in, H);
    if (cfg_.inputForget) {
      for (int64_t i = 0; i < H; ++i) forget[i] = 1.0f - in[i];
    } else {
      clipValues(forget, H, cfg_.clip);
      applyActivation(cfg_.f, forget, H);
    }
    clipValues(cell, H, cfg_.clip);
    applyActivation(cfg_.g, cell, H);
    for (int64_t i = 0; i < H; ++i) cPrev[i] = forget[i] * cPrev[i] + in[i] * cell[i];  // now C_t
    if (p)
      for (int64_t i = 0; i < H; ++i) out[i] += p[H + i] * cPrev[i];
    clipValues(out, H, cfg_.clip);
    applyActivation(cfg_.f, out, H);
    float* hidden = scratch_.data() + b * H;
    std::copy_n(cPrev, H, hidden);
    applyActivation(cfg_.h, hidden, H);
    for (int64_t i = 0; i < H; ++i) hidden[i] *= out[i];
    emit(b, time, hidden);
  }

  const RecurrentConfig& cfg_;
  const RecurrentTensors& t_;
  const int64_t gateWidth_;
  std::vector<float> projected_, bias_, recurrentBiasH_, h_, c_, gates_, scratch_;
  std::vector<int64_t> lengths_;
};

}  // namespace

void runRecurrentDirection(const RecurrentConfig& config, const RecurrentTensors& tensors) {
  DirectionRunner(config, tensors).run();
}

}  // namespace kiln::kernels
