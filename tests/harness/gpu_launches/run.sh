#!/bin/bash
# On the GPU: profile the first launch of every kernel of each program build.sh made, with
# Nsight Compute's launch and occupancy sections, into one CSV.
#   tests/harness/gpu_launches/run.sh OUT CSV
out=$(realpath "$1"); csv=$(realpath -m "$2")
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
: > "$csv"
for bin in "$out"/bin/*; do
  name=$(basename "$bin")
  mkdir -p "$out/run/$name" && cd "$out/run/$name" || continue
  [ -d "$out/data/$name" ] && cp -r "$out/data/$name/." .
  echo "=== $name" >> "$csv"
  timeout -s INT 45 ncu --section LaunchStats --section Occupancy --kernel-id ::regex:.:1 \
      --csv --page details "$bin" < /dev/null 2>&1 | grep '^"' >> "$csv"
  echo "$name rc=${PIPESTATUS[0]}"
done
