// The hot loops, compiled once per instruction set and chosen once at load time.
//
// separable_kernels.cc and grid_kernels.cc are each built three times on x86-64 (baseline x86-64-v2, AVX2 + FMA +
// F16C, AVX-512 F/BW/DQ/VL; isa_target.h), into one namespace per set (rg::baseline, rg::avx2, rg::avx512), and once
// (rg::baseline, portable C++) elsewhere. Every variant computes the same products and sums in the same order
// (vectors run over independent elements; -ffp-contract=off everywhere), so the paths give bit-identical results.
// RESAMPLE_GRAD_ISA=baseline|avx2|avx512 forces one; otherwise the best the CPU has runs.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "grid_coordinates.h"
#include "kernel_common.h"
#include "taps.h"

namespace rg {

enum class Isa : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

// Chooses the instruction set from RESAMPLE_GRAD_ISA and the CPU (once); false with a one-line reason
// when the variable names an unknown or unsupported set.
bool SelectIsa(std::string* error);
Isa ActiveIsa();
const char* IsaName(Isa isa);

// One run of the separable backward (separable.h): grad_input rows [first, end) of one dtype.
template <typename A>
struct SeparableJob {
  const void* grad_output = nullptr;  // T*, shaped out_dims
  void* grad_input = nullptr;         // T*, shaped in_dims
  int rank = 0;
  const int64_t* in_dims = nullptr;
  const int64_t* out_dims = nullptr;
  // The grad_output rows each grad_input row reads, precomputed: the rows [0, total) split as
  // outer * inner_count + inner (outer: the leading axes the forward kept); inner row `inner` reads
  // grad_output rows outer * outer_stride + read_offset[j] with read_weight[j], j in [read_start[inner],
  // read_start[inner + 1]) (the product of the non-last axes' inverted taps, in a fixed order).
  int64_t inner_count = 1;
  int64_t outer_stride = 0;
  const int64_t* read_start = nullptr;
  const int64_t* read_offset = nullptr;
  const A* read_weight = nullptr;
  // The last axis's inverted taps (columns == nullptr: the axis is kept). As a fixed-width table for
  // vector gathers when it is compact (gather_width > 0): input x reads outputs gather_source[k * w_in + x]
  // with gather_weight[...] for k < gather_count[x]; else (gather_width == 0) the CSR form of `columns`.
  const TapMatrix<A>* columns = nullptr;
  int gather_width = 0;
  const int32_t* gather_source = nullptr;
  const A* gather_weight = nullptr;
  const int32_t* gather_count = nullptr;
  // Where the table is regular, inputs [strided_lo, strided_hi) read gather_width outputs each at
  // strided_step * (x / strided_phases) + strided_offset[(x % strided_phases) * gather_width + k]: an integer
  // factor (phases 1, step 1 to 4: nearest 2x, bilinear's interior) or a step of 1/2 (phases 2, step 1: a 2x
  // downsampling, inputs 2m and 2m + 1 read outputs m + their own offsets): plain strided loads the compiler
  // vectorises, instead of gathers. strided_step 0: no such run.
  int strided_step = 0;
  int strided_phases = 1;
  int64_t strided_lo = 0, strided_hi = 0;
  const int32_t* strided_offset = nullptr;
};

// One grid sampler backward (grid_sampler_grad.cc), split into tasks.
struct GridJob {
  int spatial = 2;  // 2 or 3
  int taps = 4;     // per point: taps per axis ^ spatial (1: nearest, 4 or 8: bilinear, 16: bicubic)
  Padding padding = Padding::kZeros;
  bool align_corners = false;
  int64_t batch = 0, channels = 0, points = 0, plane = 0;
  int64_t sizes[3] = {1, 1, 1};  // spatial sizes, D H W order (the first `spatial`)
  const void* grad_output = nullptr;  // T*
  const void* input = nullptr;        // T*
  const void* grid = nullptr;         // T*
  void* grad_input = nullptr;         // T*, or nullptr
  void* grad_grid = nullptr;          // T*, or nullptr
  int64_t block = 16;                 // channels of one grad_input task
  void* input_channels_last = nullptr;  // accumulation-type copy of input as [batch][plane][channels] (grad_grid)
  // Nearest's grad_input as gathers, per batch item b (kNearestTaps fills them; the kInput tasks over blocks of
  // channels share them), int32 (half the bytes of int64 per channel walk). Pixel x's first point inside the image,
  // in point order, is nearest_first[b * (plane + 1) + x] (-1: none; x = plane: a spare slot the walk writes
  // the other points to). The later points come in layers: layer r >= 1 holds each pixel's (r + 1)-th point, as entries
  // [bound[r - 1], bound[r]) of pixel and point (bound = nearest_bound + b * (points + 1), bound[0] = 0, r <=
  // nearest_layers[b]; pixel, point the same offset into nearest_pixel, nearest_point); no pixel twice in a layer.
  // Point p's pixel (plane: outside) is nearest_point_pixel[b * points + p]. With nearest_channels_last (AVX-512
  // float32 only) there are no layers: kNearestChannelsLast tasks sum channels-last instead, taking runs of 16 channels
  // from nearest_queue. All nullptr when the plane or the points pass 2^31 (the kInput tasks then scatter as bilinear
  // does).
  int32_t* nearest_point_pixel = nullptr;
  bool nearest_channels_last = false;
  std::atomic<int64_t>* nearest_queue = nullptr;
  int32_t* nearest_first = nullptr;
  int32_t* nearest_pixel = nullptr;
  int32_t* nearest_point = nullptr;
  int32_t* nearest_bound = nullptr;
  int64_t* nearest_layers = nullptr;
  // The tasks (see GridKernels): kTranspose and kInput per (batch item, block of channels), kGrid per
  // (batch item, chunk of points), kBoth per batch item when one block holds every channel, kNearestTaps per
  // batch item, kNearestChannelsLast any number (each takes runs until none is left).
  enum class Task { kTranspose, kInput, kGrid, kBoth, kNearestTaps, kNearestChannelsLast };
  // The batch item and channels [c0, c1) of a kTranspose or kInput task.
  struct Block {
    int64_t b, c0, c1;
  };
  Block BlockOf(int64_t task) const {
    const int64_t blocks = (channels + block - 1) / block;
    const int64_t c0 = (task % blocks) * block;
    return {task / blocks, c0, std::min(channels, c0 + block)};
  }
  int64_t InputTasks() const { return batch * ((channels + block - 1) / block); }
  int64_t GridTasks() const { return batch * ((points + kGridChunk - 1) / kGridChunk); }
  // Grid points handled together: their taps are computed once for all channels.
  static constexpr int64_t kGridChunk = 512;
};

// A loop of every dtype, indexed by DtypeIndex.
template <typename Fn>
using PerDtype = std::array<Fn, 4>;
template <typename T>
constexpr int DtypeIndex() {
  return std::is_same_v<T, float> ? 0 : std::is_same_v<T, double> ? 1 : std::is_same_v<T, Float16> ? 2 : 3;
}

// The dispatch tables of one instruction set. The separable backward: grad_input rows [first, end) of a
// SeparableJob, per dtype (the half types accumulate in float).
struct SeparableKernels {
  void (*f32)(const SeparableJob<float>&, int64_t first, int64_t end);
  void (*f64)(const SeparableJob<double>&, int64_t first, int64_t end);
  void (*f16)(const SeparableJob<float>&, int64_t first, int64_t end);
  void (*bf16)(const SeparableJob<float>&, int64_t first, int64_t end);
};
// The grid samplers: one task of a GridJob.
using GridKernels = PerDtype<void (*)(GridJob::Task kind, const GridJob&, int64_t task)>;

// The active instruction set's tables (isa.cc).
const SeparableKernels& SeparableSimd();
const GridKernels& GridSimd();

// Defined in every namespace the kernel files are compiled into: separable_kernels.cc, grid_kernels.cc.
#define RG_DECLARE_SIMD_KERNELS(ns)          \
  namespace ns {                             \
  const SeparableKernels& SeparableTable();  \
  const GridKernels& GridTable();            \
  }
RG_DECLARE_SIMD_KERNELS(baseline)
RG_DECLARE_SIMD_KERNELS(avx2)
RG_DECLARE_SIMD_KERNELS(avx512)
#undef RG_DECLARE_SIMD_KERNELS

}  // namespace rg
