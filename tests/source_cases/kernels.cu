// Kernels in every place a real code base puts them. Compiles with nvcc -arch=sm_90.
#include <cuda_runtime.h>

#define BLOCK 256
#define MIN_BLOCKS (BLOCK / 128)
constexpr int kThreads = 128;

/* __global__ void in_a_comment() {} */
const char* text = "__global__ void in_a_string() {}";

__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) plain(float* out) { out[threadIdx.x] = 1.0f; }

__global__ void proto(int n);

namespace outer {
namespace inner {
__global__ void __launch_bounds__(kThreads) nested(int* p) { p[threadIdx.x] = 0; }
}  // namespace inner

#ifdef OCCLINT_PARSE_ONLY   // nvcc rejects kernels as class members; occlint still lists them
struct Ops {
    static __global__ void member(int* p) { p[0] = 1; }
};
#endif
}  // namespace outer

namespace {
__global__ void hidden(int* p) { p[0] = 2; }
}

extern "C" __global__ void c_linkage(int* p) { p[0] = 3; }

extern "C" {
__global__ void c_block(int* p) { p[0] = 4; }
}

template <int THREADS, typename T = float>
__global__ void __launch_bounds__(THREADS, 2) templated(T* p) { p[threadIdx.x] = T(0); }

__global__ __maxnreg__(40) void capped(int* p) { p[0] = 5; }

__global__ void __cluster_dims__(2, 1, 1) clustered(int* p) { p[0] = 6; }

#if defined(USE_WIDE)
__global__ void __launch_bounds__(512) branchy(int* p) { p[0] = 7; }
#else
__global__ void __launch_bounds__(256) branchy(int* p) { p[0] = 8; }
#endif

__global__ void proto(int n) { (void)n; }

void host(float* f, int* p, int n) {
    plain<<<1, BLOCK>>>(f);
    outer::inner::nested<<<1, kThreads>>>(p);
#ifdef OCCLINT_PARSE_ONLY
    outer::Ops::member<<<1, 1>>>(p);
#endif
    hidden<<<1, 1>>>(p);
    c_linkage<<<1, 1>>>(p);
    c_block<<<1, 1>>>(p);
    templated<256><<<1, 256>>>(f);
    templated<128, int><<<1, 128>>>(p);
    capped<<<1, 1>>>(p);
    clustered<<<2, 1>>>(p);
    branchy<<<1, 1>>>(p);
    proto<<<1, 1>>>(n);
}
