// GridSampler2DGrad and GridSampler3DGrad: aten::grid_sampler_2d_backward and grid_sampler_3d_backward,
// one kernel templated on the number of spatial axes D.
//
// Along each axis a grid point reads 1 (nearest), 2 (bilinear) or 4 (bicubic, 2-D only) taps; the
// point reads the product of its axes' taps (K = taps^D; grid_coordinates.h, the rules of
// opset/_coords.py). Both passes run channels-last so the inner loops run over a contiguous run
// of channels (grid_kernels.cc), neither with atomics:
//  - grad_input scatters: a task owns a block of channels of one batch item and walks every grid
//    point in order, so each element is summed in aten's order, whatever the thread count;
//  - grad_grid gathers: a task owns a chunk of grid points; the input is first copied
//    channels-last (O(input) memory, once per run).
#include <algorithm>
#include <atomic>
#include <vector>

#include "grid_coordinates.h"
#include "kernel_common.h"
#include "kernels.h"
#include "simd.h"

namespace rg {
namespace {

// ----------------------------------------------------------------------------- kernel

// The ops' names, inputs and modes; everything else is shared.
template <int D> struct GridNames;
template <> struct GridNames<2> {
  static constexpr const char* kName = "GridSampler2DGrad";
  static constexpr int kSinceVersion = 1;
  static constexpr const char* kInputs[3] = {"grad_output", "input", "grid"};
  static constexpr const char* kLayouts[3] = {"[N, C, H_out, W_out]", "[N, C, H_in, W_in]", "[N, H_out, W_out, 2]"};
  static constexpr const char* kModes = "'bilinear', 'nearest', 'bicubic'";
  static constexpr const char* kAxes = "(x, y)";
};
template <> struct GridNames<3> {
  static constexpr const char* kName = "GridSampler3DGrad";
  static constexpr int kSinceVersion = 2;
  static constexpr const char* kInputs[3] = {"grad", "x", "grid"};
  static constexpr const char* kLayouts[3] = {"[N, C, D_out, H_out, W_out]", "[N, C, D_in, H_in, W_in]",
                                              "[N, D_out, H_out, W_out, 3]"};
  static constexpr const char* kModes = "'bilinear', 'nearest'";
  static constexpr const char* kAxes = "(x, y, z)";
};

template <int D>
struct GridSamplerGrad {
  using Names = GridNames<D>;
  static constexpr const char* kName = Names::kName;
  static constexpr int kSinceVersion = Names::kSinceVersion;
  static constexpr size_t kInputs = 3;
  static constexpr size_t kOutputs = 2;
  static constexpr bool kOptionalOutputs = true;

  const OrtApi* api;
  std::string prefix;
  Interpolation mode = Interpolation::kBilinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;

  GridSamplerGrad(const OrtApi* api_, const OrtKernelInfo* info) : api(api_) {
    Attributes attrs(api, info, kName);
    prefix = attrs.Prefix();
    const std::string interpolation = attrs.String("interpolation_mode", "bilinear");
    if (interpolation == "bilinear") mode = Interpolation::kBilinear;
    else if (interpolation == "nearest") mode = Interpolation::kNearest;
    else if (interpolation == "bicubic" && D == 2) mode = Interpolation::kBicubic;
    else throw OpError(prefix + "attribute 'interpolation_mode' must be one of " + Names::kModes + ", got '" +
                       interpolation + "'");
    const std::string pad = attrs.String("padding_mode", "zeros");
    if (pad == "zeros") padding = Padding::kZeros;
    else if (pad == "border") padding = Padding::kBorder;
    else if (pad == "reflection") padding = Padding::kReflection;
    else throw OpError(prefix + "attribute 'padding_mode' must be one of 'zeros', 'border', 'reflection', got '" + pad +
                       "'");
    const int64_t corners = attrs.Int("align_corners", 0);
    if (corners != 0 && corners != 1)
      throw OpError(prefix + "attribute 'align_corners' must be 0 or 1, got " + std::to_string(corners));
    align_corners = corners == 1;
  }

  void CheckDim(int a, const Tensor& at, int a_axis, int b, const Tensor& bt, int b_axis) const {
    if (at.dims[a_axis] != bt.dims[b_axis])
      throw OpError(prefix + "dimension " + std::to_string(a_axis) + " of '" + Names::kInputs[a] + "' (" +
                    std::to_string(at.dims[a_axis]) + ") must equal dimension " + std::to_string(b_axis) + " of '" +
                    Names::kInputs[b] + "' (" + std::to_string(bt.dims[b_axis]) + ")");
  }

  // The aclnn 161002 list.
  void Validate(const Tensor& grad_output, const Tensor& input, const Tensor& grid) const {
    const Tensor* tensors[3] = {&grad_output, &input, &grid};
    for (int k = 0; k < 3; ++k) {
      if (tensors[k]->dims.size() != 2 + D)
        throw OpError(prefix + "input '" + Names::kInputs[k] + "' must be " + std::to_string(2 + D) + "-D " +
                      Names::kLayouts[k] + ", got shape " + ShapeString(tensors[k]->dims));
      if (tensors[k]->type != grad_output.type)
        throw OpError(prefix + "input '" + Names::kInputs[k] + "' has dtype " + TypeName(tensors[k]->type) + " but '" +
                      Names::kInputs[0] + "' has " + TypeName(grad_output.type) + "; all inputs must share one dtype");
    }
    static const char* axes[] = {"D", "H", "W"};
    for (int a = 0; a < D; ++a)
      if (input.dims[2 + a] <= 0)
        throw OpError(prefix + "input '" + Names::kInputs[1] + "' must have a positive " + axes[3 - D + a] +
                      "_in (dimension " +
                      std::to_string(2 + a) + "), got shape " + ShapeString(input.dims));
    if (grid.dims[1 + D] != D)
      throw OpError(prefix + "input 'grid' must have last dimension " + std::to_string(D) + " " + Names::kAxes +
                    ", got shape " + ShapeString(grid.dims));
    CheckDim(2, grid, 0, 1, input, 0);
    CheckDim(0, grad_output, 0, 1, input, 0);
    CheckDim(0, grad_output, 1, 1, input, 1);
    for (int axis = 2; axis < 2 + D; ++axis) CheckDim(0, grad_output, axis, 2, grid, axis - 1);
  }

  void Compute(OrtKernelContext* context) {
    const Tensor grad_output = Input(api, context, 0), input = Input(api, context, 1), grid = Input(api, context, 2);
    Validate(grad_output, input, grid);
    DispatchFloat(grad_output.type, prefix, Names::kInputs[0], [&](auto tag) {
      using T = decltype(tag);
      T* grad_input = static_cast<T*>(Output(api, context, 0, input.dims));
      T* grad_grid = static_cast<T*>(Output(api, context, 1, grid.dims));
      const T* go = static_cast<const T*>(grad_output.data);
      const T* image = static_cast<const T*>(input.data);
      const T* coords = static_cast<const T*>(grid.data);
      if (input.dims[0] == 0 || input.dims[1] == 0) {  // nothing to scatter; the grid gradient sums no channels
        if (grad_grid) std::fill(grad_grid, grad_grid + grid.Count(), Store<T>(AccT<T>(0)));
        return;
      }
      GridJob job;
      job.spatial = D;
      job.taps = mode == Interpolation::kNearest ? 1 : mode == Interpolation::kBilinear ? (D == 2 ? 4 : 8) : 16;
      job.padding = padding;
      job.align_corners = align_corners;
      job.batch = input.dims[0];
      job.channels = input.dims[1];
      job.plane = 1;
      job.points = 1;
      for (int a = 0; a < D; ++a) {
        job.sizes[a] = input.dims[2 + a];
        job.plane *= input.dims[2 + a];
        job.points *= grid.dims[1 + a];
      }
      job.grad_output = go;
      job.input = image;
      job.grid = coords;
      job.grad_input = grad_input;
      if (grad_grid && mode == Interpolation::kNearest) {  // piecewise constant: the grid gradient is zero
        std::fill(grad_grid, grad_grid + grid.Count(), Store<T>(AccT<T>(0)));
        grad_grid = nullptr;
      }
      job.grad_grid = grad_grid;
      // A grad_input task takes a block of channels: all of them when there are batch items enough for the
      // threads (the taps are computed once per point and block), else blocks of at least 16 (one AVX-512
      // vector) until there are about 8 tasks; at most 64 (the block's pixels stay in L2).
      const int64_t wanted_blocks = std::max<int64_t>(1, (8 + job.batch - 1) / job.batch);
      job.block = std::min<int64_t>(64, std::max<int64_t>((job.channels + wanted_blocks - 1) / wanted_blocks, 16));
      job.block = std::max<int64_t>(1, std::min(job.block, job.channels));
      const GridKernels& kernels = GridSimd();
      constexpr int dtype = DtypeIndex<T>();
      // work of a task, in elements read or written per tap: a point's taps for each channel of its task
      const double point_work = static_cast<double>(job.taps) + 2;
      auto run = [&](GridJob::Task kind, int64_t tasks, double work_per_task) {
        ParallelFor(api, context, static_cast<size_t>(tasks), work_per_task,
                    [&](size_t task) { kernels[dtype](kind, job, static_cast<int64_t>(task)); });
      };
      const double points = static_cast<double>(job.points);
      // Both gradients in one pass per batch item, unless that is one task: one image (N=1) whose grid gradient
      // is large enough to split runs it apart, over point chunks, so that other threads share it (at the cost of
      // the separate pass and its channels-last copy: benchmarks/cutover.py measures both).
      const bool split_one_image = job.batch == 1 && job.GridTasks() > 1 &&
                                   points * job.channels * point_work >= 2 * kMinTaskWork;
      if (grad_input && grad_grid && job.block == job.channels && !split_one_image)
        return run(GridJob::Task::kBoth, job.batch, 2 * points * job.channels * point_work);
      constexpr int64_t kInt32 = int64_t{1} << 31;
      if (grad_input && mode == Interpolation::kNearest && job.plane < kInt32 - 1 && job.points < kInt32) {
        // Nearest: the gather tables once per batch item, then about 32 blocks of channels (no vectors over
        // channels here, so any block size). With one task per item (8 for the benchmark's 8x64x64x64) a pool thread
        // that woke late (on a busy machine) left whole items to the other. The tables are the calling thread's
        // scratch for the run (kernel_common.h ScratchScope).
        // AVX-512 float32: runs of 16 channels channels-last instead (grid_kernels.cc NearestChannelsLastTask),
        // where every row is whole 64-byte lines and a task's two sums of a plane (64 bytes a pixel) fit the scratch
        // cap; not with fewer than half as many points as pixels, where writing the planes from the sums costs more
        // than the gathers save, nor with rows that split lines (both measured slower than the gathers)
        job.nearest_channels_last = std::is_same_v<T, float> && ActiveIsa() == Isa::kAvx512 &&
                                    job.channels % 16 == 0 && job.plane % 16 == 0 && job.points % 16 == 0 &&
                                    2 * job.points >= job.plane &&
                                    2 * (job.plane + 1) * 64 <= static_cast<int64_t>(kScratchCapBytes);
        thread_local std::vector<int32_t> point_pixel, first, pixel, point, bound;
        thread_local std::vector<int64_t> layers;
        const ScratchScope scope(point_pixel, first, pixel, point, bound, layers);
        point_pixel.resize(job.batch * job.points);
        layers.resize(job.batch);
        job.nearest_point_pixel = point_pixel.data();
        job.nearest_layers = layers.data();
        if (!job.nearest_channels_last) {  // the gathers' layer tables; the channels-last sums read none
          first.resize(job.batch * (job.plane + 1));
          for (auto* table : {&pixel, &point, &bound}) table->resize(job.batch * (job.points + 1));
          job.nearest_first = first.data();
          job.nearest_pixel = pixel.data();
          job.nearest_point = point.data();
          job.nearest_bound = bound.data();
        }
        run(GridJob::Task::kNearestTaps, job.batch, points * (2 * D + 2));
        if (job.nearest_channels_last) {
          std::atomic<int64_t> queue{0};
          job.nearest_queue = &queue;
          const int64_t runs = job.batch * job.channels / 16, tasks = std::min<int64_t>(runs, 64);
          const double work = static_cast<double>(runs) / tasks * points * 16 * point_work;
          return run(GridJob::Task::kNearestChannelsLast, tasks, work);
        }
        const int64_t blocks = std::min<int64_t>(job.channels, (32 + job.batch - 1) / job.batch);
        job.block = (job.channels + blocks - 1) / blocks;
        run(GridJob::Task::kInput, job.InputTasks(), points * job.block * point_work);
        return;
      }
      if (grad_input) run(GridJob::Task::kInput, job.InputTasks(), points * job.block * point_work);
      if (grad_grid) {
        std::vector<AccT<T>> channels_last(job.batch * job.plane * job.channels);
        job.input_channels_last = channels_last.data();
        run(GridJob::Task::kTranspose, job.InputTasks(), 2.0 * job.plane * job.block);
        run(GridJob::Task::kGrid, job.GridTasks(),
            static_cast<double>(std::min(points, double(GridJob::kGridChunk))) * job.channels * point_work);
      }
    });
  }
};

}  // namespace

OpList GridSamplerGradOps() {
  return JoinOps({MakeTypedOps<GridSamplerGrad<2>>(), MakeTypedOps<GridSamplerGrad<3>>()});
}

}  // namespace rg
