#!/usr/bin/env bash
# tests/check_omp_if.sh SOURCE_ROOT
#
# An OpenMP `if` clause without a directive-name modifier on a combined construct
# that contains `simd` (`parallel for simd ... if (n >= MIN)`) applies to the simd
# construct too (OpenMP 5.0), so below MIN the loop runs unvectorised: GCC 12 took 8-12
# us for a ReLU over 14,224 floats instead of 1.5 (core/cpu_backend.c, CPU_PAR_MIN).
# Such clauses must name their construct: `if (parallel: ...)`. Exit 1, with each
# offending pragma, when one does not. A pragma continued over lines (a trailing
# backslash) is read as one line, as the compiler reads it; the check first finds the
# clauses of its own samples below (one on a continuation line), so a matcher that
# misses them fails here rather than passing every source.
set -u
src=${1:?usage: check_omp_if.sh SOURCE_ROOT}
# scan FILE...: FILE:LINE:PRAGMA for each offending pragma (its continuation lines joined)
scan() {
  awk '
    function report(t) {
      if (t ~ /^[ \t]*#[ \t]*pragma[ \t]+omp([^A-Za-z0-9_]|$)/ && t ~ /(^|[^A-Za-z0-9_])simd([^A-Za-z0-9_]|$)/ &&
          t ~ /(^|[^A-Za-z0-9_])if[ \t]*\(/ && t !~ /(^|[^A-Za-z0-9_])if[ \t]*\([ \t]*(parallel|simd)[ \t]*:/)
        print FILENAME ":" start ":" t
    }
    FNR == 1 { if (cont) report(text); cont = 0 }
    {
      line = $0
      if (!cont) { text = ""; start = FNR }
      if (line ~ /\\[ \t]*$/) { sub(/\\[ \t]*$/, " ", line); text = text line; cont = 1; next }
      text = text line; cont = 0
      report(text)
    }
    END { if (cont) report(text) }' "$@"
}
self=$(mktemp -d)
trap 'rm -rf "$self"' EXIT
cat >"$self/bad.c" <<'EOF'
#pragma omp parallel for simd num_threads(nt) schedule(static) if (n >= 16384)
#pragma omp parallel for simd num_threads(nt) schedule(static) \
    if(n >= 16384)
EOF
cat >"$self/good.c" <<'EOF'
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= 16384)
#pragma omp parallel for simd num_threads(nt) \
    schedule(static) if (parallel : n >= 16384)
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= 16384)
EOF
if [ "$(scan "$self/bad.c" | wc -l)" -ne 2 ] || [ -n "$(scan "$self/good.c")" ]; then
  echo "check_omp_if: the matcher misreads its own samples (bad: 2 expected, good: none):" >&2
  scan "$self/bad.c" "$self/good.c" >&2
  exit 1
fi
files=$(grep -rlE --include='*.c' --include='*.h' --include='*.cu' '#[[:space:]]*pragma[[:space:]]+omp' "$src" \
  --exclude-dir=build --exclude-dir='build-*' --exclude-dir=.git)
n=$(printf '%s' "$files" | grep -c .)
[ "$n" -gt 0 ] || { echo "check_omp_if: no OpenMP pragma found under $src (wrong folder?)" >&2; exit 1; }
hits=$(printf '%s\n' "$files" | while IFS= read -r f; do scan "$f"; done)
if [ -n "$hits" ]; then
  echo "check_omp_if: an unmodified if clause on a construct with simd (write if (parallel: ...)):" >&2
  echo "$hits" >&2
  exit 1
fi
echo "check_omp_if: no unmodified if clause on a simd construct in $n files with OpenMP pragmas"
