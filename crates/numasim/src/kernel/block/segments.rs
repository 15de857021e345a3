//! A request's scatter-gather segments and what they cost (round 16b).
//!
//! A direct read's bio is built from the user buffer's pages
//! (`bio_iov_iter_get_pages`, block/bio.c); physically adjacent pages
//! merge into one segment, and the block layer splits a bio that holds
//! more than the queue's `max_segments` segments or `max_sectors_kb`
//! bytes (`bio_split_io_at`, `bio_split_rw_at` in earlier 6.x, and
//! `bvec_split_segs`; block/blk-merge.c, Linux 6.18). Each segment is a
//! descriptor the device walks: a host-side mapping on a virtual disk, an
//! SG entry on a real HBA. So a request's time is its latency, plus a cost
//! per segment, plus its bytes at the media rate.

/// The queue's limits a bio is split at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgLimits {
    /// `queue/max_segments`.
    pub max_segments: u64,
    /// `queue/max_sectors_kb`, bytes.
    pub max_bytes: u64,
}

/// The requests one call of `bytes` becomes when its buffer is in
/// physically contiguous runs of `run_bytes` (4 KiB for scattered base
/// pages, 2 MiB for huge pages): `(requests, segments in all)`. As
/// `bvec_split_segs` does, a request closes when one more segment would
/// pass `max_segments` or one more byte `max_bytes` (a run crossing the
/// byte limit is cut there, its rest a segment of the next request).
pub fn split(bytes: u64, run_bytes: u64, lim: SgLimits) -> (u64, u64) {
    if bytes == 0 {
        return (0, 0);
    }
    let run = run_bytes.max(1);
    let max_seg = lim.max_segments.max(1);
    let max_bytes = lim.max_bytes.max(1);
    // Whole requests of max_bytes where max_bytes holds at most max_seg
    // runs; else requests of max_seg runs. Closed form, no loop per page.
    let per_req_bytes = max_bytes.min(max_seg.saturating_mul(run));
    let full = bytes / per_req_bytes;
    let rest = bytes % per_req_bytes;
    let segs_of = |b: u64| {
        // A request of b bytes starting at a run boundary of the whole
        // buffer: its runs, where every request but the last starts at
        // k * per_req_bytes (a multiple of `run` unless max_bytes cuts).
        b.div_ceil(run)
    };
    let mut segs = full * segs_of(per_req_bytes);
    let mut reqs = full;
    if rest > 0 {
        segs += segs_of(rest);
        reqs += 1;
    }
    (reqs, segs)
}

/// MiB/s of back-to-back calls of `bytes` from a buffer in runs of
/// `run_bytes`, one request at a time.
pub fn call_mibps(
    bytes: u64,
    run_bytes: u64,
    lim: SgLimits,
    latency_ns: f64,
    segment_ns: f64,
    bytes_per_ns: f64,
) -> f64 {
    let (reqs, segs) = split(bytes, run_bytes, lim);
    let ns = reqs as f64 * latency_ns + segs as f64 * segment_ns + bytes as f64 / bytes_per_ns;
    bytes as f64 / (1u64 << 20) as f64 / (ns.max(1e-9) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUEST: SgLimits = SgLimits {
        max_segments: 254,
        max_bytes: 4 << 20,
    };

    #[test]
    fn a_megabyte_of_scattered_pages_splits_at_254_segments() {
        // 256 pages of 4 KiB: 254 segments, then a request of 2.
        assert_eq!(split(1 << 20, 4096, GUEST), (2, 256));
        // Huge pages: one request, one segment.
        assert_eq!(split(1 << 20, 2 << 20, GUEST), (1, 1));
        // 4 MiB from huge pages: one request at max_sectors_kb, 2 segments.
        assert_eq!(split(4 << 20, 2 << 20, GUEST), (1, 2));
        // 4 MiB of scattered pages: 1024 pages in requests of 254.
        assert_eq!(split(4 << 20, 4096, GUEST), (5, 1024));
        // 8 MiB of huge pages: cut at max_sectors_kb.
        assert_eq!(split(8 << 20, 2 << 20, GUEST), (2, 4));
        assert_eq!(split(0, 4096, GUEST), (0, 0));
    }

    #[test]
    fn requests_never_pass_either_limit_and_keep_every_byte() {
        for &bytes in &[4096u64, 128 << 10, 1 << 20, 3 << 20, 4 << 20, 9 << 20] {
            for &run in &[4096u64, 64 << 10, 2 << 20] {
                let (reqs, segs) = split(bytes, run, GUEST);
                assert!(reqs * GUEST.max_bytes >= bytes);
                assert!(segs <= reqs * GUEST.max_segments);
                // Every run is one segment (the limits here are multiples of the runs).
                assert_eq!(segs, bytes.div_ceil(run));
                assert!(reqs >= 1);
            }
        }
    }

    #[test]
    fn a_segment_cost_slows_the_scattered_buffer_only_where_it_is_set() {
        let r = 4096.0 * 1048576.0 / 1e9; // 4,096 MiB/s in bytes per ns
        let base = call_mibps(1 << 20, 4096, GUEST, 50e3, 0.0, r);
        let huge = call_mibps(1 << 20, 2 << 20, GUEST, 50e3, 0.0, r);
        // No segment cost: only the split's extra latency separates them.
        assert!(huge > base && huge < base * 1.25);
        let base_c = call_mibps(1 << 20, 4096, GUEST, 50e3, 2e3, r);
        let huge_c = call_mibps(1 << 20, 2 << 20, GUEST, 50e3, 2e3, r);
        assert!(base_c < base && huge_c / base_c > 2.0);
    }
}
