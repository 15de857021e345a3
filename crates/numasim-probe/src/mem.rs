//! Memory benchmarks: the [BGP-BIGMEM] half-to-half copy and random-access
//! reads, an lmbench `lat_mem_rd`-style randomized pointer chase, and a
//! plain `memcpy` loop as a reference for the copy figure.

use crate::bench::{self, Effort, Rng};
use crate::sys::{self, Mapping, PageKind};
use std::hint::black_box;
use std::sync::Mutex;

/// Bytes one chase step moves to: one cache line, so every step is a new line.
pub const CHASE_STRIDE: usize = 64;

/// Figures for one buffer size and page kind.
#[derive(Debug, Clone, Default)]
pub struct SizeResult {
    /// The [BGP-BIGMEM] copy: bytes copied (half the buffer per pass) per
    /// second with `memcpy`, median of the repetitions.
    pub copy_bps: f64,
    /// The same copy written as a loop (STREAM's Copy kernel), median of the repetitions.
    pub copy_loop_bps: f64,
    /// Bytes read by random 8-byte loads per second, median of the repetitions.
    pub random_bps: f64,
    /// ns per dependent load of a random cyclic chase over cache lines,
    /// median of the repetitions.
    pub latency_ns: Option<f64>,
    /// Buffer bytes a second of a read-only and a write-only stream over
    /// the whole buffer (lmbench's `bw_mem rd` and `wr`), medians of the
    /// repetitions; 0 where not measured ([`SizePlan::streams`]).
    pub read_bps: f64,
    pub write_bps: f64,
    /// Spreads ((max - min) / median) of the six figures above, in order.
    pub spread: [f64; 6],
    /// Bytes of the buffer backed by transparent huge pages, where known.
    pub thp_bytes: Option<u64>,
}

/// What to measure on one buffer.
#[derive(Debug, Clone, Copy)]
pub struct SizePlan {
    pub size: usize,
    pub page: PageKind,
    pub latency: bool,
    /// Whether to time the read-only and write-only streams too.
    pub streams: bool,
}

/// The repetitions' rates of the copy, copy loop, random reads, chase
/// steps, read stream and write stream, and the THP coverage, of one
/// buffer.
pub type BufferRates = ([Vec<f64>; 6], Option<u64>);

/// Medians and spreads of the repetitions' rates of [`measure_buffer`].
pub fn summarize(v: &[Vec<f64>; 6], thp_bytes: Option<u64>, latency: bool) -> SizeResult {
    let mut r = SizeResult {
        thp_bytes,
        ..Default::default()
    };
    (r.copy_bps, r.spread[0]) = (bench::median(&v[0]), bench::spread(&v[0]));
    (r.copy_loop_bps, r.spread[1]) = (bench::median(&v[1]), bench::spread(&v[1]));
    (r.random_bps, r.spread[2]) = (bench::median(&v[2]), bench::spread(&v[2]));
    if latency {
        r.latency_ns = Some(1e9 / bench::median(&v[3]).max(1e-9));
        r.spread[3] = bench::spread(&v[3]);
    }
    if !v[4].is_empty() {
        (r.read_bps, r.spread[4]) = (bench::median(&v[4]), bench::spread(&v[4]));
        (r.write_bps, r.spread[5]) = (bench::median(&v[5]), bench::spread(&v[5]));
    }
    r
}

/// Map and touch the buffer once, then measure: the repetitions' rates of the copy, the
/// copy loop, random reads and chase steps, and the THP coverage.
pub fn measure_buffer(plan: SizePlan, effort: Effort, seed: u64) -> std::io::Result<BufferRates> {
    let mut m = touched_mapping(plan.size, plan.page, None)?;
    let thp_bytes = match plan.page {
        PageKind::Thp => m.thp_bytes(),
        _ => None,
    };
    let half_bytes = (plan.size / 2) as u64;
    let copy = bench::rates(effort, || {
        memcpy_halves(m.as_mut_slice());
        half_bytes
    });
    let key = black_box(0u64);
    let copy_loop = bench::rates(effort, || {
        copy_halves(m.as_u64_mut(), key);
        half_bytes
    });
    let mut rng = Rng::new(seed);
    const BATCH: usize = 1 << 14;
    let random = bench::rates(effort, || {
        black_box(random_reads(m.as_u64(), BATCH, &mut rng));
        (BATCH * 8) as u64
    });
    let mut steps = Vec::new();
    if plan.latency {
        build_chase(m.as_u64_mut(), &mut rng);
        let mut pos = 0usize;
        const STEPS: usize = 1 << 14;
        steps = bench::rates(effort, || {
            pos = chase(m.as_u64(), pos, STEPS);
            STEPS as u64
        });
        black_box(pos);
    }
    let (mut read, mut write) = (Vec::new(), Vec::new());
    if plan.streams {
        let bytes = plan.size as u64;
        read = bench::rates(effort, || {
            black_box(read_stream(m.as_u64()));
            bytes
        });
        write = bench::rates(effort, || {
            write_stream(m.as_u64_mut(), key);
            bytes
        });
    }
    Ok(([copy, copy_loop, random, steps, read, write], thp_bytes))
}

/// The reference for the copy figure: a plain `memcpy` loop over a buffer
/// from the ordinary allocator, timed with `std::time::Instant`, sharing no
/// code with [`measure_size`] but the copy itself. Bytes copied per second,
/// best of the repetitions.
pub fn memcpy_reference(size: usize, effort: Effort) -> f64 {
    let mut v = vec![1u8; size];
    let (a, b) = v.split_at_mut(size / 2);
    let mut best = 0.0f64;
    for _ in 0..effort.reps {
        let t0 = std::time::Instant::now();
        let mut passes = 0u64;
        while t0.elapsed() < effort.rep_time {
            b[..a.len()].copy_from_slice(a);
            black_box(&mut *b);
            passes += 1;
        }
        let s = t0.elapsed().as_secs_f64();
        best = best.max(passes as f64 * a.len() as f64 / s);
        if sys::stop_requested() {
            break;
        }
    }
    best
}

/// The copy as a loop, like STREAM's Copy kernel: the second half of the
/// buffer receives the first. An opaque zero is XORed in so the compiler
/// cannot substitute `memcpy`; unlike `memcpy` it uses ordinary (not
/// non-temporal) stores, so on large buffers it also pays for reading each
/// destination line before writing it.
#[inline(never)]
pub fn copy_halves(buf: &mut [u64], key: u64) {
    let half = buf.len() / 2;
    let (a, b) = buf.split_at_mut(half);
    for (d, s) in b[..half].iter_mut().zip(a.iter()) {
        *d = *s ^ key;
    }
}

#[inline(never)]
pub fn memcpy_halves(buf: &mut [u8]) {
    let half = buf.len() / 2;
    let (a, b) = buf.split_at_mut(half);
    b[..half].copy_from_slice(a);
}

/// A read-only pass over the buffer: independent sums, so the loads are
/// not chained (`bw_mem rd`). With AVX2 where the CPU has it: compiled
/// for the baseline (16-byte loads) the loop reads 2 x 16 bytes a cycle,
/// about 83 GB/s at 2.6 GHz, under what the L2 and L3 serve, so it
/// would time the core, not the caches.
pub fn read_stream(buf: &[u64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { read_stream_avx2(buf) };
    }
    read_words(buf)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn read_stream_avx2(buf: &[u64]) -> u64 {
    read_words(buf)
}

#[inline(always)]
fn read_words(buf: &[u64]) -> u64 {
    let mut acc = [0u64; 16];
    let mut chunks = buf.chunks_exact(16);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a = a.wrapping_add(*x);
        }
    }
    let tail: u64 = chunks.remainder().iter().fold(0, |a, x| a.wrapping_add(*x));
    acc.iter().fold(tail, |a, x| a.wrapping_add(*x))
}

/// A write-only pass over the buffer: every word set to `key`, an opaque
/// value (`bw_mem wr`); ordinary stores, AVX2's 32 bytes wide where the
/// CPU has it, as [`read_stream`].
pub fn write_stream(buf: &mut [u64], key: u64) {
    let key = black_box(key);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { write_stream_avx2(buf, key) };
        black_box(buf);
        return;
    }
    buf.fill(key);
    black_box(buf);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn write_stream_avx2(buf: &mut [u64], key: u64) {
    buf.fill(key);
}

/// `n` independent 8-byte loads at uniformly random positions.
#[inline(never)]
pub fn random_reads(buf: &[u64], n: usize, rng: &mut Rng) -> u64 {
    let len = buf.len() as u64;
    let mut sum = 0u64;
    for _ in 0..n {
        sum = sum.wrapping_add(buf[rng.below(len) as usize]);
    }
    sum
}

/// Lay a single random cycle through every cache line of `buf` (Sattolo's
/// algorithm): the first word of each line holds the index of the next.
pub fn build_chase(buf: &mut [u64], rng: &mut Rng) {
    let w = CHASE_STRIDE / 8;
    let lines = buf.len() / w;
    for i in 0..lines {
        buf[i * w] = (i * w) as u64;
    }
    for i in (1..lines).rev() {
        let j = rng.below(i as u64) as usize;
        buf.swap(i * w, j * w);
    }
}

#[inline(never)]
pub fn chase(buf: &[u64], mut pos: usize, steps: usize) -> usize {
    for _ in 0..steps {
        pos = buf[pos] as usize;
    }
    pos
}

/// A buffer of `size` bytes in `page` pages, bound to `node` where given
/// (`mbind`, before the first touch places it), and touched once.
pub fn touched_mapping(
    size: usize,
    page: PageKind,
    node: Option<usize>,
) -> std::io::Result<Mapping> {
    let mut m = Mapping::new(size, page)?;
    if let Some(n) = node {
        m.bind_to_node(n)?;
    }
    m.as_mut_slice().fill(1);
    Ok(m)
}

/// Copy bandwidth with `threads` pinned threads, each copying half of its own
/// share of one buffer to the other half; bytes copied per second, summed,
/// one figure per repetition. `node` binds the buffer to that node first
/// (multi-node hosts).
pub fn parallel_copy(
    size: usize,
    page: PageKind,
    threads: usize,
    cpus: &[usize],
    node: Option<usize>,
    effort: Effort,
) -> std::io::Result<Vec<f64>> {
    let mut m = touched_mapping(size, page, node)?;
    let per = m.len() / threads;
    let mut rates = Vec::with_capacity(effort.reps);
    for _ in 0..effort.reps {
        let chunks: Vec<Mutex<&mut [u8]>> = m
            .as_mut_slice()
            .chunks_mut(per.max(2))
            .take(threads)
            .map(Mutex::new)
            .collect();
        let (res, _) = bench::run_pinned(threads, cpus, Some(effort.rep_time), |i, stop| {
            let mut c = chunks[i].lock().expect("own chunk");
            let bytes = (c.len() / 2) as u64;
            let mut done = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                memcpy_halves(&mut c);
                done += bytes;
            }
            done
        });
        let total: u64 = res.iter().map(|r| r.ops).sum();
        rates.push(total as f64 * 1e9 / bench::span_ns(&res) as f64);
        if sys::stop_requested() {
            break;
        }
    }
    Ok(rates)
}

/// Latency (ns, best) and copy bandwidth (bytes/s, best) from a thread
/// pinned to `cpu` to memory bound to `mem_node`.
pub fn node_pair(
    cpu: usize,
    mem_node: usize,
    size: usize,
    page: PageKind,
    effort: Effort,
) -> std::io::Result<(f64, f64)> {
    std::thread::scope(|s| {
        s.spawn(|| {
            sys::pin_to_cpu(cpu)?;
            let mut m = touched_mapping(size, page, Some(mem_node))?;
            let half = (size / 2) as u64;
            let bw = bench::best(&bench::rates(effort, || {
                memcpy_halves(m.as_mut_slice());
                half
            }));
            let mut rng = Rng::new(cpu as u64 * 131 + mem_node as u64);
            build_chase(m.as_u64_mut(), &mut rng);
            let mut pos = 0;
            let rate = bench::best(&bench::rates(effort, || {
                pos = chase(m.as_u64(), pos, 1 << 14);
                1 << 14
            }));
            black_box(pos);
            Ok((1e9 / rate.max(1e-9), bw))
        })
        .join()
        .expect("node-pair thread panicked")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chase_visits_every_line_once() {
        let mut buf = vec![0u64; 64 * 8];
        build_chase(&mut buf, &mut Rng::new(3));
        let mut seen = [false; 64];
        let mut p = 0;
        for _ in 0..64 {
            assert!(!seen[p / 8]);
            seen[p / 8] = true;
            p = buf[p] as usize;
        }
        assert_eq!(p, 0);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn copy_kernels_copy() {
        let mut a: Vec<u64> = (0..16).collect();
        copy_halves(&mut a, 0);
        assert_eq!(&a[8..], &(0..8).collect::<Vec<u64>>()[..]);
        let mut b: Vec<u8> = (0..16).collect();
        memcpy_halves(&mut b);
        assert_eq!(&b[8..], &(0..8).collect::<Vec<u8>>()[..]);
    }

    #[test]
    fn stream_kernels_read_every_word_and_write_every_word() {
        // 16 + 3 words: the sixteen sums and the tail all count.
        let mut a: Vec<u64> = (1..=19).collect();
        assert_eq!(read_stream(&a), 19 * 20 / 2);
        write_stream(&mut a, 7);
        assert!(a.iter().all(|&x| x == 7));
        assert_eq!(read_stream(&a), 7 * 19);
    }

    #[test]
    fn node_pair_binds_memory_with_mbind() {
        // Exercises the raw mbind and affinity calls on node 0, where it has memory.
        let root = std::path::Path::new("/sys/devices/system/node");
        let Ok(t) = crate::topology::Topology::read(root) else {
            return;
        };
        let Some(n) = t
            .nodes
            .iter()
            .find(|n| n.mem_free_kb > 64 * 1024 && !n.cpus.is_empty())
        else {
            return;
        };
        let cpu = sys::allowed_cpus()[0];
        let effort = Effort {
            rep_time: std::time::Duration::from_millis(5),
            reps: 1,
        };
        let (lat, bw) = node_pair(cpu, n.id, 4 << 20, PageKind::Base, effort).unwrap();
        assert!(lat > 0.0 && bw > 0.0, "{lat} ns, {bw} B/s");
    }
}
