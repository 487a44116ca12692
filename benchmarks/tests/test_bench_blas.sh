#!/usr/bin/env bash
# test_bench_blas: bench_blas checks the library it times. On a small problem (600 rows,
# one timed call, one thread), the OpenBLAS capgnn links must pass its check, and a CBLAS
# that drops one term of each dot product (wrong_blas.c) must be reported and make the
# run fail. Not a timing test: no figure is compared with anything.
# usage: test_bench_blas.sh BENCH_BLAS GOOD_LIB WRONG_LIB
set -u
bench=$1 good=$2 wrong=$3
out=$(mktemp)
trap 'rm -f "$out" "$out.json"' EXIT
fail() { echo "test_bench_blas: FAIL: $*"; cat "$out"; exit 1; }

"$bench" --lib "good=$good" --threads 1 --runs 1 --rows 600 --json "$out.json" >"$out" 2>&1 \
  || fail "bench_blas failed on $good"
grep -q "check: ok" "$out" || fail "no 'check: ok' for $good"
grep -q "(OpenBLAS)" "$out" || fail "$good not recognised as OpenBLAS"
[ "$(grep -c '"check_ok":true' "$out.json")" = 1 ] || fail "JSON record missing or not ok"
[ "$(grep -o '"what"' "$out.json" | wc -l)" = 13 ] || fail "JSON record does not hold the 13 shapes"

if "$bench" --lib "wrong=$wrong" --threads 1 --runs 1 --rows 600 >"$out" 2>&1; then
  fail "bench_blas accepted a wrong sgemm"
fi
grep -q "WRONG RESULTS" "$out" || fail "no 'WRONG RESULTS' for the wrong sgemm"
[ "$(grep -c -- '<-- WRONG' "$out")" = 13 ] || fail "not every shape flagged for the wrong sgemm"

if "$bench" --lib "missing=/nonexistent/libblas.so" --threads 1 --runs 1 --rows 100 >"$out" 2>&1; then
  fail "bench_blas accepted a library that does not exist"
fi
grep -q "cannot load" "$out" || fail "no 'cannot load' for a missing library"
echo "test_bench_blas: ok (OpenBLAS checked ok, the wrong sgemm refused on all 13 shapes)"
