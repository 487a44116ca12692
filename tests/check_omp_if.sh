#!/usr/bin/env bash
# tests/check_omp_if.sh SOURCE_ROOT
#
# An OpenMP `if` clause without a directive-name modifier on a combined construct
# that contains `simd` (`parallel for simd ... if (n >= MIN)`) applies to the simd
# construct too (OpenMP 5.0), so below MIN the loop runs unvectorised: GCC 12 took 8-12
# us for a ReLU over 14,224 floats instead of 1.5 (core/cpu_backend.c, CPU_PAR_MIN).
# Such clauses must name their construct: `if (parallel: ...)`. Exit 1, with each
# offending line, when one does not.
set -u
src=${1:?usage: check_omp_if.sh SOURCE_ROOT}
hits=$(grep -rnE --include='*.c' --include='*.h' --include='*.cu' '^[[:space:]]*#[[:space:]]*pragma[[:space:]]+omp\b.*\bsimd\b' "$src" \
  --exclude-dir=build --exclude-dir='build-*' --exclude-dir=.git |
  grep -E '\bif[[:space:]]*\(' | grep -vE '\bif[[:space:]]*\([[:space:]]*(parallel|simd)[[:space:]]*:')
if [ -n "$hits" ]; then
  echo "check_omp_if: an unmodified if clause on a construct with simd (write if (parallel: ...)):" >&2
  echo "$hits" >&2
  exit 1
fi
n=$(grep -rlE --include='*.c' --include='*.h' '#[[:space:]]*pragma[[:space:]]+omp' "$src" --exclude-dir=build --exclude-dir='build-*' --exclude-dir=.git | wc -l)
[ "$n" -gt 0 ] || { echo "check_omp_if: no OpenMP pragma found under $src (wrong folder?)" >&2; exit 1; }
echo "check_omp_if: no unmodified if clause on a simd construct in $n files with OpenMP pragmas"
