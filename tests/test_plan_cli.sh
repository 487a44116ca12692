#!/usr/bin/env bash
# tests/test_plan_cli.sh CAPGNN SCHEMA OUTDIR DATASETS PROFILE — `capgnn plan` from the
# command line (rapa/plan.h):
# 1. usage errors exit 2 with one clear line: no --graph, no --parts, a bad P (0, 5000,
#    "x"), more nodes than ranks, several ranks without any link bandwidth, half the
#    declared rates, a bad --cache or --cache-policy, --no-cache; a graph that does not exist exits 1;
# 2. a plan of cora on 4 ranks as 2 nodes from a real profile prints the per-rank table
#    and both summaries; its --json validates against docs/plan.schema.json, its counts
#    add up (halo rows per peer sum to the rank's halo; the cache sends fewer forward rows
#    between nodes, each remote row once per node) and --json - writes the same plan on
#    stdout without the table; with --layer0-halo exchange (auto's choice on cora) layer
#    0's 16-wide rows add 2 x 16 x 4 bytes per halo row, with and without the cache, and
#    every rank's memory is lower (no halo features);
# 3. 64 ranks on 8 nodes with declared rates and links (no profile);
# 4. the all-reduce from a profile's curve measured on the job's layout, and the formula
#    (with the reason) for another layout, another algorithm or an older profile;
# 5. CAPGNN_EMULATE_SPEED; 6. a profile of ranks with different thread counts (below).
# Exit 77 without cora.
set -u
capgnn=$1 schema=$2 out=$3 data=$4 profile=$5
[ -r "$data/cora.cgr" ] || { echo "cora.cgr not in $data: skipped"; exit 77; }
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export CAPGNN_DATA=$data CAPGNN_CACHE=$out/cache
fail() { echo "FAIL: $*"; exit 1; }

usage() { # EXPECTED-MESSAGE ARGS...: exit 2 and one line naming the problem
  local want=$1; shift
  "$capgnn" plan "$@" >u.out 2>u.err
  local rc=$?
  [ $rc -eq 2 ] || { cat u.err; fail "plan $* exited $rc, not 2"; }
  [ "$(wc -l <u.err)" -eq 1 ] || { cat u.err; fail "plan $*: not one line"; }
  grep -q -- "capgnn: error: .*$want" u.err || { cat u.err; fail "plan $*: no '$want'"; }
}
usage "--graph is required" --parts 2 --link-gbps 1
usage "--parts is required" --graph cora
usage "give both --h2d-gbs and --d2h-gbs" --graph cora --parts 2 --link-gbps 10 --gemm-gflops 10 --spmm-gnnz 1 \
  --mem-gbs 10 --h2d-gbs 10
usage "--parts '0': expected an integer in \[1, 4096\]" --graph cora --parts 0 --link-gbps 1
usage "--parts '5000': expected an integer in \[1, 4096\]" --graph cora --parts 5000 --link-gbps 1
usage "--parts 'x': expected an integer" --graph cora --parts x --link-gbps 1
usage "more nodes than ranks" --graph cora --parts 2 --nodes 3 --link-gbps 1
usage "needs link bandwidths" --graph cora --parts 2
usage "declare all of --gemm-gflops" --graph cora --parts 2 --link-gbps 1 --gemm-gflops 100
usage "--cache-policy 'lru': expected none or jaca" --graph cora --parts 2 --link-gbps 1 --cache-policy lru
# training's options that change what is priced, and GAT's exchanged layer 0, refused as train does
usage "--staleness is an option of capgnn train: capgnn plan prices the exact run" --graph cora --parts 2 \
  --link-gbps 1 --staleness 3
usage "--cache-preset is an option of capgnn train" --graph cora --parts 2 --link-gbps 1 --cache-preset=fast
usage "--staleness is an option of capgnn train" --graph cora --parts 2 --link-gbps 1 --stal 3
usage "--partition rapa: capgnn plan prices METIS or random parts" --graph cora --parts 2 --link-gbps 1 \
  --partition rapa
usage "--layer0-halo exchange is not built for GAT" --graph cora --parts 2 --link-gbps 1 --model gat \
  --layer0-halo exchange
# train's and partition's --cache (the partition cache folder) and --no-cache: here --cache is
# the halo cache, so a folder is refused naming --part-cache, and --no-cache naming both;
# their --method is taken
usage "--cache 'pc': in capgnn plan --cache is the halo cache (--cache-policy), none or jaca; the partition cache folder is --part-cache DIR" \
  --graph cora --parts 2 --link-gbps 1 --cache pc
usage "--no-cache: .* write --no-part-cache .* or --cache-policy none" --graph cora --parts 2 --link-gbps 1 --no-cache
"$capgnn" plan --graph cora --parts 2 --link-gbps 1 --method random --quiet >u.out 2>u.err ||
  { cat u.err; fail "plan --method random exited $?"; }
grep -q "random partition" u.out || { cat u.out; fail "plan --method random: not a random partition"; }
usage "--allreduce hier needs as many ranks" --graph cora --parts 3 --nodes 2 --link-gbps 1 --allreduce hier
usage "--quantum-ms: expected a number >= 0" --graph cora --parts 2 --link-gbps 1 --quantum-ms -1
"$capgnn" plan --graph no-such-graph --parts 2 --link-gbps 1 >m.out 2>m.err
rc=$?
[ $rc -eq 1 ] || fail "a missing graph exited $rc, not 1"
grep -q "capgnn: error: .*no-such-graph" m.err || { cat m.err; fail "the missing graph is not named"; }

"$capgnn" plan --graph cora --parts 4 --nodes 2 --hosts 1 --profile "$profile" --cache-policy jaca --json p.json \
  --layer0-halo local --quiet >p.out 2>p.err || { cat p.err; fail "plan --profile exited $?"; }
grep -q "layer 0: local (--layer0-halo local)" p.out || { cat p.out; fail "the table does not say layer 0 is local"; }
grep -q "with the halo cache (jaca, exact): epoch" p.out || { cat p.out; fail "no per-rank table with the cache"; }
grep -q "^without the cache " p.out && grep -q "^with the cache (jaca) " p.out || fail "no summary of both plans"
python3 - "$schema" p.json <<'PY' || fail "p.json does not validate or does not add up"
import json, sys, jsonschema
schema, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
jsonschema.validate(plan, schema)
assert plan["job"]["parts"] == 4 and plan["job"]["nodes"] == 2 and plan["job"]["allreduce"] == "hier"
for kind in ("plain", "cache"):
    p = plan[kind]
    assert len(p["ranks"]) == 4
    assert p["epoch_s"] == max(r["lambda_s"] for r in p["ranks"])
    for r in p["ranks"]:
        assert sum(e["halo_rows"] for e in r["peer_rows"]) == r["halo"], (kind, r["rank"])
        assert r["node"] == r["rank"] // 2
plain, cache = plan["plain"], plan["cache"]
assert cache["inter_node_bytes"] < plain["inter_node_bytes"]
assert cache["halo_bytes"] < plain["halo_bytes"]
# with the cache, nothing between ranks of a node goes through MPI
assert all(r["halo_bytes_intra"] == 0 for r in cache["ranks"])
assert plan["model"]["layer0_halo"] == "local"
PY
# --layer0-halo exchange (the default auto's choice on cora without the cache: 1433 -> 16
# with input dropout): layer 0's 16-wide rows both ways on top of the hidden layers',
# through MPI even with the cache (it caches hidden layers only); no halo features in memory
"$capgnn" plan --graph cora --parts 4 --nodes 2 --hosts 1 --profile "$profile" --cache jaca --json x.json \
  --layer0-halo exchange --quiet >x.out 2>x.err || { cat x.err; fail "plan (layer 0 exchanged) exited $?"; }
grep -q "layer 0: exchange" x.out || { cat x.out; fail "the table does not say layer 0 is exchanged"; }
grep -q "^wrote the plan to x.json$" x.out || { cat x.out; fail "the table does not say where the plan went"; }
# auto, as training chooses it: exchanged without the cache, local with it
"$capgnn" plan --graph cora --parts 4 --nodes 2 --hosts 1 --profile "$profile" --cache jaca --json a.json \
  --quiet >a.out 2>a.err || { cat a.err; fail "plan (layer 0 auto) exited $?"; }
grep -q "layer 0: local (auto: local with the halo cache" a.out ||
  { cat a.out; fail "the table does not say auto keeps layer 0 local with the cache"; }
python3 - p.json x.json a.json <<'PY' || fail "auto's plans are not the exchanged plain one and the local cached one"
import json, sys
loc, exc, auto = (json.load(open(f)) for f in sys.argv[1:4])
assert auto["model"]["layer0_halo"] == "local"
assert auto["plain"]["halo_bytes"] == exc["plain"]["halo_bytes"], (auto["plain"]["halo_bytes"], exc["plain"]["halo_bytes"])
assert auto["cache"]["halo_bytes"] == loc["cache"]["halo_bytes"], (auto["cache"]["halo_bytes"], loc["cache"]["halo_bytes"])
PY
python3 - "$schema" p.json x.json <<'PY' || fail "x.json does not validate or layer 0's bytes do not add up"
import json, sys, jsonschema
schema, loc, exc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
jsonschema.validate(exc, schema)
assert exc["model"]["layer0_halo"] == "exchange"
halo = sum(r["halo"] for r in loc["plain"]["ranks"])
for kind in ("plain", "cache"):
    a, b = loc[kind], exc[kind]
    assert b["halo_bytes"] - a["halo_bytes"] == 2 * 4 * 16 * halo, (kind, a["halo_bytes"], b["halo_bytes"], halo)
    for ra, rb in zip(a["ranks"], b["ranks"]):
        assert rb["memory_bytes"] < ra["memory_bytes"], (kind, ra["rank"])
PY
"$capgnn" plan --graph cora --parts 4 --nodes 2 --hosts 1 --profile "$profile" --cache jaca --json - \
  --layer0-halo local >s.json 2>s.err || { cat s.err; fail "plan --json - exited $?"; }
python3 -c "import json,sys; a=json.load(open('s.json')); b=json.load(open('p.json')); sys.exit(a != b)" ||
  fail "--json - is not the plan --json FILE wrote"

# the output rule: never an input, another kind of file only with --force
echo "not a plan" > other.txt
"$capgnn" plan --graph cora --parts 1 --measure-rates --json other.txt --quiet >o.out 2>o.err && fail "replaced another file"
grep -q "capgnn: error: .*other.txt" o.err || { cat o.err; fail "no message naming other.txt"; }
grep -q "not a plan" other.txt || fail "other.txt was changed"
"$capgnn" plan --graph cora --parts 2 --nodes 2 --profile "$profile" --json "$profile" --quiet >o.out 2>o.err &&
  fail "wrote over the profile"
"$capgnn" plan --graph cora --parts 4 --nodes 2 --hosts 1 --profile "$profile" --cache jaca --json p.json --quiet \
  >o.out 2>o.err || { cat o.err; fail "an earlier plan was not replaced"; }

"$capgnn" plan --graph cora --parts 64 --nodes 8 --gemm-gflops 20000 --spmm-gnnz 1000 --mem-gbs 1500 \
  --link-gbps 100,25 --layers 3 --hidden 256 --json big.json --quiet >big.out 2>big.err ||
  { cat big.err; fail "plan of 64 ranks exited $?"; }
python3 - "$schema" big.json <<'PY' || fail "big.json"
import json, sys, jsonschema
schema, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
jsonschema.validate(plan, schema)
assert len(plan["plain"]["ranks"]) == 64 and plan["job"]["allreduce"] == "hier"
assert plan["cache"]["inter_node_bytes"] <= plan["plain"]["inter_node_bytes"]
PY
# options that cannot change the plan say so (new-user finding U3), and stay quiet where they apply
decl=(--gemm-gflops 100 --spmm-gnnz 10 --mem-gbs 10 --link-gbps 10)
"$capgnn" plan --graph cora --parts 2 "${decl[@]}" --gpu-direct --quantum-ms 4 >q.out 2>q.err ||
  { cat q.err; fail "plan with --gpu-direct --quantum-ms exited $?"; }
grep -q "warning: --gpu-direct changes nothing here" q.err || { cat q.err; fail "no word that --gpu-direct did nothing"; }
grep -q "warning: --quantum-ms changes nothing here" q.err || { cat q.err; fail "no word that --quantum-ms did nothing"; }
"$capgnn" plan --graph cora --parts 2 "${decl[@]}" --gpu-direct --h2d-gbs 10 --d2h-gbs 10 --quantum-ms 4 --cores 1 \
  >q2.out 2>q2.err || { cat q2.err; fail "plan with device ranks and cores exited $?"; }
! grep -q "gpu-direct changes nothing" q2.err || { cat q2.err; fail "a --gpu-direct warning where it applies"; }
# ... where every rank is a device rank, the host's cores and quantum change nothing
grep -q "warning: --cores and --quantum-ms change nothing here: every rank computes on its device" q2.err ||
  { cat q2.err; fail "no word that --cores and --quantum-ms did nothing for device ranks"; }
grep -q "cores per machine: not used (every rank computes on its device)" q2.out || { cat q2.out; fail "cores line"; }
# device ranks with compute rates measured here (the CPU's) are said to be a mix-up
"$capgnn" plan --graph cora --parts 2 --link-gbps 10 --h2d-gbs 10 --d2h-gbs 10 >q3.out 2>q3.err ||
  { cat q3.err; fail "plan with device ranks and measured rates exited $?"; }
grep -q "warning: --h2d-gbs / --d2h-gbs make the ranks device ranks, but their compute rates are measured here" \
  q3.err || { cat q3.err; fail "no warning on device ranks with rates measured on the CPU"; }
# rates measured here: this machine's cores, said so
"$capgnn" plan --graph cora --parts 2 --link-gbps 10 >q4.out 2>q4.err || { cat q4.err; fail "plan exited $?"; }
grep -q "cores per machine: [0-9]*, this machine's" q4.out || { cat q4.out; fail "the cores are not this machine's"; }
# a slower epoch with the cache says why in one line: on cora at P = 4 on one node the cache
# (layer 0 kept local by --layer0-halo auto) is priced slower than the plain exchange, and
# is faster once layer 0 is exchanged with it too (then no line)
rates=(--gemm-gflops 25 --spmm-gnnz 0.85 --mem-gbs 77 --link-gbps 10,1)
"$capgnn" plan --graph cora --parts 4 "${rates[@]}" >w.out 2>w.err || { cat w.err; fail "plan exited $?"; }
[ "$(grep -c "why the cache is slower here: it keeps layer 0 local" w.out)" -eq 1 ] ||
  { cat w.out; fail "no line saying why the cache is slower"; }
"$capgnn" plan --graph cora --parts 4 "${rates[@]}" --layer0-halo exchange >w2.out 2>w2.err ||
  { cat w2.err; fail "plan exited $?"; }
! grep -q "why the cache is slower" w2.out || { cat w2.out; fail "a why line where the cache is faster"; }
# dense features (synth:small, 64 -> 16 with input dropout): auto exchanges layer 0 beside
# the cache too, as training does (transforming every halo row costs more than sending it)
"$capgnn" plan --graph synth:small --parts 4 "${rates[@]}" --cache-policy jaca --json d.json >d.out 2>d.err ||
  { cat d.err; fail "plan (dense features, cache) exited $?"; }
grep -q "layer 0: exchange (auto: layer 0 transforms first (fout < fin), exchanged beside the halo cache" d.out ||
  { cat d.out; fail "the table does not say auto exchanges a dense layer 0 beside the cache"; }
! grep -q "it keeps layer 0 local" d.out || { cat d.out; fail "layer 0 said local"; }
python3 - d.json <<'PY' || fail "the dense plan's layer 0 is not exchanged"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["model"]["layer0_halo"] == "exchange", d["model"]
PY
# ... and says when auto's choice loses by these rates: over a link of 1 MB/s transforming
# the halo rows is cheaper than sending them
"$capgnn" plan --graph synth:small --parts 4 --gemm-gflops 25 --spmm-gnnz 0.85 --mem-gbs 77 --link-gbps 0.001 \
  --cache-policy jaca >d2.out 2>d2.err || { cat d2.err; fail "plan (slow link) exited $?"; }
grep -q "layer 0 with the cache: --layer0-halo local would be faster here" d2.out ||
  { cat d2.out; fail "no line saying local would be faster over a slow link"; }
! grep -q "would be faster here" d.out || { cat d.out; fail "a 'would be faster' line where auto's choice wins"; }
# device ranks (staged halo rows): auto keeps a dense layer 0 local beside the cache (a
# GPU transforms the halo rows for less than their exchange), as training does on GPUs
"$capgnn" plan --graph synth:small --parts 4 "${rates[@]}" --h2d-gbs 25 --d2h-gbs 25 --cache-policy jaca \
  >g.out 2>g.err || { cat g.err; fail "plan (device ranks) exited $?"; }
grep -q "layer 0: local (auto: local with the halo cache, which serves the hidden layers only (on GPUs" g.out ||
  { cat g.out; fail "the device ranks' cached plan does not keep layer 0 local"; }
grep -q "^  device ranks: 4 of 4 (they compute on their devices" g.out || { cat g.out; fail "no device ranks line"; }
# device ranks share no host core: --cores changes nothing of their compute
"$capgnn" plan --graph synth:small --parts 4 "${rates[@]}" --h2d-gbs 25 --d2h-gbs 25 --json g.json >/dev/null 2>g.err ||
  { cat g.err; fail "plan (device ranks) exited $?"; }
"$capgnn" plan --graph synth:small --parts 4 "${rates[@]}" --h2d-gbs 25 --d2h-gbs 25 --cores 1 --json g1.json \
  >/dev/null 2>g1.err || { cat g1.err; fail "plan (device ranks, --cores 1) exited $?"; }
python3 - "$schema" g.json g1.json <<'PY' || fail "device ranks' compute moved with --cores, or g.json is invalid"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
a, b = (json.load(open(f)) for f in sys.argv[2:4])
jsonschema.validate(a, schema)
assert a["rates"]["h2d_gbs"] == 25 and a["rates"]["d2h_gbs"] == 25, a["rates"]
for k in ("plain", "cache"):
    for x, y in zip(a[k]["ranks"], b[k]["ranks"]):
        assert x["compute_s"] == y["compute_s"] and y["oversubscription"] == 1, (k, x["compute_s"], y)
PY
# the all-reduce measured by a profile of the job's layout (links.allreduce.curve, since
# 2026-11-29): interpolated at the model's bytes; a profile of another layout or
# algorithm, or one from before the curve (the one above), keeps the formula and says why
python3 - "$profile" arp.json bad.json <<'PY' || fail "could not write the profiles with an all-reduce curve"
import json, sys
p = json.load(open(sys.argv[1]))
a = p["links"]["allreduce"]
a["algorithm"], a["nodes"] = "mpi", 1
a["curve"] = [{"floats": 1024, "bytes": 4096, "median_s": 2e-5, "min_s": 1e-5, "reps": 5},
              {"floats": 65536, "bytes": 262144, "median_s": 3e-4, "min_s": 2e-4, "reps": 5}]
json.dump(p, open(sys.argv[2], "w"))
a["curve"][1]["median_s"] = -1
json.dump(p, open(sys.argv[3], "w"))
a["curve"][1]["median_s"] = 3e-4
a["algorithm"], a["nodes"] = "hier", 2          # as if measured on 2 emulated nodes of one machine
json.dump(p, open("arp2.json", "w"))
PY
"$capgnn" plan --graph cora --parts 2 --profile arp.json --json ar.json >ar.out 2>ar.err ||
  { cat ar.err; fail "plan with an all-reduce curve exited $?"; }
grep -q "all-reduce mpi (measured by the profile on this layout (mpi, 2 ranks on 1 node, 2 sizes" ar.out ||
  { cat ar.out; fail "the plan does not say its all-reduce is the profile's"; }
python3 - "$schema" ar.json <<'PY' || fail "ar.json: the all-reduce is not the curve's"
import json, sys, jsonschema
schema, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
jsonschema.validate(plan, schema)
assert plan["links"]["allreduce_curve"] == [[4096, 2e-5], [262144, 3e-4]], plan["links"]["allreduce_curve"]
B = 4 * plan["model"]["parameters"]          # 23,063 parameters: between the two sizes
want = 2e-5 + (3e-4 - 2e-5) * (B - 4096) / (262144 - 4096)
for kind in ("plain", "cache"):
    for r in plan[kind]["ranks"]:
        assert abs(r["allreduce_s"] - want) <= 1e-12 * want, (kind, r["allreduce_s"], want)
PY
for args in "--parts 2 --allreduce flat:arp.json:the profile's all-reduce was mpi, this job's is flat" \
            "--parts 4:arp.json:the profile's all-reduce ran on 2 ranks on 1 node, this job has 4 on 1" \
            "--parts 2 --threads 2:arp.json:the profile's ranks had 1 thread each, this job's 2" \
            "--parts 2 --link-latency-us 3:arp.json:from the declared latencies" \
            "--parts 2 --nodes 2:arp2.json:the profile's ranks ran on 1 machine, this job's on 2 (emulated nodes share one)"; do
  prof=${args#*:}; prof=${prof%%:*}; want=${args#*:*:}
  "$capgnn" plan --graph cora ${args%%:*} --profile $prof --quiet >ar2.out 2>ar2.err ||
    { cat ar2.err; fail "plan ${args%%:*} exited $?"; }
  grep -qF "priced from the links: $want)" ar2.out || { cat ar2.out; fail "plan ${args%%:*}: no '$want'"; }
done
"$capgnn" plan --graph cora --parts 2 --nodes 2 --hosts 1 --profile arp2.json --quiet >ar5.out 2>ar5.err ||
  { cat ar5.err; fail "plan on 2 emulated nodes exited $?"; }
grep -q "all-reduce hier (measured by the profile on this layout (hier, 2 ranks on 2 nodes" ar5.out ||
  { cat ar5.out; fail "2 emulated nodes: the profile's curve not taken"; }
"$capgnn" plan --graph cora --parts 2 --profile "$profile" --quiet >ar3.out 2>ar3.err || { cat ar3.err; fail "plan exited $?"; }
grep -qF "priced from the links: the profile has the all-reduce at one size only" ar3.out ||
  { cat ar3.out; fail "an old profile: no word that the all-reduce is priced from the links"; }
"$capgnn" plan --graph cora --parts 2 --profile bad.json --quiet >ar4.out 2>ar4.err && fail "a bad curve was taken"
grep -q "capgnn: error: .*curve" ar4.err || { cat ar4.err; fail "the bad curve point is not named"; }
# 5. CAPGNN_EMULATE_SPEED scales each rank's compute rates, a profile's and measured ones
#    (a profile measures the devices as they are): rank 1 at 0.25 computes 4x as long,
#    rank 0 the same; a list of the wrong length is refused; declared rates are not
#    scaled (warned)
"$capgnn" plan --graph cora --parts 2 --profile "$profile" --json sp0.json --quiet >sp0.out 2>sp0.err ||
  { cat sp0.err; fail "plan without the speeds exited $?"; }
CAPGNN_EMULATE_SPEED=1,0.25 "$capgnn" plan --graph cora --parts 2 --profile "$profile" --json sp1.json \
  >sp1.out 2>sp1.err || { cat sp1.err; fail "plan with the speeds exited $?"; }
grep -q "EMULATED speeds 1,0.25" sp1.out || { cat sp1.out; fail "the emulated speeds are not named"; }
python3 - sp0.json sp1.json <<'PY' || fail "the speeds did not scale the compute"
import json, sys
a, b = (json.load(open(f))["plain"]["ranks"] for f in sys.argv[1:3])
assert abs(b[0]["compute_s"] - a[0]["compute_s"]) <= 1e-9 * a[0]["compute_s"], (a[0]["compute_s"], b[0]["compute_s"])
assert abs(b[1]["compute_s"] - 4 * a[1]["compute_s"]) <= 1e-9 * b[1]["compute_s"], (a[1]["compute_s"], b[1]["compute_s"])
PY
CAPGNN_EMULATE_SPEED=1,0.5,0.5 usage "has 3 values but --parts is 2" --graph cora --parts 2 --profile "$profile"
# rates measured here (each run measures anew: compared by rank 1's compute over rank 0's)
"$capgnn" plan --graph cora --parts 2 --link-gbps 10 --json sm0.json --quiet >sm0.out 2>sm0.err ||
  { cat sm0.err; fail "plan with measured rates exited $?"; }
CAPGNN_EMULATE_SPEED=1,0.25 "$capgnn" plan --graph cora --parts 2 --link-gbps 10 --json sm1.json --quiet \
  >sm1.out 2>sm1.err || { cat sm1.err; fail "plan with measured rates and the speeds exited $?"; }
grep -q "measured here .*EMULATED speeds 1,0.25" sm1.out || { cat sm1.out; fail "measured: the speeds are not named"; }
python3 - sm0.json sm1.json <<'PY' || fail "the speeds did not scale the measured compute"
import json, sys
a, b = (json.load(open(f))["plain"]["ranks"] for f in sys.argv[1:3])
ra, rb = a[1]["compute_s"] / a[0]["compute_s"], b[1]["compute_s"] / b[0]["compute_s"]
# (not exact: the two runs' measured rates differ a little, and the ranks mix ops differently)
assert abs(rb / ra - 4) <= 0.2, (ra, rb)
PY
# declared rates are what each rank does: not scaled, and said so
decl=(--graph cora --parts 2 --link-gbps 10 --gemm-gflops 100 --spmm-gnnz 10 --mem-gbs 50)
"$capgnn" plan "${decl[@]}" --json sd0.json --quiet >sd0.out 2>sd0.err || { cat sd0.err; fail "declared exited $?"; }
CAPGNN_EMULATE_SPEED=1,0.25 "$capgnn" plan "${decl[@]}" --json sd1.json >sp2.out 2>sp2.err ||
  { cat sp2.err; fail "plan with declared rates exited $?"; }
grep -q "warning: CAPGNN_EMULATE_SPEED=1,0.25 does not scale declared rates" sp2.err ||
  { cat sp2.err; fail "declared rates with the speeds: no warning"; }
python3 - sd0.json sd1.json <<'PY' || fail "the speeds changed declared rates"
import json, sys
a, b = (json.load(open(f))["plain"]["ranks"] for f in sys.argv[1:3])
assert [r["compute_s"] for r in a] == [r["compute_s"] for r in b], (a, b)
PY
# 6. a profile of ranks with different thread counts (--threads 2,1): priced with rank 0's
#    count for the shared cores, and said so; its all-reduce curve is not taken
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['ranks'][1]['device']['threads']=2; json.dump(d, open('t21.json','w'))" \
  arp.json || fail "could not write t21.json"
"$capgnn" plan --graph cora --parts 2 --profile t21.json >t21.out 2>t21.err || { cat t21.err; fail "plan of t21.json exited $?"; }
grep -q "warning: the profile's ranks have 1 to 2 threads; the plan gives every rank rank 0's 1" t21.err ||
  { cat t21.err; fail "different thread counts: no warning"; }
grep -qF "the profile's ranks had 1 to 2 threads, this job's 1 each" t21.out || { cat t21.out; fail "t21: the curve's reason"; }
echo "plan CLI: all checks passed"
