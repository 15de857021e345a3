//! The scenario's `name` as a file stem: checked once when the scenario
//! loads, so the files `--out DIR` writes can be named from it.

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
