"""The issue-10 table from qnt_bench_weight_only's TSV: each workload's time, the limit or peer it
is measured against in the same run, and the ratio (limit or peer time / qnt time: 1.0 is the
limit; above 1 qnt is faster than the peer).
usage: bench_wo_table.py weight_only.tsv"""
import sys


def main():
    rows, notes = [], []
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                notes.append(line)
            elif line and not line.startswith("work\t"):
                rows.append(line.split("\t"))
    for n in notes:
        print(n)
    print("| workload | threads | qnt | measured against | its time | ratio | qnt GB/s |")
    print("|---|---|---|---|---|---|---|")
    for work, threads, qs, peer, ps, ratio, _bytes, gbs in rows:
        print(f"| {work} | {threads} | {float(qs) * 1e3:.3f} ms | {peer} | {float(ps) * 1e3:.3f} ms "
              f"| {float(ratio):.2f} | {float(gbs):.1f} |")


if __name__ == "__main__":
    main()
