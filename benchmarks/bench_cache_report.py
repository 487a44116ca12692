#!/usr/bin/env python3
"""benchmarks/bench_cache_report.py — the table of bench_cache.sh from its runs.

usage: bench_cache_report.py OUTDIR MACHINE COMMAND GRAPHS RANKS

Reads OUTDIR/runs/{graph}_p{P}_{setting}_seed{N}.jsonl, checks them (exit 1 when a
check fails: see bench_cache.sh) and writes OUTDIR/bench_cache.json and
OUTDIR/bench_cache.md; prints the table, the machine and the command."""
import glob
import json
import os
import re
import statistics
import sys

outdir, machine, command, graphs, ranks = sys.argv[1:6]
graphs, ranks = graphs.split(), [int(p) for p in ranks.split()]
NAME = re.compile(r"^(?P<g>[a-z][a-z0-9.]*)_p(?P<p>\d+)_(?P<s>.+)_seed(?P<seed>\d+)\.jsonl$")
SETTING = re.compile(r"^(?P<pol>jaca|lru|fifo)-c(?P<cap>[0-9.]+)(-a(?P<eps>[0-9.eE+-]+))?-s(?P<S>\d+)"
                     r"(-ga(?P<geps>[0-9.eE+-]+))?-g(?P<G>\d+)(-w(?P<W>\d+))?(-b(?P<B>\d+))?$")


def load(path):
    recs = [json.loads(line) for line in open(path)]
    summ = [r for r in recs if r.get("summary")]
    if not summ:
        return None
    return [r for r in recs if not r.get("summary")], summ[-1]


runs = {}
for path in sorted(glob.glob(os.path.join(outdir, "runs", "*.jsonl"))):
    m = NAME.match(os.path.basename(path))
    if not m:
        continue
    got = load(path)
    if got is None:
        continue
    runs.setdefault((m["g"], int(m["p"]), m["s"]), {})[int(m["seed"])] = got

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def setting_key(s):
    if s == "exact":
        return (0, 0, 0, 0, 0, 0, 0, 0)
    m = SETTING.match(s)
    eps = -1.0 if m["eps"] is None else float(m["eps"])  # adaptive after the phase schedules
    geps = -1.0 if m["geps"] is None else float(m["geps"])  # adaptive gradients after the phases
    return (1, {"jaca": 0, "lru": 1, "fifo": 2}[m["pol"]], -float(m["cap"]), eps, int(m["S"]), geps, int(m["G"]),
            int(m["W"] or 0), -int(m["B"] or 32))


def is_full(summ, exact):
    """A run as long as the exact runs: the same epochs, or ended by early stopping
    (which ends runs of one setting at different epochs), not a short policy run."""
    return summ.get("outcome") == "early_stopped" or \
        summ["epochs"] == max(e[1]["epochs"] for e in exact.values())


rows = []
for g in graphs:
    for p in ranks:
        exact = runs.get((g, p, "exact"), {})
        if not exact:
            continue
        ex_bytes = statistics.mean(e["halo_bytes"] for e in list(exact.values())[0][0][1:])
        for s in sorted({k[2] for k in runs if k[0] == g and k[1] == p}, key=setting_key):
            per_seed = runs[(g, p, s)]
            bytes_ep, acc, delta, epoch_s, hit, oracle, window = [], [], [], [], [], [], []
            age_max = grad_age_max = 0
            for seed, (eps, summ) in sorted(per_seed.items()):
                bytes_ep.append(statistics.mean(e["halo_bytes"] for e in eps[1:]))
                epoch_s.append(summ["median_epoch_s"])
                full = is_full(summ, exact)
                if full:
                    acc.append(summ["test_acc_at_best_val"])
                if seed in exact and full:
                    delta.append(100.0 * (summ["test_acc_at_best_val"] - exact[seed][1]["test_acc_at_best_val"]))
                c = summ.get("cache")
                if c:
                    hit.append(c["node_hits"] + c["rank_hits"])
                    hit.append(c["lookups"])
                    if c.get("oracle_hit_rate") is not None:
                        oracle.append(c["oracle_hit_rate"])
                        window.append(c["policy_hit_rate"])
                    age_max = max(age_max, c["age_max"])
                    grad_age_max = max(grad_age_max, c["grad_age_max"])
            m = SETTING.match(s)
            S = int(m["S"]) if m else 0
            G = int(m["G"]) if m else 0
            eps = float(m["eps"]) if m and m["eps"] is not None else None
            geps = float(m["geps"]) if m and m["geps"] is not None else None
            label = f"{g} P={p} {s}"
            for b in bytes_ep:
                check(b <= ex_bytes, f"{label}: {b:.0f} halo bytes per epoch, more than the exact run's {ex_bytes:.0f}")
            check(age_max <= S and grad_age_max <= G,
                  f"{label}: a row {age_max} epochs old (S {S}) or a gradient {grad_age_max} old (G {G})")
            if m and m["pol"] != "jaca" and float(m["cap"]) == 1.0:
                twin = runs.get((g, p, "jaca" + s[len(m["pol"]):]), {})
                for seed, (eps_, summ) in per_seed.items():
                    if seed in twin:
                        t = twin[seed][1]
                        tb = statistics.mean(e["halo_bytes"] for e in twin[seed][0][1:])
                        check(summ["epochs"] == t["epochs"] and summ["final_loss"] == t["final_loss"] and
                              summ["test_acc_at_best_val"] == t["test_acc_at_best_val"] and
                              bytes_ep[sorted(per_seed).index(seed)] == tb and
                              (summ["cache"]["node_hits"] + summ["cache"]["rank_hits"]) ==
                              (t["cache"]["node_hits"] + t["cache"]["rank_hits"]),
                              f"{label} seed {seed}: every row fits at capacity 1, yet the run differs from jaca's")
            # exact by construction; coded rows (-bB) are not
            if m and (S == 0 or eps == 0.0) and (G == 0 or geps == 0.0) and not m["B"]:
                for seed, (eps_, summ) in per_seed.items():
                    if seed in exact and summ["epochs"] == exact[seed][1]["epochs"]:
                        e = exact[seed][1]
                        check(summ["test_acc_at_best_val"] == e["test_acc_at_best_val"] and
                              summ["best_epoch"] == e["best_epoch"] and summ["final_loss"] == e["final_loss"],
                              f"{label} seed {seed}: exact by construction, yet its result differs from the exact run's")
            hits = sum(hit[0::2]) / sum(hit[1::2]) if hit and sum(hit[1::2]) > 0 else None
            rows.append({
                "graph": g, "P": p, "setting": s,
                "policy": m["pol"] if m else "none", "capacity": float(m["cap"]) if m else None,
                "staleness": (S if eps is None else f"adaptive:{eps:g}:{S}") if not (m and m["W"]) else
                (f"{S}, warm-up {m['W']}" if eps is None else f"adaptive:{eps:g}:{S}, warm-up {m['W']}"),
                "halo_bits": int(m["B"]) if m and m["B"] else 32,
                "grad_staleness": G if geps is None else f"adaptive:{geps:g}:{G}", "seeds": sorted(per_seed),
                "halo_bytes_per_epoch": statistics.mean(bytes_ep),
                "exact_halo_bytes_per_epoch": ex_bytes,
                "saved": 1.0 - statistics.mean(bytes_ep) / ex_bytes if ex_bytes > 0 else 0.0,
                "epoch_ms_median": 1000.0 * statistics.median(epoch_s),
                "test_acc_mean": statistics.mean(acc) if acc else None,
                "delta_points_mean": statistics.mean(delta) if delta else None,
                "delta_points_min": min(delta) if delta else None,
                "delta_points_max": max(delta) if delta else None,
                "paired_seeds": len(delta),
                "hit_rate": hits,
                "oracle_hit_rate": statistics.mean(oracle) if oracle else None,
                # the policy's hit rate on the oracle's window (the same reads and slots;
                # adaptive mode's drift skips are hits of the run, not of the window)
                "window_hit_rate": statistics.mean(window) if window else None,
            })


def fmt(v, f):
    return "–" if v is None else format(v, f)


def ratio(a, b):
    return None if a is None or not b else a / b


lines = ["| graph | P | policy | capacity | S | G | seeds | halo bytes/epoch | saved | epoch ms | test acc | delta (points) [min, max] | hit rate | MIN hit rate | policy / MIN (window) |",
         "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for r in rows:
    d = "–" if r["delta_points_mean"] is None else \
        f"{r['delta_points_mean']:+.2f} [{r['delta_points_min']:+.1f}, {r['delta_points_max']:+.1f}]"
    lines.append(f"| {r['graph']} | {r['P']} | {r['policy']} | {fmt(r['capacity'], 'g')} | {r['staleness']}{'' if r['halo_bits'] == 32 else ', ' + str(r['halo_bits']) + '-bit rows'} | "
                 f"{r['grad_staleness']} | {len(r['seeds'])} | {r['halo_bytes_per_epoch']:,.0f} | {100 * r['saved']:.1f} % | "
                 f"{r['epoch_ms_median']:.1f} | {fmt(None if r['test_acc_mean'] is None else 100 * r['test_acc_mean'], '.2f')} | "
                 f"{d} | {fmt(None if r['hit_rate'] is None else 100 * r['hit_rate'], '.1f')} | "
                 f"{fmt(None if r['oracle_hit_rate'] is None else 100 * r['oracle_hit_rate'], '.1f')} | "
                 f"{fmt(ratio(r['window_hit_rate'], r['oracle_hit_rate']), '.3f')} |")
# Pareto: per graph and P, the settings with a paired accuracy delta that no other such
# setting beats on both bytes saved and mean delta; the target is issue 13's.
pareto = ["", "Pareto front per graph and P (bytes saved against the mean paired accuracy delta; "
          "target: saved >= 90 % and delta >= -0.3 points):", "",
          "| graph | P | setting | seeds | saved | delta (points) [min, max] | meets target |",
          "|---|---:|---|---:|---:|---:|---|"]
for g in graphs:
    for p in ranks:
        cand = [r for r in rows if r["graph"] == g and r["P"] == p and r["delta_points_mean"] is not None]
        front = [r for r in cand if not any(
            o["saved"] >= r["saved"] and o["delta_points_mean"] >= r["delta_points_mean"] and
            (o["saved"] > r["saved"] or o["delta_points_mean"] > r["delta_points_mean"]) for o in cand)]
        for r in sorted(front, key=lambda r: -r["saved"]):
            r["pareto"] = True
            ok = r["saved"] >= 0.9 and r["delta_points_mean"] >= -0.3
            pareto.append(f"| {g} | {p} | {r['setting']} | {r['paired_seeds']} | {100 * r['saved']:.1f} % | "
                          f"{r['delta_points_mean']:+.2f} [{r['delta_points_min']:+.1f}, {r['delta_points_max']:+.1f}] | "
                          f"{'yes' if ok else 'no'} |")
        for r in cand:
            r["meets_target"] = r["saved"] >= 0.9 and r["delta_points_mean"] >= -0.3
lines += pareto
table = "\n".join(lines)
per_run = []
for (g, p, st), seeds in sorted(runs.items()):
    for seed, (eps, summ) in sorted(seeds.items()):
        c = summ.get("cache") or {}
        per_run.append({"graph": g, "P": p, "setting": st, "seed": seed, "epochs": summ["epochs"],
                        "test_acc_at_best_val": summ["test_acc_at_best_val"], "best_epoch": summ["best_epoch"],
                        "final_loss": summ["final_loss"], "median_epoch_s": summ["median_epoch_s"],
                        "halo_bytes_per_epoch": statistics.mean(e["halo_bytes"] for e in eps[1:]),
                        "cache_hits": c.get("node_hits", 0) + c.get("rank_hits", 0), "cache_lookups": c.get("lookups"),
                        "policy_hit_rate": c.get("policy_hit_rate"), "oracle_hit_rate": c.get("oracle_hit_rate"),
                        "age_max": c.get("age_max"), "grad_age_max": c.get("grad_age_max")})
out = {"machine": machine, "command": command, "rows": rows, "runs": per_run, "failures": failures}
json.dump(out, open(os.path.join(outdir, "bench_cache.json"), "w"), indent=1)
with open(os.path.join(outdir, "bench_cache.md"), "w") as f:
    f.write(table + "\n\nmachine: " + machine + "\ncommand: " + command + "\n")
print(table)
print("\nmachine:", machine)
print("command:", command)
for msg in failures:
    print("CHECK FAILED:", msg, file=sys.stderr)
sys.exit(1 if failures else 0)
