#!/usr/bin/env python3
"""Generates bindings/python/qnt/_capi.py from the public headers (include/qnt/qnt.h and
include/qnt/qnt_io.h): every QNT_API function's ctypes signature and its header comment, every
named constant (the enums and the QNT_* integer macros), the version, and the public structs.

usage: gen_capi.py [--check] [OUT]
  OUT       where to write (default: bindings/python/qnt/_capi.py beside this script)
  --check   write nothing; fail (exit 1) when OUT differs from what the headers give now, so that
            the package cannot drift from the header (run by the Python tests).
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
HEADERS = [os.path.join(ROOT, "include", "qnt", h) for h in ("qnt.h", "qnt_io.h")]

SCALARS = {
    "void": "None", "int32_t": "_C.c_int32", "uint32_t": "_C.c_uint32", "int64_t": "_C.c_int64",
    "uint64_t": "_C.c_uint64", "size_t": "_C.c_size_t", "float": "_C.c_float", "double": "_C.c_double",
    "int": "_C.c_int", "uint8_t": "_C.c_uint8",
}


def clean_comment(text):
    """A C comment's text, its leading stars and common indentation removed."""
    body = text[2:-2]
    lines = [re.sub(r"^\s*\*? ?", "", ln) for ln in body.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(ln.rstrip() for ln in lines)


def parse(paths):
    typedefs = {}   # qnt_dtype -> int32_t
    constants = []  # (name, value)
    functions = []  # (name, restype, [argtypes], [argnames], doc)
    structs = []    # (name, [(ctype, field)])
    for path in paths:
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"typedef\s+(u?int\d+_t)\s+(qnt_\w+)\s*;", text):
            typedefs[m.group(2)] = m.group(1)
        # the tokens we need, in order: comments, declarations, enums, macros, structs
        pattern = re.compile(
            r"(?P<comment>/\*.*?\*/)"
            r"|(?P<decl>QNT_API\s+[^;]*?;)"
            r"|(?P<enum>\benum\s*\{.*?\}\s*;)"
            r"|(?P<struct>typedef\s+struct\s+\w+\s*\{.*?\}\s*\w+\s*;)"
            r"|(?P<define>^#define\s+(QNT_[A-Z0-9_]+)\s+([^\n]*)$)"
            r"|(?P<other>^[^\s/#][^\n]*$)", re.S | re.M)
        last_comment = None
        for m in pattern.finditer(text):
            kind = m.lastgroup
            if kind == "comment":
                last_comment = clean_comment(m.group("comment"))
            elif kind == "decl":
                decl = re.sub(r"/\*.*?\*/", " ", m.group("decl"), flags=re.S)
                decl = " ".join(decl.split())
                dm = re.match(r"QNT_API (.+?)\b(qnt_\w+)\((.*)\);$", decl)
                if not dm:
                    raise SystemExit(f"gen_capi: cannot read the declaration {decl!r}")
                ret, name, params = dm.group(1).strip(), dm.group(2), dm.group(3).strip()
                args, names = [], []
                if params != "void":
                    for p in params.split(","):
                        pm = re.match(r"(.*?)(\w+)$", p.strip())
                        args.append(ctype(pm.group(1), typedefs))
                        names.append(pm.group(2))
                functions.append((name, ctype(ret, typedefs), args, names, last_comment or ""))
            elif kind == "enum":
                body = re.sub(r"/\*.*?\*/", " ", m.group("enum"), flags=re.S)
                for em in re.finditer(r"(QNT_[A-Z0-9_]+)\s*=\s*([^,}]+)", body):
                    constants.append((em.group(1), int_value(em.group(2), em.group(1))))
                last_comment = None
            elif kind == "struct":
                sm = re.match(r"typedef\s+struct\s+(\w+)\s*\{(.*)\}\s*\w+\s*;", m.group("struct"), re.S)
                body = re.sub(r"/\*.*?\*/", " ", sm.group(2), flags=re.S)
                fields = [(SCALARS[f[0]], f[1]) for f in re.findall(r"(\w+)\s+(\w+)\s*;", body)]
                structs.append((sm.group(1), fields))
                last_comment = None
            elif kind == "define":
                name, value = m.group(6), m.group(7).strip()
                vm = re.fullmatch(r"\(\(\w+\)\s*(-?\w+)\)|(-?(?:0x[0-9A-Fa-f]+|\d+))", value)
                if vm:
                    constants.append((name, int_value(vm.group(1) or vm.group(2), name)))
                last_comment = None
            else:
                last_comment = None
    return typedefs, constants, functions, structs


def int_value(text, name):
    text = text.strip().rstrip("uUlL")
    m = re.fullmatch(r"(\d+)\s*<<\s*(\d+)", text)
    if m:
        return int(m.group(1)) << int(m.group(2))
    try:
        return int(text, 0)
    except ValueError:
        raise SystemExit(f"gen_capi: {name} = {text!r} is not an integer")


def ctype(c, typedefs):
    c = " ".join(c.replace("const", " ").split())
    stars = c.count("*")
    base = c.replace("*", "").strip()
    if stars == 1 and base == "char":
        return "_C.c_char_p"
    if stars:
        return "_C.c_void_p"
    base = typedefs.get(base, base)
    if base not in SCALARS:
        raise SystemExit(f"gen_capi: no ctypes type for {c!r}")
    return SCALARS[base]


def render(paths):
    typedefs, constants, functions, structs = parse(paths)
    rel = ", ".join(os.path.relpath(p, ROOT) for p in paths)
    out = [f'"""The C ABI of libqnt as ctypes declarations. Generated by bindings/python/gen_capi.py from\n'
           f'{rel}: do not edit (tests/test_capi.py fails when it drifts from the headers)."""',
           "import ctypes as _C", ""]
    out.append("# Named constants: the enums and integer macros of the headers.")
    seen = set()
    for name, value in constants:
        if name in seen:
            raise SystemExit(f"gen_capi: {name} defined twice")
        seen.add(name)
        out.append(f"{name} = {value}")
    out.append("")
    for name, fields in structs:
        cls = "".join(w.capitalize() for w in name.split("_"))
        out.append(f"class {cls}(_C.Structure):")
        out.append(f'    """struct {name}."""')
        out.append("    _fields_ = [")
        for t, f in fields:
            out.append(f'        ("{f}", {t}),')
        out.append("    ]")
        out.append("")
        out.append("")
    out.append("# name: (restype, argtypes, argument names, the header's comment)")
    out.append("FUNCTIONS = {")
    for name, ret, args, names, doc in functions:
        out.append(f"    {name!r}: ({ret}, [{', '.join(args)}], {names!r},")
        out.append(f"        {doc!r}),")
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv):
    check = "--check" in argv
    rest = [a for a in argv if a != "--check"]
    out = rest[0] if rest else os.path.join(HERE, "qnt", "_capi.py")
    text = render(HEADERS)
    if check:
        old = open(out, encoding="utf-8").read() if os.path.exists(out) else ""
        if old != text:
            print(f"gen_capi: {out} differs from the headers; run bindings/python/gen_capi.py", file=sys.stderr)
            return 1
        return 0
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
