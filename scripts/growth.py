#!/usr/bin/env python3
"""Growth of every workload family with machine size (issue 31).

Runs each family of crates/numasim/benches/families.rs (its FAMILIES table
is read from that file, so the two cannot drift apart) once with
`numasim run` at each CPU count and prints CPU seconds (user + sys) and
peak RSS from `/usr/bin/time -f '%U %S %M'`, and the growth between the
last two sizes against n log n. docs/engine.md's growth tables come from
this script.

    python3 scripts/growth.py [--bin target/release/numasim]
        [--only FAMILY]... [--repeat N] [1024 4096 16384]

The machine is the bench's: `altix-512` (the file-system families on
`altix-a3700`) resized to 64 CPUs per node, 1 TiB a node; seed 1. With
`--repeat N` each cell is the minimum of N runs (this host's CPU time is
noisy). A step the scenario refuses (a bound that names its cost) prints
"refused" and the reason's first line.
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "crates", "numasim", "benches", "families.rs")


def rust_str(lit):
    """The value of a Rust string literal's body (the escapes families.rs uses)."""
    return lit.encode().decode("unicode_escape")


def families():
    """(family, [kernel] lines, step) from families.rs, and the FS list."""
    text = open(BENCH, encoding="utf-8").read()
    table = text[text.index("const FAMILIES"):text.index("];")]
    lit = r'"((?:[^"\\]|\\.)*)"'
    rows = re.findall(r"\(\s*" + lit + r",\s*" + lit + r",\s*" + lit + r",?\s*\)", table)
    fs_line = re.search(r"const FS: &\[&str\] = &\[(.*?)\];", text, re.S).group(1)
    fs = re.findall(lit, fs_line)
    if not rows:
        sys.exit(f"growth.py: no FAMILIES rows found in {BENCH}")
    return [tuple(rust_str(x) for x in r) for r in rows], fs


def scenario(family, kernel, step, cpus, fs):
    """The TOML families.rs's `scenario()` builds."""
    preset = "altix-a3700" if family in fs else "altix-512"
    kernel = f"[kernel]\n{kernel}\n" if kernel else ""
    return (
        f'name = "{family}"\nseed = 1\n[machine]\npreset = "{preset}"\n'
        f'nodes = {cpus // 64}\ncpus_per_node = 64\nmem_per_node = "1024 GiB"\n'
        f"{kernel}[[run]]\n{step.replace('{n}', str(cpus))}\n"
    )


def measure(binary, path):
    """(CPU-s, peak RSS in MB) of one run, or (None, reason) if refused."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        p = subprocess.run(
            ["/usr/bin/time", "-o", t.name, "-f", "%U %S %M", binary, "run", path,
             "--format", "jsonl"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        if p.returncode != 0:
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            why = lines[0] if lines else f"exit {p.returncode}"
            # "numasim: /tmp/.../x.toml: key ...": the temporary path says nothing.
            return None, re.sub(r"^numasim: \S+\.toml: ", "", why)
        u, s, m = t.read().split()[-3:]
        return float(u) + float(s), int(m) / 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cpus", nargs="*", type=int, default=[1024, 4096, 16384])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "numasim"))
    ap.add_argument("--only", action="append", default=None, help="a family to run (repeatable)")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    rows, fs = families()
    if a.only:
        known = {r[0] for r in rows}
        bad = [f for f in a.only if f not in known]
        if bad:
            sys.exit(f"growth.py: unknown family {bad}; known: {sorted(known)}")
        rows = [r for r in rows if r[0] in a.only]
    with tempfile.TemporaryDirectory(prefix="numasim-growth-") as d:
        print("| family | " + " | ".join(f"{n:,}" for n in a.cpus) + " | growth |")
        print("|---|" + "---:|" * (len(a.cpus) + 1))
        for family, kernel, step in rows:
            cells, secs = [], []
            for n in a.cpus:
                path = os.path.join(d, f"{family}-{n}.toml")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(scenario(family, kernel, step, n, fs))
                best = None
                for _ in range(a.repeat):
                    cpu, rss = measure(a.bin, path)
                    if cpu is None:
                        best = (None, rss)
                        break
                    if best is None or cpu < best[0]:
                        best = (cpu, rss)
                if best[0] is None:
                    cells.append(f"refused ({best[1]})")
                    secs.append(None)
                else:
                    cells.append(f"{best[0]:.2f} s, {best[1]:.0f} MB")
                    secs.append(best[0])
            growth = ""
            if len(secs) >= 2 and secs[-1] is not None and secs[-2] and secs[-2] >= 0.05:
                n0, n1 = a.cpus[-2], a.cpus[-1]
                nlogn = n1 * math.log(n1) / (n0 * math.log(n0))
                growth = f"×{secs[-1] / secs[-2]:.1f} (n log n ×{nlogn:.2f})"
            print(f"| {family} | " + " | ".join(cells) + f" | {growth} |", flush=True)


if __name__ == "__main__":
    main()
