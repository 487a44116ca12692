#!/usr/bin/env bash
# tests/check_boundaries.sh CC INCLUDE_ROOT SOURCE_ROOT
#
# The module boundaries of cmake/CapgnnModule.cmake, checked with the compiler the
# build uses and the include folders it gives each module (INCLUDE_ROOT is the
# build's include/ folder: public/ and private/<module>/):
#  1. every public header compiles on its own, seen as any module sees it (so no
#     public header leans on a private one or on an include its user happens to have);
#  2. every private header (<module>/*_internal.h) is found from its own module and
#     refused, with "No such file or directory" naming exactly that header, from
#     every other module.
# Exit 0 when all hold; otherwise each failure is printed and the exit status is 1.
set -u
cc=$1 inc=$2 src=$3
pub=$inc/public
tmp=$(mktemp -d /tmp/capgnn-boundaries.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0 checks=0
modules=$(cd "$inc/private" && ls)

compile() { # compile FILE.c FLAGS... -> compiler output in $tmp/out, status returned
  "$cc" -std=gnu11 -fsyntax-only "$@" >"$tmp/out" 2>&1
}

# 1. public headers, alone, from the public view
for h in "$pub"/*/*.h; do
  rel=${h#"$pub"/}
  printf '#include "%s"\n' "$rel" >"$tmp/probe.c"
  checks=$((checks + 1))
  if ! compile "$tmp/probe.c" -I"$pub"; then
    echo "FAIL: public header $rel does not compile on its own:"; sed 's/^/    /' "$tmp/out"; fail=1
  fi
done

# 2. private headers: reachable from their module, refused from every other one
for m in $modules; do
  for h in "$src/$m"/*_internal.h; do
    [ -e "$h" ] || continue
    rel=$m/$(basename "$h")
    printf '#include "%s"\n' "$rel" >"$tmp/probe.c"
    # its own module finds it (whatever the header itself then needs, e.g. mpi.h)
    checks=$((checks + 1))
    compile "$tmp/probe.c" -I"$pub" -I"$inc/private/$m"
    if grep -q "$rel: No such file" "$tmp/out"; then
      echo "FAIL: $rel is not found from its own module $m"; fail=1
    fi
    for other in $modules; do
      [ "$other" = "$m" ] && continue
      checks=$((checks + 1))
      if compile "$tmp/probe.c" -I"$pub" -I"$inc/private/$other" || ! grep -q "$rel: No such file" "$tmp/out"; then
        echo "FAIL: module $other can include $m's private header $rel:"; sed 's/^/    /' "$tmp/out"; fail=1
      fi
    done
  done
done
echo "check_boundaries: $checks checks over modules: $(echo $modules)"
exit $fail
