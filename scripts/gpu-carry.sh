#!/usr/bin/env bash
# Prepare a GPU run from a development machine that has the CUDA toolkit but no GPU:
# a Release build for the H100 (sm_90) in build-gpu/, and the programs that
# scripts/gpu-verify.sh runs copied into .gpu-carry/bin (git-ignored). Send
# .gpu-carry and .gpu-deps (the Debian packages the GPU host lacks, see
# ../shared/GPU_HOST.md) with the working tree, then on the GPU host:
#   bash scripts/gpu-verify.sh .gpu-carry OUT perf,tiled     # then: ... correct
# Usage: scripts/gpu-carry.sh [CUDA_ARCHITECTURES (default 90)]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-90}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCAPGNN_WITH_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$arch" -DCAPGNN_WERROR=ON >/dev/null
cmake --build build-gpu -j "$(nproc)"
mkdir -p .gpu-carry/bin
for p in capgnn bench_epoch kernel_lab test_cuda_ops test_gpu_train test_gpu_comm; do
  [ -x "build-gpu/bin/$p" ] && cp "build-gpu/bin/$p" .gpu-carry/bin/
done
ls -la .gpu-carry/bin
missing=$(ls .gpu-deps/*.deb 2>/dev/null | wc -l)
[ "$missing" -gt 0 ] || echo "gpu-carry: .gpu-deps/ has no .deb files; see ../shared/GPU_HOST.md" >&2
echo "gpu-carry: built for sm_$arch from $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
