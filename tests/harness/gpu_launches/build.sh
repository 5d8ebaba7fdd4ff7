#!/bin/bash
# Build cuda-samples programs for sm_90 as their CMake build compiles them (-rdc=true, -lineinfo,
# --extended-lambda, C++17), shared cudart, with each sample's data folder beside it; no GPU needed.
#   tests/harness/gpu_launches/build.sh CUDA_SAMPLES OUT [NAME...]
set -u
src=$(realpath "$1"); out=$(realpath -m "$2"); shift 2
names=${*:-"dct8x8 HSOpticalFlow sortingNetworks eigenvalues histogram dmmaTensorCoreGemm simpleHyperQ simpleVoteIntrinsics bf16TensorCoreGemm tf32TensorCoreGemm warpAggregatedAtomicsCG fp16ScalarProduct convolutionSeparable scan shfl_scan cudaTensorCoreGemm graphMemoryNodes immaTensorCoreGemm newdelete simpleCudaGraphs lineOfSight fastWalshTransform quasirandomGenerator asyncAPI clock mergeSort simpleAtomicIntrinsics simpleAttributes simpleCallback simpleCooperativeGroups simplePrintf simpleZeroCopy systemWideAtomics template vectorAdd inlinePTX scalarProd BlackScholes SobolQRNG binomialOptions simpleAssert cdpBezierTessellation simplePitchLinearTexture convolutionTexture graphConditionalNodes"}
nvcc=${NVCC:-nvcc}
mkdir -p "$out/bin" "$out/data"
cd "$src"
for name in $names; do
  d=$(find Samples -maxdepth 2 -type d -name "$name" | head -1)
  [ -n "$d" ] || { echo "$name: not found"; continue; }
  "$nvcc" -std=c++17 -lineinfo --extended-lambda -rdc=true -arch=sm_90 -ICommon -I"$d" \
      "$d"/*.cu $(ls "$d"/*.cpp 2>/dev/null) -o "$out/bin/$name" -cudart shared -lcudadevrt \
      > "$out/$name.log" 2>&1
  echo "$name rc=$?"
  [ -d "$d/data" ] && mkdir -p "$out/data/$name/data" && cp -r "$d/data/." "$out/data/$name/data/"
done
