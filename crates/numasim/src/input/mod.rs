//! Reading input files with a bound: no size from input drives an
//! allocation, and that starts with the input itself. Every file numasim
//! reads (scenarios, machine files, importer sources, sysfs attributes,
//! `/proc/meminfo`, a probe run for `probe --from`, boot logs) goes through
//! [`read_bounded`], which reads at most a documented number of bytes and
//! refuses more, naming the file: `/dev/zero`, an endless pipe or a sysfs
//! file symlinked to either ends in an input error (exit 2) after a
//! bounded read, never in an allocation that grows until the host gives
//! out. The maxima are in docs/testing.md ("Input bounds").

pub(crate) mod merge;
pub mod size;
pub(crate) mod stem;
pub mod table;

use crate::error::InputError;
use std::io::Read;
use std::path::Path;

/// The most bytes read from one scenario, machine file, `numactl
/// --hardware` output or hwloc XML: 512 MiB. The largest machine numasim
/// models (8,192 nodes) written out with its full distance matrix is about
/// 270 MB, so the bound leaves room for comments and wide spacing.
pub const MAX_INPUT_BYTES: u64 = 512 << 20;

/// The most bytes read from one sysfs attribute or `/proc/meminfo`: 16 MiB.
/// The kernel writes at most a page or two there; the bound leaves room for
/// hand-written copies (a cpulist of 2²¹ CPUs written one by one is under
/// 16 MB).
pub const MAX_SYSFS_FILE_BYTES: u64 = 16 << 20;

/// The most bytes read from a saved probe run (`numasim probe --from`): 64 MiB
/// (a full probe run writes about 100 kB of records).
pub const MAX_PROBE_RUN_BYTES: u64 = 64 << 20;

/// The most bytes read from one boot log (`numasim bootlog`): 64 MiB (a
/// boot's `dmesg` is tens of kB; a long `journalctl -k` a few MB).
pub const MAX_BOOT_LOG_BYTES: u64 = 64 << 20;

/// A byte count as people read it (`512 MiB`, `16 MiB`, `4 KiB`).
fn bytes_label(n: u64) -> String {
    crate::input::size::format_size(n)
}

fn too_large(file: &str, max_bytes: u64, what: &str) -> InputError {
    InputError::new(format!(
        "more than {} ({what}); numasim reads at most {} from one such file \
         (docs/testing.md: input bounds)",
        bytes_label(max_bytes),
        bytes_label(max_bytes)
    ))
    .in_file(file)
}

/// Read at most `max_bytes` from `path` (`-` is standard input) and refuse
/// anything longer with an input error naming the file, `what` it was meant
/// to be and the bound. A regular file whose length is known is refused
/// before a byte is read; anything else (a pipe, a device such as
/// `/dev/zero`, a sysfs file, a symbolic link to one) is read up to
/// `max_bytes + 1` bytes, so the memory used is bounded by `max_bytes`.
pub fn read_bounded(path: &Path, max_bytes: u64, what: &str) -> Result<Vec<u8>, InputError> {
    let file = path.display().to_string();
    if path == Path::new("-") {
        return read_bounded_from(std::io::stdin().lock(), max_bytes, what)
            .map_err(|e| e.in_file("stdin"));
    }
    let f = std::fs::File::open(path)
        .map_err(|e| InputError::new(format!("cannot read {what}: {e}")).in_file(file.clone()))?;
    if let Ok(meta) = f.metadata() {
        if meta.is_dir() {
            return Err(
                InputError::new(format!("is a directory; expected {what} (a file)")).in_file(file),
            );
        }
        if meta.is_file() && meta.len() > max_bytes {
            return Err(too_large(&file, max_bytes, what));
        }
    }
    read_bounded_from(f, max_bytes, what).map_err(|e| e.in_file(file))
}

/// As [`read_bounded`], from any reader; the error names no file (the
/// caller adds it). The buffer grows by doubling but never past
/// `max_bytes + 1`, and a failed allocation is an error, not an abort.
pub fn read_bounded_from(
    mut r: impl Read,
    max_bytes: u64,
    what: &str,
) -> Result<Vec<u8>, InputError> {
    let limit = usize::try_from(max_bytes.saturating_add(1)).unwrap_or(usize::MAX);
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(InputError::new(format!("cannot read {what}: {e}"))),
        };
        let n = n.min(limit - buf.len());
        if buf.capacity() - buf.len() < n {
            let want = (buf.capacity() * 2).max(buf.len() + n).min(limit);
            buf.try_reserve_exact(want - buf.len()).map_err(|_| {
                InputError::new(format!(
                    "cannot hold {} of {what} in memory",
                    bytes_label(want as u64)
                ))
            })?;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() >= limit {
            return Err(InputError::new(format!(
                "more than {} ({what}); numasim reads at most {} from one such input \
                 (docs/testing.md: input bounds)",
                bytes_label(max_bytes),
                bytes_label(max_bytes)
            )));
        }
    }
    Ok(buf)
}

/// [`read_bounded`] for text: the bytes must be UTF-8 (the error says
/// where the first bad byte is).
pub fn read_bounded_text(path: &Path, max_bytes: u64, what: &str) -> Result<String, InputError> {
    let bytes = read_bounded(path, max_bytes, what)?;
    String::from_utf8(bytes).map_err(|e| {
        let file = if path == Path::new("-") {
            "stdin".to_string()
        } else {
            path.display().to_string()
        };
        InputError::new(format!(
            "not UTF-8 text (a bad byte at offset {}); expected {what}",
            e.utf8_error().valid_up_to()
        ))
        .in_file(file)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_device_is_refused_after_a_bounded_read() {
        let e = read_bounded(Path::new("/dev/zero"), 1 << 16, "a scenario").unwrap_err();
        assert_eq!(e.file.as_deref(), Some("/dev/zero"));
        assert!(e.message.contains("64 KiB"), "{e}");
    }

    #[test]
    fn a_short_input_is_read_whole() {
        let v = read_bounded_from(&b"abc"[..], 3, "x").unwrap();
        assert_eq!(v, b"abc");
        assert!(read_bounded_from(&b"abcd"[..], 3, "x").is_err());
    }

    #[test]
    fn a_missing_file_names_itself() {
        let e = read_bounded(Path::new("/nonexistent/x.toml"), 10, "a scenario").unwrap_err();
        assert_eq!(e.file.as_deref(), Some("/nonexistent/x.toml"));
        assert!(e.message.contains("cannot read a scenario"), "{e}");
    }
}
