#!/usr/bin/env bash
# Runs build/bin/bench_blas on every BLAS library Debian installs at its usual path
# (those present; install them with the packages named in README, issue #14 item 4).
# Extra arguments go to bench_blas (e.g. --threads 2 --rounds 2 --json out.jsonl).
# usage: benchmarks/bench_blas.sh [-b BUILD_DIR] [bench_blas options...]
set -euo pipefail
build=build
if [ "${1:-}" = "-b" ]; then build=$2; shift 2; fi
d=/usr/lib/x86_64-linux-gnu
libs=()
add() { [ -e "$2" ] && libs+=(--lib "$1=$2") || echo "bench_blas.sh: $1 not installed ($2), skipped" >&2; }
add openblas-pthread "$d/openblas-pthread/libopenblas.so.0"   # libopenblas0-pthread
add openblas-openmp "$d/openblas-openmp/libopenblas.so.0"     # libopenblas0-openmp
add blis-pthread "$d/blis-pthread/libblis.so.4"               # libblis4-pthread
add blis-openmp "$d/blis-openmp/libblis.so.4"                 # libblis4-openmp
add mkl "$d/libmkl_rt.so"                                     # libmkl-rt (non-free)
add onednn "$d/libdnnl.so.2"                                  # libdnnl2
exec "$build/bin/bench_blas" "${libs[@]}" "$@"
