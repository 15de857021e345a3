//! Sizes as users write them: `4096`, `"16 KiB"`, `"3870656 kB"`, `"4 TB"`.
//!
//! One rule (docs/scenario.md, "Sizes"): every prefix is a power of 1024.
//! It is the convention of the text users paste from: `/proc/meminfo` and
//! `numactl` write `kB`/`MB` meaning KiB/MiB, and the kernel's `memparse()`
//! reads `K`/`M`/`G` so; `k`, `kB`, `M`, `MB`, `G`, `GB`, `T`, `TB` are
//! therefore the same as `KiB`…`TiB`. A power of ten is written in bytes.

use crate::error::InputError;

const UNITS: &[(&str, u64)] = &[
    ("b", 1),
    ("byte", 1),
    ("bytes", 1),
    ("k", 1 << 10),
    ("kb", 1 << 10),
    ("kib", 1 << 10),
    ("m", 1 << 20),
    ("mb", 1 << 20),
    ("mib", 1 << 20),
    ("g", 1 << 30),
    ("gb", 1 << 30),
    ("gib", 1 << 30),
    ("t", 1 << 40),
    ("tb", 1 << 40),
    ("tib", 1 << 40),
    ("p", 1 << 50),
    ("pb", 1 << 50),
    ("pib", 1 << 50),
    ("e", 1 << 60),
    ("eb", 1 << 60),
    ("eib", 1 << 60),
];

/// Parse a size string into bytes. Fractions are allowed (`"3.7 GiB"`) and
/// rounded down to a whole byte.
pub fn parse_size(text: &str) -> Result<u64, InputError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    let unit = unit.trim().to_ascii_lowercase();
    let bad = || {
        InputError::new(format!(
            "`{text}` is not a size: write a non-negative number of bytes or a number with a unit \
             (B, K/KiB/kB, M/MiB/MB, G/GiB/GB, T/TiB/TB, P/PiB: all powers of 1024, \
             docs/scenario.md \"Sizes\"), e.g. \"16 KiB\" or \"4 TB\""
        ))
    };
    if num.is_empty() || num.starts_with('.') && num.len() == 1 {
        return Err(bad());
    }
    let mult = if unit.is_empty() {
        1
    } else {
        UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, m)| *m)
            .ok_or_else(bad)?
    };
    if let Ok(whole) = num.parse::<u64>() {
        return whole.checked_mul(mult).ok_or_else(|| {
            InputError::new(format!(
                "`{text}` is larger than numasim can address (16 EiB)"
            ))
        });
    }
    let f: f64 = num.parse().map_err(|_| bad())?;
    let bytes = f * mult as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(InputError::new(format!(
            "`{text}` is larger than numasim can address (16 EiB)"
        )));
    }
    Ok(bytes as u64)
}

/// Print a byte count in the largest binary unit that divides it exactly,
/// so that printing and parsing round-trip.
pub fn format_size(bytes: u64) -> String {
    const NAMES: &[(u64, &str)] = &[
        (1 << 50, "PiB"),
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    for &(m, name) in NAMES {
        if bytes >= m && bytes.is_multiple_of(m) {
            return format!("{} {name}", bytes / m);
        }
    }
    format!("{bytes} B")
}

/// Memory for people to read: the largest binary unit that keeps it at
/// least 1, with one decimal where it is not whole ("59.2 GiB" where
/// [`format_size`] would print "62097440 KiB"). Not for parsing back.
pub fn mem_label(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_fractions() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("16 KiB").unwrap(), 16384);
        assert_eq!(parse_size("3870656 kB").unwrap(), 3870656 * 1024);
        assert_eq!(parse_size("4 TB").unwrap(), 4 << 40);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("1_000").unwrap(), 1000);
    }

    #[test]
    fn every_prefix_is_a_power_of_1024_whatever_its_spelling() {
        // docs/scenario.md "Sizes": "1 GB" is a GiB, as /proc/meminfo's kB
        // is a KiB and memparse's G is 2^30.
        for (k, shift) in [("K", 10), ("M", 20), ("G", 30), ("T", 40), ("P", 50)] {
            let want = 3u64 << shift;
            for spelling in [format!("3{k}"), format!("3 {k}B"), format!("3 {k}iB")] {
                assert_eq!(parse_size(&spelling).unwrap(), want, "{spelling}");
                assert_eq!(
                    parse_size(&spelling.to_lowercase()).unwrap(),
                    want,
                    "{spelling}"
                );
            }
        }
    }

    #[test]
    fn rejects_garbage_negative_and_overflow() {
        for bad in ["", "-1", "12 furlongs", "GiB", "1.2.3 MB", "99999 EiB"] {
            assert!(parse_size(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn format_round_trips() {
        for b in [0u64, 1, 1023, 16384, 3870656 * 1024, 4 << 40, 12345678901] {
            assert_eq!(parse_size(&format_size(b)).unwrap(), b);
        }
    }
}
