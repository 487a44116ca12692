#!/usr/bin/env python3
"""PyTorch peers for the side-by-side benchmark (README, Benchmarks). Only run where
PyTorch exists; capgnn itself never needs Python.

Trains the model capgnn trains on the same .cgr file, on the CPU or a CUDA GPU:
GCN (A_hat = D^-1/2 (A+I) D^-1/2, degrees with the self-loop) or GraphSAGE-mean
(z = mean_in(h) W + h W_self + b, the mean over in-neighbours, 0 without any),
L layers, hidden H, ReLU, dropout p on every layer's input (features included,
with their own probability under --input-dropout; no precomputation of A.X),
aggregation at the smaller of a layer's two widths (as capgnn), Adam (lr, L2
weight decay), full-batch cross-entropy on the train split, optional row-normalised
features. Three peers (--peer):

  plain  torch.sparse.mm on a CSR adjacency, autograd as it comes: PyTorch builds
         the transposed matrix again in every backward (what most scripts do);
  tuned  the adjacency and its transpose built once, a custom autograd function
         multiplies by the transpose in backward (the fair, fast peer);
  pyg    PyTorch Geometric's GCNConv (normalize=False, the same A_hat) or SAGEConv
         (mean) on a sparse adjacency (when torch_geometric is installed).

--check-grads runs one step of plain and of the chosen peer from the same weights
and dropout masks and fails (exit 1) unless their gradients agree (relative 1e-4).
Reports the median epoch time (after 3 warm-up epochs; CUDA synchronised), peak
memory (GPU: allocator peak; CPU: the process's peak RSS) and test accuracy at the
best validation epoch, and writes JSON.

  python3 benchmarks/torch_gcn.py --graph reddit.cgr --epochs 50 --json out.json
  python3 benchmarks/torch_gcn.py --graph g.cgr --device cpu --threads 2 --model sage --peer tuned
"""
import argparse
import json
import os
import platform
import resource
import statistics
import struct
import sys
import time
import zlib

import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore", message="Sparse (invariant checks|CSR tensor support)")

def read_cgr(path):
    """Reads a .cgr file (../shared/datasets/FORMAT.md), checking magic, version and CRCs."""
    with open(path, "rb") as fh:
        b = fh.read()
    if len(b) < 256 or b[:8] != b"CAPGNN01":
        sys.exit(f"{path}: not a .cgr file")
    ver, hb = struct.unpack_from("<II", b, 8)
    n, m, f, c, nnz = struct.unpack_from("<QQQQQ", b, 16)
    flags, ns = struct.unpack_from("<II", b, 56)
    if ver != 1 or hb != 256 or ns != 7:
        sys.exit(f"{path}: unsupported version/header")
    if zlib.crc32(b[:252]) != struct.unpack_from("<I", b, 252)[0]:
        sys.exit(f"{path}: header CRC mismatch")
    sec = []
    for s in range(7):
        off, size, crc = struct.unpack_from("<QQI", b, 64 + 24 * s)
        data = b[off:off + size]
        if size and zlib.crc32(data) != crc:
            sys.exit(f"{path}: section {s} CRC mismatch")
        sec.append(data)
    rowptr = np.frombuffer(sec[0], dtype="<i8")
    colidx = np.frombuffer(sec[1], dtype="<i4")
    vals = np.frombuffer(sec[4], dtype="<f4")
    if flags & 2:
        x = np.zeros((n, f), dtype=np.float32)
        frp = np.frombuffer(sec[2], dtype="<i8")
        fci = np.frombuffer(sec[3], dtype="<i4")
        rows = np.repeat(np.arange(n), np.diff(frp))
        x[rows, fci] = vals
    else:
        x = vals.reshape(n, f).copy()
    if flags & 1:
        sys.exit("multi-label graphs are not supported by this reference script")
    labels = np.frombuffer(sec[5], dtype="<i4").copy()
    split = np.frombuffer(sec[6], dtype=np.uint8).copy()
    return n, rowptr, colidx, x, labels, split, c


def adjacency(n, rowptr, colidx, model, device):
    """gcn: A_hat with degrees counted with the self-loop; sage: the row-wise mean
    D^-1 A (rows are the in-neighbours, as in the .cgr CSR); sum: A. All as CSR."""
    counts_np = np.diff(rowptr)
    counts = torch.from_numpy(counts_np).to(device)
    rows = torch.repeat_interleave(torch.arange(n, device=device), counts)
    cols = torch.from_numpy(colidx.astype(np.int64)).to(device)
    if model == "gcn":
        deg = torch.from_numpy(counts_np.astype(np.float32) + 1.0).to(device)
        loop = torch.arange(n, device=device)
        r = torch.cat([rows, loop])
        c = torch.cat([cols, loop])
        w = torch.rsqrt(deg[r] * deg[c])
    else:  # "sage": the row mean; "sum": the 0/1 adjacency
        deg = torch.from_numpy(np.maximum(counts_np, 1).astype(np.float32)).to(device)
        r, c = rows, cols
        w = 1.0 / deg[r] if model == "sage" else torch.ones_like(deg[r])
    a = torch.sparse_coo_tensor(torch.stack([r, c]), w, (n, n)).coalesce()
    return a.to_sparse_csr()


class _SpMMTransposeOnce(torch.autograd.Function):
    """y = A h; dh = A^T dy with A^T built once outside (the tuned peer)."""

    @staticmethod
    def forward(ctx, h, a, at):
        ctx.at = at
        return torch.sparse.mm(a, h)

    @staticmethod
    def backward(ctx, dy):
        return torch.sparse.mm(ctx.at, dy), None, None


class Net(torch.nn.Module):
    """GCN or SAGE on a prebuilt adjacency, plain or tuned products."""

    def __init__(self, model, dims, dropout, input_dropout, tuned):
        super().__init__()
        self.model, self.tuned = model, tuned
        self.lins = torch.nn.ModuleList(
            torch.nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1))
        self.selfs = torch.nn.ModuleList(
            torch.nn.Linear(dims[i], dims[i + 1], bias=False) for i in range(len(dims) - 1)) \
            if model == "sage" else None
        for i, lin in enumerate(self.lins):
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)
            if self.selfs is not None:
                torch.nn.init.xavier_uniform_(self.selfs[i].weight)
        self.p, self.p_in = dropout, input_dropout

    def agg(self, adj, h):
        a, at = adj
        return _SpMMTransposeOnce.apply(h, a, at) if self.tuned else torch.sparse.mm(a, h)

    def forward(self, adj, x):
        h = x
        for i, lin in enumerate(self.lins):
            h = torch.nn.functional.dropout(h, self.p_in if i == 0 else self.p, self.training)
            if lin.in_features > lin.out_features:  # aggregate at the smaller width
                z = self.agg(adj, h @ lin.weight.t()) + lin.bias
            else:
                z = lin(self.agg(adj, h))
            if self.selfs is not None:
                z = z + self.selfs[i](h)
            h = torch.relu(z) if i + 1 < len(self.lins) else z
        return h


class PygNet(torch.nn.Module):
    """The same model from PyTorch Geometric's layers on a sparse adjacency."""

    def __init__(self, model, dims, dropout, input_dropout):
        super().__init__()
        import torch_geometric.nn as gnn
        if model == "gcn":
            self.convs = torch.nn.ModuleList(
                gnn.GCNConv(dims[i], dims[i + 1], normalize=False, cached=False)
                for i in range(len(dims) - 1))
        else:
            self.convs = torch.nn.ModuleList(
                gnn.SAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(len(dims) - 1))
        self.p, self.p_in = dropout, input_dropout

    def forward(self, adj, x):
        h = x
        for i, conv in enumerate(self.convs):
            h = torch.nn.functional.dropout(h, self.p_in if i == 0 else self.p, self.training)
            h = conv(h, adj)
            if i + 1 < len(self.convs):
                h = torch.relu(h)
        return h


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def device_name(dev):
    if dev.type == "cuda":
        return torch.cuda.get_device_name()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def build(args, peer, dims, p_in, dev):
    torch.manual_seed(args.seed)
    if peer == "pyg":
        return PygNet(args.model, dims, args.dropout, p_in).to(dev)
    return Net(args.model, dims, args.dropout, p_in, tuned=(peer == "tuned")).to(dev)


def first_step_grads(model, adj, xt, y, mask, seed, params=None):
    model.train()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed + 1)  # the same dropout masks in both models
    out = model(adj, xt)
    torch.nn.functional.cross_entropy(out[mask], y[mask]).backward()
    return [p.grad.detach().clone() for p in (params or list(model.parameters()))]


def pyg_params(model, kind):
    """PyG's parameters in the order of Net's (weights and biases per layer, then the
    self weights)."""
    if kind == "gcn":
        return [t for conv in model.convs for t in (conv.lin.weight, conv.bias)]
    return [t for conv in model.convs for t in (conv.lin_l.weight, conv.lin_l.bias)] + \
        [conv.lin_r.weight for conv in model.convs]


def check_grads(args, dims, p_in, adj, xt, y, mask, dev):
    """One step of plain and of args.peer from the same weights and masks."""
    ref = build(args, "plain", dims, p_in, dev)
    other = build(args, args.peer, dims, p_in, dev)
    params = None
    if args.peer == "pyg":  # plain's weights into PyG's layers
        params = pyg_params(other, args.model)
        with torch.no_grad():
            for dst, src in zip(params, ref.parameters()):
                dst.copy_(src)
    g0 = first_step_grads(ref, adj["plain"], xt, y, mask, args.seed)
    g1 = first_step_grads(other, adj[args.peer], xt, y, mask, args.seed, params)
    ref_norm = max(float(g.abs().max()) for g in g0)
    diff = max(float((a - b).abs().max()) for a, b in zip(g0, g1))
    return diff / max(ref_norm, 1e-30)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", required=True)
    ap.add_argument("--model", choices=["gcn", "sage"], default="gcn")
    ap.add_argument("--peer", choices=["plain", "tuned", "pyg"], default="plain")
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None,
                    help="default: cuda when PyTorch sees a GPU, else cpu")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (default: PyTorch's)")
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--input-dropout", type=float, default=None,
                    help="dropout on the input features (default: as --dropout)")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check-grads", action="store_true",
                    help="compare one step's gradients with the plain peer's first (exit 1 if they differ)")
    ap.add_argument("--json")
    ap.add_argument("--feat-norm", choices=["row", "none"], default="none")
    args = ap.parse_args()
    dev = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: PyTorch sees no GPU")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.peer == "pyg":
        try:
            import torch_geometric  # noqa: F401
        except ImportError:
            sys.exit("--peer pyg: torch_geometric is not installed")
    n, rowptr, colidx, x, labels, split, c = read_cgr(args.graph)
    if args.feat_norm == "row":
        s = x.sum(axis=1, keepdims=True)
        x = np.where(s != 0, x / np.where(s == 0, 1, s), x).astype(np.float32)
    t_setup = time.perf_counter()
    a = adjacency(n, rowptr, colidx, args.model, dev)
    adj = {"plain": (a, None)}
    if args.peer == "tuned" or args.check_grads:
        adj["tuned"] = (a, a.t().to_sparse_csr())  # once, outside the timed epochs
    if args.peer == "pyg":
        # PyG reads a sparse adjacency as adj_t (rows = targets, as our CSR rows are);
        # SAGEConv takes the mean itself, so it gets the 0/1 adjacency
        adj["pyg"] = a if args.model == "gcn" else adjacency(n, rowptr, colidx, "sum", dev)
    setup_s = time.perf_counter() - t_setup
    xt = torch.from_numpy(x).to(dev)
    y = torch.from_numpy(labels.astype(np.int64)).to(dev)
    masks = [torch.from_numpy(split == k).to(dev) for k in (1, 2, 3)]
    dims = [x.shape[1]] + [args.hidden] * (args.layers - 1) + [c]
    p_in = args.dropout if args.input_dropout is None else args.input_dropout
    grad_rel = None
    if args.check_grads and args.peer != "plain":
        grad_rel = check_grads(args, dims, p_in, adj, xt, y, masks[0], dev)
        print(f"gradient check: {args.peer} vs plain, max relative difference {grad_rel:.3e}", flush=True)
        if not grad_rel <= 1e-4:
            sys.exit(f"gradient check failed: {args.peer} differs from plain by {grad_rel:.3e} (relative)")
    model = build(args, args.peer, dims, p_in, dev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    A = adj[args.peer]
    sync(dev)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times, best_val, test_at_best, losses = [], -1.0, 0.0, []
    for epoch in range(args.epochs):
        sync(dev)
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad(set_to_none=True)
        out = model(A, xt)
        loss = torch.nn.functional.cross_entropy(out[masks[0]], y[masks[0]])
        loss.backward()
        opt.step()
        sync(dev)
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = model(A, xt).argmax(1)
            acc = [(pred[mk] == y[mk]).float().mean().item() for mk in masks]
        if acc[1] > best_val:
            best_val, test_at_best = acc[1], acc[2]
        print(f"epoch {epoch:4d} loss {losses[-1]:.4f} train {acc[0]:.4f} val {acc[1]:.4f} "
              f"test {acc[2]:.4f} time {times[-1]*1e3:.1f} ms", flush=True)
    warm = times[3:] if len(times) > 5 else times
    peak = torch.cuda.max_memory_allocated() if dev.type == "cuda" else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    res = {"system": "pytorch", "peer": args.peer, "model": args.model, "torch": torch.__version__,
           "device": dev.type, "device_name": device_name(dev),
           "threads": torch.get_num_threads() if dev.type == "cpu" else None,
           "graph": args.graph, "n": int(n), "nnz": int(a.values().numel()),
           "layers": args.layers, "hidden": args.hidden, "epochs": args.epochs,
           "median_epoch_s": statistics.median(warm), "setup_s": setup_s,
           "peak_mem_bytes": peak, "peak_mem_kind": "gpu_allocated" if dev.type == "cuda" else "process_rss",
           "best_val_acc": best_val, "test_acc_at_best_val": test_at_best,
           "final_loss": losses[-1], "grad_check_rel": grad_rel,
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
    print(json.dumps(res))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
