//! Kernel releases numasim models (`kernel.version`): one type for every
//! mechanism a release selects. The boot-table releases ([`Era::KNOWN`])
//! name the rules of kernel/mm/hash_tables.rs, except 2.6.9, SGI's hashdist
//! patch, which the experiments use and which keeps its own path in
//! kernel/boot.rs (docs/placement.md). The I/O releases of [XFS06]
//! ([`Era::IO`]: SLES9 SP2, 2.6.15 to 2.6.17) select the filesystem and
//! block paths of kernel/fs (docs/io.md) and boot with 2.6.9's tables, as
//! those experiments ran.

use crate::kernel::mm::hash_tables::Rules;
use crate::machine::Arch;

/// A modelled release. Order is release order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Era {
    /// 2.6.9 with SGI's hashdist patch (HASHDIST04; mainline in 2.6.10).
    V2_6_9,
    /// SUSE's SLES9 SP2 kernel, as [XFS06] ran it.
    Sles9Sp2,
    V2_6_15,
    /// 2.6.15 with the slow TLB purge of [XFS06] F.
    V2_6_15SlowPurge,
    V2_6_16,
    V2_6_17,
    V2_6_32,
    V3_10,
    V4_15,
    V5_4,
    V6_8,
}

impl Era {
    pub const KNOWN: &'static [(&'static str, Era)] = &[
        ("2.6.9", Era::V2_6_9),
        ("2.6.32", Era::V2_6_32),
        ("3.10", Era::V3_10),
        ("4.15", Era::V4_15),
        ("5.4", Era::V5_4),
        ("6.8", Era::V6_8),
    ];

    /// The I/O releases of [XFS06] section F, named as its tables name them.
    pub const IO: &'static [(&'static str, Era)] = &[
        ("sles9sp2", Era::Sles9Sp2),
        ("2.6.15", Era::V2_6_15),
        ("2.6.15-slowpurge", Era::V2_6_15SlowPurge),
        ("2.6.16", Era::V2_6_16),
        ("2.6.17", Era::V2_6_17),
    ];

    pub fn name(self) -> &'static str {
        Era::KNOWN
            .iter()
            .chain(Era::IO)
            .find(|(_, e)| *e == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// The release whose boot-time tables this one boots with: itself, or
    /// 2.6.9 for the I/O releases.
    pub fn boot_tables(self) -> Era {
        if self.is_io_release() {
            Era::V2_6_9
        } else {
            self
        }
    }

    /// One of [XFS06]'s I/O releases ([`Era::IO`]).
    pub fn is_io_release(self) -> bool {
        Era::IO.iter().any(|&(_, e)| e == self)
    }

    /// The I/O paths this release runs: its own for an I/O release;
    /// 2.6.15's before 2.6.32 and the newest modelled (2.6.17's, per-CPU
    /// superblock counters) from 2.6.32 on.
    pub fn io_release(self) -> Era {
        if self.is_io_release() {
            self
        } else if self >= Era::V2_6_32 {
            Era::V2_6_17
        } else {
            Era::V2_6_15
        }
    }

    /// A release key for ordering the boot-table releases: 2.6.x by x,
    /// later ones by major.minor (an I/O release keys as the tables it boots).
    pub fn key(self) -> (u32, u32, u32) {
        parse_release(self.boot_tables().name()).expect("known names parse")
    }

    /// `kernel.version` as written: an I/O release by its name, else a
    /// boot-table release by [`Era::parse`]; the error lists both.
    pub fn from_setting(version: &str) -> Result<Era, String> {
        if let Some(&(_, e)) = Era::IO.iter().find(|(n, _)| *n == version) {
            return Ok(e);
        }
        Era::parse(version).map_err(|e| {
            format!(
                "{e}; for the I/O experiments also: {}",
                Era::IO
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// The era of `version` ("5.4", "5.4.0-150-generic", "2.6.32-754.el6"):
    /// exact when major.minor (and the 2.6 sublevel) is modelled; otherwise
    /// the error names the nearest modelled releases.
    pub fn parse(version: &str) -> Result<Era, String> {
        match Era::nearest(version)? {
            (e, true) => Ok(e),
            (e, false) => Err(format!(
                "\"{version}\" is not a modelled release; nearest known: {} (known: {})",
                e.name(),
                Era::KNOWN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The modelled release nearest to `version`, and whether it is exact:
    /// the newest one not newer than it (whose formulas were in force),
    /// or the oldest for a release before all of them.
    pub fn nearest(version: &str) -> Result<(Era, bool), String> {
        let k = parse_release(version).ok_or_else(|| {
            format!("\"{version}\": expected a release like \"5.4\", \"6.8.0-45-generic\" or \"2.6.32\"")
        })?;
        let mut best = Era::V2_6_9;
        for &(_, e) in Era::KNOWN {
            if e.key() <= k {
                best = e;
            }
        }
        let exact = match k.0 {
            2 => best.key() == k,
            _ => (best.key().0, best.key().1) == (k.0, k.1),
        };
        Ok((best, exact))
    }

    /// The release's boot-table rules (kernel/mm/hash_tables.rs).
    pub fn rules(self) -> Rules {
        Rules::of_era(self.boot_tables())
    }

    /// `hashdist`'s default for this release (`HASHDIST_DEFAULT`, and from
    /// 5.3 off with one memory node); 2.6.9 is SGI's `CONFIG_NUMA &&
    /// CONFIG_IA64`.
    pub fn hashdist_default(self, arch: Arch, config_numa: bool, mem_nodes: usize) -> bool {
        self.rules()
            .hashdist_default(arch, config_numa, mem_nodes as u64)
    }
}

/// (major, minor, sublevel): the sublevel only counts in 2.x.
fn parse_release(v: &str) -> Option<(u32, u32, u32)> {
    let v = v.trim().trim_start_matches(['v', 'V']);
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    // The separator after major must be a dot: "5-4" is not a release.
    if !v[major.to_string().len()..].starts_with('.') {
        return None;
    }
    let sub = if major == 2 {
        parts.next().and_then(|s| s.parse().ok()).unwrap_or(0)
    } else {
        0
    };
    if !(2..=9).contains(&major) {
        return None;
    }
    Some((major, minor, sub))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_strings_map_to_their_release() {
        assert_eq!(Era::parse("5.4.0-150-generic"), Ok(Era::V5_4));
        assert_eq!(Era::parse("2.6.32-754.el6.x86_64"), Ok(Era::V2_6_32));
        assert_eq!(Era::parse("3.10.0-1160.el7.x86_64"), Ok(Era::V3_10));
        assert_eq!(Era::parse("6.8"), Ok(Era::V6_8));
    }

    #[test]
    fn unknown_release_names_the_nearest_older() {
        let e = Era::parse("5.15").unwrap_err();
        assert!(e.contains("nearest known: 5.4"), "{e}");
        assert_eq!(Era::nearest("2.6.18"), Ok((Era::V2_6_9, false)));
        assert_eq!(Era::nearest("2.4.20"), Ok((Era::V2_6_9, false)));
        assert!(Era::parse("five").is_err());
    }
}
