// The backward of a separable resampling (nearest-exact, bilinear): shared by
// upsample_nearest_exact_grad.cc and resize_bilinear_v2_grad.cc.
//
// Along one axis every output index o reads input `top[o]` with weight
// `w_top[o]` and `bottom[o]` with `w_bottom[o]` (the same index with weight 0
// for nearest). top and bottom never decrease with o, so the outputs that feed
// input i form a contiguous range [first[i], last[i]).
//
// grad_input row i = W-scatter( sum over o in range of weight(o, i) * grad_output row o ):
// the vertical sum is a contiguous axpy, the horizontal scatter touches one row.
// Each task owns input rows, so no two threads write one element, and the sums
// run in a fixed order: the result does not depend on the thread count.
#pragma once

#include <algorithm>
#include <vector>

#include "kernel_common.h"

namespace rg {

template <typename A>
struct AxisMap {
  int64_t input_size = 0;
  int64_t output_size = 0;
  std::vector<int64_t> top, bottom;  // per output index
  std::vector<A> w_top, w_bottom;
  std::vector<int64_t> first, last;  // per input index: outputs [first, last) feed it
  bool two_taps = false;

  AxisMap(int64_t in, int64_t out) : input_size(in), output_size(out), top(out), bottom(out), w_top(out), w_bottom(out) {}

  void Finish() {
    first.assign(input_size, 0);
    last.assign(input_size, 0);
    for (int64_t o = output_size - 1; o >= 0; --o) {
      for (int64_t i : {top[o], bottom[o]}) {
        if (last[i] == 0) last[i] = o + 1;
        first[i] = o;
      }
      two_taps = two_taps || w_bottom[o] != A(0);
    }
  }

  A Weight(int64_t o, int64_t i) const {
    return (top[o] == i ? w_top[o] : A(0)) + (bottom[o] == i ? w_bottom[o] : A(0));
  }
};

// grad_output [planes, rows.output_size, cols.output_size] -> grad_input [planes, rows.input_size, cols.input_size].
template <typename T>
void SeparableBackward(const OrtApi* api, OrtKernelContext* context, const T* grad_output, T* grad_input,
                       int64_t planes, const AxisMap<AccT<T>>& rows, const AxisMap<AccT<T>>& cols) {
  using A = AccT<T>;
  const int64_t h_in = rows.input_size, w_in = cols.input_size, h_out = rows.output_size, w_out = cols.output_size;
  auto task = [&](size_t index) {
    thread_local std::vector<A> column_sums, row_acc;  // O(threads x row), grown once per thread
    column_sums.resize(w_out);
    row_acc.resize(w_in);
    const int64_t plane = static_cast<int64_t>(index) / h_in;
    const int64_t i = static_cast<int64_t>(index) % h_in;
    const T* src = grad_output + plane * h_out * w_out;
    std::fill(column_sums.begin(), column_sums.end(), A(0));
    A* sums = column_sums.data();
    for (int64_t o = rows.first[i]; o < rows.last[i]; ++o) {
      const A weight = rows.Weight(o, i);
      const T* line = src + o * w_out;
      for (int64_t x = 0; x < w_out; ++x) sums[x] += weight * Load<A>(line[x]);
    }
    std::fill(row_acc.begin(), row_acc.end(), A(0));
    A* acc = row_acc.data();
    const int64_t* top = cols.top.data();
    const A* w_top = cols.w_top.data();
    if (cols.two_taps) {
      const int64_t* bottom = cols.bottom.data();
      const A* w_bottom = cols.w_bottom.data();
      for (int64_t x = 0; x < w_out; ++x) {
        acc[top[x]] += w_top[x] * sums[x];
        acc[bottom[x]] += w_bottom[x] * sums[x];
      }
    } else {
      for (int64_t x = 0; x < w_out; ++x) acc[top[x]] += w_top[x] * sums[x];
    }
    T* out = grad_input + (plane * h_in + i) * w_in;
    for (int64_t x = 0; x < w_in; ++x) out[x] = Store<T>(acc[x]);
  };
  ParallelFor(api, context, static_cast<size_t>(planes * h_in), task);
}

// An index a float coordinate floors to, clamped to [0, size - 1] without casting inf or NaN.
inline int64_t FloorIndex(double coordinate, int64_t size) {
  if (!(coordinate > 0)) return 0;
  if (coordinate >= static_cast<double>(size - 1)) return size - 1;
  return static_cast<int64_t>(std::floor(coordinate));
}

}  // namespace rg
