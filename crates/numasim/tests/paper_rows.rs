//! `[[paper]]` rows that state a peak (`at = "max"`) or a bound
//! (`bound = "below"`): which record they attach to and how they score.

use numasim::error::InputError;
use numasim::report::{Bound, Record, Role, Summary};
use numasim::scenario::run::run;
use numasim::scenario::Scenario;

/// fs-buffered-write without its own [[paper]] rows, plus `papers`: its
/// Ext3 4 KiB sweep (1-32 writers) is the case the keys were made for.
fn with_papers(papers: &str) -> Result<Scenario, InputError> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/fs-buffered-write.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let head = &text[..text.find("[[paper]]").unwrap()];
    Scenario::from_str(&format!("{head}{papers}"), "test.toml", None)
}

const EXT3: &str =
    "case = { fs = \"ext3\", \"kernel.version\" = \"2.6.15\", block_size = \"4 KiB\" }\n\
                    metric = \"write_mibps\"\nrole = \"validation\"\n";

fn ext3(recs: &[Record]) -> Vec<&Record> {
    recs.iter()
        .filter(|r| {
            r.metric == "write_mibps"
                && r.case_value("fs").and_then(|v| v.as_str()) == Some("ext3")
                && r.case_value("kernel.version").and_then(|v| v.as_str()) == Some("2.6.15")
        })
        .collect()
}

fn peak(recs: &[Record]) -> f64 {
    ext3(recs)
        .iter()
        .filter_map(|r| r.value)
        .fold(f64::MIN, f64::max)
}

#[test]
fn a_peak_row_attaches_to_the_largest_record_only() {
    let sc = with_papers(&format!("[[paper]]\n{EXT3}value = 250\nat = \"max\"\n")).unwrap();
    let recs = run(&sc, &[]).unwrap();
    let sweep = ext3(&recs);
    assert!(sweep.len() >= 4, "the sweep has several thread counts");
    let with: Vec<&&Record> = sweep.iter().filter(|r| r.paper.is_some()).collect();
    assert_eq!(with.len(), 1, "{with:?}");
    assert_eq!(with[0].value, Some(peak(&recs)));
    assert_eq!(with[0].role, Some(Role::Validation));

    // at = "min" picks the other end; the default still takes every record.
    let sc = with_papers(&format!("[[paper]]\n{EXT3}value = 250\nat = \"min\"\n")).unwrap();
    let recs = run(&sc, &[]).unwrap();
    let with: Vec<f64> = ext3(&recs)
        .iter()
        .filter(|r| r.paper.is_some())
        .filter_map(|r| r.value)
        .collect();
    let least = ext3(&recs)
        .iter()
        .filter_map(|r| r.value)
        .fold(f64::MAX, f64::min);
    assert_eq!(with, vec![least]);
    let sc = with_papers(&format!("[[paper]]\n{EXT3}value = 250\n")).unwrap();
    let recs = run(&sc, &[]).unwrap();
    assert!(ext3(&recs).iter().all(|r| r.paper == Some(250.0)));
}

/// The summary of one at = "max" Ext3 row published as `value` with `bound`.
fn scored(value: f64, bound: &str) -> (Summary, f64) {
    let sc = with_papers(&format!(
        "[[paper]]\n{EXT3}value = {value}\ntolerance = 0.05\nat = \"max\"\nbound = \"{bound}\"\n"
    ))
    .unwrap();
    let recs = run(&sc, &[]).unwrap();
    (Summary::of(&sc.name, &recs, &sc.papers), peak(&recs))
}

#[test]
fn an_upper_bound_holds_when_under_and_fails_when_over() {
    let (_, top) = scored(1.0, "below");
    // A ceiling twice the model's peak holds; the same value as a point
    // estimate is 50% off.
    let (s, _) = scored(2.0 * top, "below");
    assert_eq!((s.within, s.with_tolerance), (1, 1), "{s}");
    assert_eq!(s.rows[0].bound, Bound::Below);
    let (s, _) = scored(2.0 * top, "at");
    assert_eq!((s.within, s.with_tolerance), (0, 1), "{s}");
    // A ceiling at half the peak is broken by 100%; within tolerance of
    // the bound (4% over) still holds.
    let (s, _) = scored(0.5 * top, "below");
    assert_eq!((s.within, s.with_tolerance), (0, 1), "{s}");
    let (s, _) = scored(top / 1.04, "below");
    assert!(s.passed(), "{s}");
    // A floor works the other way round.
    let (s, _) = scored(0.5 * top, "above");
    assert!(s.passed(), "{s}");
    let (s, _) = scored(2.0 * top, "above");
    assert!(!s.passed(), "{s}");
}

#[test]
fn a_bound_enters_the_scores_by_its_excess() {
    let (_, top) = scored(1.0, "below");
    // Held: the row is shown 50% under its ceiling but counts as no miss.
    let (s, _) = scored(2.0 * top, "below");
    assert!((s.rows[0].deviation + 0.5).abs() < 1e-12, "{:?}", s.rows[0]);
    let st = s.role(Role::Validation);
    assert_eq!(st.median_abs_dev, 0.0, "{st:?}");
    assert_eq!(st.worst.as_ref().map(|w| w.0), Some(0.0));
    // Broken by 100%: the excess is the whole deviation.
    let (s, _) = scored(0.5 * top, "below");
    let st = s.role(Role::Validation);
    assert!((st.median_abs_dev - 1.0).abs() < 1e-12, "{st:?}");
    // A point estimate at twice the peak counts its full 50%.
    let (s, _) = scored(2.0 * top, "at");
    assert!((s.role(Role::Validation).median_abs_dev - 0.5).abs() < 1e-12);
}

#[test]
fn a_peak_row_matching_nothing_is_reported_unmatched() {
    let sc = with_papers(
        "[[paper]]\ncase = { fs = \"ext4\" }\nmetric = \"write_mibps\"\nvalue = 1\n\
         role = \"validation\"\nat = \"max\"\n",
    )
    .unwrap();
    let recs = run(&sc, &[]).unwrap();
    assert_eq!(
        numasim::scenario::run::unmatched_papers(&recs, &sc.papers).len(),
        1
    );
    assert!(recs.iter().all(|r| r.paper.is_none()));
}

#[test]
fn unknown_at_and_bound_values_are_refused_naming_the_key() {
    for (key, bad) in [("at", "peak"), ("bound", "under")] {
        let e = with_papers(&format!("[[paper]]\n{EXT3}value = 1\n{key} = \"{bad}\"\n"))
            .expect_err("refused");
        assert_eq!(
            e.key.as_deref(),
            Some(format!("paper[0].{key}").as_str()),
            "{e}"
        );
        assert!(
            e.message.contains(bad) && e.message.contains("allowed"),
            "{e}"
        );
    }
}

/// A published range ("10–15%") is within when the model falls in it:
/// Δ is 0 inside and measured from the nearer end outside; tables print
/// both ends and JSONL carries the high end.
#[test]
fn a_range_holds_inside_and_counts_its_distance_outside() {
    let summary = |lo: f64, hi: f64| {
        let sc = with_papers(&format!(
            "[[paper]]\n{EXT3}range = [{lo}, {hi}]\ntolerance = 0\nat = \"max\"\n"
        ))
        .unwrap();
        let recs = run(&sc, &[]).unwrap();
        let r = recs.iter().find(|r| r.paper.is_some()).unwrap().clone();
        (Summary::of(&sc.name, &recs, &sc.papers), r, peak(&recs))
    };
    let p = summary(1.0, 1.0).2;
    let (inside, r, _) = summary(p * 0.5, p * 2.0);
    assert!(inside.passed(), "{inside}");
    assert_eq!(r.deviation(), Some(0.0));
    assert_eq!(r.paper_bound, Bound::Range);
    assert_eq!(r.paper_high, Some(p * 2.0));
    assert!(r
        .to_json_line()
        .contains("\"paper_bound\":\"range\",\"paper_high\":"));
    assert!(numasim::report::table::fmt_paper(&r).contains('–'));
    let (above, r, _) = summary(p * 0.25, p * 0.5);
    assert!(!above.passed());
    assert!(
        (r.deviation().unwrap() - 1.0).abs() < 1e-9,
        "from the high end"
    );
    let (below, r, _) = summary(p * 2.0, p * 4.0);
    assert!(!below.passed());
    assert!(
        (r.deviation().unwrap() + 0.5).abs() < 1e-9,
        "from the low end"
    );
}

#[test]
fn a_range_is_refused_beside_value_or_bound_and_when_reversed() {
    for (extra, key) in [
        ("range = [1, 2]\nvalue = 1\n", "paper[0].value"),
        ("range = [1, 2]\nbound = \"below\"\n", "paper[0].bound"),
        ("range = [2, 1]\n", "paper[0].range"),
        ("range = [1]\n", "paper[0].range"),
        ("value = 1\nbound = \"range\"\n", "paper[0].bound"),
    ] {
        let e = with_papers(&format!("[[paper]]\n{EXT3}{extra}")).expect_err(extra);
        assert_eq!(e.key.as_deref(), Some(key), "{extra}: {e}");
    }
}

#[test]
fn the_old_prediction_role_is_refused_with_its_new_name() {
    let text = EXT3.replace("validation", "prediction");
    let e = with_papers(&format!("[[paper]]\n{text}value = 1\n")).expect_err("refused");
    assert_eq!(e.key.as_deref(), Some("paper[0].role"));
    assert!(e.message.contains("`validation`"), "{e}");
}

/// A [[fit]] names calibration rows of its own file, or the file is refused.
#[test]
fn a_fit_must_name_a_calibration_row_of_its_file() {
    let cal = EXT3.replace("validation", "calibration");
    let row = "{ metric = \"write_mibps\", case = { fs = \"ext3\", \"kernel.version\" = \"2.6.15\", block_size = \"4 KiB\" } }";
    let fit =
        |rows: &str| format!("[[fit]]\nparameter = \"p\"\nrows = [{rows}]\ndoc = \"docs/io.md\"\n");
    let ok = with_papers(&format!(
        "[[paper]]\n{cal}value = 250\nat = \"max\"\n{}",
        fit(row)
    ))
    .expect("a calibration row");
    assert_eq!(ok.fits.len(), 1);
    let e = with_papers(&format!(
        "[[paper]]\n{EXT3}value = 250\nat = \"max\"\n{}",
        fit(row)
    ))
    .expect_err("a validation row");
    assert_eq!(e.key.as_deref(), Some("fit[0].rows[0]"), "{e}");
    let e = with_papers(&format!(
        "[[paper]]\n{cal}value = 250\nat = \"max\"\n{}",
        fit("{ metric = \"write_mibps\", case = { fs = \"xfs\" } }")
    ))
    .expect_err("no such row");
    assert!(e.message.contains("no [[paper]] row"), "{e}");
}
