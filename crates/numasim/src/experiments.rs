//! The published experiments, embedded from `experiments/*.toml`.

use crate::error::InputError;
use crate::input::table::nearest;
use crate::scenario::Scenario;

/// (id, TOML text), in the order `replay --all` runs them.
pub const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "hashdist-boot",
        include_str!("../../../experiments/hashdist-boot.toml"),
    ),
    (
        "large-kernel-tables",
        include_str!("../../../experiments/large-kernel-tables.toml"),
    ),
    (
        "altix-pagecache-spill",
        include_str!("../../../experiments/altix-pagecache-spill.toml"),
    ),
    (
        "altix-buffer-head-imbalance",
        include_str!("../../../experiments/altix-buffer-head-imbalance.toml"),
    ),
    (
        "altix-bigio",
        include_str!("../../../experiments/altix-bigio.toml"),
    ),
    (
        "altix-toss",
        include_str!("../../../experiments/altix-toss.toml"),
    ),
    (
        "oom-never-triggers",
        include_str!("../../../experiments/oom-never-triggers.toml"),
    ),
    (
        "altix-prof-cpu-mask",
        include_str!("../../../experiments/altix-prof-cpu-mask.toml"),
    ),
    (
        "altix-timer-global",
        include_str!("../../../experiments/altix-timer-global.toml"),
    ),
    (
        "altix-gettimeofday",
        include_str!("../../../experiments/altix-gettimeofday.toml"),
    ),
    (
        "altix-touch-96g",
        include_str!("../../../experiments/altix-touch-96g.toml"),
    ),
    (
        "altix-devzero-faults",
        include_str!("../../../experiments/altix-devzero-faults.toml"),
    ),
    (
        "altix-hugetlb-zeroing",
        include_str!("../../../experiments/altix-hugetlb-zeroing.toml"),
    ),
    (
        "altix-pagecache-counter",
        include_str!("../../../experiments/altix-pagecache-counter.toml"),
    ),
    (
        "altix-pio",
        include_str!("../../../experiments/altix-pio.toml"),
    ),
    (
        "altix-dma-placement",
        include_str!("../../../experiments/altix-dma-placement.toml"),
    ),
    (
        "wildfire-spinlock",
        include_str!("../../../experiments/wildfire-spinlock.toml"),
    ),
    (
        "bgp-stream-copy",
        include_str!("../../../experiments/bgp-stream-copy.toml"),
    ),
    (
        "bgp-random-access",
        include_str!("../../../experiments/bgp-random-access.toml"),
    ),
    (
        "bgp-bigmem-stream",
        include_str!("../../../experiments/bgp-bigmem-stream.toml"),
    ),
    (
        "bgp-bigmem-random",
        include_str!("../../../experiments/bgp-bigmem-random.toml"),
    ),
    (
        "bgp-gettimeofday",
        include_str!("../../../experiments/bgp-gettimeofday.toml"),
    ),
    (
        "bgp-noise",
        include_str!("../../../experiments/bgp-noise.toml"),
    ),
    (
        "bgp-lofar-memcpy",
        include_str!("../../../experiments/bgp-lofar-memcpy.toml"),
    ),
    (
        "modern-hugepage-random",
        include_str!("../../../experiments/modern-hugepage-random.toml"),
    ),
    (
        "altix-o1-scheduler",
        include_str!("../../../experiments/altix-o1-scheduler.toml"),
    ),
    (
        "altix-loadbalance-livelock",
        include_str!("../../../experiments/altix-loadbalance-livelock.toml"),
    ),
    (
        "altix-percpu-peek",
        include_str!("../../../experiments/altix-percpu-peek.toml"),
    ),
    (
        "wildfire-aim7",
        include_str!("../../../experiments/wildfire-aim7.toml"),
    ),
    (
        "xfs-direct-io",
        include_str!("../../../experiments/xfs-direct-io.toml"),
    ),
    (
        "numactl-interleave",
        include_str!("../../../experiments/numactl-interleave.toml"),
    ),
    (
        "fs-buffered-read",
        include_str!("../../../experiments/fs-buffered-read.toml"),
    ),
    (
        "ext2-read-variability",
        include_str!("../../../experiments/ext2-read-variability.toml"),
    ),
    (
        "fs-buffered-write",
        include_str!("../../../experiments/fs-buffered-write.toml"),
    ),
    (
        "today-mlc-latency",
        include_str!("../../../experiments/today-mlc-latency.toml"),
    ),
    (
        "today-mlc-bandwidth",
        include_str!("../../../experiments/today-mlc-bandwidth.toml"),
    ),
    (
        "today-stream",
        include_str!("../../../experiments/today-stream.toml"),
    ),
    (
        "today-stream-node",
        include_str!("../../../experiments/today-stream-node.toml"),
    ),
    (
        "today-c2c",
        include_str!("../../../experiments/today-c2c.toml"),
    ),
    (
        "today-mlc-clx",
        include_str!("../../../experiments/today-mlc-clx.toml"),
    ),
    (
        "today-stream-published",
        include_str!("../../../experiments/today-stream-published.toml"),
    ),
    (
        "today-page-fault",
        include_str!("../../../experiments/today-page-fault.toml"),
    ),
];

pub fn load(id: &str) -> Result<Scenario, InputError> {
    let (_, text) = EXPERIMENTS.iter().find(|(n, _)| *n == id).ok_or_else(|| {
        let hint = nearest(id, EXPERIMENTS.iter().map(|(n, _)| *n))
            .map(|n| format!(" Did you mean `{n}`?"))
            .unwrap_or_default();
        let all: Vec<&str> = EXPERIMENTS.iter().map(|(n, _)| *n).collect();
        InputError::new(format!(
            "no experiment `{}`.{hint} Experiments: {}.",
            crate::error::clip(id, 80),
            all.join(", ")
        ))
        .allowing(all.join(", "))
    })?;
    Scenario::from_str(text, &format!("experiments/{id}.toml"), None)
}
