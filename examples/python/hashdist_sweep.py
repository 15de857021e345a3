"""Boot-time hash tables against machine size, with and without hashdist
([HASHDIST04]), written notebook-style: run it whole, or cell by cell
(the `# %%` markers) in Jupyter or VS Code.

    python examples/python/hashdist_sweep.py [OUT.png] [--workers N]

Without --workers the sweep runs in this process; with it, on a Dask
LocalCluster of N workers (the same rows either way).

The work sits in functions called from `main()` under the
`if __name__ == "__main__":` guard: a LocalCluster starts its workers in new
Python processes that import this file again, and without the guard each
would start a cluster of its own ("Nanny failed to start"). In Jupyter, run
the cells in order; the last one calls `main([])`.
"""

# %% The scenario: an SGI Altix of N 2 GB nodes booting, then /proc/meminfo.
import sys

import matplotlib

matplotlib.use("Agg")  # write files; no display needed
import matplotlib.pyplot as plt

import numasim

scenario = {
    "name": "hashdist-nodes",
    "machine": {"preset": "altix-512"},
    "run": [
        {"workload": "boot", "metrics": ["hash_bytes", "tcp_ehash_bytes"]},
        {"workload": "meminfo", "metrics": ["mem_used_kb"]},
    ],
}
grid = {
    "machine.nodes": [4, 8, 16, 32, 64, 128, 256, 512, 1024],
    "kernel.hashdist": [0, 1],
}

# %% Sweep: every (nodes, hashdist) pair; a Dask client if asked for.
def sweep(workers=None):
    """The grid's records as a DataFrame, here or on a LocalCluster."""
    if workers is None:
        return numasim.sweep(scenario, grid)
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1) as cluster, Client(
        cluster
    ) as client:
        return numasim.sweep(scenario, grid, client=client)


# %% Node 0's memory in use after boot (the boot node, where hashdist=0 puts
# the big tables), against the number of nodes, in MiB.
def node0_table(df):
    node0 = df[(df.metric == "mem_used_kb") & (df.node == 0)]
    table = node0.pivot(index="machine.nodes", columns="kernel.hashdist", values="value") / 1024
    table.columns = [f"hashdist={c}" for c in table.columns]
    return table


# %% Plot and save.
def plot(table, out):
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for col, style in zip(table.columns, ["o-", "s--"]):
        ax.plot(table.index, table[col], style, label=col)
    ax.set_xscale("log", base=2)
    ax.set_xticks(table.index, [str(n) for n in table.index])
    ax.set_xlabel("nodes (2 GB each, Altix)")
    ax.set_ylabel("node 0 memory in use after boot (MiB)")
    ax.set_title("Boot-time hash tables on the boot node")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


# %% Run it all: python examples/python/hashdist_sweep.py [OUT.png] [--workers N]
def main(args):
    args = list(args)
    workers = None
    if "--workers" in args:
        i = args.index("--workers")
        workers = int(args[i + 1])
        del args[i : i + 2]
    df = sweep(workers)
    print(df.head())
    table = node0_table(df)
    print(table.round(1).to_string())
    out = args[0] if args else "hashdist_sweep.png"
    plot(table, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
