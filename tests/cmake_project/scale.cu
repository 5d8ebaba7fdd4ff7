namespace demo {
__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
}  // namespace demo
void scale(float* x, float a, int n) { demo::scale<<<(n + 127) / 128, 128>>>(x, a, n); }
