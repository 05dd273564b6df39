#!/usr/bin/env python3
"""Quantize a model's linear weights with qnt from Python, calibrating activations on data, and
report each layer's SQNR.

The model is a small MLP made here with NumPy (so that the example runs anywhere qnt does); with a
real model, read its weights with qnt.ModelFile("model.safetensors") instead.
  1. calibrate: each layer's input is observed over a few batches by a qnt.Calibrator (MSE);
  2. quantize: each weight to int8 per output channel (symmetric min-max);
  3. report: per layer, the weight's SQNR (qnt.error_report) and the SQNR of the layer's output
     run as a static W8A8 layer (qnt.PreparedLinearStatic) against float32;
  4. save: the quantized weights and the inputs' qparams to a safetensors file (qnt.ModelWriter),
     which `qnt info` and any safetensors reader open.
usage: quantize_model.py [--out FILE]
"""
import argparse

import numpy as np

import qnt

ap = argparse.ArgumentParser()
ap.add_argument("--out", default="mlp-int8.safetensors")
args = ap.parse_args()

rng = np.random.default_rng(0)
sizes = [256, 512, 512, 128]
weights = {f"fc{i}.weight": (rng.standard_normal((o, k)) / np.sqrt(k)).astype(np.float32)
           for i, (k, o) in enumerate(zip(sizes, sizes[1:]))}


def forward(x, record=None):
    for name, w in weights.items():
        if record is not None:
            record[name].observe(x)
        x = np.maximum(x @ w.T, 0)
    return x


# 1. calibration: 8 batches of 64 inputs through the float model
calibrators = {n: qnt.Calibrator("mse", "uint8", "affine") for n in weights}
for _ in range(8):
    forward(rng.standard_normal((64, sizes[0])).astype(np.float32), record=calibrators)
in_qparams = {n: c.compute() for n, c in calibrators.items()}

# 2-3. quantization and the report
x = rng.standard_normal((32, sizes[0])).astype(np.float32)
print(f"{'layer':12} {'weight SQNR dB':>15} {'output SQNR dB':>15}  input qparams")
quantized = {}
for name, w in weights.items():
    qp = qnt.calibrate_minmax(w, "int8", "symmetric", "per_axis", axis=0)
    quantized[name] = qnt.quantize(w, qp)
    w_sqnr = qnt.error_report(w, qp).sqnr_db
    layer = qnt.PreparedLinearStatic(quantized[name], in_qparams[name])
    y = np.from_dlpack(layer(x))  # x quantized with the calibrated qparams, then the integer GEMM
    ref = x @ w.T
    out_sqnr = 10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / np.sum((ref - y).astype(np.float64) ** 2))
    print(f"{name:12} {w_sqnr:15.2f} {out_sqnr:15.2f}  {in_qparams[name]!r}")
    x = np.maximum(ref, 0)

# 4. the file
with qnt.ModelWriter(args.out) as f:
    f.set_metadata("source", "examples/python/quantize_model.py")
    for name, q in quantized.items():
        f.set_input_qparams(name, in_qparams[name])
    for name, q in quantized.items():
        f.declare(name, q.dtype, q.shape, q.qparams)
    for q in quantized.values():
        f.write(q)
with qnt.ModelFile(args.out) as f:
    print(f"wrote {args.out}: {len(f)} entries; {f.names()[0]} reads back as {f[f.names()[0]]!r}")
