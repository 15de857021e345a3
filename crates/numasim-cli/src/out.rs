//! Writing files into `--out DIR`: the only place numasim writes. The
//! library renders each file's name and content (`report::out::run_files`,
//! `report::html::page`); every name is proven here, by [`OutDir::file`],
//! to be one plain component: a direct child of DIR, so no name can write
//! beside or outside it; nor is a symbolic link left in DIR written through.

use numasim::error::{Error, InputError};
use std::path::{Component, Path, PathBuf};

/// The folder `--out` names.
pub struct OutDir<'a> {
    dir: &'a Path,
}

impl<'a> OutDir<'a> {
    pub fn new(dir: &'a Path) -> Self {
        Self { dir }
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::Input(InputError::new(format!(
            "cannot write to {}: {e}",
            self.dir.display()
        )))
    }

    /// `DIR/file`, if `file` is a single plain path component (so the result
    /// is a direct child of DIR); otherwise an input error naming it.
    pub fn file(&self, file: &str) -> Result<PathBuf, Error> {
        let mut parts = Path::new(file).components();
        let plain = matches!(
            (parts.next(), parts.next()),
            (Some(Component::Normal(c)), None) if c == std::ffi::OsStr::new(file)
        ) && !file.contains(['/', '\\'])
            && !file.chars().any(char::is_control);
        if !plain {
            return Err(Error::Input(InputError::new(format!(
                "refusing to write {file:?}: not a plain file name inside {}",
                self.dir.display()
            ))));
        }
        Ok(self.dir.join(file))
    }

    fn write(&self, file: &str, content: &str) -> Result<PathBuf, Error> {
        let path = self.file(file)?;
        // A link left in DIR would carry the write elsewhere: refuse it.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::Input(InputError::new(format!(
                "refusing to write through the symbolic link {}",
                path.display()
            ))));
        }
        std::fs::write(&path, content).map_err(|e| self.io(e))?;
        Ok(path)
    }

    /// Write one file, `file` (a plain name), creating DIR if needed.
    pub fn write_one(&self, file: &str, content: &str) -> Result<PathBuf, Error> {
        std::fs::create_dir_all(self.dir).map_err(|e| self.io(e))?;
        self.write(file, content)
    }

    /// Write `files` (name, content) in order, creating DIR if needed;
    /// returns the paths written.
    pub fn write_all(&self, files: &[(String, String)]) -> Result<Vec<PathBuf>, Error> {
        std::fs::create_dir_all(self.dir).map_err(|e| self.io(e))?;
        files.iter().map(|(f, c)| self.write(f, c)).collect()
    }
}

/// The href of the repository page `doc` (`docs/x.md`, under the current
/// directory) from a page in `out_dir`, if the page exists: relative, so the
/// link works from `file://` and the bytes do not name this host's paths.
pub fn doc_href(out_dir: &Path, doc: &str) -> Option<String> {
    let target = std::fs::canonicalize(doc).ok()?;
    let from = std::fs::canonicalize(out_dir).ok()?;
    let rel = numasim::report::html::relative(&from, &target)?;
    Some(
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_files_stay_in_the_folder() {
        let d = Path::new("/tmp/x");
        let out = OutDir::new(d);
        assert_eq!(out.file("a.csv").unwrap(), d.join("a.csv"));
        for bad in ["../a", "/etc/passwd", "a/b", "", ".", ".."] {
            assert!(out.file(bad).is_err(), "{bad:?} accepted");
        }
    }
}
