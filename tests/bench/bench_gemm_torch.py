"""The issue-9 table: qnt_bench_gemm's TSV (qnt beside oneDNN and the machine's limits, one run)
with PyTorch's quantized ops (Debian's python3-torch) measured right after on the same machine:
dynamic nn.Linear, static quantized Linear (u8 in and out), quantized Conv2d (NCHW).
usage: bench_gemm_torch.py qnt.tsv [--quick]"""
import sys
import time


def best(f, budget):
    f()
    t_best, spent, n = 1e30, 0.0, 0
    while n < 3 or (spent < budget and n < 1000):
        t0 = time.perf_counter()
        f()
        dt = time.perf_counter() - t0
        t_best, spent, n = min(t_best, dt), spent + dt, n + 1
    return t_best


def torch_times(quick):
    import torch
    import torch.ao.nn.quantized as nnq
    import torch.ao.nn.quantized.dynamic as nnqd
    engines = torch.backends.quantized.supported_engines
    engine = next(e for e in ("x86", "fbgemm", "onednn", "qnnpack") if e in engines)
    torch.backends.quantized.engine = engine
    print(f"# PyTorch {torch.__version__}, quantized engine {engine}")
    budget = 0.08 if quick else 0.4
    out = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        lin = nnqd.Linear(4096, 4096, dtype=torch.qint8)
        slin = nnq.Linear(4096, 4096)
        for m in (1, 16, 128):
            x = torch.randn(m, 4096)
            out[("linear_dynamic_f32", m, threads)] = best(lambda: lin(x), budget)
            qx = torch.quantize_per_tensor(x, 0.02, 128, torch.quint8)
            out[("linear_static_u8", m, threads)] = best(lambda: slin(qx), budget)
        for c, h, groups in ((64, 56, 1), (256, 14, 1), (256, 28, 256)):
            conv = nnq.Conv2d(c, c, 3, padding=1, groups=groups)
            qx = torch.quantize_per_tensor(torch.randn(1, c, h, h), 0.02, 128, torch.quint8)
            out[("conv_nchw", c, h, groups > 1, threads)] = best(lambda: conv(qx), budget)
    return out


def main():
    quick = "--quick" in sys.argv
    rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
    header = [r for r in rows if r[0].startswith("#")]
    rows = [r for r in rows if not r[0].startswith("#") and r[0] != "work"]
    # The tuning section's rows have their own columns (tuned time, untuned time, their ratio,
    # the noise of two untuned runs, the parameters chosen): a table of their own, last.
    tune = [r for r in rows if r[0].startswith("tune ")]
    rows = [r for r in rows if not r[0].startswith("tune ")]
    try:
        tt = torch_times(quick)
    except Exception as e:  # no torch: the oneDNN columns alone
        print(f"(PyTorch not measured: {e})")
        tt = {}
    for h in header:
        print(h[0])
    print("| work | threads | qnt ms | peer | peer ms | peer/qnt | qnt GOPS | limit GOPS | qnt/limit | PyTorch ms | PyTorch/qnt |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        work, threads, qs, peer, ps, ratio, ops, gops, limit = r
        threads, qs, ps, gops, limit = int(threads), float(qs), float(ps), float(gops), float(limit)
        key = None
        name = work.split(" ")[0]
        if name in ("linear_dynamic_f32", "linear_static_u8"):
            key = (name, int(work.split(" ")[1][1:]), threads)
        elif name == "conv_nchw":  # "conv_nchw C->M H^2 3x3[ depthwise]"
            parts = work.split(" ")
            key = (name, int(parts[1].split("->")[0]), int(parts[2].split("^")[0]),
                   "depthwise" in parts, threads)
        t = tt.get(key) if key else None
        torch_cols = f"{t * 1e3:.3f} | {t / qs:.2f}" if t else "— | —"
        share = f"{gops / limit:.2f}" if limit > 0 and peer != "roofline" else "—"
        print(f"| {work} | {threads} | {qs * 1e3:.3f} | {peer} | {ps * 1e3:.3f} | {float(ratio):.2f} | "
              f"{gops:.1f} | {limit:.1f} | {share} | {torch_cols} |")
    if tune:
        print()
        print("| tuning (QNT_TUNING_MEASURE) | threads | tuned ms | untuned ms | untuned/tuned | noise | params |")
        print("|---|---|---|---|---|---|---|")
        for r in tune:
            work, threads, ts, _, us, ratio, noise, params = (r + [""] * 8)[:8]
            print(f"| {work[5:]} | {threads} | {float(ts) * 1e3:.3f} | {float(us) * 1e3:.3f} | "
                  f"{float(ratio):.2f} | {noise.replace('noise ', '')} | {params.replace('params ', '')} |")


main()
