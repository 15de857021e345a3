//! Writing a run's files into `--out DIR`. Every file name is built from the
//! scenario's `name` (checked by [`check_stem`] when the scenario loads) and
//! is proven, by [`OutDir::file`], to be one plain component: a direct child
//! of DIR, so no name can write beside or outside it; nor is a symbolic link
//! left in DIR written through.

use crate::error::{Error, InputError};
use crate::report::{csv, svg, table, view, Artifact, Record};
use crate::scenario::Scenario;
use std::path::{Component, Path, PathBuf};

/// Longest scenario `name`: it is a file stem, and case slugs and suffixes
/// are appended to it below the usual 255-byte file-name limit.
pub const MAX_STEM: usize = 128;

/// Is `name` safe as a file stem? Refuses what would leave the folder or
/// make an odd file: empty, separators, a leading dot (`.`, `..`, hidden
/// files), control characters, and names over [`MAX_STEM`] bytes.
pub fn check_stem(name: &str) -> Result<(), String> {
    let allowed = "allowed: 1 to 128 characters with no `/`, `\\`, control characters \
                   or leading `.`, e.g. \"my-run\"";
    let why = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_STEM {
        "is too long"
    } else if name.contains(['/', '\\']) {
        "contains a path separator"
    } else if name.starts_with('.') {
        "starts with `.`"
    } else if name.chars().any(char::is_control) {
        "contains a control character"
    } else {
        return Ok(());
    };
    Err(format!(
        "{:?} {why}; the name is used as the stem of the files --out writes ({allowed})",
        name
    ))
}

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

    /// Write NAME.jsonl, NAME.csv, NAME.txt, one CSV per view, the SVG plots
    /// and the run's artifacts; returns the paths written, in order.
    pub fn write_all(
        &self,
        sc: &Scenario,
        records: &[Record],
        keys: &[String],
        artifacts: &[Artifact],
    ) -> Result<Vec<PathBuf>, Error> {
        // The scenario checked its name on load; check again here because a
        // Scenario's fields are public.
        check_stem(&sc.name)
            .map_err(|m| Error::Input(InputError::at("name", m).in_file(&sc.source)))?;
        std::fs::create_dir_all(self.dir).map_err(|e| self.io(e))?;
        let name = &sc.name;
        let mut written = Vec::new();
        let jsonl: String = records.iter().map(|r| r.to_json_line() + "\n").collect();
        written.push(self.write(&format!("{name}.jsonl"), &jsonl)?);
        written.push(self.write(&format!("{name}.csv"), &csv::to_csv(records))?);
        let txt = table::render(records, keys) + &view::render_all(&sc.views, records);
        written.push(self.write(&format!("{name}.txt"), &txt)?);
        for (i, v) in sc.views.iter().enumerate() {
            let file = format!("{name}-view-{}.csv", i + 1);
            written.push(self.write(&file, &v.to_csv(records))?);
        }
        // Each metric once, in first-seen order (records interleave metrics
        // row by row, so `dedup()` alone drew every plot once per row).
        let mut metrics: Vec<&str> = Vec::new();
        for r in records {
            if !metrics.contains(&r.metric.as_str()) {
                metrics.push(&r.metric);
            }
        }
        for m in metrics {
            let plot = svg::node_bars(records, m, keys, &format!("{name} — {m} by node"))
                .or_else(|| svg::sweep_lines(records, m, keys, &format!("{name} — {m}")))
                .or_else(|| svg::size_lines(records, m, keys, &format!("{name} — {m} by size")));
            if let Some(plot) = plot {
                written.push(self.write(&format!("{name}-{m}.svg"), &plot)?);
            }
        }
        for a in artifacts {
            written.push(self.write(&a.file, &a.content)?);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_stems_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            "../escaped",
            "/abs/path",
            "a/b",
            "a\\b",
            "tab\there",
            ".hidden",
            &"x".repeat(MAX_STEM + 1),
        ] {
            assert!(check_stem(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["hashdist-boot", "a.b", "run 1", "ünïcode"] {
            assert!(check_stem(good).is_ok(), "{good:?} refused");
        }
    }

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
