//! Speed of the request-level I/O stack (issue 15): an I/O request, not a
//! page or a block, is the unit of simulation.
//! Targets: 256 disks, 32 threads and 60 simulated seconds at 11 GiB/s
//! (660 GiB, 1.35 million 512 KiB disk requests: direct reads on
//! altix-a3700) under 3 s on one core; the five experiments of section F
//! together under 15 s. The model reads those 660 GiB at ~7.2 GiB/s with 32
//! threads (every disk seeks between files), so the run covers ~90
//! simulated seconds; the bench prints what it simulated.
//! `cargo bench -p numasim --bench fsio` (add `-- --quick` for one pass);
//! pin to one core with `taskset -c 0` and `RAYON_NUM_THREADS=1`.

mod common;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use numasim::kernel::block::blkdev::Dest;
use numasim::kernel::block::BlockLayer;
use numasim::kernel::fs::balloc::ExtAlloc;
use numasim::kernel::fs::laydown::LayDown;
use numasim::kernel::fs::layout::{FileLayout, XfsAlloc};
use numasim::kernel::fs::FsKind;
use numasim::machine::presets::preset;
use numasim::machine::Machine;
use numasim::scenario::run::run;
use numasim::scenario::Scenario;
use numasim::workload::iosim::{direct_phase, Direct, DirectMode};
use std::hint::black_box;

const IDS: &[&str] = &[
    "xfs-direct-io",
    "numactl-interleave",
    "fs-buffered-read",
    "ext2-read-variability",
    "fs-buffered-write",
];

const THREADS: usize = 32;
/// 60 s at 11 GiB/s over 32 threads.
const FILE_BYTES: u64 = 60 * 11 * (1 << 30) / THREADS as u64;
const UNIT: u64 = 512 << 10;

fn phase(m: &Machine, mode: DirectMode) -> Direct<'_> {
    Direct {
        b: m.block.as_ref().unwrap(),
        page: m.page_size,
        block: 4096,
        io_size: 128 << 20,
        file_bytes: FILE_BYTES,
        ext: false,
        mode,
        // Interleaved buffers, as in xfs-direct-io: one node's port would
        // cap the rate below the disks' 11.5 GiB/s.
        dest: vec![Dest::Interleave; THREADS],
    }
}

/// The 32 files laid down by an (untimed) allocating write.
fn laid_down(m: &Machine) -> Vec<FileLayout> {
    let mut layer = BlockLayer::new(m, UNIT, 1);
    let cap = layer.volume_bytes();
    let sw = UNIT * layer.stripe.disks;
    let mut files = vec![FileLayout::default(); THREADS];
    direct_phase(
        &phase(m, DirectMode::Write),
        &mut layer,
        &mut files,
        &mut ExtAlloc::new(FsKind::Ext3, cap, 4096),
        &mut XfsAlloc::new(cap, UNIT, sw),
    )
    .unwrap();
    files
}

fn direct_read_60s(c: &mut Criterion) {
    let m = preset("altix-a3700").unwrap();
    let files = laid_down(&m);
    // Say what one iteration simulates, so the figure can be checked.
    {
        let mut layer = BlockLayer::new(&m, UNIT, 2);
        let cap = layer.volume_bytes();
        let sw = UNIT * layer.stripe.disks;
        let mut f = files.clone();
        let run = direct_phase(
            &phase(&m, DirectMode::Read),
            &mut layer,
            &mut f,
            &mut ExtAlloc::new(FsKind::Ext3, cap, 4096),
            &mut XfsAlloc::new(cap, UNIT, sw),
        )
        .unwrap();
        eprintln!(
            "direct read: {} disks, {THREADS} threads, {:.1} simulated s at {:.2} GiB/s, {} requests",
            layer.disks.len(),
            run.elapsed.as_secs_f64(),
            run.gibps(),
            run.disk_ios
        );
    }
    let mut g = c.benchmark_group("fsio");
    g.sample_size(10);
    g.bench_function("direct read 256 disks 32 threads 60 s", |b| {
        b.iter_batched(
            || (files.clone(), BlockLayer::new(&m, UNIT, 2)),
            |(mut f, mut layer)| {
                let cap = layer.volume_bytes();
                let sw = UNIT * layer.stripe.disks;
                black_box(
                    direct_phase(
                        &phase(&m, DirectMode::Read),
                        &mut layer,
                        &mut f,
                        &mut ExtAlloc::new(FsKind::Ext3, cap, 4096),
                        &mut XfsAlloc::new(cap, UNIT, sw),
                    )
                    .unwrap(),
                )
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// fs-buffered-read's costliest case (issue 31, round 3): 32 `dd`s lay
/// down Ext2 files of 1 GiB a block at a time (8 million blocks on the
/// bitmap), then 32 readers read them back through the page cache,
/// interleaved. The lay-down and the read-back of such fragmented files
/// were most of `replay --all`.
fn ext2_buffered_read(c: &mut Criterion) {
    let text = "name = \"ext2-read\"\nseed = 1\n[machine]\npreset = \"altix-a3700\"\n\
                [kernel]\nbuffer_policy = \"interleave\"\nversion = \"2.6.15\"\n\
                [[run]]\nworkload = \"buffered-read\"\nfs = \"ext2\"\nthreads = 32\n\
                stripe_unit = \"512 KiB\"\nfile_size = \"1 GiB\"\n";
    let sc = Scenario::from_str(text, "ext2-read", None).expect("a valid scenario");
    let mut g = c.benchmark_group("fsio");
    g.sample_size(10);
    g.bench_function("ext2 buffered read 32 threads 1 GiB files", |b| {
        b.iter(|| black_box(run(&sc, &[]).expect("runs")))
    });
    g.finish();
}

/// The lay-down alone (issue 31, round 4): 32 `dd`s write Ext2 files of
/// 1 GiB, an `ext2_new_block()` and its preallocation at a time, on the
/// bitmap of half altix-a3700's volume (`balloc`, `laydown`).
fn ext2_laydown(c: &mut Criterion) {
    let m = preset("altix-a3700").expect("preset");
    let b = m.block.as_ref().expect("a [block] table");
    let layer = BlockLayer::new(&m, UNIT, 1);
    let d = LayDown {
        fs: FsKind::Ext2,
        writers: THREADS as u64,
        file_bytes: 1 << 30,
        block: 4096,
        page: m.page_size,
        stripe_unit: UNIT,
        stripe_width: UNIT * layer.stripe.disks,
        copy_bytes_per_ns: b.copy_gbps,
        drain_bytes_per_ns: m.disk_write_bytes_per_s() / 1e9,
        // 2.6.15 default thresholds: 40% dirty, 10% background.
        dirty_bytes: m.mem_bytes() * 2 / 5,
        background_bytes: m.mem_bytes() / 10,
        capacity: layer.volume_bytes() / 2,
        seed: 1,
    };
    let mut g = c.benchmark_group("fsio");
    g.sample_size(10);
    g.bench_function("ext2 lay-down 32 writers 1 GiB files", |bch| {
        bch.iter(|| black_box(d.run().expect("fits")))
    });
    g.finish();
}

/// Ext2's shared allocations at one frontier (issue 31, round 6): 32
/// files each take their next block in turn, as parallel `dd`s do once
/// their colours of a group have filled, so each `ext2_new_block()` finds
/// its goal taken and searches a few hundred blocks on to the frontier
/// (`grab_block()`, its preallocation, `place()`): 8 GiB in 4 KiB blocks
/// on half altix-a3700's volume, no writer timing.
fn ext2_frontier(c: &mut Criterion) {
    let m = preset("altix-a3700").expect("preset");
    let layer = BlockLayer::new(&m, UNIT, 1);
    let cap = layer.volume_bytes() / 2;
    let per_file: u64 = (256 << 20) / 4096;
    let mut g = c.benchmark_group("fsio");
    g.sample_size(10);
    g.bench_function("ext2 new blocks 32 files at one frontier 8 GiB", |bch| {
        bch.iter(|| {
            let mut a = ExtAlloc::new(FsKind::Ext2, cap, 4096);
            let files: Vec<usize> = (0..THREADS as u64).map(|i| a.create(0, 100 + i)).collect();
            let mut got = vec![0u64; THREADS];
            let mut runs = 0u64;
            while got.iter().any(|&n| n < per_file) {
                for (&f, n) in files.iter().zip(got.iter_mut()) {
                    if *n < per_file {
                        *n += a.step(f, per_file - *n, |_, _| runs += 1).expect("fits");
                    }
                }
            }
            black_box((runs, a.map.used_blocks()))
        })
    });
    g.finish();
}

/// The block layer's queues under an Ext2 read (issue 31, round 5): 32
/// clients' pieces of 32 KiB, interleaved on the volume as parallel `dd`s
/// leave Ext2 files, queued on altix-a3700's 256 drives and merged in
/// pairs (each client's piece abuts a neighbour's), then served: requests
/// of two parts, thousands queued, as `Parts` keeps them in the request.
fn queued_small_pieces(c: &mut Criterion) {
    use numasim::engine::Time;
    use numasim::kernel::block::blkdev::Part;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let m = preset("altix-a3700").expect("preset");
    const PIECE: u64 = 32 << 10;
    const ROUNDS: u64 = 1024;
    let clients = THREADS as u64;
    let serve = || {
        let mut layer = BlockLayer::new(&m, UNIT, 1);
        let mut started = Vec::new();
        let mut q = BinaryHeap::new();
        // Even clients first, then odd ones: each odd piece abuts the even
        // piece before it and merges into it.
        for odd in [0, 1] {
            for r in 0..ROUNDS {
                for i in (odd..clients).step_by(2) {
                    let part = Part {
                        owner: i as u32,
                        bytes: PIECE,
                        tag: r,
                        dest: Dest::Interleave,
                    };
                    let v = (r * clients + i) * PIECE;
                    layer.submit(Time::ZERO, v, PIECE, false, part, &mut started);
                    q.extend(started.drain(..).map(|(d, t)| Reverse((t, d))));
                }
            }
        }
        let mut parts = 0;
        while let Some(Reverse((now, d))) = q.pop() {
            let (done, next) = layer.disk_done(now, d);
            parts += done.parts.len();
            layer.recycle(done.parts);
            if let Some(t) = next {
                q.push(Reverse((t, d)));
            }
        }
        (parts, layer.totals())
    };
    let (parts, (ios, _)) = serve();
    eprintln!("queued small pieces: {parts} parts in {ios} requests");
    let mut g = c.benchmark_group("fsio");
    g.sample_size(10);
    g.bench_function("32 KiB pieces merged in pairs on 256 disks", |b| {
        b.iter(|| black_box(serve()))
    });
    g.finish();
}

fn replay(c: &mut Criterion) {
    common::replay_group(c, "fsio-replay", IDS);
}

criterion_group!(
    benches,
    direct_read_60s,
    ext2_buffered_read,
    ext2_laydown,
    ext2_frontier,
    queued_small_pieces,
    replay
);
criterion_main!(benches);
