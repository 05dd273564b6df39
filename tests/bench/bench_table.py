"""Prints the kernel benchmark table: qnt's lines (from qnt_bench_kernels) with PyTorch's times
for the same work measured now, in this run. Ratios: to the limit measured in qnt's run (bytes
read + written over the streaming-copy bandwidth, bytes read over the streaming-read bandwidth,
or the plain loop's time over qnt's), to the streaming read alone (the op's bytes read), and to
PyTorch (torch time / qnt time, so above 1 means qnt is faster)."""
import sys
import time

rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
quick = "--quick" in sys.argv
n = (1 << 22) if quick else (1 << 26)

peer = {}
try:
    import torch

    x = torch.randn(n)

    def best(f, reps=3):
        f()
        b = 1e30
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            b = min(b, time.perf_counter() - t0)
        return b

    for threads in (1, 2):
        torch.set_num_threads(threads)
        for dt, name in ((torch.qint8, "i8"), (torch.quint8, "u8")):
            zp = 128 if name == "u8" else 0
            q = torch.quantize_per_tensor(x, 0.02, zp, dt)
            peer[(f"quantize f32->{name} per_tensor 64Mi", threads)] = best(
                lambda: torch.quantize_per_tensor(x, 0.02, zp, dt))
            peer[(f"dequantize {name}->f32 per_tensor 64Mi", threads)] = best(lambda: q.dequantize())
        xs = x.reshape(64, -1)
        s = torch.full((64,), 0.02)
        z = torch.zeros(64, dtype=torch.int64)
        peer[("quantize f32->i8 per_axis 64Mi", threads)] = best(
            lambda: torch.quantize_per_channel(xs, s, z, 0, torch.qint8))
        peer[("calibrate_minmax 64Mi", threads)] = best(lambda: torch.aminmax(x))
except ImportError:
    pass

bw = {}
print(f"{'work':48} {'thr':>3} {'qnt ms':>9} {'vs limit':>9} {'vs read':>8} {'vs torch':>9}")
for work, threads, sec, nbytes, limit, limit_bw, rbytes, rbw in rows:
    threads, sec, nbytes, limit_bw = int(threads), float(sec), float(nbytes), float(limit_bw)
    rbytes, rbw = float(rbytes), float(rbw)
    if limit == "none" and work.startswith("stream"):
        print(f"{work + ' (GB/s)':48} {threads:>3} {limit_bw / 1e9:>9.2f}")
        continue
    ratio = ""
    if limit in ("copy", "read"):
        ratio = f"{(nbytes / sec) / limit_bw:9.2f}"
    elif limit == "plain":
        ratio = f"{(nbytes / sec) / limit_bw:9.2f}"
    p = peer.get((work, threads))
    vs = f"{p / sec:9.2f}" if p else ""
    vr = f"{(rbytes / sec) / rbw:8.2f}" if rbytes > 0 and rbw > 0 else ""
    print(f"{work:48} {threads:>3} {sec * 1e3:>9.2f} {ratio:>9} {vr:>8} {vs:>9}")
