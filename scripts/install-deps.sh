#!/usr/bin/env bash
# Installs what building and testing capgnn needs on Debian 12 / Ubuntu (run as root).
# The CUDA toolkit is optional and not installed here: when nvcc is found the CUDA
# backend is built too.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libopenmpi-dev openmpi-bin libmetis-dev libopenblas-dev libhwloc-dev zlib1g-dev
      libcjson-dev libinih-dev libcmocka-dev libzip-dev
      libdnnl2                         # oneDNN: the CPU GEMM when present (loaded at run time; else OpenBLAS)
      procps                           # pgrep, in the multi-rank interrupt test
      python3-numpy python3-scipy    # python3 only writes test fixtures; capgnn never needs it
      python3-jsonschema             # tests: profiles against docs/profile.schema.json
      chromium)                      # tests: the profile report in a real headless browser
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "capgnn dependencies: ok"
