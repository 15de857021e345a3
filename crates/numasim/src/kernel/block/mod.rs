//! The block layer. `disk` is the single streaming budget the VM's swap and
//! writeback draw from; the rest is the request-level stack of [XFS06]
//! section F: disks with seek, rotation and transfer (`blkdev`), a queue per
//! disk that merges adjacent requests and serves them in C-LOOK order, an
//! MD raid0 / DM striped volume that splits every I/O at stripe-unit
//! boundaries (`stripe`), and the HBAs, I/O nodes and node ports each
//! request's DMA crosses (`path`). The unit of simulation is a request.

pub mod blkdev;
pub(crate) mod disk;
pub mod layer;
pub(crate) mod path;
pub mod segments;
pub(crate) mod stripe;

pub use blkdev::{DiskModel, Req};
pub use disk::Disk;
pub use layer::{BlockLayer, Done, Requests};
pub use path::Link;
pub use stripe::Stripe;

/// `x.ceil() as u64`, inline: without SSE4.1 `ceil` is a libm call, and
/// the links and disks take one per request part. Exact for every `x`
/// (negative and NaN give 0, as the cast does).
#[inline]
pub(crate) fn ceil_u64(x: f64) -> u64 {
    if let Some((n, nf)) = nearest_small(x) {
        // The nearest integer is within a half of `x`: the ceiling is it
        // or the one above.
        return n + u64::from(nf < x);
    }
    let t = x as u64;
    if (t as f64) < x {
        t.saturating_add(1)
    } else {
        t
    }
}

/// Below this every `x + SMALL_ROUND` lies in [2^52, 2^53), where a float's
/// step is 1 (2^51: far above any time or byte count a link or disk sees).
const SMALL_LIMIT: f64 = (1u64 << 51) as f64;
/// 2^52: adding it rounds to an integer (the FPU's round to nearest, ties
/// to even) and leaves that integer in the mantissa's low 52 bits.
const SMALL_ROUND: f64 = (1u64 << 52) as f64;

/// For `0 <= x < 2^51` (−0 included): the integer nearest `x` (ties to
/// even) as a `u64` and as a float, both exact. The casts between `f64`
/// and `u64` are a dozen instructions each on baseline x86-64 (no
/// unsigned conversion below AVX-512), and the links and disks take a
/// ceiling per request part: this is an add, a mask and a subtract.
#[inline(always)]
fn nearest_small(x: f64) -> Option<(u64, f64)> {
    if !(0.0..SMALL_LIMIT).contains(&x) {
        return None;
    }
    let y = x + SMALL_ROUND;
    // y - 2^52 is exact (Sterbenz): the same integer as a float.
    Some((y.to_bits() & ((1u64 << 52) - 1), y - SMALL_ROUND))
}

/// `x.round() as u64` (half away from zero), inline, exact: the fraction
/// `x - trunc(x)` of a float is itself a float, so the compare is exact.
#[inline]
pub(crate) fn round_u64(x: f64) -> u64 {
    if let Some((n, nf)) = nearest_small(x) {
        // Ties went to even; half away from zero takes the one above
        // where the tie went down (`x - nf`, exact, is then 0.5).
        return n + u64::from(x - nf >= 0.5);
    }
    let t = x as u64;
    if x - t as f64 >= 0.5 {
        t.saturating_add(1)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_ceil_and_round_agree_with_libm() {
        let mut xs = vec![
            0.0,
            -0.0,
            -0.4,
            -0.5,
            -0.6,
            -3.7,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            4503599627370497.0,
            9007199254740993.0,
            // Around the fast path's bound (2^51) and its smallest inputs.
            2251799813685247.5,
            2251799813685248.0 - 0.25,
            2251799813685248.0,
            2251799813685248.5,
            5e-324,
            f64::MIN_POSITIVE,
            0.5000000000000001,
            1.8e19,
            1.9e19,
            f64::INFINITY,
            f64::NAN,
        ];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let bytes = (x >> 40) as f64;
            let rate = 1.0 + (x & 0xffff) as f64 / 997.0;
            xs.push(bytes / rate);
            xs.push(bytes * 0.5);
            xs.push(f64::from_bits(x >> 2));
            // Fractions and exact halves up to and past 2^51.
            xs.push((x >> 11) as f64 / 7.0);
            xs.push((x >> 12) as f64 + 0.5);
            xs.push((x >> 13) as f64 - 0.5);
        }
        for &v in &xs {
            assert_eq!(ceil_u64(v), v.ceil() as u64, "ceil {v:e}");
            assert_eq!(round_u64(v), v.round() as u64, "round {v:e}");
        }
    }
}
