//! Every scenario in `examples/` runs exactly as the docs show it (issue
//! 33): the commands are read from the code blocks of README.md and
//! docs/*.md, so a doc edit is tested as written, and an example no doc
//! shows a command for fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Shell words of a one-line command: spaces split, double and single
/// quotes group (all the docs use).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// (doc, command) for each code-block line that runs `numasim` on a file
/// under examples/.
fn documented() -> Vec<(String, String)> {
    let mut docs = vec![repo().join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    let mut out = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut inside = false;
        for line in text.lines() {
            if line.starts_with("```") {
                inside = !inside;
                continue;
            }
            // A comment starts at " #" (no example path holds one).
            let cmd = line.split(" #").next().unwrap().trim();
            let cmd = cmd.strip_prefix("$ ").unwrap_or(cmd);
            if inside && cmd.starts_with("numasim ") && cmd.contains("examples/") {
                let name = doc.file_name().unwrap().to_string_lossy().into_owned();
                out.push((name, cmd.to_string()));
            }
        }
    }
    out
}

#[test]
fn every_example_scenario_has_a_documented_command() {
    let cmds = documented();
    let mut missing = Vec::new();
    for e in std::fs::read_dir(repo().join("examples")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let rel = format!("examples/{}", p.file_name().unwrap().to_string_lossy());
            if !cmds.iter().any(|(_, c)| words(c).contains(&rel)) {
                missing.push(rel);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "examples no doc shows a `numasim` command for: {missing:?}"
    );
}

#[test]
fn every_documented_example_command_runs_as_written() {
    let cmds = documented();
    assert!(cmds.len() >= 10, "{cmds:?}");
    // A scratch folder that sees examples/ at the same relative path, so
    // what a command writes (`--out results/`) lands there.
    let d = std::env::temp_dir().join(format!("numasim-doc-examples-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::symlink(
        repo().join("examples").canonicalize().unwrap(),
        d.join("examples"),
    )
    .unwrap();
    for (doc, cmd) in &cmds {
        let w = words(cmd);
        let o = Command::new(env!("CARGO_BIN_EXE_numasim"))
            .args(&w[1..])
            .current_dir(&d)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{doc}: `{cmd}`\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stdout.is_empty(), "{doc}: `{cmd}` printed nothing");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The TOML code block of `doc` whose first line is `first`.
fn toml_block(doc: &str, first: &str) -> String {
    let text = std::fs::read_to_string(repo().join(doc)).unwrap();
    let start = text
        .find(&format!("```toml\n{first}\n"))
        .unwrap_or_else(|| panic!("{doc}: no ```toml block starting `{first}`"));
    let body = &text[start + "```toml\n".len()..];
    body[..body.find("```").unwrap()].to_string()
}

#[test]
fn the_nvme_machine_and_scenario_of_docs_machine_md_run_as_written() {
    // Issue 33: a user writes an NVMe buffered-read scenario from the docs
    // alone, first try.
    let d = std::env::temp_dir().join(format!("numasim-doc-nvme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("my-nvme-box.toml"),
        toml_block("docs/machine.md", "name = \"my-nvme-box\""),
    )
    .unwrap();
    let sc = d.join("my-nvme-read.toml");
    std::fs::write(
        &sc,
        toml_block("docs/machine.md", "name = \"my-nvme-read\""),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_numasim"))
        .args(["run", sc.to_str().unwrap(), "--format", "jsonl"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let reads: Vec<f64> = out
        .lines()
        .filter(|l| l.contains("\"metric\":\"read_gibps\""))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["value"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(reads.len(), 3, "{out}");
    // More readers read faster from four drives: the stack ran, not a stub.
    assert!(reads[2] > reads[0], "{reads:?}");
    let _ = std::fs::remove_dir_all(&d);
}
