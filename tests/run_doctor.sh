#!/usr/bin/env bash
# tests/run_doctor.sh MPIEXEC CAPGNN
# `capgnn doctor` (issue #17, item 3) on emulated nodes (CAPGNN_EMULATE_NODES=2):
#  1. 3 ranks as 2 nodes: the report names 3 ranks on 2 nodes, the MPI library and the
#     links from rank 0 to its node and to the other; --strict exits 3 because of the
#     bad mapping (nodes running 1 and 2 ranks; 3 ranks on this host's cores when it
#     has fewer); the JSON lists 3 ranks with their nodes and the same warnings.
#  2. 2 ranks as 2 nodes, links skipped: the nodes are even, so only a host with fewer
#     than 2 cores warns; --json refuses to replace a file that is not a doctor's
#     report (without --force), and leaves it intact.
set -u
mpiexec=$1 capgnn=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
say() { echo "FAIL: $*"; fail=1; }
cores=$(nproc)

CAPGNN_EMULATE_NODES=2 "$mpiexec" -n 3 --oversubscribe --allow-run-as-root "$capgnn" doctor --device cpu \
  --strict --json "$dir/d.json" >"$dir/out1" 2>"$dir/err1"
rc=$?
[ $rc -eq 3 ] || say "3 ranks on 2 emulated nodes, --strict: exit $rc, expected 3"
grep -q "capgnn doctor: 3 ranks on 2 nodes (emulated" "$dir/out1" || say "no '3 ranks on 2 nodes' line"
grep -q "^MPI  *Open MPI\|^MPI  *MPICH\|^MPI  *[A-Za-z]" "$dir/out1" || say "no MPI line"
grep -q "same node   rank 1: latency" "$dir/out1" || say "no same-node link line"
grep -q "other node  rank 2: latency .*emulated node on the same host: MPI's path inside one host" "$dir/out1" ||
  say "no other-node link line"
grep -q "nodes run 1 to 2 ranks" "$dir/out1" || say "the uneven nodes were not reported"
if [ "$cores" -lt 3 ]; then grep -q "runs 3 ranks on $cores cores" "$dir/out1" || say "oversubscription not reported"; fi
python3 - "$dir/d.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "capgnn-doctor/1", d["schema"]
assert [r["rank"] for r in d["ranks"]] == [0, 1, 2], d["ranks"]
assert [r["node"] for r in d["ranks"]] == [0, 0, 1], [r["node"] for r in d["ranks"]]
assert any("nodes run 1 to 2 ranks" in w for w in d["warnings"]), d["warnings"]
assert {l["kind"] for l in d["links"]} == {"same_node", "other_node"}, d["links"]
assert all(l["latency_us"] > 0 and l["bandwidth_gbs"] > 0 for l in d["links"]), d["links"]
PY

# 3. (new-user finding) with shared memory left out of Open MPI's btl list, the emulated
#    node's link is not labelled shared memory
CAPGNN_EMULATE_NODES=2 "$mpiexec" -n 2 --oversubscribe --allow-run-as-root --mca pml ob1 --mca btl tcp,self \
  "$capgnn" doctor --device cpu >"$dir/out4" 2>"$dir/err4" || say "doctor over btl tcp,self failed"
grep -q "other node  rank 1: latency .*btl=tcp,self leaves out shared memory, so most likely TCP" "$dir/out4" ||
  say "btl tcp,self: the link note does not say TCP"
grep -q "shared memory unless" "$dir/out4" && say "btl tcp,self: the link is still labelled shared memory"

printf 'precious\n' > "$dir/keep.txt"
CAPGNN_EMULATE_NODES=2 "$mpiexec" -n 2 --oversubscribe --allow-run-as-root "$capgnn" doctor --device cpu \
  --no-links --json "$dir/keep.txt" >"$dir/out2" 2>"$dir/err2"
rc=$?
[ $rc -ne 0 ] || say "--json over a text file was accepted"
[ "$(cat "$dir/keep.txt")" = precious ] || say "the text file was changed"
CAPGNN_EMULATE_NODES=2 "$mpiexec" -n 2 --oversubscribe --allow-run-as-root "$capgnn" doctor --device cpu \
  --no-links --strict --json "$dir/d.json" >"$dir/out3" 2>"$dir/err3"
rc=$?
if [ "$cores" -ge 2 ]; then
  [ $rc -eq 0 ] || say "2 ranks on 2 even emulated nodes: exit $rc, expected 0 (no warning)"
  grep -q "mapping: no problem found" "$dir/out3" || say "no 'no problem found' line"
fi
grep -q "links from rank 0" "$dir/out3" && say "--no-links measured links"
[ $fail -eq 0 ] || { echo "--- outputs"; cat "$dir"/out* "$dir"/err*; exit 1; }
echo "ok: doctor on emulated nodes"
