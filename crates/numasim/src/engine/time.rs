//! Simulated time: integer nanoseconds.
//!
//! Integers, not `f64`, so that adding many small costs never rounds
//! differently on another host or in another order, and so that equal times
//! compare equal (which the event queue's FIFO tie-break relies on). A `u64`
//! of nanoseconds spans about 584 years of simulated time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

/// A length of simulated time, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub u64);

impl Time {
    /// The start of every run.
    pub const ZERO: Time = Time(0);
    /// The latest representable instant.
    pub const MAX: Time = Time(u64::MAX);

    /// The instant `ns` nanoseconds after the start.
    #[inline]
    pub const fn from_ns(ns: u64) -> Self {
        Time(ns)
    }
    /// Nanoseconds since the start.
    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Seconds since the start, for reports only (never feed back into the model).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// The time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    #[inline]
    pub fn since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Dur {
    /// No time at all.
    pub const ZERO: Dur = Dur(0);

    /// `ns` nanoseconds.
    #[inline]
    pub const fn from_ns(ns: u64) -> Self {
        Dur(ns)
    }
    /// `us` microseconds.
    #[inline]
    pub const fn from_us(us: u64) -> Self {
        Dur(us * 1_000)
    }
    /// `ms` milliseconds.
    #[inline]
    pub const fn from_ms(ms: u64) -> Self {
        Dur(ms * 1_000_000)
    }
    /// `s` seconds.
    #[inline]
    pub const fn from_secs(s: u64) -> Self {
        Dur(s * 1_000_000_000)
    }
    /// A length given as fractional nanoseconds (e.g. a machine's
    /// `line_transfer_ns`), rounded to the nearest nanosecond. Negative or NaN
    /// values become zero; values beyond `u64` saturate.
    #[inline]
    pub fn from_ns_f64(ns: f64) -> Self {
        Dur(round_u64(ns))
    }
    /// A length given in seconds, rounded to the nearest nanosecond.
    pub fn from_secs_f64(s: f64) -> Self {
        Self::from_ns_f64(s * 1e9)
    }
    /// The time to move `bytes` at `bytes_per_sec`, rounded up so that a
    /// transfer never finishes before its bandwidth allows.
    ///
    /// `bytes_per_sec` must be positive and finite; a zero or negative rate is
    /// a bug in the caller and gives `Dur(u64::MAX)` (never completes).
    pub fn for_bytes(bytes: u64, bytes_per_sec: f64) -> Self {
        if bytes == 0 {
            return Dur::ZERO;
        }
        if bytes_per_sec.is_nan() || bytes_per_sec <= 0.0 {
            return Dur(u64::MAX);
        }
        Dur(ceil_u64(bytes as f64 * 1e9 / bytes_per_sec))
    }
    /// Nanoseconds.
    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Seconds, for reports only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    /// Saturates at `Time::MAX` rather than wrapping: an event "never" is
    /// better than an event in the past.
    #[inline]
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Dur> for Time {
    #[inline]
    fn add_assign(&mut self, d: Dur) {
        *self = *self + d;
    }
}

impl Sub<Time> for Time {
    type Output = Dur;
    /// Saturating: `a - b` is zero when `b` is later (use [`Time::since`] to
    /// make that explicit).
    #[inline]
    fn sub(self, earlier: Time) -> Dur {
        self.since(earlier)
    }
}

impl Add for Dur {
    type Output = Dur;
    #[inline]
    fn add(self, o: Dur) -> Dur {
        Dur(self.0.saturating_add(o.0))
    }
}

impl AddAssign for Dur {
    #[inline]
    fn add_assign(&mut self, o: Dur) {
        *self = *self + o;
    }
}

impl Sub for Dur {
    type Output = Dur;
    #[inline]
    fn sub(self, o: Dur) -> Dur {
        Dur(self.0.saturating_sub(o.0))
    }
}

impl std::iter::Sum for Dur {
    fn sum<I: Iterator<Item = Dur>>(iter: I) -> Dur {
        iter.fold(Dur::ZERO, |a, b| a + b)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", self.0)
    }
}

/// `x.ceil() as u64`, inline and exact for every `x` (negative and NaN
/// give 0, past `u64` saturates, as the cast does): the release build
/// targets baseline x86-64, which has no rounding instruction (SSE4.1's
/// `roundsd`), so `f64::ceil` and `f64::round` are calls into libm. The
/// block layer's links and disks take a ceiling per request part, the
/// lock's race a rounding per release (`round` was 3% of wildfire-aim7's
/// samples, session 19).
#[inline]
pub fn ceil_u64(x: f64) -> u64 {
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
/// step is 1 (2^51: far above any time or byte count a model sees).
const SMALL_LIMIT: f64 = (1u64 << 51) as f64;
/// 2^52: adding it rounds to an integer (the FPU's round to nearest, ties
/// to even) and leaves that integer in the mantissa's low 52 bits.
const SMALL_ROUND: f64 = (1u64 << 52) as f64;

/// For `0 <= x < 2^51` (−0 included): the integer nearest `x` (ties to
/// even) as a `u64` and as a float, both exact. The casts between `f64`
/// and `u64` are a dozen instructions each on baseline x86-64 (no
/// unsigned conversion below AVX-512): this is an add, a mask and a
/// subtract.
#[inline(always)]
fn nearest_small(x: f64) -> Option<(u64, f64)> {
    if !(0.0..SMALL_LIMIT).contains(&x) {
        return None;
    }
    let y = x + SMALL_ROUND;
    // y - 2^52 is exact (Sterbenz): the same integer as a float.
    Some((y.to_bits() & ((1u64 << 52) - 1), y - SMALL_ROUND))
}

/// `x.round() as u64` (half away from zero), inline and exact for every
/// `x` (see [`ceil_u64`]): the fraction `x - trunc(x)` of a float is
/// itself a float, so the compare is exact.
#[inline]
pub fn round_u64(x: f64) -> u64 {
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

    /// The two roundings against `f64::round` and `f64::ceil` then `as`:
    /// halves, the neighbours of halves and integers, 2^52 and 2^53 and
    /// their neighbours, negatives, zeros, infinities, NaN, and random bit
    /// patterns (every exponent).
    #[test]
    fn round_and_ceil_are_the_libm_ones() {
        let check = |x: f64| {
            assert_eq!(
                round_u64(x),
                x.round() as u64,
                "round {x:e} ({:#x})",
                x.to_bits()
            );
            assert_eq!(
                ceil_u64(x),
                x.ceil() as u64,
                "ceil {x:e} ({:#x})",
                x.to_bits()
            );
        };
        let mut special = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -1.5,
            0.49999999999999994,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            1e19,
            1.8446744073709552e19,
            2e19,
        ];
        for p in [
            1.0f64,
            2.0,
            1e3,
            2f64.powi(51),
            2f64.powi(52),
            2f64.powi(53),
            2f64.powi(63),
        ] {
            for base in [p, p + 0.5, p - 0.5] {
                for x in [base, base.next_up(), base.next_down()] {
                    special.push(x);
                    special.push(-x);
                }
            }
        }
        special.iter().for_each(|&x| check(x));
        let mut z = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..2_000_000u64 {
            z = z
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Every bit pattern, then values a model computes (ns counts
            // with fractions, around halves).
            let x = if i % 2 == 0 {
                f64::from_bits(z)
            } else {
                (z >> 20) as f64 / 1024.0
            };
            check(x);
        }
    }

    /// The block layer's inputs (a part's bytes over a link's rate, halves
    /// around the fast path's bound 2^51), against libm.
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

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Time::MAX + Dur(5), Time::MAX);
        assert_eq!(Time(3) - Time(10), Dur::ZERO);
        assert_eq!(Time(10) - Time(3), Dur(7));
        assert_eq!(Dur(2) - Dur(5), Dur::ZERO);
    }

    #[test]
    fn units_convert() {
        assert_eq!(Dur::from_us(3), Dur(3_000));
        assert_eq!(Dur::from_ms(3), Dur(3_000_000));
        assert_eq!(Dur::from_secs(2), Dur(2_000_000_000));
        assert_eq!(Dur::from_secs_f64(1.5e-9), Dur(2));
        assert_eq!(Dur::from_ns_f64(-4.0), Dur::ZERO);
        assert_eq!(Dur::from_ns_f64(f64::NAN), Dur::ZERO);
    }

    #[test]
    fn bytes_at_rate_round_up() {
        // 1 byte at 3 bytes/ns = 0.33 ns, must not round down to zero.
        assert_eq!(Dur::for_bytes(1, 3e9), Dur(1));
        assert_eq!(Dur::for_bytes(4096, 4096e9), Dur(1));
        assert_eq!(Dur::for_bytes(1 << 20, 1_048_576.0), Dur::from_secs(1));
        assert_eq!(Dur::for_bytes(0, 0.0), Dur::ZERO);
        assert_eq!(Dur::for_bytes(1, 0.0), Dur(u64::MAX));
    }
}
