"""Scenarios the Python tests share (not a test module: pytest collects
only test_*.py)."""

# Boot-time hash tables and per-node memory on an Altix of N nodes: cheap
# (a few ms a case on small machines, about 0.1 s at thousands of nodes)
# and sensitive to both `machine.nodes` and `kernel.hashdist`.
BOOT = {
    "name": "boot-sweep",
    "machine": {"preset": "altix-512"},
    "run": [
        {"workload": "boot", "metrics": ["hash_bytes"]},
        {"workload": "meminfo", "metrics": ["mem_used_kb"]},
    ],
}

# The same scenario as a file, for `python -m numasim sweep FILE`.
BOOT_TOML = """\
name = "boot-sweep"
[machine]
preset = "altix-512"
[[run]]
workload = "boot"
metrics = ["hash_bytes"]
[[run]]
workload = "meminfo"
metrics = ["mem_used_kb"]
"""
