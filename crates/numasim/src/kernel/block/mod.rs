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
    let t = x as u64;
    if (t as f64) < x {
        t.saturating_add(1)
    } else {
        t
    }
}

/// `x.round() as u64` (half away from zero), inline, exact: the fraction
/// `x - trunc(x)` of a float is itself a float, so the compare is exact.
#[inline]
pub(crate) fn round_u64(x: f64) -> u64 {
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
        }
        for &v in &xs {
            assert_eq!(ceil_u64(v), v.ceil() as u64, "ceil {v:e}");
            assert_eq!(round_u64(v), v.round() as u64, "round {v:e}");
        }
    }
}
