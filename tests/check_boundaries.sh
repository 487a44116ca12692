#!/usr/bin/env bash
# tests/check_boundaries.sh CC MODULE_VIEWS INCLUDE_ROOT SOURCE_ROOT
#
# The module boundaries of cmake/CapgnnModule.cmake, checked with the compiler the
# build uses and the include directories the build gives each module
# (MODULE_VIEWS, written by capgnn_module_views: per module, what ARCHITECTURE.md
# lets it use, the directories its sources compile with, and those its users get):
#  1. every public header compiles on its own with what its module's users get (so
#     no public header leans on a private one, or on an include its user happens
#     to have);
#  2. no module sees the public headers of a module it may not use (directly or
#     through a module it may use): the target links match the dependency table;
#  3. every private header (<module>/*_internal.h) is found from its own module and
#     refused from every other one.
# "Found" and "refused" are read from the compiler's "<header>: No such file"
# message for exactly the probed header, so a failure for any other reason (a
# system header the probe does not provide) does not count either way.
# Exit 0 when all hold; otherwise each failure is printed and the status is 1.
set -u
cc=$1 views=$2 inc=$3 src=$4
tmp=$(mktemp -d /tmp/capgnn-boundaries.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0 checks=0
declare -A uses cflags iflags
modules=()
while IFS='|' read -r m u cdirs idirs; do
  [ -n "$m" ] || continue
  modules+=("$m")
  uses[$m]=$u
  cflags[$m]=$(tr ':' '\n' <<<"$cdirs" | sed '/^$/d; s/^/-I/' | tr '\n' ' ')
  iflags[$m]=$(tr ':' '\n' <<<"$idirs" | sed '/^$/d; s/^/-I/' | tr '\n' ' ')
done <"$views"
[ ${#modules[@]} -gt 0 ] || { echo "no modules in $views"; exit 1; }

# allowed(m): m and everything it may use, transitively
allowed() {
  local seen=" " x todo=($1)
  while [ ${#todo[@]} -gt 0 ]; do
    x=${todo[0]}
    todo=("${todo[@]:1}")
    [[ "$seen" == *" $x "* ]] && continue
    seen="$seen$x "
    todo+=(${uses[$x]:-})
  done
  echo "$seen"
}

# probe HEADER FLAGS...: compile `#include "HEADER"`; 0 = compiled, 1 = header not
# found, 2 = found but something else failed; the compiler's output is in $tmp/out
probe() {
  local h=$1; shift
  printf '#include "%s"\n' "$h" >"$tmp/probe.c"
  # shellcheck disable=SC2068
  if "$cc" -std=gnu11 -fsyntax-only $@ "$tmp/probe.c" >"$tmp/out" 2>&1; then return 0; fi
  grep -q "$h: No such file" "$tmp/out" && return 1
  return 2
}
report() { echo "FAIL: $*"; sed 's/^/    /' "$tmp/out"; fail=1; }

for m in "${modules[@]}"; do
  # 1. public headers alone, as a user of m sees them
  for h in "$inc/public/$m/$m"/*.h; do
    [ -e "$h" ] || continue
    rel=$m/$(basename "$h")
    checks=$((checks + 1))
    probe "$rel" ${iflags[$m]} || report "public header $rel does not compile on its own"
  done
  ok=$(allowed "$m")
  for n in "${modules[@]}"; do
    [ "$n" = "$m" ] && continue
    # 2. the public headers of a module m may not use are out of sight
    first=$(ls "$inc/public/$n/$n" 2>/dev/null | head -1)
    if [ -n "$first" ] && [[ "$ok" != *" $n "* ]]; then
      checks=$((checks + 1))
      probe "$n/$first" ${cflags[$m]}
      [ $? -eq 1 ] || report "module $m sees $n/$first, but may not use $n (its USES: ${uses[$m]:-none})"
    fi
    # 3. another module's private headers are refused
    for h in "$src/$n"/*_internal.h; do
      [ -e "$h" ] || continue
      rel=$n/$(basename "$h")
      checks=$((checks + 1))
      probe "$rel" ${cflags[$m]}
      [ $? -eq 1 ] || report "module $m can include $n's private header $rel"
    done
  done
  # 3. its own private headers are found
  for h in "$src/$m"/*_internal.h; do
    [ -e "$h" ] || continue
    checks=$((checks + 1))
    probe "$m/$(basename "$h")" ${cflags[$m]}
    [ $? -ne 1 ] || report "$m/$(basename "$h") is not found from its own module"
  done
done
echo "check_boundaries: $checks checks over modules: ${modules[*]}"
exit $fail
