"""Register caps: -maxrregcount on a RawKernel, __launch_bounds__ and __maxnreg__ in a RawModule."""
import cupy as cp

HEAVY = r"""
extern "C" __global__ void poly(const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i], c[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) c[k] = x[(i + k * 97) % n];
    double acc = 0.0;
#pragma unroll
    for (int k = 0; k < 16; ++k) acc = acc * v + c[k] * c[15 - k];
    y[i] = acc;
}
"""
capped = cp.RawKernel(HEAVY, "poly", options=("-maxrregcount=32",))
free = cp.RawKernel(HEAVY, "poly")
capped((4096,), (128,), (None, None, 1 << 19))

BOUNDED = r"""
extern "C" __global__ void __launch_bounds__(128, 8) bounded(float* x) {
    x[blockIdx.x * blockDim.x + threadIdx.x] *= 3.0f;
}
extern "C" __global__ void __launch_bounds__(512) wide(float* x, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] = sqrtf(x[i]);
}
extern "C" __global__ void __maxnreg__(40) few(const float4* a, float4* b) {
    float4 v = a[threadIdx.x];
    b[threadIdx.x] = make_float4(v.w, v.z, v.y, v.x);
}
"""
mod = cp.RawModule(code=BOUNDED, options=("--use_fast_math", "-lineinfo"))
