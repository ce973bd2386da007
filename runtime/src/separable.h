// The backward of every separable resampling: one gather over the inverted taps of each axis.
//
// grad_input row r (all axes but the last fixed) is the weighted sum of the grad_output rows
// that read it, over the product of the inverted taps of the resized non-last axes (summed into
// a row buffer, contiguous: vectorised), then gathered along the last axis through its
// inverted taps. No intermediate tensors, no scatter: a task owns a run of grad_input rows, so
// no two threads write one element, and every element sums in a fixed order (outputs ascending):
// the result does not depend on the thread count.
#pragma once

#include <algorithm>
#include <vector>

#include "kernel_common.h"
#include "simd.h"
#include "taps.h"

namespace rg {

// The last axis's inverted taps as the fixed-width table of SeparableJob (gather_*), or false when a table
// would not be compact (one input reading far more outputs than the others, or an axis past 2^31 outputs):
// the rows then gather through the CSR form.
template <typename A>
bool GatherTable(const TapMatrix<A>& taps, std::vector<int32_t>* source, std::vector<A>* weight,
                 std::vector<int32_t>* count, int* width) {
  const int64_t w_in = taps.input_size;
  if (taps.output_size >= (int64_t{1} << 31)) return false;
  int64_t most = 0;
  for (int64_t x = 0; x < w_in; ++x) most = std::max(most, taps.inverse_start[x + 1] - taps.inverse_start[x]);
  if (most * w_in > 2 * taps.inverse_start[w_in] + 4096) return false;
  *width = static_cast<int>(most);
  source->assign(most * w_in, 0);  // padding lanes read nothing (masked) and weigh 0
  weight->assign(most * w_in, A(0));
  count->resize(w_in);
  for (int64_t x = 0; x < w_in; ++x) {
    const int64_t k0 = taps.inverse_start[x];
    (*count)[x] = static_cast<int32_t>(taps.inverse_start[x + 1] - k0);
    for (int64_t k = 0; k < (*count)[x]; ++k) {
      (*source)[k * w_in + x] = static_cast<int32_t>(taps.source[k0 + k]);
      (*weight)[k * w_in + x] = taps.inverse_weight[k0 + k];
    }
  }
  return true;
}

// The regular run of a gather table (SeparableJob::strided_*): around the middle input, the inputs reading
// `width` outputs at step * (x / phases) + offset[(x % phases) * width + k], extended both ways while that holds
// (in whole groups of `phases` inputs, the first at a multiple of `phases`); false when there is no run worth a
// loop (16 inputs). Two forms: an integer step 1 to 4 with phases 1 (an integer upsampling factor: nearest 2x,
// bilinear's interior), or a step of 1/2, phases 2 and step 1 (a 2x downsampling: input columns 2m and 2m + 1
// read outputs m + their own offsets, each the same number of them).
inline bool StridedRun(const std::vector<int32_t>& source, const std::vector<int32_t>& count, int width, int64_t w_in,
                       std::vector<int32_t>* offset, int* step, int* phases, int64_t* lo, int64_t* hi) {
  if (w_in < 32 || count[w_in / 2] != width || count[w_in / 2 + 1] != width) return false;
  auto run = [&](int p, int s) {
    const int64_t middle = w_in / 2 / p * p;  // the first input of a group
    *step = s, *phases = p;
    offset->resize(static_cast<size_t>(p) * width);
    for (int q = 0; q < p; ++q)
      for (int k = 0; k < width; ++k)
        (*offset)[q * width + k] = source[k * w_in + middle + q] - s * static_cast<int32_t>(middle / p);
    auto regular = [&](int64_t x) {
      if (count[x] != width) return false;
      const int32_t at = s * static_cast<int32_t>(x / p);
      const int32_t* phase = offset->data() + (x % p) * width;
      for (int k = 0; k < width; ++k)
        if (source[k * w_in + x] != at + phase[k]) return false;
      return true;
    };
    *lo = middle, *hi = middle;
    while (*lo > 0 && regular(*lo - 1)) --*lo;
    while (*hi < w_in && regular(*hi)) ++*hi;
    *lo = (*lo + p - 1) / p * p;  // whole groups; the inputs left out gather through the table
    *hi = *lo + std::max<int64_t>(0, *hi - *lo) / p * p;
    return *hi - *lo >= 16;
  };
  const int32_t integer = source[w_in / 2 + 1] - source[w_in / 2];
  if (integer >= 1 && integer <= 4 && run(1, integer)) return true;
  return run(2, 1);
}

// For each inner row index (the axes from `first` to the one before the last), the grad_output rows it reads
// (offsets within the inner block) and their weights: the product of the axes' inverted taps, the later axis
// inner. Returns the number of inner rows.
template <typename A>
int64_t RowReads(const std::vector<const TapMatrix<A>*>& axes, const std::vector<int64_t>& in_dims,
                 const std::vector<int64_t>& out_dims, int first, std::vector<int64_t>* start,
                 std::vector<int64_t>* offset, std::vector<A>* weight) {
  const int last = static_cast<int>(in_dims.size()) - 1;
  // start with one inner row reading row 0 with weight 1, then multiply in each axis
  std::vector<int64_t> rows_start{0, 1}, rows_offset{0};
  std::vector<A> rows_weight{A(1)};
  int64_t count = 1;
  for (int a = first; a < last; ++a) {
    std::vector<int64_t> next_start{0}, next_offset;
    std::vector<A> next_weight;
    for (int64_t r = 0; r < count; ++r) {
      for (int64_t i = 0; i < in_dims[a]; ++i) {
        for (int64_t j = rows_start[r]; j < rows_start[r + 1]; ++j) {
          if (axes[a] == nullptr) {
            next_offset.push_back(rows_offset[j] * out_dims[a] + i);
            next_weight.push_back(rows_weight[j]);
            continue;
          }
          for (int64_t k = axes[a]->inverse_start[i]; k < axes[a]->inverse_start[i + 1]; ++k) {
            next_offset.push_back(rows_offset[j] * out_dims[a] + axes[a]->source[k]);
            next_weight.push_back(rows_weight[j] * axes[a]->inverse_weight[k]);
          }
        }
        next_start.push_back(static_cast<int64_t>(next_offset.size()));
      }
    }
    count *= in_dims[a];
    rows_start.swap(next_start), rows_offset.swap(next_offset), rows_weight.swap(next_weight);
  }
  start->swap(rows_start), offset->swap(rows_offset), weight->swap(rows_weight);
  return count;
}

// grad_output (out_dims) -> grad_input (in_dims), both row-major. axes[a]: the taps of axis a, or nullptr
// for an axis the forward kept (its in and out sizes are equal).
template <typename T>
void SeparableBackward(const OrtApi* api, OrtKernelContext* context, const T* grad_output, T* grad_input,
                       const std::vector<int64_t>& out_dims, const std::vector<int64_t>& in_dims,
                       const std::vector<const TapMatrix<AccT<T>>*>& axes) {
  using A = AccT<T>;
  const int rank = static_cast<int>(in_dims.size());
  const int last = rank - 1;
  int64_t total_rows = 1;
  for (int a = 0; a < last; ++a) total_rows *= in_dims[a];
  if (total_rows == 0 || in_dims[last] == 0) return;
  SeparableJob<A> job;
  job.grad_output = grad_output;
  job.grad_input = grad_input;
  job.rank = rank;
  job.in_dims = in_dims.data();
  job.out_dims = out_dims.data();
  // the rows each grad_input row reads: the leading kept axes are the outer index, the rest the inner one
  int first_resized = last;
  for (int a = 0; a < last; ++a)
    if (axes[a] != nullptr) { first_resized = a; break; }
  std::vector<int64_t> read_start, read_offset;
  std::vector<A> read_weight;
  job.inner_count = RowReads(axes, in_dims, out_dims, first_resized, &read_start, &read_offset, &read_weight);
  job.outer_stride = 1;
  for (int a = first_resized; a < last; ++a) job.outer_stride *= out_dims[a];
  job.read_start = read_start.data();
  job.read_offset = read_offset.data();
  job.read_weight = read_weight.data();
  std::vector<int32_t> source, count;
  std::vector<A> weight;
  job.columns = axes[last];
  if (axes[last] != nullptr && GatherTable(*axes[last], &source, &weight, &count, &job.gather_width)) {
    job.gather_source = source.data();
    job.gather_weight = weight.data();
    job.gather_count = count.data();
  }
  std::vector<int32_t> strided_offset;
  if (job.gather_width > 0 && StridedRun(source, count, job.gather_width, in_dims[last], &strided_offset,
                                         &job.strided_step, &job.strided_phases, &job.strided_lo, &job.strided_hi))
    job.strided_offset = strided_offset.data();
  else
    job.strided_step = 0;
  const int64_t rows_per_task = std::max<int64_t>(1, total_rows / 256);  // about 256 tasks: little overhead each
  auto task = [&](size_t task_index) {
    const int64_t first = static_cast<int64_t>(task_index) * rows_per_task;
    const int64_t end = std::min(total_rows, first + rows_per_task);
    if constexpr (std::is_same_v<T, float>) SeparableSimd().f32(job, first, end);
    else if constexpr (std::is_same_v<T, double>) SeparableSimd().f64(job, first, end);
    else if constexpr (std::is_same_v<T, Float16>) SeparableSimd().f16(job, first, end);
    else SeparableSimd().bf16(job, first, end);
  };
  int64_t out_count = 1, in_count = 1;
  for (int a = 0; a < rank; ++a) out_count *= out_dims[a], in_count *= in_dims[a];
  const double work_per_task = static_cast<double>(out_count + in_count) / total_rows * rows_per_task;
  ParallelFor(api, context, static_cast<size_t>((total_rows + rows_per_task - 1) / rows_per_task), work_per_task, task);
}

// The separable families' last step (Upsample*, Resize*V2): output 0, shaped in_dims, from a [N, C, *spatial]
// gradient whose spatial axes each take the taps of `kind`, with that axis's forward scale (scales[a], a over the
// spatial axes) in `options`.
template <typename T>
void SpatialBackward(const OrtApi* api, OrtKernelContext* context, TapKind kind, const Tensor& grad,
                     const std::vector<int64_t>& in_dims, const float* scales, TapOptions options) {
  using A = AccT<T>;
  const size_t spatial = in_dims.size() - 2;
  T* out = static_cast<T*>(Output(api, context, 0, in_dims));
  std::vector<TapMatrix<A>> taps;
  taps.reserve(spatial);  // (axes point into it)
  std::vector<const TapMatrix<A>*> axes(in_dims.size(), nullptr);
  // upsample_bicubic2d_backward copies a tensor whose every spatial axis keeps its size, whatever the scales
  // (opset/_taps.py cubic_scales): no scale then; otherwise every axis takes its own
  bool all_kept = true;
  for (size_t a = 0; a < spatial; ++a) all_kept = all_kept && in_dims[2 + a] == grad.dims[2 + a];
  const bool drop_scales = kind == TapKind::kCubic && all_kept;
  for (size_t a = 0; a < spatial; ++a) {
    options.scale = drop_scales ? 0.f : scales[a];
    taps.push_back(MakeTaps<A>(kind, in_dims[2 + a], grad.dims[2 + a], options));
    axes[2 + a] = &taps.back();
  }
  SeparableBackward<T>(api, context, static_cast<const T*>(grad.data), out, grad.dims, in_dims, axes);
}

}  // namespace rg
