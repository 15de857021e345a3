//! `numasim report`: the page is self-contained and byte-stable, and a real
//! browser (headless Chromium) loads it without a console message and lays
//! out every section and plot. The browser test saves a screenshot at
//! `target/report-screenshot.png` for a person to look at.

use numasim::experiments::{self, EXPERIMENTS};
use std::path::{Path, PathBuf};
use std::process::Command;

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// `numasim report --all --no-timing --out DIR`, from the repository root
/// (so the doc links resolve); the page's text.
fn report_all(dir: &Path) -> String {
    let _ = std::fs::remove_dir_all(dir);
    let out = Command::new(env!("CARGO_BIN_EXE_numasim"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["report", "--all", "--no-timing", "--out"])
        .arg(dir)
        .output()
        .expect("numasim runs");
    assert!(
        out.status.success(),
        "report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.join("index.html")).expect("index.html written")
}

/// The figures each experiment's section must hold: one per
/// `[[report.figure]]` (or at least one chosen from the records), plus one
/// per memory timeline.
fn check_sections(html: &str) {
    let sections: Vec<&str> = html
        .split("<section class=\"experiment\"")
        .skip(1)
        .collect();
    assert_eq!(
        sections.len(),
        EXPERIMENTS.len(),
        "one section per experiment"
    );
    for ((id, _), sec) in EXPERIMENTS.iter().zip(&sections) {
        assert!(
            sec.starts_with(&format!(" id=\"{id}\"")),
            "{id} out of order"
        );
        let sc = experiments::load(id).unwrap();
        let figs = sec.matches("<figure class=\"plot\" ").count();
        let svgs = sec.matches("<svg ").count();
        // A view with `plot` adds its figure after the hinted ones.
        let view_plots = sc
            .views
            .iter()
            .filter(|v| v.plot != numasim::report::view::Plot::Table)
            .count();
        if sc.report.figures.is_empty() {
            assert!(figs >= 1.max(view_plots), "{id}: no figure");
        } else {
            assert_eq!(
                figs,
                sc.report.figures.len() + view_plots,
                "{id}: a hinted figure is missing"
            );
        }
        assert!(svgs >= figs, "{id}: a figure without its plot");
        if let Some(doc) = &sc.report.doc {
            assert!(
                sec.contains(&format!("/{doc}\">{doc}</a>")),
                "{id}: no link to {doc}, or it does not exist"
            );
        }
    }
}

#[test]
fn the_page_is_self_contained_and_byte_stable() {
    let base = target_dir().join("report-test");
    let a = report_all(&base.join("a"));
    let b = report_all(&base.join("b"));
    assert!(a == b, "two runs gave different pages");
    // Nothing fetched: no script, no external link or image, no URL but the SVG namespace.
    assert!(!a.contains("<script"), "a script in the page");
    assert!(!a.contains("<img"), "an image the page would fetch");
    let urls = a.matches("http://").count() + a.matches("https://").count();
    let ns = a.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(urls, ns, "a URL other than the SVG namespace");
    check_sections(&a);
    // Each section's calibration line counts its rows within tolerance;
    // the experiments with a missed calibration target show the miss,
    // marked bad, never hidden (docs/calibration.md).
    let cal: Vec<(&str, &str)> = a
        .split("calibration ")
        .skip(1)
        .filter_map(|t| t.split_once("within tolerance "))
        .filter(|(_, t)| t.chars().take(12).any(|c| c == '<'))
        .collect();
    assert!(!cal.is_empty(), "no calibration lines");
    let mut missed = 0;
    for (before, t) in cal {
        let frac = t.split('<').next().unwrap();
        let (w, n) = frac.split_once('/').unwrap();
        if w != n {
            missed += 1;
            assert!(
                before.ends_with("class=\"bad\">"),
                "a miss not marked: {frac}"
            );
        }
    }
    assert_eq!(missed, 4, "experiments with a missed calibration target");
}

/// A Chromium to drive, or None with the reason.
fn chromium() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("NUMASIM_CHROMIUM") {
        return Ok(PathBuf::from(p));
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return Ok(PathBuf::from(name));
        }
    }
    Err("no chromium, chromium-browser or google-chrome on PATH (.ci/run installs Debian's `chromium`; \
         or set NUMASIM_CHROMIUM)"
        .into())
}

fn headless(chrome: &Path, extra: &[&str], page: &Path) -> std::process::Output {
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium starts")
}

#[test]
fn chromium_renders_every_section_without_console_messages() {
    let chrome = match chromium() {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED: the browser test needs headless Chromium: {why}");
            return;
        }
    };
    let dir = target_dir().join("report-test").join("browser");
    report_all(&dir);
    let page = dir.join("index.html");
    // The DOM as the browser parsed it: every section and plot is there.
    let out = headless(&chrome, &["--dump-dom"], &page);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && dom.contains("</html>"),
        "dump-dom failed"
    );
    check_sections(&dom);
    // The page has no script, so any console line is an error or a warning
    // (a bad attribute, a failed load) the browser reported.
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let shot = target_dir().join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let arg = format!("--screenshot={}", shot.display());
    let out = headless(&chrome, &[&arg, "--window-size=1280,2400"], &page);
    assert!(
        out.status.success(),
        "screenshot failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    // A blank page compresses to almost nothing; a page of plots does not.
    assert!(
        png.len() > 50_000,
        "screenshot of {} bytes: blank?",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());
}

/// Issue 33: a per-node heat map whose values span 100× (large-kernel-
/// tables' node 0) says it is on a log colour scale, in the legend and the
/// caption; altix-toss's published range carries its paper's words as a
/// tag on its bar plot.
#[test]
fn a_wide_heat_map_is_on_a_log_scale_and_a_range_note_tags_its_bar() {
    let dir = target_dir().join("report-test-newcomer");
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_numasim"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args([
            "report",
            "large-kernel-tables",
            "altix-toss",
            "--no-timing",
            "--out",
        ])
        .arg(&dir)
        .output()
        .expect("numasim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let (lkt, toss) = html
        .split_once("<section class=\"experiment\" id=\"altix-toss\"")
        .expect("altix-toss after large-kernel-tables");
    assert!(lkt.contains("log colour scale: the values span"), "legend");
    assert!(
        lkt.contains("mem_used_kb — heat map on a log colour scale"),
        "caption"
    );
    assert!(!toss.contains("log colour scale"));
    assert_eq!(toss.matches("class=\"paper-note\"").count(), 1);
    assert!(
        toss.contains("\"10s of seconds\": the range 10-100 s"),
        "note in the legend"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
