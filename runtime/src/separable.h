// The backward of a separable resampling (nearest-exact, bilinear): shared by
// upsample_nearest_exact_grad.cc and resize_bilinear_v2_grad.cc.
//
// Along one axis every output index o reads input `top[o]` with weight
// `w_top[o]` and `bottom[o]` with `w_bottom[o]` (weight 0 for nearest's second tap).
// The backward inverts that map per axis and gathers: grad_input row i is a
// weighted sum of grad_output rows, then gathered along the row. Each task owns
// input rows, so no two threads write one element, and the sums run in a fixed
// order: the result does not depend on the thread count.
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
  // The same map inverted (filled by Finish): input i reads outputs source[j] with weight[j] for
  // j in [start[i], start[i + 1]), outputs ascending. Sums over it run in registers: a scatter
  // would wait on its own previous store whenever neighbouring outputs feed one input.
  std::vector<int64_t> start, source;
  std::vector<A> weight;

  AxisMap(int64_t in, int64_t out) : input_size(in), output_size(out), top(out), bottom(out), w_top(out), w_bottom(out) {}

  void Finish() {
    start.assign(input_size + 1, 0);
    for (int64_t o = 0; o < output_size; ++o) {
      if (w_top[o] != A(0)) ++start[top[o] + 1];
      if (w_bottom[o] != A(0)) ++start[bottom[o] + 1];
    }
    for (int64_t i = 0; i < input_size; ++i) start[i + 1] += start[i];
    source.resize(start[input_size]);
    weight.resize(start[input_size]);
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t o = 0; o < output_size; ++o) {  // outputs ascending, so each input's list is ascending
      if (w_top[o] != A(0)) source[next[top[o]]] = o, weight[next[top[o]]++] = w_top[o];
      if (w_bottom[o] != A(0)) source[next[bottom[o]]] = o, weight[next[bottom[o]]++] = w_bottom[o];
    }
  }
};

// grad_output [planes, rows.output_size, cols.output_size] -> grad_input [planes, rows.input_size, cols.input_size].
// A task owns a run of grad_input rows; each is a weighted sum of grad_output rows (contiguous, vectorised), then
// one gather along the row.
template <typename T>
void SeparableBackward(const OrtApi* api, OrtKernelContext* context, const T* grad_output, T* grad_input,
                       int64_t planes, const AxisMap<AccT<T>>& rows, const AxisMap<AccT<T>>& cols) {
  using A = AccT<T>;
  const int64_t h_in = rows.input_size, w_in = cols.input_size, h_out = rows.output_size, w_out = cols.output_size;
  const int64_t total_rows = planes * h_in;
  const int64_t rows_per_task = std::max<int64_t>(1, total_rows / 256);  // about 256 tasks: little overhead each
  auto task = [&](size_t index) {
    thread_local std::vector<A> column_sums;  // O(threads x row), grown once per thread
    column_sums.resize(w_out);
    A* sums = column_sums.data();  // plain pointer: thread_local objects cost a TLS lookup per access
    const int64_t* start = cols.start.data();
    const int64_t* source = cols.source.data();
    const A* weight = cols.weight.data();
    const int64_t first = static_cast<int64_t>(index) * rows_per_task;
    const int64_t last = std::min(total_rows, first + rows_per_task);
    for (int64_t row = first; row < last; ++row) {
      const int64_t plane = row / h_in, i = row % h_in;
      const T* src = grad_output + plane * h_out * w_out;
      std::fill(sums, sums + w_out, A(0));
      for (int64_t j = rows.start[i]; j < rows.start[i + 1]; ++j) {
        const A w = rows.weight[j];
        const T* line = src + rows.source[j] * w_out;
        for (int64_t x = 0; x < w_out; ++x) sums[x] += w * Load<A>(line[x]);
      }
      T* out = grad_input + row * w_in;
      for (int64_t x = 0; x < w_in; ++x) {
        A total = 0;
        for (int64_t j = start[x]; j < start[x + 1]; ++j) total += weight[j] * sums[source[j]];
        out[x] = Store<T>(total);
      }
    }
  };
  ParallelFor(api, context, static_cast<size_t>((total_rows + rows_per_task - 1) / rows_per_task), task);
}

// An index a float coordinate floors to, clamped to [0, size - 1] without casting inf or NaN.
inline int64_t FloorIndex(double coordinate, int64_t size) {
  if (!(coordinate > 0)) return 0;
  if (coordinate >= static_cast<double>(size - 1)) return size - 1;
  return static_cast<int64_t>(std::floor(coordinate));
}

}  // namespace rg
