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
rm -rf .gpu-carry/bin # never an older copy of a program that was not rebuilt
mkdir -p .gpu-carry/bin
# the programs gpu-verify.sh runs, and every test labelled gpu (its `tests` part);
# stripped: the device tool carries at most 64 MiB in all
for p in capgnn bench_epoch kernel_lab test_cuda_ops test_cuda_attn test_gpu_train test_gpu_comm \
         test_gpu_overlap test_jaca_gpu test_rapa_gpu_bench; do
  if [ ! -x "build-gpu/bin/$p" ]; then
    echo "gpu-carry: build-gpu/bin/$p was not built" >&2
    exit 1
  fi
  cp "build-gpu/bin/$p" .gpu-carry/bin/ && strip .gpu-carry/bin/$p
done
echo "$(git rev-parse HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')" > .gpu-carry/COMMIT
ls -la .gpu-carry/bin
# the run-time libraries the GPU host lacks (../shared/GPU_HOST.md): downloaded once
mkdir -p .gpu-deps
if ! ls .gpu-deps/*.deb >/dev/null 2>&1; then
  (cd .gpu-deps && apt-get download libmetis5 libcjson1 libinih1 libcmocka0 libzip4) ||
    echo "gpu-carry: apt-get download failed; put the .deb files into .gpu-deps/ by hand" >&2
fi
echo "gpu-carry: carry .gpu-carry and .gpu-deps, $(du -shc .gpu-carry .gpu-deps | tail -1 | cut -f1) in all (the device tool's limit: 64 MiB)"
echo "gpu-carry: built for sm_$arch from $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
