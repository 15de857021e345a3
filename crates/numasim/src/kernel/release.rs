//! A kernel release as `uname -r` and the `Linux version` line spell it,
//! mapped to the upstream release it was built from, with the vendor
//! backports that change the boot-time hash tables.
//!
//! The boot-table rules (`kernel/mm/hash_tables.rs`) are keyed on the
//! upstream (major, minor, sublevel); a vendor kernel (`3.10.0-957.el7`,
//! `4.12.14-lp151.28.52-default`, `5.4.0-42-generic`) takes the rules of
//! its base release plus the backports listed in [`Backport`]. Which
//! release carried each change, and the tree it was read in, is in
//! docs/placement.md, "Boot logs".

use crate::kernel::era::Era;
use std::fmt;

/// Who built the kernel, as its release string says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// A release with no distribution suffix (or one numasim does not know).
    Upstream,
    /// Red Hat Enterprise Linux and rebuilds (CentOS, Rocky, Alma, Oracle
    /// RHCK): `.elN`, with the major RHEL release.
    RedHat(u32),
    /// SUSE (`-lpNNN`, `-default` with a `.`-numbered SUSE patch level).
    Suse,
    /// Ubuntu (`-generic`, `-lowlatency`, …), whose `uname -r` sublevel is 0.
    Ubuntu,
    /// Debian (`-amd64`, `-686`, `-arm64` …).
    Debian,
    /// Fedora (`.fcNN`).
    Fedora,
    /// numasim's own `dmesg` output: the formulas of a modelled [`Era`].
    Numasim(Era),
}

/// A change carried by a vendor kernel ahead of its base release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backport {
    /// One `hlist_nulls_head` per TCP established bucket (upstream 3.13,
    /// "tcp/dccp: remove twchain"): RHEL 7's 3.10 prints 8-byte buckets.
    EhashOneWord,
    /// `Mount-cache`/`Mountpoint-cache` from `alloc_large_system_hash()`
    /// (upstream 3.13): RHEL 7.
    MountHash,
    /// The futex hash sized by CPUs (upstream 3.14): RHEL 6 and 7.
    FutexHash,
}

/// A parsed release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// What the log or the user wrote ("3.10.0-957.10.1.el7.x86_64").
    pub raw: String,
    pub major: u32,
    pub minor: u32,
    /// The sublevel (third number) when known; 0 when the string has none.
    pub sublevel: u32,
    pub vendor: Vendor,
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.raw)
    }
}

impl Release {
    /// Parse a release token ("5.4.0-42-generic", "2.6.0-test9-mjb2",
    /// "v6.8"); `None` when it does not start with `major.minor`.
    pub fn parse(token: &str) -> Option<Release> {
        let raw = token.trim();
        let t = raw.trim_start_matches(['v', 'V']);
        let mut nums = Vec::new();
        let mut rest = t;
        for _ in 0..3 {
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if end == 0 || end > 6 {
                break;
            }
            nums.push(rest[..end].parse::<u32>().ok()?);
            rest = &rest[end..];
            match rest.strip_prefix('.') {
                Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => rest = r,
                _ => break,
            }
        }
        if nums.len() < 2 || !(2..=9).contains(&nums[0]) {
            return None;
        }
        let lower = raw.to_ascii_lowercase();
        let vendor = if lower.contains("-numasim") {
            Era::KNOWN
                .iter()
                .rev()
                .find(|(n, _)| {
                    lower.starts_with(&format!("{n}-numasim"))
                        || lower.starts_with(&format!("{n}.0-numasim"))
                })
                .map_or(Vendor::Upstream, |&(_, e)| Vendor::Numasim(e))
        } else if let Some(el) = el_release(&lower) {
            Vendor::RedHat(el)
        } else if lower.contains(".fc")
            && lower
                .split(".fc")
                .nth(1)
                .is_some_and(|s| s.starts_with(|c: char| c.is_ascii_digit()))
        {
            Vendor::Fedora
        } else if lower.contains("-lp")
            || lower.ends_with("-default") && lower.matches('.').count() >= 3
        {
            Vendor::Suse
        } else if [
            "-generic",
            "-lowlatency",
            "-aws",
            "-azure",
            "-gcp",
            "-kvm",
            "-raspi",
        ]
        .iter()
        .any(|s| lower.contains(s))
        {
            Vendor::Ubuntu
        } else if ["-amd64", "-686", "-arm64", "-armmp", "-powerpc64"]
            .iter()
            .any(|s| lower.contains(s))
        {
            Vendor::Debian
        } else {
            Vendor::Upstream
        };
        Some(Release {
            raw: raw.to_string(),
            major: nums[0],
            minor: nums[1],
            sublevel: nums.get(2).copied().unwrap_or(0),
            vendor,
        })
    }

    /// The release numasim's `dmesg` prints for a modelled era.
    pub fn of_era(era: Era) -> Release {
        let (major, minor, sublevel) = era.key();
        Release {
            raw: format!("{}-numasim", era.name()),
            major,
            minor,
            sublevel,
            vendor: Vendor::Numasim(era),
        }
    }

    /// Distribution `Linux version` lines name the upstream stable release
    /// they were built from ("(Ubuntu 5.4.0-42.46-generic 5.4.44)",
    /// "Debian 4.19.132-1"): take its sublevel when the release string's is 0.
    pub fn with_upstream_hint(mut self, version_line: &str) -> Release {
        if self.sublevel != 0 {
            return self;
        }
        let prefix = format!("{}.{}.", self.major, self.minor);
        for w in version_line.split(|c: char| c.is_whitespace() || c == '(' || c == ')') {
            if let Some(rest) = w.strip_prefix(&prefix) {
                let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                if let Ok(s) = digits.parse::<u32>() {
                    if s > self.sublevel && s < 1000 {
                        self.sublevel = s;
                    }
                }
            }
        }
        self
    }

    /// At least upstream `major.minor.sublevel`.
    pub fn at_least(&self, major: u32, minor: u32, sublevel: u32) -> bool {
        (self.major, self.minor, self.sublevel) >= (major, minor, sublevel)
    }

    /// A vendor backport this kernel carries ahead of its base release.
    pub fn has_backport(&self, b: Backport) -> bool {
        match (self.vendor, b) {
            (Vendor::RedHat(el), Backport::FutexHash) => el >= 6,
            (Vendor::RedHat(el), Backport::EhashOneWord | Backport::MountHash) => el >= 7,
            _ => false,
        }
    }

    /// Who built it, in words ("RHEL 7 (3.10 base)").
    pub fn describe(&self) -> String {
        let base = format!("{}.{}.{}", self.major, self.minor, self.sublevel);
        match self.vendor {
            Vendor::Upstream => format!("upstream {base}"),
            Vendor::RedHat(el) => format!("RHEL {el} kernel on {base}, with RHEL backports"),
            Vendor::Suse => format!("SUSE kernel on {base}"),
            Vendor::Ubuntu => format!("Ubuntu kernel on {base}"),
            Vendor::Debian => format!("Debian kernel on {base}"),
            Vendor::Fedora => format!("Fedora kernel on {base}"),
            Vendor::Numasim(e) => format!("numasim's model of {}", e.name()),
        }
    }
}

/// `el7`, `el8_2`, `el6uek` … → the RHEL major release.
fn el_release(lower: &str) -> Option<u32> {
    let mut s = lower;
    while let Some(i) = s.find(".el") {
        let after = &s[i + 3..];
        let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(n) = digits.parse::<u32>() {
            if (4..=12).contains(&n) {
                return Some(n);
            }
        }
        s = after;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_strings_map_to_their_base() {
        let r = Release::parse("3.10.0-957.10.1.el7.x86_64").unwrap();
        assert_eq!(
            (r.major, r.minor, r.sublevel, r.vendor),
            (3, 10, 0, Vendor::RedHat(7))
        );
        assert!(r.has_backport(Backport::EhashOneWord));
        let r = Release::parse("2.6.32-754.27.1.el6.x86_64").unwrap();
        assert!(r.has_backport(Backport::FutexHash) && !r.has_backport(Backport::MountHash));
        let r = Release::parse("4.12.14-lp151.28.52-default").unwrap();
        assert_eq!((r.sublevel, r.vendor), (14, Vendor::Suse));
        let r = Release::parse("5.4.0-42-generic")
            .unwrap()
            .with_upstream_hint(
            "Linux version 5.4.0-42-generic (x) #46-Ubuntu SMP (Ubuntu 5.4.0-42.46-generic 5.4.44)",
        );
        assert_eq!((r.sublevel, r.vendor), (44, Vendor::Ubuntu));
        let r = Release::parse("2.6.0-test9-mjb2").unwrap();
        assert_eq!((r.major, r.minor, r.sublevel), (2, 6, 0));
        let r = Release::parse("4.16.3-301.fc28.ppc64").unwrap();
        assert_eq!(r.vendor, Vendor::Fedora);
        assert!(Release::parse("five").is_none());
        assert!(Release::parse("5-4").is_none());
        let r = Release::parse("6.8-numasim").unwrap();
        assert_eq!(r.vendor, Vendor::Numasim(Era::V6_8));
        let r = Release::parse("2.6.9-numasim.ia64").unwrap();
        assert_eq!(r.vendor, Vendor::Numasim(Era::V2_6_9));
    }
}
