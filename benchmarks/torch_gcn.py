#!/usr/bin/env python3
"""PyTorch reference for the side-by-side GCN benchmark (benchmarks/README section
in the top-level README). Only run where PyTorch exists (the GPU test host);
capgnn itself never needs Python.

Trains the same model capgnn trains on the same .cgr file: GCN with
A_hat = D^-1/2 (A+I) D^-1/2 as a CSR tensor multiplied with torch.sparse.mm,
L layers, hidden H, ReLU, dropout p on every layer's input (features included,
with their own probability under --input-dropout; no precomputation of A.X),
Adam (lr, L2 weight decay), full-batch cross-entropy on the train split,
optional row-normalised features. Reports the median epoch time (CUDA synchronised),
peak GPU memory and test accuracy at the best validation epoch, and writes JSON.

  python3 benchmarks/torch_gcn.py --graph reddit.cgr --epochs 50 --json out.json
"""
import argparse
import json
import statistics
import struct
import sys
import time
import zlib

import numpy as np
import torch


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


def gcn_adjacency(n, rowptr, colidx, device):
    """A_hat = D^-1/2 (A+I) D^-1/2 with degrees counted with the self-loop, as CSR."""
    deg = torch.from_numpy(np.diff(rowptr).astype(np.float32) + 1.0).to(device)
    counts = torch.from_numpy(np.diff(rowptr)).to(device)
    rows = torch.repeat_interleave(torch.arange(n, device=device), counts)
    cols = torch.from_numpy(colidx.astype(np.int64)).to(device)
    loop = torch.arange(n, device=device)
    r = torch.cat([rows, loop])
    c = torch.cat([cols, loop])
    w = torch.rsqrt(deg[r] * deg[c])
    a = torch.sparse_coo_tensor(torch.stack([r, c]), w, (n, n)).coalesce()
    return a.to_sparse_csr()


class GCN(torch.nn.Module):
    def __init__(self, dims, dropout, input_dropout):
        super().__init__()
        self.lins = torch.nn.ModuleList(
            torch.nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1))
        for lin in self.lins:
            torch.nn.init.xavier_uniform_(lin.weight)
            torch.nn.init.zeros_(lin.bias)
        self.p = dropout
        self.p_in = input_dropout

    def forward(self, a, x):
        h = x
        for i, lin in enumerate(self.lins):
            h = torch.nn.functional.dropout(h, self.p_in if i == 0 else self.p, self.training)
            # aggregate at the smaller width, as capgnn does
            if lin.in_features > lin.out_features:
                h = torch.sparse.mm(a, h @ lin.weight.t()) + lin.bias
            else:
                h = lin(torch.sparse.mm(a, h))
            if i + 1 < len(self.lins):
                h = torch.relu(h)
        return h


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", required=True)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--input-dropout", type=float, default=None,
                    help="dropout on the input features (default: as --dropout)")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--feat-norm", choices=["row", "none"], default="none")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    dev = torch.device("cuda")
    n, rowptr, colidx, x, labels, split, c = read_cgr(args.graph)
    if args.feat_norm == "row":
        s = x.sum(axis=1, keepdims=True)
        x = np.where(s != 0, x / np.where(s == 0, 1, s), x).astype(np.float32)
    a = gcn_adjacency(n, rowptr, colidx, dev)
    xt = torch.from_numpy(x).to(dev)
    y = torch.from_numpy(labels.astype(np.int64)).to(dev)
    masks = [torch.from_numpy(split == k).to(dev) for k in (1, 2, 3)]
    dims = [x.shape[1]] + [args.hidden] * (args.layers - 1) + [c]
    p_in = args.dropout if args.input_dropout is None else args.input_dropout
    model = GCN(dims, args.dropout, p_in).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times, best_val, test_at_best, losses = [], -1.0, 0.0, []
    for epoch in range(args.epochs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.train()
        opt.zero_grad(set_to_none=True)
        out = model(a, xt)
        loss = torch.nn.functional.cross_entropy(out[masks[0]], y[masks[0]])
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = model(a, xt).argmax(1)
            acc = [(pred[mk] == y[mk]).float().mean().item() for mk in masks]
        if acc[1] > best_val:
            best_val, test_at_best = acc[1], acc[2]
        print(f"epoch {epoch:4d} loss {losses[-1]:.4f} train {acc[0]:.4f} val {acc[1]:.4f} "
              f"test {acc[2]:.4f} time {times[-1]*1e3:.1f} ms", flush=True)
    warm = times[3:] if len(times) > 5 else times
    res = {"system": "pytorch", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
           "graph": args.graph, "n": int(n), "nnz_with_self_loops": int(a.values().numel()),
           "layers": args.layers, "hidden": args.hidden, "epochs": args.epochs,
           "median_epoch_s": statistics.median(warm),
           "peak_gpu_mem_bytes": torch.cuda.max_memory_allocated(),
           "best_val_acc": best_val, "test_acc_at_best_val": test_at_best,
           "final_loss": losses[-1], "command": " ".join(sys.argv)}
    print(json.dumps(res))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
