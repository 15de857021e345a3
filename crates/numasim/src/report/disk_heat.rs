//! A per-disk utilisation heat map of one I/O run: one cell per disk, in
//! volume order, a row per `per_row` disks (the disks behind one I/O node
//! or controller group), coloured by the fraction of the run the disk was
//! busy. A stripe that keeps every disk busy is one flat colour; a layout
//! that sends the readers to a few disks (Ext2's interleaved runs, one
//! node's port) shows as a pattern.

use super::timeline::{colour_scale, escape, share_color};

/// Cell size, pixels.
const CELL: f64 = 18.0;

/// The SVG, titled `title`, and the offset in it where the title ends
/// (where a case's name can be added); None for no disks.
pub fn to_svg(busy_pct: &[f64], per_row: usize, title: &str) -> Option<(String, usize)> {
    if busy_pct.is_empty() {
        return None;
    }
    let per_row = per_row.clamp(1, busy_pct.len());
    let rows = busy_pct.len().div_ceil(per_row);
    let (left, top) = (104.0, 62.0);
    let w = (left + per_row as f64 * CELL + 40.0).max(760.0);
    let h = top + rows as f64 * CELL + 70.0;
    let mean = busy_pct.iter().sum::<f64>() / busy_pct.len() as f64;
    let (lo, hi) = busy_pct
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"15\">{}",
        escape(title)
    );
    let title_end = s.len();
    s += &format!(
        "</text>\n<text x=\"{left}\" y=\"42\">busy time of each of {} disks: mean {mean:.1}%, min {lo:.1}%, max {hi:.1}%</text>\n",
        busy_pct.len()
    );
    for (i, &b) in busy_pct.iter().enumerate() {
        let (r, c) = (i / per_row, i % per_row);
        s += &format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{CELL}\" height=\"{CELL}\" fill=\"{}\" stroke=\"#ddd\" stroke-width=\"0.5\"><title>disk {i}: {b:.1}% busy</title></rect>\n",
            left + c as f64 * CELL,
            top + r as f64 * CELL,
            share_color(b / 100.0)
        );
    }
    for r in 0..rows {
        s += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">disks {}–{}</text>\n",
            left - 6.0,
            top + r as f64 * CELL + CELL * 0.7,
            r * per_row,
            ((r + 1) * per_row).min(busy_pct.len()) - 1
        );
    }
    // The colour scale: the cells' mapping, 0 to 100% busy.
    s += &colour_scale(
        "disk-busy",
        left,
        top + rows as f64 * CELL + 24.0,
        None,
        "100% busy",
    );
    s += "</svg>\n";
    Some((s, title_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cell_per_disk_coloured_by_its_busy_time() {
        let busy = [0.0, 50.0, 100.0, 25.0, 75.0];
        let (svg, at) = to_svg(&busy, 2, "t").unwrap();
        assert_eq!(svg.matches("% busy</title></rect>").count(), 5);
        assert!(svg.contains(&share_color(1.0)) && svg.contains(&share_color(0.0)));
        assert!(svg.contains("mean 50.0%, min 0.0%, max 100.0%"));
        // Three rows of two: the last row names one disk.
        assert!(svg.contains("disks 4–4"));
        assert_eq!(&svg[at - 1..at], "t");
        assert!(to_svg(&[], 4, "t").is_none());
    }
}
