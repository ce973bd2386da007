// The loops of the grid samplers' backward (grid_sampler_grad.cc splits a GridJob into tasks; GridTask runs one).
// Built once per instruction set (isa_target.h); every lane computes what the scalar loop computes, in the same
// order, so every set gives the same bits.
//
// Bilinear and bicubic (and nearest past 2^31 pixels or points) run channels-last: per chunk of grid points the
// taps (grid_coordinates.h ComputePointTaps), then a pass over each tap's contiguous run of channels, scattering
// into grad_input (GridInputTask) and/or taking the dot product for grad_grid (GridGridTask, GridBothTask; 16
// fixed partial sums, DotChannels). These are plain loops the compiler vectorises. Nearest's grad_input has two
// forms of its own: gathers over each pixel's points (NearestTapsTask, NearestInputTask) and, for float32 on
// AVX-512, sums of 16 channels at a time (NearestChannelsLastTask).
//
// Where and why intrinsics (and inline assembly, once) are used; each has a scalar loop for the other sets and dtypes:
//  - Transpose, the planes <-> channels-last copies, float32: 8 x 8 blocks in registers (Transpose8x8, AVX2 and
//    AVX-512) or 16 x 16 tiles (Transpose16x16, AVX-512) instead of an element at a time; _mm_prefetch for the
//    source rows ahead, and _mm512_stream_ps for output rows stored past the caches. Moves only: the same bits.
//  - GatherFirst and AddLayer, nearest's gathers: a masked vector gather (_mm256_mask_i32gather_ps,
//    _mm512_mask_i32gather_ps) reads 8 or 16 points' values at once; AddLayer's AVX-512 scatter
//    (_mm512_i32scatter_ps) writes one layer of later points, which holds no pixel twice.
//  - NearestPixels16 (AVX-512, 2-D float32 grids): 16 points' nearest pixels at once, the scalar NearestIndex's
//    operations lane by lane (ExactFmod16: reflection's fmod, exactly; tests/native/nearest_pixels.cc checks it
//    against NearestIndex over float32 bit patterns).
//  - NearestChannelsLastTask (AVX-512, float32): each point's 16 channels added to its pixel's 64-byte line of
//    sums, one vector add a point, the rows and lines turned around by Transpose16 (register moves).
//  - AddToSum, inline assembly: one vaddps with its operands in a fixed order. Where both are NaN x86 returns the
//    first source's, and the compiler may swap an intrinsic add's operands; the scalar loops keep the sum's NaN.
#include <algorithm>
#include <atomic>
#include <limits>
#include <type_traits>
#include <vector>

#include "grid_coordinates.h"
#include "simd.h"
#include "isa_target.h"  // last: the code below is this instruction set's

namespace rg {
namespace RG_ISA_NAMESPACE {
namespace {


// out[x] = 0 + Load(row[index[x]]) for x < n, +0 where index[x] < 0 (masked, nothing read): aten's first add into a
// zeroed element, bit for bit; vector gathers where the set has them (faster than a scalar load per element).
template <typename T, typename A>
void GatherFirst(const int32_t* __restrict index, const T* __restrict row, A* __restrict out, int64_t n) {
  int64_t x = 0;
#if RG_ISA_LEVEL == 2
  if constexpr (std::is_same_v<T, float> && std::is_same_v<A, float>) {
    for (; x + 16 <= n; x += 16) {
      const __m512i at = _mm512_loadu_si512(index + x);
      const __mmask16 live = _mm512_cmpge_epi32_mask(at, _mm512_setzero_si512());
      const __m512 value = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, at, row, 4);
      _mm512_storeu_ps(out + x, _mm512_add_ps(_mm512_setzero_ps(), value));
    }
  }
#elif RG_ISA_LEVEL == 1
  if constexpr (std::is_same_v<T, float> && std::is_same_v<A, float>) {
    for (; x + 8 <= n; x += 8) {
      const __m256i at = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index + x));
      const __m256 live = _mm256_castsi256_ps(_mm256_cmpgt_epi32(at, _mm256_set1_epi32(-1)));
      const __m256 value = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), row, at, live, 4);
      _mm256_storeu_ps(out + x, _mm256_add_ps(_mm256_setzero_ps(), value));
    }
  }
#endif
  const Bits<A> keep = ~Bits<A>(0);
  for (; x < n; ++x) {
    const int32_t p = index[x];
    out[x] = A(0) + Masked(Load<A>(row[p < 0 ? 0 : p]), p < 0 ? Bits<A>(0) : keep);
  }
}

// The dot product of two runs of channels in 16 partial sums, added up in a fixed order (the same bits on
// every instruction set); short runs sum in order. kAdd: also dst[c] += w * b[c] in the same pass (a tap's scatter
// and dot product read b once, and one loop over the channels serves both).
template <bool kAdd, typename A>
inline A DotChannels(const A* __restrict a, const A* __restrict b, int64_t count, A* __restrict dst = nullptr,
                     A w = 0) {
  if (count < 16) {
    A total = 0;
    for (int64_t c = 0; c < count; ++c) {
      if constexpr (kAdd) dst[c] += w * b[c];
      total += a[c] * b[c];
    }
    return total;
  }
  A part[16] = {};
  int64_t c = 0;
  for (; c + 16 <= count; c += 16)
    for (int l = 0; l < 16; ++l) {
      if constexpr (kAdd) dst[c + l] += w * b[c + l];
      part[l] += a[c + l] * b[c + l];
    }
  for (int l = 0; c < count; ++c, ++l) {
    if constexpr (kAdd) dst[c] += w * b[c];
    part[l] += a[c] * b[c];
  }
  // the halving folds written out, each a constant count: GCC left the loop over the steps a loop, through the
  // stack with a store forwarded per add (a quarter of the bilinear tap loop's time); the same adds in the same order
  for (int l = 0; l < 8; ++l) part[l] += part[l + 8];
  for (int l = 0; l < 4; ++l) part[l] += part[l + 4];
  for (int l = 0; l < 2; ++l) part[l] += part[l + 2];
  return part[0] + part[1];
}


#if RG_ISA_LEVEL >= 1
// An 8 x 8 block of floats transposed in registers (moves only: the same bits as the scalar loop).
inline void Transpose8x8(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_stride, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

#if RG_ISA_LEVEL == 2
// A 16 x 16 block of floats transposed in registers (moves only), a whole 64-byte line per row each way: 8 x 8's two
// in-lane stages, then two stages of 128-bit lane moves (the masked forms: GCC 12 warns on the plain ones' undefined
// source). Transpose16x16: from memory to memory, kStream: the rows stored past the caches (64-byte aligned rows).
__attribute__((always_inline)) inline void Transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_ps(0xFFFF, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(0xFFFF, r[i], r[i + 1]);
  }
  // r[4 g + q], 128-bit lane l: column 4 l + q of rows 4 g .. 4 g + 3
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int q = 0; q < 4; ++q) {  // 0x88: lanes 0 and 2 of each source, 0xDD: lanes 1 and 3
    t[q] = _mm512_maskz_shuffle_f32x4(0xFFFF, r[q], r[4 + q], 0x88);
    t[4 + q] = _mm512_maskz_shuffle_f32x4(0xFFFF, r[q], r[4 + q], 0xDD);
    t[8 + q] = _mm512_maskz_shuffle_f32x4(0xFFFF, r[8 + q], r[12 + q], 0x88);
    t[12 + q] = _mm512_maskz_shuffle_f32x4(0xFFFF, r[8 + q], r[12 + q], 0xDD);
  }
  for (int q = 0; q < 4; ++q) {
    r[q] = _mm512_maskz_shuffle_f32x4(0xFFFF, t[q], t[8 + q], 0x88);
    r[8 + q] = _mm512_maskz_shuffle_f32x4(0xFFFF, t[q], t[8 + q], 0xDD);
    r[4 + q] = _mm512_maskz_shuffle_f32x4(0xFFFF, t[4 + q], t[12 + q], 0x88);
    r[12 + q] = _mm512_maskz_shuffle_f32x4(0xFFFF, t[4 + q], t[12 + q], 0xDD);
  }
}

// Stores 16 rows of 16 floats, past the caches where kStream (64-byte aligned rows).
template <bool kStream>
inline void StoreRows16(const __m512 (&r)[16], float* dst, int64_t dst_stride) {
  for (int i = 0; i < 16; ++i) {
    if constexpr (kStream) _mm512_stream_ps(dst + i * dst_stride, r[i]);
    else _mm512_storeu_ps(dst + i * dst_stride, r[i]);
  }
}

template <bool kStream>
inline void Transpose16x16(const float* src, int64_t src_stride, float* dst, int64_t dst_stride) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + i * src_stride);
  Transpose16(r);
  StoreRows16<kStream>(r, dst, dst_stride);
}
#endif

// dst[j * dst_stride + i] = convert(src[i * src_stride + j]) for i < rows, j < cols, in 16 x 16 tiles whose
// inner loop runs along the side with the larger stride: a power-of-two stride (a 64 x 64 plane) puts every
// line of a strided run in one L1 set, and a naive loop took most of the grid sampler's time. Float to float
// goes 8 x 8 blocks at a time in registers where the set has them, a whole tile at once with AVX-512.
// kStream: dst is an output not read again here, its rows stored past the caches where they are 64-byte lines
// (AVX-512): a store that misses the caches first reads the line it overwrites.
template <bool kStream = false, typename S, typename D, typename Convert>
__attribute__((noinline)) void Transpose(const S* __restrict src, int64_t src_stride, D* __restrict dst,
                                         int64_t dst_stride, int64_t rows, int64_t cols, Convert convert) {
  constexpr int64_t kTile = 16;
  const bool along_source = src_stride >= dst_stride;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    int64_t i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      int64_t i_done = i0;
#if RG_ISA_LEVEL >= 1
      if constexpr (std::is_same_v<S, float> && std::is_same_v<D, float>) {
        if (j1 - j0 == kTile) {  // full columns: 8-row blocks in registers, a leftover row band below
          if (along_source && j1 + 4 * kTile <= cols)  // the rows are separate streams: fetch ahead
            for (int64_t i = i0; i < i1; ++i)
              _mm_prefetch(reinterpret_cast<const char*>(src + i * src_stride + j1 + 3 * kTile), _MM_HINT_T0);
          // a strided destination row's line (16 floats) is written whole before the next: the tile's 16 rows of a
          // power-of-two stride share one L1 set, and half-written lines were evicted and fetched again
          const int64_t bands = (i1 - i0) / 8 * 8;
#if RG_ISA_LEVEL == 2
          if (bands == kTile) {
            float* to = dst + j0 * dst_stride + i0;
            if (kStream && reinterpret_cast<uintptr_t>(to) % 64 == 0 && dst_stride % 16 == 0)
              Transpose16x16<true>(src + i0 * src_stride + j0, src_stride, to, dst_stride);
            else
              Transpose16x16<false>(src + i0 * src_stride + j0, src_stride, to, dst_stride);
            continue;
          }
#endif
          if (along_source) {
            for (; i_done < i0 + bands; i_done += 8)
              for (int64_t j = j0; j < j1; j += 8)
                Transpose8x8(src + i_done * src_stride + j, src_stride, dst + j * dst_stride + i_done, dst_stride);
          } else {
            for (int64_t j = j0; j < j1; j += 8)
              for (int64_t i = i0; i < i0 + bands; i += 8)
                Transpose8x8(src + i * src_stride + j, src_stride, dst + j * dst_stride + i, dst_stride);
            i_done = i0 + bands;
          }
        }
      }
#endif
      if (along_source) {
        for (int64_t i = i_done; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) dst[j * dst_stride + i] = convert(src[i * src_stride + j]);
      } else {
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i_done; i < i1; ++i) dst[j * dst_stride + i] = convert(src[i * src_stride + j]);
      }
    }
  }
#if RG_ISA_LEVEL == 2
  if constexpr (kStream) _mm_sfence();  // the streamed rows reach memory before the task ends
#endif
}

template <typename A>
struct LoadAs {
  template <typename T>
  A operator()(T v) const { return Load<A>(v); }
};

template <typename T>
struct StoreAs {
  template <typename A>
  T operator()(A v) const { return Store<T>(v); }
};

// input [batch][channels][plane] -> channels-last [batch][plane][channels] in the accumulation type: one task
// writes one block of channels of one batch item.
template <typename T>
void GridTranspose(const GridJob& job, int64_t task) {
  using A = AccT<T>;
  const auto [b, c0, c1] = job.BlockOf(task);
  const T* src = static_cast<const T*>(job.input) + b * job.channels * job.plane;
  A* dst = static_cast<A*>(job.input_channels_last) + b * job.plane * job.channels;
  Transpose(src + c0 * job.plane, job.plane, dst + c0, job.channels, c1 - c0, job.plane, LoadAs<A>());
}


// The pieces of a chunk of grid points, channels-last: `g` holds grad_output of the chunk's points ([point][width]).

// Each point's taps add w * g[point] (a contiguous run of channels) to their pixels of `acc` ([plane][width]), in
// point and tap order: aten's order per element, so no atomics and the same result at any thread count.
//
// The scatter and the grid gradient touch K pixels per point at random for a random grid: when the image's channels
// do not fit in L2 (3-D: 32^3 pixels x 16 channels is 2 MB per array) each tap waits on an L3 line, with only the
// out-of-order window to overlap them. So both ask for the lines of the
// taps of the point kPrefetchPoints ahead (the taps of the chunk are known), the usual software prefetch for an
// indirect stream (Intel's optimization manual, "software prefetch" for irregular accesses; GCC __builtin_prefetch).
constexpr int64_t kPrefetchPoints = 4;

// The taps of a chunk, inside ones only (PointTaps::inside), in point and tap order. kScatter: each adds w * g[point]
// to its pixel of `acc` (channels-last, `width` channels). kGrid: grad_grid of the chunk's points into `out`: per
// tap the dot product of the image's channels at the tap (`image` [plane][width]) with g[point], times the tap's
// slopes, summed per point in tap order. Both: one pass over each tap's channels.
template <bool kScatter, bool kGrid, typename T, int D, int K>
void TapsChunk(const PointTaps<AccT<T>, D>& taps, const AccT<T>* g, int64_t count, int64_t width, AccT<T>* acc,
               const AccT<T>* image, T* out) {
  using A = AccT<T>;
  thread_local std::vector<A> point_sums;
  const ScratchScope scope(point_sums);
  point_sums.assign(kGrid ? count * D : 0, A(0));
  A* sums = point_sums.data();  // plain pointer: a thread_local costs a TLS lookup per access
  const int64_t* flat = taps.flat.data();
  const A* weight = taps.weight.data();
  const int32_t* inside = taps.inside.data();
  const int64_t n = taps.inside_count, bytes = width * static_cast<int64_t>(sizeof(A));
  for (int64_t j = 0; j < n; ++j) {
    if (j + kPrefetchPoints * K < n) {
      const int64_t ahead = flat[inside[j + kPrefetchPoints * K]] * width;
      if constexpr (kScatter) Prefetch<true>(acc + ahead, bytes);
      if constexpr (kGrid) Prefetch(image + ahead, bytes);
    }
    const int64_t i = inside[j], p = i / K, at = flat[i] * width;
    if constexpr (kGrid) {
      A dot;
      if constexpr (kScatter) dot = DotChannels<true>(image + at, g + p * width, width, acc + at, weight[i]);
      else dot = DotChannels<false>(image + at, g + p * width, width);
      for (int a = 0; a < D; ++a) sums[p * D + a] += dot * taps.slope[a][i];
    } else {
      for (int64_t c = 0; c < width; ++c) acc[at + c] += weight[i] * g[p * width + c];
    }
  }
  if constexpr (kGrid)
    for (int64_t p = 0; p < count; ++p)
      for (int a = 0; a < D; ++a)  // grid channels are x, y(, z): the last spatial axis first
        out[D * p + (D - 1 - a)] = Store<T>(taps.mult[a][p] * sums[p * D + a]);
}

template <typename T, int D, int K>
void ChunkTaps(const GridJob& job, int64_t b, int64_t p0, int64_t count, PointTaps<AccT<T>, D>* taps) {
  ComputePointTaps<T, D, K>(static_cast<const T*>(job.grid) + (b * job.points + p0) * D, count, job.sizes,
                            job.padding, job.align_corners, taps);
}

// grad_input for one (batch item, block of channels): the block's planes channels-last in scratch, the chunks'
// scatters, then back to planes.
template <typename T, int D, int K>
void GridInputTask(const GridJob& job, int64_t task) {
  using A = AccT<T>;
  const auto [b, c0, c1] = job.BlockOf(task);
  const int64_t width = c1 - c0, plane = job.plane, points = job.points;
  thread_local PointTaps<A, D> taps;
  thread_local std::vector<A> accumulated, gathered;
  const ScratchScope scope(taps, accumulated, gathered);
  accumulated.assign(plane * width, A(0));
  gathered.resize(GridJob::kGridChunk * width);
  A* acc = accumulated.data();  // plain pointers: a thread_local costs a TLS lookup per access
  A* g = gathered.data();
  const T* go = static_cast<const T*>(job.grad_output) + (b * job.channels + c0) * points;
  for (int64_t p0 = 0; p0 < points; p0 += GridJob::kGridChunk) {
    const int64_t count = std::min(GridJob::kGridChunk, points - p0);
    ChunkTaps<T, D, K>(job, b, p0, count, &taps);
    Transpose(go + p0, points, g, width, width, count, LoadAs<A>());
    TapsChunk<true, false, T, D, K>(taps, g, count, width, acc, nullptr, nullptr);
  }
  T* out = static_cast<T*>(job.grad_input) + (b * job.channels + c0) * plane;
  Transpose<true>(acc, width, out, plane, plane, width, StoreAs<T>());
}

// Both gradients of one batch item when one block holds every channel: the taps and the channels-last
// grad_output of a chunk serve the scatter and the dot products, and the image's channels-last copy is the
// task's own (it stays in cache).
template <typename T, int D, int K>
void GridBothTask(const GridJob& job, int64_t b) {
  using A = AccT<T>;
  const int64_t channels = job.channels, plane = job.plane, points = job.points;
  thread_local PointTaps<A, D> taps;
  thread_local std::vector<A> accumulated, gathered, channels_last;
  const ScratchScope scope(taps, accumulated, gathered, channels_last);
  accumulated.assign(plane * channels, A(0));
  gathered.resize(GridJob::kGridChunk * channels);
  channels_last.resize(plane * channels);
  A* acc = accumulated.data();
  A* g = gathered.data();
  A* image = channels_last.data();
  Transpose(static_cast<const T*>(job.input) + b * channels * plane, plane, image, channels, channels, plane,
            LoadAs<A>());
  const T* go = static_cast<const T*>(job.grad_output) + b * channels * points;
  T* grad_grid = static_cast<T*>(job.grad_grid) + b * points * D;
  for (int64_t p0 = 0; p0 < points; p0 += GridJob::kGridChunk) {
    const int64_t count = std::min(GridJob::kGridChunk, points - p0);
    ChunkTaps<T, D, K>(job, b, p0, count, &taps);
    Transpose(go + p0, points, g, channels, channels, count, LoadAs<A>());
    TapsChunk<true, true, T, D, K>(taps, g, count, channels, acc, image, grad_grid + p0 * D);
  }
  Transpose<true>(acc, channels, static_cast<T*>(job.grad_input) + b * channels * plane, plane, plane, channels,
                  StoreAs<T>());
}

#if RG_ISA_LEVEL == 2
// fmod(x, period) of 16 floats x >= +0 or -0 (or NaN: any result), period an integer-valued float >= 1, exactly as
// std::fmod: in double x / period never rounds up to the next integer (x has 24 bits, the quotient's gap to it is
// at least 2^-25 of it) nor down across one, so the floor is the true quotient q, and q * period and x - q * period
// (|x| < 2^25: see Reflect) are exact; the sign bit of x puts back fmod's -0 for -0.
inline __m512 ExactFmod16(__m512 x, float period) {
  const __m512d divisor = _mm512_set1_pd(period);
  auto half = [&](__m256 part) {  // the masked forms: GCC 12 warns on the plain ones' undefined source
    const __m512d wide = _mm512_maskz_cvtps_pd(0xFF, part);
    const __m512d quotient =
        _mm512_maskz_roundscale_pd(0xFF, _mm512_div_pd(wide, divisor), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return _mm512_maskz_cvtpd_ps(0xFF, _mm512_sub_pd(wide, _mm512_mul_pd(quotient, divisor)));
  };
  const __m512 rest = _mm512_insertf32x8(_mm512_castps256_ps512(half(_mm512_maskz_extractf32x8_ps(0xFF, x, 0))),
                                         half(_mm512_maskz_extractf32x8_ps(0xFF, x, 1)), 1);
  return _mm512_or_ps(rest, _mm512_and_ps(x, _mm512_set1_ps(-0.0f)));
}

// NearestIndex's rounded pixel coordinate of 16 float grid coordinates along one axis (the inside test is the
// caller's): Unnormalize, Pad and nearbyint with the same operations in the same order per lane, so the same
// values; reflection's fmod is ExactFmod16 (tests/native/nearest_pixels.cc compares every float against NearestIndex).
template <Padding P>
inline __m512 NearestAxis16(__m512 coord, int64_t size, bool align_corners) {
  const __m512 one = _mm512_set1_ps(1), two = _mm512_set1_ps(2), zero = _mm512_setzero_ps();
  const __m512 limit = _mm512_set1_ps(static_cast<float>(size - 1));
  const __m512 shifted = _mm512_add_ps(coord, one);  // Unnormalize
  __m512 c = align_corners
                 ? _mm512_mul_ps(_mm512_div_ps(shifted, two), limit)
                 : _mm512_div_ps(_mm512_sub_ps(_mm512_mul_ps(shifted, _mm512_set1_ps(static_cast<float>(size))), one),
                                 two);
  if constexpr (P == Padding::kReflection) {  // Reflect
    const int64_t twice_low = align_corners ? 0 : -1, twice_high = align_corners ? 2 * (size - 1) : 2 * size - 1;
    if (twice_low == twice_high) {
      c = zero;  // every coordinate, NaN too
    } else {
      const float low = static_cast<float>(twice_low) / 2, span = static_cast<float>(twice_high - twice_low) / 2;
      const __mmask16 huge = ~_mm512_cmp_ps_mask(_mm512_abs_ps(c), _mm512_set1_ps(8388608.0f), _CMP_LE_OQ);
      __m512 from_low = _mm512_sub_ps(c, _mm512_set1_ps(low));
      const __mmask16 negative = _mm512_cmp_ps_mask(from_low, zero, _CMP_LT_OQ);
      from_low = _mm512_mask_sub_ps(from_low, negative, zero, from_low);
      const __m512 rest = ExactFmod16(from_low, 2 * span);
      const __mmask16 back = _mm512_cmp_ps_mask(rest, _mm512_set1_ps(span), _CMP_GE_OQ);
      c = _mm512_mask_blend_ps(back, _mm512_add_ps(rest, _mm512_set1_ps(low)),
                               _mm512_add_ps(_mm512_sub_ps(_mm512_set1_ps(2 * span), rest), _mm512_set1_ps(low)));
      c = _mm512_mask_blend_ps(huge, c, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
    }
  }
  if constexpr (P != Padding::kZeros) {  // Clip: <= 0 gives 0, else >= limit gives limit; NaN passes
    const __mmask16 low = _mm512_cmp_ps_mask(c, zero, _CMP_LE_OQ);
    const __mmask16 high = _mm512_cmp_ps_mask(c, limit, _CMP_GE_OQ) & ~low;
    c = _mm512_mask_blend_ps(high, _mm512_mask_blend_ps(low, c, zero), limit);
  }
  // SafeDowngrade: NaN, inf, >= 2^31 or < -2^31 give -100
  const __mmask16 unsafe = _mm512_fpclass_ps_mask(c, 0x99) |  // QNaN, SNaN, +inf, -inf
                           _mm512_cmp_ps_mask(c, _mm512_set1_ps(2147483647.0f), _CMP_GE_OQ) |
                           _mm512_cmp_ps_mask(c, _mm512_set1_ps(-2147483648.0f), _CMP_LT_OQ);
  c = _mm512_mask_blend_ps(unsafe, c, _mm512_set1_ps(-100));
  // nearbyint, round half to even (the masked forms: GCC 12 warns on the plain ones' undefined source)
  return _mm512_mask_roundscale_ps(zero, 0xFFFF, c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// NearestIndex's flat pixel (plane: outside) of 16 2-D float points (x, y pairs) at once.
template <Padding P>
inline void NearestPixels16(const float* xy, const int64_t* sizes, bool align_corners, int64_t plane, int32_t* out) {
  const __m512 a = _mm512_loadu_ps(xy), b = _mm512_loadu_ps(xy + 16);
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512 coord[2] = {_mm512_permutex2var_ps(a, _mm512_add_epi32(even, _mm512_set1_epi32(1)), b),  // y
                           _mm512_permutex2var_ps(a, even, b)};                                          // x
  __m512i flat = _mm512_setzero_si512();
  __mmask16 inside = 0xFFFF;
  for (int axis = 0; axis < 2; ++axis) {
    const __m512 c = NearestAxis16<P>(coord[axis], sizes[axis], align_corners);
    inside &= _mm512_cmp_ps_mask(c, _mm512_setzero_ps(), _CMP_GE_OQ) &
              _mm512_cmp_ps_mask(c, _mm512_set1_ps(static_cast<float>(sizes[axis] - 1)), _CMP_LE_OQ);
    flat = _mm512_add_epi32(_mm512_mullo_epi32(flat, _mm512_set1_epi32(static_cast<int32_t>(sizes[axis]))),
                            _mm512_mask_cvttps_epi32(_mm512_setzero_si512(), 0xFFFF, c));
  }
  _mm512_storeu_si512(out, _mm512_mask_blend_epi32(inside, _mm512_set1_epi32(static_cast<int32_t>(plane)), flat));
}
#endif

#if RG_ISA_LEVEL == 2
// acc + value, 16 lanes; where both are NaN, acc's (the first NaN of a sum stays), as the scalar loops' acc += value
// give it: x86 returns the first source's NaN, and the compiler may swap an intrinsic add's operands (the gathers'
// add did: value's NaN, unlike the baseline and AVX2 sets). The same payloads on every set.
inline __m512 AddToSum(__m512 acc, __m512 value) {
  __m512 sum;
  asm("vaddps {%2, %1, %0|%0, %1, %2}" : "=v"(sum) : "v"(acc), "vm"(value));
  return sum;
}

// One run of 16 channels of one batch item for NearestChannelsLastTask: grad_output's rows, grad_input's planes, the
// item's pixel of each point and the sum (acc, [plane + 1][16], 64-byte lines; row plane takes the points outside).
struct ChannelRun {
  const float* go;
  float* out;
  const int32_t* pixel_of;
  float* acc;
};

// The points [p0, p0 + 16) of a run: their 16 rows transposed to a 64-byte line per point, each added to its
// pixel's line in point order (0, then each point's value: aten's order per element).
inline void AddPointsToLines(const ChannelRun& run, int64_t points, int64_t p0) {
  __m512 r[16];
  for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_ps(run.go + k * points + p0);
  Transpose16(r);
  for (int j = 0; j < 16; ++j) {
    float* line = run.acc + 16 * static_cast<int64_t>(run.pixel_of[p0 + j]);
    _mm512_store_ps(line, AddToSum(_mm512_load_ps(line), r[j]));
  }
}

// The pixels [x0, x0 + 16) of a run: their lines of acc transposed into the 16 planes (streamed: whole 64-byte
// lines, not read again here) and zeroed for the run after.
inline void LinesToPlanes(const ChannelRun& run, int64_t plane, int64_t x0, bool stream) {
  __m512 r[16];
  for (int j = 0; j < 16; ++j) {
    r[j] = _mm512_load_ps(run.acc + 16 * (x0 + j));
    _mm512_store_ps(run.acc + 16 * (x0 + j), _mm512_setzero_ps());
  }
  Transpose16(r);
  if (stream) StoreRows16<true>(r, run.out + x0, plane);
  else StoreRows16<false>(r, run.out + x0, plane);
}
#endif

// Nearest's taps for batch item b as the tables of GridJob (each point's pixel; nearest_first, the layers of later
// points), computed once and shared by the item's blocks of channels (kNearestTaps, then kNearestChannelsLast, kInput).
// Branch-free per point: whether a point is its pixel's first is a coin toss for a random grid. The layers are a
// counting sort of the later points by their rank at their pixel.
template <typename T, int D>
void NearestTapsTask(const GridJob& job, int64_t b) {
  using A = AccT<T>;
  const int64_t plane = job.plane, points = job.points;
  const T* coords = static_cast<const T*>(job.grid) + b * points * D;
  // every point's pixel first (plane: outside; 16 points per AVX-512 step where NearestPixels16 applies), then the
  // walk over them in point order
  int32_t* pixel_at = job.nearest_point_pixel + b * points;
  auto find_pixels = [&](auto padding) {
    constexpr Padding kPadding = decltype(padding)::value;
    int64_t p = 0;
#if RG_ISA_LEVEL == 2
    if constexpr (D == 2 && std::is_same_v<T, float>)
      for (; p + 16 <= points; p += 16)
        NearestPixels16<kPadding>(coords + 2 * p, job.sizes, job.align_corners, plane, pixel_at + p);
#endif
    const int64_t size[3] = {job.sizes[0], job.sizes[1], job.sizes[2]};
    for (; p < points; ++p) {
      int64_t flat = 0;
      bool inside = true;
      for (int a = 0; a < D; ++a) {  // the grid holds x, y(, z): the last spatial axis first
        const int64_t index =
            NearestIndex<kPadding>(Load<A>(coords[D * p + (D - 1 - a)]), size[a], job.align_corners);
        inside = inside & (index >= 0);
        flat = flat * size[a] + index;
      }
      pixel_at[p] = static_cast<int32_t>(inside ? flat : plane);
    }
  };
  switch (job.padding) {
    case Padding::kZeros: find_pixels(std::integral_constant<Padding, Padding::kZeros>()); break;
    case Padding::kBorder: find_pixels(std::integral_constant<Padding, Padding::kBorder>()); break;
    case Padding::kReflection: find_pixels(std::integral_constant<Padding, Padding::kReflection>()); break;
  }
  if (job.nearest_channels_last) {  // the sums need no layers (nor their tables: nullptr)
    job.nearest_layers[b] = 0;
    return;
  }
  int32_t* first = job.nearest_first + b * (plane + 1);
  int32_t* pixels = job.nearest_pixel + b * (points + 1);
  int32_t* from = job.nearest_point + b * (points + 1);
  int32_t* bound = job.nearest_bound + b * (points + 1);
  thread_local std::vector<int32_t> seen, later_pixel, later_point, later_rank;
  const ScratchScope scope(seen, later_pixel, later_point, later_rank);
  seen.assign(plane + 1, 0);  // points so far at each pixel (the last: the points outside)
  for (auto* list : {&later_pixel, &later_point, &later_rank}) list->resize(points + 1);
  std::fill(first, first + plane + 1, -1);
  // the later points (rank >= 1 at their pixel), in point order: appended without a branch (one spare entry), and
  // no counter in memory (a count per rank updated for every point was a store-forwarding chain)
  int64_t later = 0;
  for (int64_t p = 0; p < points; ++p) {
    const int32_t pixel = pixel_at[p];
    const int32_t rank = seen[pixel];
    seen[pixel] = rank + 1;
    first[rank == 0 ? pixel : plane] = static_cast<int32_t>(p);  // a later point writes to the spare slot
    later_pixel[later] = pixel;
    later_point[later] = static_cast<int32_t>(p);
    later_rank[later] = rank;
    later += (pixel < plane) & (rank > 0);
  }
  // a counting sort by rank: bound[r] (r >= 1) first counts layer r, then is where its next entry goes, then its end
  int32_t layers = 0;
  for (int64_t i = 0; i < later; ++i) layers = std::max(layers, later_rank[i]);
  std::fill(bound, bound + layers + 1, 0);
  for (int64_t i = 0; i < later; ++i) ++bound[later_rank[i]];
  for (int32_t r = 1, end = 0; r <= layers; ++r) {
    const int32_t size = bound[r];
    bound[r] = end;
    end += size;
  }
  for (int64_t i = 0; i < later; ++i) {
    const int32_t at = bound[later_rank[i]]++;
    pixels[at] = later_pixel[i];
    from[at] = later_point[i];
  }
  bound[0] = 0;
  job.nearest_layers[b] = layers;
}

#if RG_ISA_LEVEL == 2
// Nearest's grad_input channels-last, 16 channels at a time (float32, AVX-512; job.nearest_channels_last): a 16-lane
// add per point where the gathers spent a gather lane per first point and a gather, add and scatter lane per later
// one; the transposes are register moves. A task takes runs from job.nearest_queue until none is left and writes one
// run's planes while it reads the next run's rows, so that the core has reads and writes in flight together (faster
// than a run's reads, then its writes). A thread that starts late takes fewer runs; each run is computed alone, so
// the result is the same for any split.
void NearestChannelsLastTask(const GridJob& job) {
  const int64_t plane = job.plane, points = job.points, per_item = job.channels / 16;
  const int64_t line = ((plane + 1) * 16 + 15) & ~int64_t{15};  // one sum, whole lines
  // two sums, zero between runs (LinesToPlanes leaves them so; resize zeroes what it adds), from a 64-byte boundary
  thread_local std::vector<float> sums;
  const ScratchScope scope(sums);
  sums.resize(2 * line + 16);
  float* acc = sums.data() + ((-reinterpret_cast<uintptr_t>(sums.data()) / sizeof(float)) & 15);
  ChannelRun last{};
  bool stream = false;
  auto finish = [&](int64_t x0) {  // the last run's pixels from x0 on
    for (; x0 < plane; x0 += 16) LinesToPlanes(last, plane, x0, stream);
    _mm512_store_ps(last.acc + 16 * plane, _mm512_setzero_ps());
  };
  for (int64_t taken = 0;; ++taken) {
    const int64_t run = job.nearest_queue->fetch_add(1, std::memory_order_relaxed);
    if (run >= job.batch * per_item) break;
    const int64_t b = run / per_item, row = b * job.channels + run % per_item * 16;
    const ChannelRun next{static_cast<const float*>(job.grad_output) + row * points,
                          static_cast<float*>(job.grad_input) + row * plane, job.nearest_point_pixel + b * points,
                          acc + (taken & 1) * line};
    int64_t x0 = 0;
    for (int64_t p0 = 0; p0 < points; p0 += 16) {
      AddPointsToLines(next, points, p0);
      if (taken > 0)  // the last run's pixels in step with the points: both done together
        for (const int64_t done = std::min(points, p0 + 16); x0 < plane && x0 * points < done * plane; x0 += 16)
          LinesToPlanes(last, plane, x0, stream);
    }
    if (taken > 0) finish(x0);
    last = next;
    stream = reinterpret_cast<uintptr_t>(last.out) % 64 == 0;
  }
  if (last.go != nullptr) finish(0);
  _mm_sfence();  // the streamed rows reach memory before the task ends
}
#endif

// acc[pixel[i]] += Load(values[point[i]]) for i < n: one layer of later points, no pixel twice, so the adds are
// independent (a vector gather, AddToSum and scatter where the set has them) and their order does not matter.
template <typename T, typename A>
void AddLayer(const int32_t* __restrict pixel, const int32_t* __restrict point, const T* __restrict values,
              A* __restrict acc, int64_t n) {
  int64_t i = 0;
#if RG_ISA_LEVEL == 2
  if constexpr (std::is_same_v<T, float> && std::is_same_v<A, float>) {
    for (; i + 16 <= n; i += 16) {
      const __m512i to = _mm512_loadu_si512(pixel + i);
      const __m512 zero = _mm512_setzero_ps();  // the masked forms: GCC 12 warns on the plain ones' undefined source
      const __m512 value = _mm512_mask_i32gather_ps(zero, 0xFFFF, _mm512_loadu_si512(point + i), values, 4);
      _mm512_i32scatter_ps(acc, to, AddToSum(_mm512_mask_i32gather_ps(zero, 0xFFFF, to, acc, 4), value), 4);
    }
  }
#endif
  for (; i < n; ++i) acc[pixel[i]] += Load<A>(values[point[i]]);
}

// grad_input of nearest for one (batch item, block of channels), as gathers: each channel's plane is written once, in
// pixel order, from its pixels' first points (GatherFirst; an empty pixel gets 0), then each layer of later points
// adds in. Per element that is aten's sum in point order (0 + first + later ones). The scatter this replaces zeroed
// every plane, then added each point with scalar loads and stores.
template <typename T, int D>
void NearestInputTask(const GridJob& job, int64_t task) {
  using A = AccT<T>;
  const auto [b, c0, c1] = job.BlockOf(task);
  const int64_t plane = job.plane, points = job.points, rows = job.batch * job.channels;
  const int32_t* first = job.nearest_first + b * (plane + 1);
  const int32_t* pixels = job.nearest_pixel + b * (points + 1);
  const int32_t* from = job.nearest_point + b * (points + 1);
  const int32_t* bound = job.nearest_bound + b * (points + 1);
  const int64_t layers = job.nearest_layers[b];
  thread_local std::vector<A> scratch;
  const ScratchScope scope(scratch);
  A* row = nullptr;
  if constexpr (!std::is_same_v<A, T>) {
    scratch.resize(plane);
    row = scratch.data();
  }
  // A channel's values are read in pixel order, i.e. at random for a random grid: the hardware prefetcher cannot
  // follow, so each block of pixels asks for its share of the next channel's lines.
  constexpr int64_t kBlock = 64;
  const int64_t lines = (points * static_cast<int64_t>(sizeof(T)) + 63) / 64, blocks = (plane + kBlock - 1) / kBlock;
  for (int64_t c = c0; c < c1; ++c) {
    const int64_t at = b * job.channels + c;
    const T* values = static_cast<const T*>(job.grad_output) + at * points;
    T* out = static_cast<T*>(job.grad_input) + at * plane;
    A* acc = std::is_same_v<A, T> ? reinterpret_cast<A*>(out) : row;
    if (points == 0) {
      std::fill(acc, acc + plane, A(0));
    } else {
      const char* next = reinterpret_cast<const char*>(values + points);
      for (int64_t x0 = 0, block = 0; x0 < plane; x0 += kBlock, ++block) {
        if (at + 1 < rows) {
          const int64_t line = lines * block / blocks;
          Prefetch(next + 64 * line, 64 * (lines * (block + 1) / blocks - line));
        }
        GatherFirst(first + x0, values, acc + x0, std::min(kBlock, plane - x0));
      }
      for (int64_t r = 1; r <= layers; ++r)
        AddLayer(pixels + bound[r - 1], from + bound[r - 1], values, acc, bound[r] - bound[r - 1]);
    }
    if constexpr (!std::is_same_v<A, T>)
      for (int64_t x = 0; x < plane; ++x) out[x] = Store<T>(acc[x]);
  }
}

// grad_grid for one (batch item, chunk of points), from the shared channels-last input.
template <typename T, int D, int K>
void GridGridTask(const GridJob& job, int64_t task) {
  using A = AccT<T>;
  const int64_t chunks = (job.points + GridJob::kGridChunk - 1) / GridJob::kGridChunk;
  const int64_t b = task / chunks, p0 = (task % chunks) * GridJob::kGridChunk;
  const int64_t count = std::min(GridJob::kGridChunk, job.points - p0), channels = job.channels, plane = job.plane;
  thread_local PointTaps<A, D> taps;
  thread_local std::vector<A> gathered;
  const ScratchScope scope(taps, gathered);
  gathered.resize(count * channels);
  A* g = gathered.data();
  ChunkTaps<T, D, K>(job, b, p0, count, &taps);
  Transpose(static_cast<const T*>(job.grad_output) + b * channels * job.points + p0, job.points, g, channels, channels,
            count, LoadAs<A>());
  TapsChunk<false, true, T, D, K>(taps, g, count, channels, nullptr,
                                  static_cast<const A*>(job.input_channels_last) + b * plane * channels,
                                  static_cast<T*>(job.grad_grid) + (b * job.points + p0) * D);
}

// Every grid task for one point layout: D spatial axes, K taps per point.
template <typename T, int D, int K>
void GridTask(GridJob::Task kind, const GridJob& job, int64_t task) {
  switch (kind) {
    case GridJob::Task::kTranspose: return GridTranspose<T>(job, task);
    case GridJob::Task::kInput:
      if constexpr (K == 1)
        if (job.nearest_first != nullptr) return NearestInputTask<T, D>(job, task);
      return GridInputTask<T, D, K>(job, task);
    case GridJob::Task::kGrid: return GridGridTask<T, D, K>(job, task);
    case GridJob::Task::kBoth: return GridBothTask<T, D, K>(job, task);
    case GridJob::Task::kNearestTaps:
      if constexpr (K == 1) return NearestTapsTask<T, D>(job, task);
      else return;
    case GridJob::Task::kNearestChannelsLast:
#if RG_ISA_LEVEL == 2
      if constexpr (std::is_same_v<T, float> && K == 1) return NearestChannelsLastTask(job);
#endif
      return;
  }
}

template <typename T>
void Grid(GridJob::Task kind, const GridJob& job, int64_t task) {
  if (job.spatial == 3) {
    if (job.taps == 1) return GridTask<T, 3, 1>(kind, job, task);
    return GridTask<T, 3, 8>(kind, job, task);
  }
  if (job.taps == 1) return GridTask<T, 2, 1>(kind, job, task);
  if (job.taps == 4) return GridTask<T, 2, 4>(kind, job, task);
  return GridTask<T, 2, 16>(kind, job, task);
}

}  // namespace

const GridKernels& GridTable() {
  static const GridKernels kernels{Grid<float>, Grid<double>, Grid<Float16>, Grid<BFloat16>};
  return kernels;
}

}  // namespace RG_ISA_NAMESPACE
}  // namespace rg
