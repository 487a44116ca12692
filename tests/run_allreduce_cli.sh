#!/usr/bin/env bash
# tests/run_allreduce_cli.sh MPIEXEC CAPGNN
# `capgnn --allreduce` (issue #17, item 2) on 4 ranks as 2 emulated nodes: flat and hier
# give the same per-epoch losses bit for bit; hier sends fewer bytes between nodes than
# flat, both more than the halo rows alone (mpi, whose traffic is MPI's, counts only
# those); auto is hier here; hier on uneven nodes (3 ranks as 2 nodes) is refused with
# a message; an unknown value is a usage error. The summary's job object says what auto
# chose, the nodes and the partition.
set -u
mpiexec=$1 capgnn=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
say() { echo "FAIL: $*"; fail=1; }
run() { # NP ALGO
  CAPGNN_EMULATE_NODES=2 "$mpiexec" -n "$1" --oversubscribe --allow-run-as-root "$capgnn" --graph synth:small \
    --epochs 4 --device cpu --threads 1 --no-part-cache --allreduce "$2" --metrics "$dir/$2_$1.jsonl" \
    >"$dir/out_$2_$1" 2>&1
}
for a in flat hier mpi auto; do run 4 $a || { cat "$dir/out_${a}_4"; say "--allreduce $a failed"; }; done
grep -q "gradient all-reduce: hier" "$dir/out_auto_4" || say "auto did not choose hier on 2 even nodes"
python3 - "$dir" <<'PY' || fail=1
import json, sys
d = sys.argv[1]
def epochs(a):
    return [r for r in map(json.loads, open(f"{d}/{a}_4.jsonl")) if not r.get("summary")]
f, h, m = epochs("flat"), epochs("hier"), epochs("mpi")
assert [r["loss"] for r in f] == [r["loss"] for r in h], ([r["loss"] for r in f], [r["loss"] for r in h])
for a, b, c in zip(f, h, m):
    assert a["halo_bytes"] == b["halo_bytes"] == c["halo_bytes"]
    assert c["inter_node_bytes"] > 0, c          # the halo rows between the nodes
    assert c["inter_node_bytes"] < b["inter_node_bytes"] < a["inter_node_bytes"], (a, b, c)
    assert abs(c["loss"] - a["loss"]) <= 1e-5 * abs(a["loss"]), (c["loss"], a["loss"])
print("flat == hier:", [r["loss"] for r in f])
# the summary's job object names what auto chose and the emulated nodes
for a, want in (("auto", "hier"), ("flat", "flat"), ("mpi", "mpi")):
    s = [r for r in map(json.loads, open(f"{d}/{a}_4.jsonl")) if r.get("summary")][-1]
    j = s["job"]
    assert j["allreduce"] == want and j["nodes"] == 2 and j["emulated_nodes"] is True, (a, j)
    assert j["partition"] == "metis" and j["part_seed"] == 1 and j["load"] in ("whole", "per-rank"), (a, j)
print("summary job:", j)
PY
run 3 hier
rc=$?
[ $rc -ne 0 ] || say "hier on 2 + 1 ranks was accepted"
grep -q "same number of ranks on every node" "$dir/out_hier_3" || say "no message for uneven nodes"
# emulated nodes: the advice is CAPGNN_EMULATE_NODES and -np, not --map-by (which cannot even them out)
grep -q "3 ranks do not split evenly into CAPGNN_EMULATE_NODES=2" "$dir/out_hier_3" || say "no emulated-node advice"
! grep -q "ppr:G:node" "$dir/out_hier_3" || say "--map-by advised for emulated nodes"
! grep -q "failed during training" "$dir/out_hier_3" || say "uneven nodes refused only at the first step"
"$capgnn" --graph synth:tiny --allreduce ring >"$dir/bad" 2>&1
rc=$?
[ $rc -eq 2 ] || say "--allreduce ring: exit $rc, expected 2"
grep -q "expected auto, mpi, flat or hier" "$dir/bad" || say "--allreduce ring: no clear message"
[ $fail -eq 0 ] || exit 1
echo "ok: --allreduce"
