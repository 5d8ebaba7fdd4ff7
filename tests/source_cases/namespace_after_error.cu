// Reduced from xgboost src/predictor/gpu_predictor.cu (DeviceAdapterLoader, PredictKernel):
// tree-sitter's error recovery at the macro before the constructor closes the namespace.
#include <utility>
#define XGBOOST_DEV_INLINE __device__ __forceinline__

namespace xgboost::predictor {
template <typename Batch, typename EncAccessor>
struct DeviceAdapterLoader {
  Batch batch_;
  EncAccessor acc_;
  unsigned n_features;
  float* smem;
  bool use_shared;
  float is_valid;

  XGBOOST_DEV_INLINE DeviceAdapterLoader(Batch&& batch, bool use_shared, unsigned n_features,
                                         unsigned long long n_samples, float missing,
                                         EncAccessor&& acc)
      : batch_{std::move(batch)},
        acc_{std::forward<EncAccessor>(acc)},
        n_features{n_features},
        use_shared{use_shared},
        is_valid{missing} {
  }

  __device__ float GetElement(unsigned long ridx, unsigned long fidx) const {
    if (use_shared) {
      return smem[threadIdx.x * n_features + fidx];
    }
    auto value = this->batch_[ridx * n_features + fidx];
    return value;
  }
};

__global__ void PredictKernel(float const* data, float* out, int n) {
  DeviceAdapterLoader<float const*, int> loader{std::move(data), false, 4u, 0ull, 0.f, 0};
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = loader.GetElement(i, 0);
}

namespace {
__global__ void Other(float* out) { out[threadIdx.x] = '}'; }
}  // namespace

inline namespace v1 {
__global__ void Inl(float* out) { out[0] = 1.f; }
}  // namespace v1

void Predict(float const* data, float* out, int n) {
  PredictKernel<<<(n + 127) / 128, 128>>>(data, out, n);
}

__global__ void Last(float* out) { out[0] = 2.f; }
}  // namespace xgboost::predictor
