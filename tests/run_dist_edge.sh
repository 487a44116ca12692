#!/usr/bin/env bash
# tests/run_dist_edge.sh MPIEXEC CAPGNN
# Edge cases of the data on P ranks, end to end through `capgnn convert --from edgelist`:
# 1. An edge list with a self-loop, duplicate edges, an edge given one way only, a hub
#    and isolated vertices (the converter repairs the first three) trains on 2 and 3
#    ranks (--partition random: ranks without a halo row, ranks without a train vertex)
#    with the one-rank losses to 1e-5 relative, epoch by epoch.
# 2. A split that the run cannot use (no train vertex; --early-stop without a validation
#    vertex) is found by every rank alike, so the job ends with one "capgnn: error:" line
#    and exit code 1. Before, each rank printed the line and the job ended in MPI_Abort
#    (Open MPI's banner): the check ran after the point where a failure is fatal.
#    --save-best without a validation vertex warns once for the job (was once per rank).
# 3. Input features so large (finite, near FLT_MAX) that the first forward pass overflows:
#    the error says so, and no longer advises a smaller --lr (no update has run yet).
set -u
mpiexec=$1 capgnn=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fail=0
export OMPI_MCA_rmaps_base_oversubscribe=1

# npy FILE DESCR SHAPE BYTES: a .npy file (version 1.0) holding BYTES (printf escapes)
npy() {
  local h="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  while [ $(( (10 + ${#h} + 1) % 64 )) -ne 0 ]; do h="$h "; done
  local n=$(( ${#h} + 1 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))";
    printf '%s\n' "$h"; printf "$4"; } >"$1"
}
i64() { local s="" v; for v in "$@"; do s="$s\\x$(printf %02x $((v & 255)))\\x00\\x00\\x00\\x00\\x00\\x00\\x00"; done; echo "$s"; }
u8() { local s="" v; for v in "$@"; do s="$s\\x$(printf %02x "$v")"; done; echo "$s"; }

# 12 vertices: 0-1 three times (one reversed), a self-loop at 2, a hub 0 to 3..7, 8-9;
# 10 and 11 (and 2) have no edge
printf '0 1\n1 0\n0 1\n2 2\n0 3\n0 4\n0 5\n0 6\n0 7\n8 9\n' >edges.txt
npy Y.npy '<i8' '(12,)' "$(i64 0 1 2 0 1 2 0 1 2 0 1 2)"
npy S.npy '|u1' '(12,)' "$(u8 1 1 1 2 2 3 3 3 1 2 1 3)"
npy Snoval.npy '|u1' '(12,)' "$(u8 1 1 1 3 3 3 3 3 1 3 1 3)"
big=""
for ((k = 0; k < 12 * 64; k++)); do big="$big\\xe6\\xb1\\x61\\x7f"; done # 3e38 (float32)
npy Xbig.npy '<f4' '(12, 64)' "$big"

convert() { # NAME SPLIT FEATURES
  if ! "$capgnn" convert --from edgelist --input edges.txt --features "$3" --labels Y.npy --split "$2" \
       --output "$1.cgr" --quiet >"$1.convert.out" 2>&1; then
    cat "$1.convert.out"; echo "FAIL: capgnn convert of $1"; fail=1
  fi
}
convert edge S.npy identity
convert noval Snoval.npy identity
convert big S.npy Xbig.npy
[ "$fail" -eq 0 ] || exit 1
# no train vertex: the converter refuses such a split, so edge.cgr's split is rewritten
# (its section and CRCs, ../shared/datasets/FORMAT.md), train becoming validation
python3 - <<'PY' || { echo "FAIL: writing notrain.cgr"; exit 1; }
import struct, zlib
b = bytearray(open("edge.cgr", "rb").read())
off, size = struct.unpack_from("<QQ", b, 64 + 24 * 6)
b[off:off + size] = bytes(2 if v == 1 else v for v in b[off:off + size])
struct.pack_into("<I", b, 64 + 24 * 6 + 16, zlib.crc32(b[off:off + size]))
struct.pack_into("<I", b, 252, zlib.crc32(b[:252]))
open("notrain.cgr", "wb").write(b)
PY

common=(--device cpu --threads 1 --no-part-cache --quiet --epochs 6)
# job P NAME ARGS...: exit code in $rc, output in NAME.out
job() {
  local p=$1 name=$2
  shift 2
  timeout -k 5 120 "$mpiexec" --oversubscribe --allow-run-as-root -n "$p" "$capgnn" train "${common[@]}" "$@" \
    >"$name.out" 2>&1
  rc=$?
  if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error|Signal: ' "$name.out"; then
    cat "$name.out"; echo "FAIL: $name crashed"; fail=1
  fi
}
losses() { grep -o '"loss":[^,]*' "$1" | cut -d: -f2; }

# ---- 1. the repaired edge list: P ranks give the one-rank losses ----
for args in "" "--layer0-halo exchange --model sage" "--model gat --heads 2 --hidden 4"; do
  for p in 1 2 3; do
    # shellcheck disable=SC2086 # (args: several words)
    job "$p" "edge$p" --graph edge.cgr --partition random --metrics "edge$p.jsonl" $args
    if [ "$rc" -ne 0 ]; then cat "edge$p.out"; echo "FAIL: edge.cgr on $p ranks ($args): exit code $rc"; fail=1; fi
  done
  for p in 2 3; do
    if ! paste <(losses edge1.jsonl) <(losses "edge$p.jsonl") | awk -v p="$p" '
        { n++; d = $1 - $2; if (d < 0) d = -d; r = d / ($1 < 0 ? -$1 : $1); if (r > w) w = r }
        END { printf "   %d ranks: %d epochs, worst relative loss difference %.3g\n", p, n, w; exit !(n == 6 && w <= 1e-5) }'
    then echo "FAIL: edge.cgr ($args): $p ranks do not give the one-rank losses"; fail=1; fi
  done
done

# ---- 2. a split the run cannot use: one error line, no abort ----
one_error() { # NAME TEXT
  local lines
  lines=$(grep -c 'capgnn: error:' "$1.out")
  echo "== $1: exit code $rc, $lines error line(s)"
  if [ "$rc" -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$2" "$1.out"; then
    cat "$1.out"; echo "FAIL: $1: expected exit code 1 and one line 'capgnn: error: ...$2'"; fail=1
  fi
  if grep -qE 'MPI_ABORT|aborting the whole job|failed during training' "$1.out"; then
    cat "$1.out"; echo "FAIL: $1: the job was aborted (every rank fails alike: they end together)"; fail=1
  fi
}
job 2 noval --graph noval.cgr --early-stop 3
one_error noval "--early-stop 3: graph noval has no validation vertices to watch"
# (not an error: --save-best on a graph without validation vertices writes nothing, and
# says so once for the job, not once per rank)
job 2 savebest --graph noval.cgr --save-best best.ckpt
lines=$(grep -c -- '--save-best best.ckpt: no scheduled evaluation with validation vertices' savebest.out)
echo "== savebest: exit code $rc, $lines warning line(s)"
if [ "$rc" -ne 0 ] || [ "$lines" -ne 1 ] || [ -e best.ckpt ]; then
  cat savebest.out; echo "FAIL: savebest: expected exit code 0, one warning and no best.ckpt"; fail=1
fi
job 3 notrain --graph notrain.cgr --partition random
one_error notrain "graph edge has no train vertices (split == 1)"

# ---- 3. features that overflow the first forward pass ----
for p in 1 2; do
  job "$p" "big$p" --graph big.cgr --partition random
  one_error "big$p" "the loss is not finite at epoch 1, computed with the initial weights before any update"
  if grep -q 'smaller --lr' "big$p.out"; then
    cat "big$p.out"; echo "FAIL: big$p: a smaller --lr cannot help before the first update"; fail=1
  fi
done

[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
