//! The scratch directory for the I/O tests: a fresh directory, removed with
//! everything in it when the value is dropped (normal end, error, or a
//! Ctrl-C that the measurement loops noticed).

use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Create `numasim-probe-<pid>-<n>` inside `parent` (default: the system
    /// temp dir). Only the directory created here is ever removed.
    pub fn create(parent: Option<&Path>) -> io::Result<Scratch> {
        let parent = parent
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        let pid = std::process::id();
        let stamp = crate::sys::monotonic_ns();
        for attempt in 0..100u64 {
            let path = parent.join(format!("numasim-probe-{pid}-{}", stamp + attempt));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Scratch { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("could not find a fresh directory name"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_on_drop() {
        let s = Scratch::create(None).unwrap();
        let p = s.path().to_path_buf();
        std::fs::write(p.join("f"), b"x").unwrap();
        assert!(p.exists());
        drop(s);
        assert!(!p.exists());
    }
}
