//! Linux CPU and node lists as sysfs prints them (`0-3,8-11`, empty for
//! none): the `%*pbl` format of `bitmap_print_to_pagebuf`.

use crate::machine::MAX_CPUS;

/// Parse a list like `0-3,8-11` into its members, ascending and without
/// duplicates. Whitespace around the list (the trailing newline sysfs
/// writes) is ignored; an empty list is valid. Members must be below
/// [`MAX_CPUS`], which also bounds the memory a hostile range can cost.
pub fn parse_cpulist(text: &str) -> Result<Vec<u32>, String> {
    // Some kernels end sysfs lists with a NUL byte.
    let t = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    let mut out: Vec<u32> = Vec::new();
    if t.is_empty() {
        return Ok(out);
    }
    for part in t.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (number(a, part)?, number(b, part)?),
            None => {
                let v = number(part, part)?;
                (v, v)
            }
        };
        if hi < lo {
            return Err(format!(
                "`{part}` is a descending range; write the smaller number first"
            ));
        }
        if out.len() as u64 + (hi - lo) as u64 + 1 > MAX_CPUS {
            return Err(format!("`{t}` lists more than {MAX_CPUS} entries"));
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Parse a CPU mask as old kernels' `cpumap` prints it (`%*pb`): 32-bit
/// hex words separated by commas, most significant first
/// (`00000000,0000f00f`). Trailing whitespace and NULs are ignored.
pub fn parse_cpumap(text: &str) -> Result<Vec<u32>, String> {
    let t = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    if t.is_empty() {
        return Err("empty mask; expected hex words like `0000000f` or `00000000,000000ff`".into());
    }
    let words: Vec<&str> = t.split(',').collect();
    if words.len() as u64 * 32 > MAX_CPUS {
        return Err(format!("`{t}` is wider than {MAX_CPUS} CPUs"));
    }
    let mut out = Vec::new();
    for (k, w) in words.iter().rev().enumerate() {
        let w = w.trim();
        if w.is_empty() || w.len() > 8 {
            return Err(format!("`{w}` in `{t}`: each word is 1 to 8 hex digits"));
        }
        let v =
            u32::from_str_radix(w, 16).map_err(|_| format!("`{w}` in `{t}` is not a hex word"))?;
        for bit in 0..32 {
            if v & (1 << bit) != 0 {
                out.push(k as u32 * 32 + bit);
            }
        }
    }
    Ok(out)
}

fn number(s: &str, part: &str) -> Result<u32, String> {
    let s = s.trim();
    let bad = || {
        format!(
            "`{part}` is not a list entry: expected a number or a range like `0-3` (entries below {MAX_CPUS})"
        )
    };
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match s.parse::<u64>() {
        Ok(v) if v < MAX_CPUS => Ok(v as u32),
        _ => Err(bad()),
    }
}

/// Format members (any order, duplicates allowed) as Linux does: ascending
/// ranges joined by commas, a single member without a dash.
pub fn format_cpulist(members: &[u32]) -> String {
    let mut v = members.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpumap_words_are_most_significant_first() {
        assert_eq!(parse_cpumap("0000000f\n").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_cpumap("00000001,00000100\0").unwrap(), vec![8, 32]);
        assert!(parse_cpumap("xyz").is_err());
        assert!(parse_cpumap("").is_err());
        assert_eq!(parse_cpulist("0-1,4\n\0").unwrap(), vec![0, 1, 4]);
    }
    use proptest::prelude::*;

    #[test]
    fn parses_what_sysfs_writes() {
        assert_eq!(
            parse_cpulist("0-3,8-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 9, 10, 11]
        );
        assert_eq!(parse_cpulist("5").unwrap(), vec![5]);
        assert_eq!(parse_cpulist("\n").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpulist("0,2-3").unwrap(), vec![0, 2, 3]);
    }

    #[test]
    fn refuses_garbage() {
        for bad in [
            "x",
            "1-",
            "-1",
            "3-1",
            "1,,2",
            "0-99999999",
            "1.5",
            "0x3",
            "+1",
        ] {
            assert!(parse_cpulist(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn formats_ranges() {
        assert_eq!(format_cpulist(&[3, 0, 1, 2, 8, 10, 9, 11]), "0-3,8-11");
        assert_eq!(format_cpulist(&[]), "");
        assert_eq!(format_cpulist(&[7]), "7");
        assert_eq!(format_cpulist(&[1, 3]), "1,3");
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(set in proptest::collection::btree_set(0u32..4096, 0..200)) {
            let members: Vec<u32> = set.into_iter().collect();
            let text = format_cpulist(&members);
            prop_assert_eq!(parse_cpulist(&text).unwrap(), members);
        }

        #[test]
        fn parse_never_panics(s in "[0-9,\\- \n]{0,40}") {
            let _ = parse_cpulist(&s);
        }
    }
}
