#!/usr/bin/env bash
# tests/test_rapa_cli.sh CAPGNN MPIEXEC OUTDIR DATASETS PROFILE — resource-aware
# partitioning through the command line (rapa/balance.h):
# 1. `capgnn partition --profile FILE --json` (a real 2-rank profile) prints and writes the
#    predicted compute, communication, lambda and memory of every part; with --partition
#    rapa the parts' weight shares land within 5 % of the targets; a profile of another
#    rank count is refused; --html writes the profile's report with a "Chosen split"
#    section whose numbers equal the JSON's (rapa/tests/check_report.py, headless
#    Chromium; that check skipped without it); --html without --profile is refused.
# 2. `mpirun -np 2 capgnn --partition rapa` with emulated speeds 1 and 0.5 and --threads
#    1,1 trains exactly (every epoch's loss within 1e-5 of one rank's), logs the emulation
#    and the prediction next to the measured per-rank times, and writes them (per-epoch
#    rank_compute_s / rank_comm_s, the summary's per_rank, rapa, emulate_speed). Two
#    identical ranks whose measured rates are far apart (a test hook scales one) warn.
# 3. Usage errors: --threads with a value per rank for another rank count, a bad
#    CAPGNN_EMULATE_SPEED, --gpu-share without an MPS daemon or on the CPU, --prune-halo
#    without --partition rapa.
# 4. --prune-norm original on 2 ranks equals one rank on the written pruned graph with
#    --norm-degrees (the original graph), and differs from its own degrees; --prune-norm
#    and --norm-degrees refused where they cannot apply. No timing is asserted. Exit 77
#    without cora.
set -u
capgnn=$1 mpiexec=$2 out=$3 data=$4 profile=$5
[ -r "$data/cora.cgr" ] || { echo "cora.cgr not in $data: skipped"; exit 77; }
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export CAPGNN_DATA=$data CAPGNN_CACHE=$out/cache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
mpi() { "$mpiexec" --allow-run-as-root --oversubscribe "$@"; }

"$capgnn" partition --graph cora --parts 2 --profile "$profile" --json p.json >p.out 2>p.err ||
  { cat p.err; fail "partition --profile exited $?"; }
grep -q "predicted epoch per rank" p.out || fail "no prediction printed"
"$capgnn" partition --graph cora --parts 2 --partition rapa --profile "$profile" --json r.json --html r.html \
  >r.out 2>r.err ||
  { cat r.err; fail "partition --partition rapa exited $?"; }
# without a profile, rates measured here and scaled by CAPGNN_EMULATE_SPEED: every rate the
# cost model prices scales with the speed (cora's sparse-feature ops too), so the
# capabilities are the speeds' shares exactly (were 0.71 / 0.29 for 1, 0.25)
CAPGNN_EMULATE_SPEED=1,0.25 "$capgnn" partition --graph cora --parts 2 --partition rapa --quiet --json em.json \
  >em.out 2>em.err || { cat em.err; fail "partition --partition rapa with emulated speeds exited $?"; }
python3 - em.json <<'PY' || fail "capabilities are not the emulated speeds' shares"
import json, sys
cap = [q["capability"] for q in json.load(open(sys.argv[1]))["rapa"]["partitions"]]
assert abs(cap[0] - 0.8) <= 1e-9 and abs(cap[1] - 0.2) <= 1e-9, cap
PY
# with a profile the speeds scale the profile's rates (it measured the devices as they
# are): each capability is the profile's times the rank's speed, renormalised
CAPGNN_EMULATE_SPEED=1,0.25 "$capgnn" partition --graph cora --parts 2 --partition rapa --profile "$profile" \
  --quiet --json emp.json >emp.out 2>emp.err || { cat emp.err; fail "partition --profile with emulated speeds exited $?"; }
python3 - r.json emp.json <<'PY' || fail "the emulated speeds did not scale the profile's capabilities"
import json, sys
a, b = ([q["capability"] for q in json.load(open(f))["rapa"]["partitions"]] for f in sys.argv[1:3])
w = [a[0] * 1.0, a[1] * 0.25]
assert all(abs(b[i] - w[i] / sum(w)) <= 1e-9 for i in range(2)), (a, b)
PY
# a rank rated far slower than the other (here by its speed) still gets a part: its target
# share is raised to 32 vertices' worth, and said so (METIS left such a part empty)
CAPGNN_EMULATE_SPEED=1,0.002 "$capgnn" partition --graph cora --parts 2 --partition rapa --json fl.json \
  >fl.out 2>fl.err || { cat fl.err; fail "partition of a 500x slower rank exited $?"; }
grep -q "part 1's target share 0.001996 is below 32 vertices of 2708: raised to 0.01182" fl.err ||
  { cat fl.err; fail "the raised target share is not logged"; }
python3 - fl.json <<'PY' || fail "the raised share is not the target"
import json, sys
q = json.load(open(sys.argv[1]))["rapa"]["partitions"]
assert abs(q[1]["target"] - 32 / 2708) <= 1e-9 and q[1]["share"] > 0 and abs(q[0]["target"] + q[1]["target"] - 1) < 1e-9, q
PY
# a bad speed list is refused before the graph loads (here, a graph that is not there)
CAPGNN_EMULATE_SPEED=1,1,1 "$capgnn" partition --graph "$out/none.cgr" --parts 2 --partition rapa >x.out 2>x.err
[ $? = 2 ] || { cat x.err; fail "partition with 3 speeds for 2 parts: exit status not 2"; }
grep -q "CAPGNN_EMULATE_SPEED='1,1,1' has 3 values but --parts is 2" x.err ||
  { cat x.err; fail "no message on the speed list before the graph loads"; }
"$capgnn" partition --graph cora --parts 3 --profile "$profile" >x.out 2>x.err && fail "a 2-rank profile for 3 parts"
grep -q "has 2 ranks" x.err || { cat x.err; fail "no message about the profile's ranks"; }
"$capgnn" partition --graph cora --parts 2 --html x.html >x.out 2>x.err; [ $? = 2 ] || fail "--html without --profile"
grep -q "needs --profile" x.err || { cat x.err; fail "no message about --html needing --profile"; }
# --html follows the output rule: never the graph or the profile (whatever the path
# says), another existing file only with --force; an earlier report is replaced
cp "$data/cora.cgr" hg.cgr && chmod u+w hg.cgr && cp "$profile" hp.json && echo "my notes" >notes.txt ||
  fail "copying the inputs"
for target in hg.cgr ./hp.json notes.txt; do
  "$capgnn" partition --graph "$out/hg.cgr" --parts 2 --profile hp.json --html "$target" --no-part-cache --quiet \
    >h.out 2>h.err
  [ $? -eq 1 ] || { cat h.err; fail "--html $target: exit status not 1"; }
  grep -q "capgnn: error: --html $target" h.err || { cat h.err; fail "no message on --html $target"; }
done
cmp -s hg.cgr "$data/cora.cgr" && cmp -s hp.json "$profile" && grep -q "my notes" notes.txt ||
  fail "--html replaced an input or another file"
for k in 1 2; do
  "$capgnn" partition --graph cora --parts 2 --profile "$profile" --html rr.html --no-part-cache --quiet >h.out 2>h.err ||
    { cat h.err; fail "--html rr.html (run $k): an earlier report was not replaced"; }
done
# the profile's report with the chosen split, in a headless browser (skipped without Chromium)
python3 "$(dirname "$0")/../rapa/tests/check_report.py" r.html "$profile" --partition r.json >rep.out 2>&1
rc=$?
case $rc in
  0) ;;
  77) echo "report check skipped: $(cat rep.out)" ;;
  *) cat rep.out; fail "the report with the chosen split" ;;
esac

# one rank, then 2 ranks of emulated speeds 1 and 0.5 on the weighted split
mpi -n 1 "$capgnn" --graph cora --epochs 8 --threads 1 --quiet --metrics one.jsonl 2>one.err ||
  { cat one.err; fail "one rank exited $?"; }
CAPGNN_EMULATE_SPEED=1,0.5 mpi -n 2 -x CAPGNN_EMULATE_SPEED "$capgnn" --graph cora --epochs 8 --threads 1,1 \
  --partition rapa --no-part-cache --metrics two.jsonl >two.out 2>two.err || { cat two.err; fail "2 ranks exited $?"; }
grep -q "EMULATION (CAPGNN_EMULATE_SPEED=1,0.5): rank 1 of 2 runs at speed 0.5" two.err ||
  fail "the emulation is not logged"
grep -q "rank 1: predicted compute" two.err || fail "no predicted-against-measured line"
grep -q "partition: rapa (capability-weighted METIS, exact)" two.err || fail "the partition line does not say rapa"
# two identical ranks whose measured rates differ (rank 1's cut to 0.3 as a busy host would
# measure them, the test hook CAPGNN_TEST_RATE_SCALE): rank 0 warns that the split follows noise
CAPGNN_TEST_RATE_SCALE=1,0.3 mpi -n 2 -x CAPGNN_TEST_RATE_SCALE "$capgnn" --graph cora --epochs 1 --threads 1 \
  --partition rapa --no-part-cache --quiet >alike.out 2>alike.err || { cat alike.err; fail "alike ranks exited $?"; }
grep -q "WARN ranks alike (host .*, cpu, 1 thread, speed 1) measured rates .*x apart" alike.err ||
  { cat alike.err; fail "no warning for identical ranks measuring rates far apart"; }
# ... the same under the emulating backend (CAPGNN_EMULATE_SPEED), whose thread count is
# its CPU backend's: named as such (not "0 threads"), and ranks of --threads 2,1 are not
# alike (their rates may differ without a warning)
CAPGNN_EMULATE_SPEED=1 CAPGNN_TEST_RATE_SCALE=1,0.3 mpi -n 2 -x CAPGNN_EMULATE_SPEED -x CAPGNN_TEST_RATE_SCALE \
  "$capgnn" --graph cora --epochs 1 --threads 1 --partition rapa --no-part-cache --quiet >alike_e.out 2>alike_e.err ||
  { cat alike_e.err; fail "alike emulated ranks exited $?"; }
grep -q "WARN ranks alike (host .*, cpu, 1 thread, speed 1) measured rates .*x apart" alike_e.err ||
  { cat alike_e.err; fail "no warning (or not 1 thread) for identical emulated ranks measuring rates far apart"; }
CAPGNN_EMULATE_SPEED=1 CAPGNN_TEST_RATE_SCALE=1,0.3 mpi -n 2 -x CAPGNN_EMULATE_SPEED -x CAPGNN_TEST_RATE_SCALE \
  "$capgnn" --graph cora --epochs 1 --threads 2,1 --partition rapa --no-part-cache --quiet >unlike.out 2>unlike.err ||
  { cat unlike.err; fail "emulated ranks of 2 and 1 threads exited $?"; }
grep -q "ranks alike" unlike.err && { cat unlike.err; fail "ranks of 2 and 1 threads taken for alike"; }
# ... but a rank with more threads that measures slower than one with fewer on its host is
# warned about (its threads share cores; seen: --bind-to none, 3 threads on 2 cores)
CAPGNN_TEST_RATE_SCALE=0.01,1 mpi -n 2 -x CAPGNN_TEST_RATE_SCALE "$capgnn" --graph cora --epochs 1 --threads 2,1 \
  --partition rapa --no-part-cache --quiet >slow2.out 2>slow2.err || { cat slow2.err; fail "2,1 threads exited $?"; }
grep -q "WARN rank 0 (2 threads) measured its GEMMs at .* slower than rank 1 (1 thread)" slow2.err ||
  { cat slow2.err; fail "no warning for a 2-thread rank measuring slower than a 1-thread one"; }

python3 - p.json r.json one.jsonl two.jsonl <<'PY' || exit 1
import json, sys
p, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for d, method in ((p, "metis"), (r, "rapa")):
    assert d["method"] == method, d["method"]
    ra = d["rapa"]
    assert ra["rates"].startswith("profile "), ra["rates"]
    assert len(ra["partitions"]) == 2
    for q in ra["partitions"]:
        for k in ("predicted_compute_s", "predicted_comm_s", "predicted_lambda_s", "memory_bytes"):
            assert q[k] > 0, (method, k, q)
        assert abs(q["predicted_lambda_s"] - q["predicted_compute_s"] - q["predicted_comm_s"]) <= 1e-12
    assert ra["predicted_epoch_s"] == max(q["predicted_lambda_s"] for q in ra["partitions"])
for q in r["rapa"]["partitions"]:
    dev = abs(q["share"] - q["target"]) / q["target"]
    assert dev <= 0.05, f"part {q['part']}: share {q['share']} target {q['target']}"
one = [json.loads(l) for l in open(sys.argv[3])]
two = [json.loads(l) for l in open(sys.argv[4])]
e1 = [x for x in one if not x.get("summary")]
e2 = [x for x in two if not x.get("summary")]
assert len(e1) == len(e2) == 8
for a, b in zip(e1, e2):
    assert abs(a["loss"] - b["loss"]) <= 1e-5 * abs(a["loss"]), (a["epoch"], a["loss"], b["loss"])
    assert len(b["rank_compute_s"]) == 2 and len(b["rank_comm_s"]) == 2
    assert min(b["rank_compute_s"]) > 0
s = two[-1]
assert s["summary"] and s["emulate_speed"] == "1,0.5", s.get("emulate_speed")
assert s["threads_per_rank"] == "1,1", s.get("threads_per_rank")
assert s["rapa"]["rates"].startswith("measured at start-up"), s["rapa"]
# no pruning: nothing counted or normalised to name
assert s["rapa"]["prune_eps"] == 0 and s["rapa"]["cut_edges"] is None and s["rapa"]["prune_norm"] is None, s["rapa"]
assert s["rapa"]["pruned_edges"] == 0 and s["rapa"]["exact"] is True, s["rapa"]
assert len(s["per_rank"]) == 2
for q in s["per_rank"]:
    for k in ("median_compute_s", "predicted_compute_s", "predicted_lambda_s", "predicted_memory_bytes", "target_share"):
        assert q[k] > 0, (k, q)
print("rapa: metis predicted", [round(q["predicted_lambda_s"] * 1e3, 3) for q in p["rapa"]["partitions"]],
      "ms; rapa shares", [round(q["share"], 4) for q in r["rapa"]["partitions"]], "targets",
      [round(q["target"], 4) for q in r["rapa"]["partitions"]])
print("2 ranks (speeds 1, 0.5): targets", [round(q["target_share"], 3) for q in s["per_rank"]], "predicted compute",
      [round(q["predicted_compute_s"] * 1e3, 2) for q in s["per_rank"]], "ms, measured",
      [round(q["median_compute_s"] * 1e3, 2) for q in s["per_rank"]], "ms")
PY

# --partition rapa --profile takes each rank's own device's entry (host and key), not its
# rank number's: a profile of --threads 2,1 (entry 0 faster) for a job of --threads 1,2
python3 - "$profile" <<'PY' || fail "writing the 2,1 profile"
import json, sys
d = json.load(open(sys.argv[1]))
d["ranks"][0]["key"], d["ranks"][0]["device"]["threads"] = "cpu-t2", 2
for r in d["ranks"]:
    r["host"] = __import__("socket").gethostname().split(".")[0]
json.dump(d, open("p21.json", "w"))
PY
mpi -n 2 "$capgnn" --graph cora --epochs 1 --threads 1,2 --partition rapa --profile p21.json --no-part-cache \
  >pm.out 2>pm.err || { cat pm.err; fail "--partition rapa --profile with --threads 1,2"; }
python3 - p21.json pm.err <<'PY' || { cat pm.err; fail "the ranks were not sized by their own devices' entries"; }
import json, re, sys
d = json.load(open(sys.argv[1]))
fast = max(range(2), key=lambda q: d["ranks"][q]["summary"]["mm_gflops"])  # entry 0, cpu-t2
cap = {int(m[0]): float(m[1]) for m in re.findall(r"rapa: rank (\d) capability ([0-9.]+)", open(sys.argv[2]).read())}
assert fast == 0 and cap[1] > cap[0], (fast, cap)  # rank 1 runs the 2-thread device: entry 0's rates
print("--threads 1,2 on a 2,1 profile: capabilities", cap)
# the 2 CPU ranks of one host each count on half of its memory (the profile's figure)
free = {int(m[0]): float(m[1]) for m in re.findall(r"rapa: rank (\d) .* MiB of ([0-9.]+) MiB free", open(sys.argv[2]).read())}
mem = [r["device"]["memory_bytes"] / 1048576.0 for r in d["ranks"]]
assert len(free) == 2 and all(abs(free[q] - mem[1 - q] / 2) <= 0.1 for q in (0, 1)), (free, mem)
print("free memory per rank (MiB):", free, "of the host's", mem)
PY
# both ranks on one entry (the profile's cpu-t1): their link is the one between their rank numbers
mpi -n 2 "$capgnn" --graph cora --epochs 1 --threads 1 --partition rapa --profile p21.json --no-part-cache \
  >pm1.out 2>pm1.err || { cat pm1.err; fail "--partition rapa --profile with two ranks on one profile entry"; }
mpi -n 2 "$capgnn" --graph cora --epochs 2 --threads 2,1,1 >u.out 2>u.err
rc=$?
[ $rc -eq 2 ] || { cat u.err; fail "--threads 2,1,1 on 2 ranks exited $rc, expected 2"; }
grep -q "has 3 values but the job has 2 ranks" u.err || { cat u.err; fail "no message on --threads"; }
CAPGNN_EMULATE_SPEED=1,0.5,0.25 mpi -n 2 -x CAPGNN_EMULATE_SPEED "$capgnn" --graph cora --epochs 2 --threads 1 \
  >e.out 2>e.err && fail "a speed list of 3 values on 2 ranks was accepted"
grep -q "CAPGNN_EMULATE_SPEED='1,0.5,0.25' has 3 values but the job has 2 ranks" e.err || { cat e.err; fail "no message on the speed list"; }
# --gpu-share in training: the MPS daemon checked before any CUDA context, CPU refused
CUDA_MPS_PIPE_DIRECTORY=$out/no-mps "$capgnn" --graph cora --epochs 1 --device cuda --gpu-share 50 >g1.out 2>g1.err
[ $? -eq 1 ] || fail "--gpu-share without an MPS daemon: exit status not 1"
if [ -e /dev/nvidiactl ]; then want="needs the CUDA MPS control daemon, which is not running"; else want="has no NVIDIA GPU"; fi
grep -q "$want" g1.err || { cat g1.err; fail "no message on --gpu-share without MPS or GPU"; }
"$capgnn" --graph cora --epochs 1 --device cpu --gpu-share 50 >g2.out 2>g2.err && fail "--gpu-share on the CPU accepted"
grep -q "applies to GPU ranks" g2.err || { cat g2.err; fail "no message on --gpu-share with --device cpu"; }
"$capgnn" --graph cora --prune-halo 0.1 >g3.out 2>g3.err
[ $? -eq 2 ] || fail "--prune-halo without --partition rapa: not a usage error"
grep -q "needs --partition rapa" g3.err || { cat g3.err; fail "no message on --prune-halo"; }
# a profile whose rank 1 runs at a third of rank 0's rates: pruning that does not depend on
# rates measured at start-up (which a loaded machine skews until nothing is pruned)
python3 - "$profile" p33.json <<'PY' || fail "writing the 1 : 0.33 profile"
import json, socket, sys
d = json.load(open(sys.argv[1]))
REF_ROWS, REF_NNZ, H = 232965.0, 114577213.0, 256.0  # rapa/profile.c's reference layer
s = d["ranks"][1]["summary"]
for key in ("mm_gflops", "spmm_gnnz_s", "spmm_gbs", "idt_gbs"):
    s[key] *= 0.33
t = []
for r in d["ranks"]:
    r["host"] = socket.gethostname().split(".")[0]
    q = r["summary"]
    q["layer_s"] = 2 * REF_ROWS * H * H / (q["mm_gflops"] * 1e9) + REF_NNZ * H / (q["spmm_gnnz_s"] * 1e9)
    t.append(q["layer_s"])
d["capability"].update(relative=[(1 / x) / sum(1 / y for y in t) for x in t], vs_fastest=[min(t) / x for x in t],
                       layer_s=t)
json.dump(d, open(sys.argv[2], "w"))
PY
# --prune-norm original: 2 ranks (rates 1 : 0.33) prune and write the pruned graph; one
# rank trains it with --norm-degrees cora (the original degrees) epoch for epoch, and
# differently without them (its own degrees: the default normalisation)
mpi -n 2 "$capgnn" --graph cora --epochs 6 --threads 1 --profile p33.json \
  --partition rapa --prune-halo 0.001 --prune-norm original --prune-write pruned.cgr --no-part-cache \
  --metrics pn2.jsonl >pn2.out 2>pn2.err || { cat pn2.err; fail "--prune-norm original on 2 ranks failed"; }
grep -q "normalised with the original graph's degrees, written to pruned.cgr" pn2.err ||
  { cat pn2.err; fail "the pruning line does not name the normalisation"; }
rc=0
"$capgnn" --graph pruned.cgr --norm-degrees cora --epochs 6 --threads 1 --metrics pn1.jsonl --checkpoint pn1.ckpt \
  >pn1.out 2>pn1.err || rc=$?
[ $rc -eq 0 ] || { cat pn1.err; fail "one rank with --norm-degrees exited $rc"; }
grep -q "normalising the aggregation by the degrees of cora" pn1.err || { cat pn1.err; fail "--norm-degrees not logged"; }
"$capgnn" --graph pruned.cgr --epochs 6 --threads 1 --quiet --metrics pn1own.jsonl 2>pn1own.err ||
  { cat pn1own.err; fail "one rank on the pruned graph failed"; }
python3 - pn2.jsonl pn1.jsonl pn1own.jsonl <<'PY' || exit 1
import json, sys
recs = [[json.loads(l) for l in open(f)] for f in sys.argv[1:]]
two, one, own = ([x["loss"] for x in r if not x.get("summary")] for r in recs)
s2, s1 = recs[0][-1], recs[1][-1]
assert s2["rapa"]["prune_norm"] == "original" and s2["rapa"]["pruned_edges"] > 0, s2["rapa"]
assert 0 < s2["rapa"]["pruned_edges"] <= s2["rapa"]["cut_edges"] and s2["rapa"]["prune_eps"] == 0.001, s2["rapa"]
assert s1["norm_degrees"] == "cora", s1.get("norm_degrees")
with open("pn1.acc", "w") as f:  # what capgnn predict must print for the checkpoint
    f.write(f"train acc {s1['final_train_acc']:.4f}, val acc {s1['final_val_acc']:.4f}, test acc {s1['final_test_acc']:.4f}")
worst = max(abs(a - b) / abs(b) for a, b in zip(two, one))
assert len(two) == len(one) == 6 and worst <= 1e-5, (worst, two, one)
apart = max(abs(a - b) / abs(b) for a, b in zip(two, own))
assert apart > 1e-4, ("the original degrees changed nothing", two, own)
print(f"--prune-norm original: 2 ranks = one rank with --norm-degrees to {worst:.1e}; its own degrees {apart:.1e} apart")
PY
# --seeds: every run measures, partitions and prunes anew (rates at start-up may prune
# differently each time), so each writes its own FILE.seedN, the graph it trained; one
# rank on run 1's file equals run 1
mpi -n 2 "$capgnn" --graph cora --epochs 3 --threads 1 --profile p33.json --partition rapa --prune-halo 0.001 \
  --prune-write sd.cgr --no-part-cache --seeds 1,2 --metrics sd2.jsonl >sd2.out 2>sd2.err ||
  { cat sd2.err; fail "--prune-write with --seeds on 2 ranks failed"; }
[ -s sd.cgr.seed1 ] && [ -s sd.cgr.seed2 ] && [ ! -e sd.cgr ] || { ls -l sd.cgr*; fail "no FILE.seedN per run"; }
"$capgnn" --graph sd.cgr.seed1 --seed 1 --epochs 3 --threads 1 --quiet --metrics sd1.jsonl 2>sd1.err ||
  { cat sd1.err; fail "one rank on sd.cgr.seed1 failed"; }
python3 - sd2.jsonl sd1.jsonl <<'PY' || fail "one rank on run 1's pruned graph is not run 1"
import json, sys
two = [x["loss"] for x in map(json.loads, open(sys.argv[1])) if "loss" in x and not x.get("summary")][:3]
one = [x["loss"] for x in map(json.loads, open(sys.argv[2])) if "loss" in x and not x.get("summary")]
assert len(two) == len(one) == 3 and max(abs(a - b) / abs(b) for a, b in zip(two, one)) <= 1e-5, (two, one)
PY
# the checkpoint records the degrees: predict normalises as training did (its accuracies
# are the training run's last evaluation)
"$capgnn" predict --checkpoint pn1.ckpt --graph pruned.cgr --output pn1.npy >pr.out 2>pr.err ||
  { cat pr.err; fail "predict on the --norm-degrees checkpoint"; }
grep -q "$(cat pn1.acc)" pr.err || { cat pn1.acc pr.err; fail "predict's accuracies are not the training run's"; }
# a resume whose pruning differs from the checkpoint's graph is refused with the way out
# (an unpruned one-rank checkpoint; should the run prune nothing, the graphs agree)
"$capgnn" --graph cora --epochs 2 --threads 1 --quiet --checkpoint plain.ckpt 2>ck.err || { cat ck.err; fail "checkpoint"; }
rc=0
CAPGNN_EMULATE_SPEED=1,0.33 mpi -n 2 -x CAPGNN_EMULATE_SPEED "$capgnn" --graph cora --epochs 4 --threads 1 \
  --partition rapa --prune-halo 0.001 --no-part-cache --resume plain.ckpt --metrics rs.jsonl >rs.out 2>rs.err || rc=$?
if [ $rc -ne 0 ]; then
  grep -q "resume on that run's pruned graph instead" rs.err || { cat rs.err; fail "no way out on resuming a pruned run"; }
else
  grep -q '"pruned_edges":0' rs.jsonl || fail "a pruned graph resumed an unpruned checkpoint"
fi
# ... and what is refused
"$capgnn" --graph cora --partition rapa --prune-norm original >g4.out 2>g4.err
[ $? -eq 2 ] || fail "--prune-norm without --prune-halo: not a usage error"
grep -q "needs --prune-halo" g4.err || { cat g4.err; fail "no message on --prune-norm"; }
"$capgnn" --graph cora --partition rapa --prune-halo 0.1 --prune-norm mine >g5.out 2>g5.err
[ $? -eq 2 ] || fail "--prune-norm mine: not a usage error"
grep -q "expected pruned or original" g5.err || { cat g5.err; fail "no message on --prune-norm mine"; }
"$capgnn" --graph cora --norm-degrees pruned.cgr --epochs 1 >g6.out 2>g6.err
[ $? -eq 1 ] || fail "cora normalised by the degrees of a graph cut from it: exit status not 1"
grep -q "the degrees must come from a graph this one is part of" g6.err || { cat g6.err; fail "no message on --norm-degrees"; }
if [ -r "$data/citeseer.cgr" ]; then
  "$capgnn" --graph cora --norm-degrees citeseer --epochs 1 >g7.out 2>g7.err
  [ $? -eq 1 ] || fail "--norm-degrees of a graph on other vertices: exit status not 1"
  grep -q "must be the same vertices" g7.err || { cat g7.err; fail "no message on --norm-degrees citeseer"; }
fi
"$capgnn" --graph cora --partition rapa --prune-halo 0.1 --norm-degrees cora >g9.out 2>g9.err
[ $? -eq 2 ] || fail "--norm-degrees with --prune-halo: not a usage error"
grep -q "exclude each other" g9.err || { cat g9.err; fail "no message on --norm-degrees with --prune-halo"; }
# --feat-norm row normalises what trains, not what --prune-write writes: the file holds
# cora's own feature values (a run on it with --feat-norm row normalises them once)
mpi -n 2 "$capgnn" --graph cora --epochs 1 --threads 1 --profile p33.json \
  --feat-norm row --partition rapa --prune-halo 0.001 --prune-write fr.cgr --no-part-cache >fr.out 2>fr.err ||
  { cat fr.err; fail "--feat-norm row with --prune-write on 2 ranks failed"; }
python3 - "$data/cora.cgr" fr.cgr <<'PY' || fail "--prune-write with --feat-norm row wrote other feature values"
import struct, sys
def feat(path):  # FEAT_VALUES: section 4 of the header's table (FORMAT.md)
    b = open(path, "rb").read()
    off, size = struct.unpack_from("<QQ", b, 64 + 4 * 24)
    return b[off:off + size]
a, w = feat(sys.argv[1]), feat(sys.argv[2])
assert a == w, f"{len(a)} and {len(w)} bytes, equal: {a == w}"
PY
# --prune-write never replaces one of the run's inputs, --force or not (core/outfile.h, rule 1)
cp "$data/cora.cgr" in.cgr && chmod u+w in.cgr && cp "$profile" in_profile.json || fail "copying the inputs"
for target in in.cgr in_profile.json; do
  "$capgnn" --graph "$out/in.cgr" --partition rapa --profile in_profile.json --prune-halo 0.1 --prune-write "$target" \
    --force --epochs 1 >g13.out 2>g13.err
  [ $? -eq 1 ] || { cat g13.err; fail "--prune-write $target (an input) with --force: exit status not 1"; }
  grep -q "prune-write $target is the --.* of this run" g13.err || { cat g13.err; fail "no message on --prune-write $target"; }
done
# ... and a path that cannot be written fails at once, before the set-up (not after pruning)
"$capgnn" --graph cora --partition rapa --prune-halo 0.1 --prune-write nodir/x.cgr --epochs 1 >g14.out 2>g14.err
[ $? -eq 1 ] || { cat g14.err; fail "--prune-write into a missing folder: exit status not 1"; }
grep -q "the folder 'nodir' does not exist" g14.err || { cat g14.err; fail "no message on --prune-write nodir/x.cgr"; }
cmp -s in.cgr "$data/cora.cgr" || fail "--prune-write --force replaced the run's graph"
cmp -s in_profile.json "$profile" || fail "--prune-write --force replaced the run's profile"
"$capgnn" --graph cora --partition rapa --prune-halo 0.1 --prune-write one.cgr --epochs 1 >g12.out 2>g12.err
[ $? -eq 1 ] || fail "--prune-write on one rank: exit status not 1"
grep -q "one rank has no halo to prune" g12.err || { cat g12.err; fail "no message on --prune-write on one rank"; }
[ ! -e one.cgr ] || fail "--prune-write on one rank wrote a file"
"$capgnn" --graph cora --model gat --norm-degrees cora --epochs 1 >g10.out 2>g10.err
[ $? -eq 2 ] || fail "--norm-degrees with GAT: not a usage error"
grep -q "no degree normalisation to change" g10.err || { cat g10.err; fail "no message on --norm-degrees with GAT"; }
"$capgnn" --graph cora --model gat --partition rapa --prune-halo 0.1 --prune-norm original >g11.out 2>g11.err
[ $? -eq 2 ] || fail "--prune-norm original with GAT: not a usage error"
grep -q "prune-norm original: GAT" g11.err || { cat g11.err; fail "no message on --prune-norm original with GAT"; }
mpi -n 2 "$capgnn" --graph cora --norm-degrees cora --load per-rank --epochs 1 --threads 1 >g8.out 2>g8.err &&
  fail "--norm-degrees with --load per-rank accepted"
grep -q "per-rank with --norm-degrees" g8.err || { cat g8.err; fail "no message on --norm-degrees with --load per-rank"; }
echo "test_rapa_cli: ok"
