// The loops of the separable backward (separable.h), one grad_input row at a time: SeparableRows sums the
// grad_output rows each grad_input row reads (the non-last axes' inverted taps) into a row buffer, then gathers the
// last axis through its inverted taps (SeparableJob). Built once per instruction set (isa_target.h); every lane
// computes what the scalar loop computes, in the same order, so every set gives the same bits.
//
// Plain loops the compiler vectorises: AddRows (whole contiguous rows, up to kTapGroup rows a pass) and
// StridedColumns (the last axis's regular run, strided loads GCC turns into contiguous loads and permutes).
// Intrinsics in one place, GatherRange (the last axis through the fixed-width table outside the regular run): with
// float accumulation, the AVX2 set reads 8 inputs' taps at once with _mm256_mask_i32gather_ps and the AVX-512 set
// 16 with _mm512_mask_i32gather_ps. Each input reads its own number of outputs at its own offsets, an indirect
// load the scalar loop makes one element at a time; the gather's mask (k < count[x]) lets the lanes past an
// input's count read nothing. Its scalar loop serves the baseline set, double, and the inputs after the last
// whole vector.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "simd.h"
#include "isa_target.h"  // last: the code below is this instruction set's

namespace rg {
namespace RG_ISA_NAMESPACE {
namespace {


// The loops below sum up to kTapGroup terms per element in registers: one load and store of each partial sum per
// group instead of per term (the same sums in the same order). WithTapGroup calls fn with the group's size as a
// constant, so the loop over the group's terms unrolls and the loop over elements vectorises.
constexpr int kTapGroup = 4;

template <typename Fn>
void WithTapGroup(int size, Fn&& fn) {
  switch (size) {
    case 1: return fn(std::integral_constant<int, 1>());
    case 2: return fn(std::integral_constant<int, 2>());
    case 3: return fn(std::integral_constant<int, 3>());
    default: return fn(std::integral_constant<int, kTapGroup>());
  }
}

// sums[x] = w[0] * lines[0][x] (first) or sums[x] + w[0] * lines[0][x], then + w[n] * lines[n][x] for n < N: N
// grad_output rows into the row buffer, in order.
template <int N, typename T, typename A>
void AddRows(A* __restrict sums, const T* const* lines, const A* w, int64_t count, bool first) {
  const T* line[N];
  for (int n = 0; n < N; ++n) line[n] = lines[n];
  auto sum = [&](A s, int64_t x, int from) {
    for (int n = from; n < N; ++n) s += w[n] * Load<A>(line[n][x]);
    return s;
  };
  if (first) {
    for (int64_t x = 0; x < count; ++x) sums[x] = sum(w[0] * Load<A>(line[0][x]), x, 1);
  } else {
    for (int64_t x = 0; x < count; ++x) sums[x] = sum(sums[x], x, 0);
  }
}

// GatherColumns over the regular run [strided_lo, strided_hi): the same sums, k ascending from 0 (the first term
// added to +0 as there: a -0 product gives +0), accumulated per group of taps (WithTapGroup) in the output (float,
// double) or a block of 256 (half types): stride-Step loops the compiler vectorises with permutes, not gathers.
// Phases 2 (a step of 1/2, SeparableJob::strided_phases): inputs x0 + 2i and x0 + 2i + 1 read outputs Step * (x0 / 2
// + i) plus their own offsets, one loop writing both; x0 and the run's length are even (StridedRun). It
// follows the integer steps' scheme (commit ab43079: plain loops that GCC vectorises into contiguous loads and
// permutes, here an interleave; -fopt-info-vec reports both pair loops vectorised on all three sets).
template <int Step, int Phases, typename T, typename A>
void StridedColumns(const SeparableJob<A>& job, const A* __restrict row, T* __restrict out, int64_t w_in) {
  static_assert(Phases == 1 || Phases == 2);
  const A* weight = job.gather_weight;
  const int32_t* offset = job.strided_offset;
  // up to kTapGroup taps per pass over `total`
  auto group = [&](auto taps, A* __restrict total, int64_t x0, int64_t n, int k) {
    constexpr int K = decltype(taps)::value;
    const A* w[K];
    const A* from[K][Phases];  // Phases 2: the even and the odd inputs' outputs
    for (int t = 0; t < K; ++t) {
      w[t] = weight + (k + t) * w_in + x0;
      for (int q = 0; q < Phases; ++q) from[t][q] = row + Step * (x0 / Phases) + offset[q * job.gather_width + k + t];
    }
    auto sum = [&](A s, int64_t i, int q) {  // total Phases * i + q
      for (int t = 0; t < K; ++t) s += w[t][Phases * i + q] * from[t][q][Step * i];
      return s;
    };
    for (int q = 0; q < Phases; ++q) {
      if (k == 0) {
        for (int64_t i = 0; i < n / Phases; ++i) total[Phases * i + q] = sum(A(0), i, q);
      } else {
        for (int64_t i = 0; i < n / Phases; ++i) total[Phases * i + q] = sum(total[Phases * i + q], i, q);
      }
    }
  };
  auto accumulate = [&](A* __restrict total, int64_t x0, int64_t n) {
    for (int k = 0; k < job.gather_width; k += kTapGroup)
      WithTapGroup(std::min(kTapGroup, job.gather_width - k), [&](auto taps) { group(taps, total, x0, n, k); });
  };
  if constexpr (std::is_same_v<T, A>) {
    accumulate(out + job.strided_lo, job.strided_lo, job.strided_hi - job.strided_lo);
  } else {
    constexpr int64_t kBlock = 256;
    for (int64_t x0 = job.strided_lo; x0 < job.strided_hi; x0 += kBlock) {
      const int64_t n = std::min(kBlock, job.strided_hi - x0);
      A total[kBlock];
      accumulate(total, x0, n);
      for (int64_t i = 0; i < n; ++i) out[x0 + i] = Store<T>(total[i]);
    }
  }
}

// out[x] = sum over k < count[x] of weight[k][x] * row[source[k][x]] for x in [x_begin, x_end), k ascending (the
// outputs reading x, ascending), through the fixed-width table: masked vector gathers where the set has them.
template <typename T, typename A>
void GatherRange(const SeparableJob<A>& job, const A* __restrict row, T* __restrict out, int64_t w_in, int64_t x_begin,
                 int64_t x_end) {
  [[maybe_unused]] const int width = job.gather_width;
  const int32_t* source = job.gather_source;
  const A* weight = job.gather_weight;
  const int32_t* count = job.gather_count;
  int64_t x = x_begin;
#if RG_ISA_LEVEL == 2
  if constexpr (std::is_same_v<A, float>) {
    for (; x + 16 <= x_end; x += 16) {
      const __m512i counts = _mm512_loadu_si512(count + x);
      __m512 total = _mm512_setzero_ps();
      for (int k = 0; k < width; ++k) {
        const __mmask16 live = _mm512_cmpgt_epi32_mask(counts, _mm512_set1_epi32(k));
        const __m512i at = _mm512_loadu_si512(source + k * w_in + x);
        // dead lanes read nothing
        const __m512 value = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, at, row, 4);
        total = _mm512_add_ps(total, _mm512_mul_ps(_mm512_loadu_ps(weight + k * w_in + x), value));
      }
      if constexpr (std::is_same_v<T, float>) {
        _mm512_storeu_ps(out + x, total);
      } else {
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, total);
        for (int l = 0; l < 16; ++l) out[x + l] = Store<T>(lanes[l]);
      }
    }
  }
#elif RG_ISA_LEVEL == 1
  if constexpr (std::is_same_v<A, float>) {
    for (; x + 8 <= x_end; x += 8) {
      const __m256i counts = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(count + x));
      __m256 total = _mm256_setzero_ps();
      for (int k = 0; k < width; ++k) {
        const __m256 live = _mm256_castsi256_ps(_mm256_cmpgt_epi32(counts, _mm256_set1_epi32(k)));
        const __m256i at = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source + k * w_in + x));
        const __m256 value = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), row, at, live, 4);
        total = _mm256_add_ps(total, _mm256_mul_ps(_mm256_loadu_ps(weight + k * w_in + x), value));
      }
      if constexpr (std::is_same_v<T, float>) {
        _mm256_storeu_ps(out + x, total);
      } else {
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, total);
        for (int l = 0; l < 8; ++l) out[x + l] = Store<T>(lanes[l]);
      }
    }
  }
#endif
  for (; x < x_end; ++x) {
    A total = 0;
    for (int k = 0; k < count[x]; ++k) total += weight[k * w_in + x] * row[source[k * w_in + x]];
    out[x] = Store<T>(total);
  }
}

// One grad_input row's last axis: out[x] = sum over the outputs reading x (ascending) of weight * row[output].
template <typename T, typename A>
void GatherColumns(const SeparableJob<A>& job, const A* __restrict row, T* __restrict out, int64_t w_in) {
  if (job.gather_width == 0) {  // no compact table: the CSR form
    const int64_t* start = job.columns->inverse_start.data();
    const int64_t* from = job.columns->source.data();
    const A* w = job.columns->inverse_weight.data();
    for (int64_t x = 0; x < w_in; ++x) {
      A total = 0;
      for (int64_t j = start[x]; j < start[x + 1]; ++j) total += w[j] * row[from[j]];
      out[x] = Store<T>(total);
    }
    return;
  }
  if (job.strided_step == 0) return GatherRange(job, row, out, w_in, 0, w_in);
  // the regular run as strided loads, its ends through the table
  constexpr int kHalfStep = 0;  // strided_phases 2: a step of 1/2
  switch (job.strided_phases == 2 ? kHalfStep : job.strided_step) {
    case kHalfStep: StridedColumns<1, 2>(job, row, out, w_in); break;
    case 1: StridedColumns<1, 1>(job, row, out, w_in); break;
    case 2: StridedColumns<2, 1>(job, row, out, w_in); break;
    case 3: StridedColumns<3, 1>(job, row, out, w_in); break;
    default: StridedColumns<4, 1>(job, row, out, w_in); break;
  }
  GatherRange(job, row, out, w_in, 0, job.strided_lo);
  GatherRange(job, row, out, w_in, job.strided_hi, w_in);
}


template <typename T>
void SeparableRows(const SeparableJob<AccT<T>>& job, int64_t first, int64_t end) {
  using A = AccT<T>;
  const int last = job.rank - 1;
  const int64_t w_out = job.out_dims[last], w_in = job.in_dims[last];
  const T* grad_output = static_cast<const T*>(job.grad_output);
  T* grad_input = static_cast<T*>(job.grad_input);
  constexpr int64_t kPrefetchRows = 2;
  // Only short rows: the hardware prefetcher follows a long one (8 KB rows ran faster without), and a burst of
  // prefetches for it fills the line buffers.
  const bool prefetch = w_out * static_cast<int64_t>(sizeof(T)) <= 2048;
  thread_local std::vector<A> row_buffer;
  const ScratchScope scope(row_buffer);
  row_buffer.resize(w_out);
  A* sums = row_buffer.data();  // plain pointer: a thread_local costs a TLS lookup per access
  for (int64_t row = first; row < end; ++row) {
    const int64_t outer = row / job.inner_count, inner = row % job.inner_count;
    const int64_t j0 = job.read_start[inner], j1 = job.read_start[inner + 1];
    const T* base = grad_output + outer * job.outer_stride * w_out;
    T* out = grad_input + row * w_in;
    if (prefetch && row + kPrefetchRows < end) {
      const int64_t ahead = row + kPrefetchRows, ahead_inner = ahead % job.inner_count;
      const T* ahead_base = grad_output + ahead / job.inner_count * job.outer_stride * w_out;
      for (int64_t j = job.read_start[ahead_inner]; j < job.read_start[ahead_inner + 1]; ++j)
        Prefetch(ahead_base + job.read_offset[j] * w_out, w_out * static_cast<int64_t>(sizeof(T)));
    }
    if (j1 - j0 == 1 && job.read_weight[j0] == A(1) && std::is_same_v<T, A> && job.columns != nullptr) {
      // one grad_output row with weight 1 (only the last axis resized): gather straight from it
      GatherColumns<T, A>(job, reinterpret_cast<const A*>(base + job.read_offset[j0] * w_out), out, w_in);
      continue;
    }
    if (j1 == j0) std::fill(sums, sums + w_out, A(0));
    for (int64_t j = j0; j < j1; j += kTapGroup) {
      const T* lines[kTapGroup];
      const int n = static_cast<int>(std::min<int64_t>(kTapGroup, j1 - j));
      for (int i = 0; i < n; ++i) lines[i] = base + job.read_offset[j + i] * w_out;
      WithTapGroup(n, [&](auto rows) {
        AddRows<decltype(rows)::value>(sums, lines, job.read_weight + j, w_out, j == j0);
      });
    }
    if (job.columns != nullptr) {
      GatherColumns<T, A>(job, sums, out, w_in);
    } else {
      for (int64_t x = 0; x < w_in; ++x) out[x] = Store<T>(sums[x]);
    }
  }
}

}  // namespace

const SeparableKernels& SeparableTable() {
  static const SeparableKernels kernels{SeparableRows<float>, SeparableRows<double>, SeparableRows<Float16>,
                                        SeparableRows<BFloat16>};
  return kernels;
}

}  // namespace RG_ISA_NAMESPACE
}  // namespace rg
