//! The `numasim` command: a thin layer over the `numasim` library. Arguments
//! are parsed by clap, validated into a scenario in one place, and every
//! failure maps to an exit status: 2 for bad input, 1 for internal errors.

mod out;
mod sweep;
mod topology;

use clap::{Args, Parser, Subcommand, ValueEnum};
use numasim::error::{Error, InputError};
use numasim::experiments::{self, EXPERIMENTS};
use numasim::input;
use numasim::machine::{import, presets, Machine};
use numasim::report::{csv, table, view, Record, Summary, Totals};
use numasim::scenario::{run, Scenario};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

// A closed stdout (`numasim replay --list | head -5`) ends the program
// quietly, as grep and rg do, where std's print macros would panic. These
// shadow std's `print!`/`println!` for this whole file.
macro_rules! print {
    ($($t:tt)*) => { emit(format_args!($($t)*)) };
}
macro_rules! println {
    () => { emit(format_args!("\n")) };
    ($($t:tt)*) => { emit(format_args!("{}\n", format_args!($($t)*))) };
}

// Error and progress lines never panic either: when stderr is a pipe that
// closed early (`numasim replay --all 2>&1 | head -c 10`) they are lost and
// the exit status stays the designed one (0, 2 or 1), where std's
// `eprintln!` would panic (101). Shadows std's `eprintln!` for this file.
macro_rules! eprintln {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// Write to stdout; on a broken pipe exit 0 at once (the reader has all it
/// wanted), on any other write error exit 1 with the reason.
fn emit(args: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        let _ = writeln!(std::io::stderr(), "numasim: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

const AFTER_HELP: &str = "\
Examples:
  numasim replay hashdist-boot          replay one published experiment beside the paper
  numasim replay --all                  every experiment, then how far each is from the paper
  numasim run my.toml --set kernel.hashdist=0 --format jsonl
  numasim run my.toml --set machine.memory=\"4 TB\" --out results/
  numasim machines                      list the built-in machines
  numasim machines altix-512            print one as TOML (a starting point for your own)
  numasim machines import --numactl hw.txt > mybox.toml
  numasim probe --quick --out host.toml measure this host and write it as a machine
  numasim dmesg --machine xeon-4s --set kernel.version=5.4   the boot hash lines that kernel prints
  dmesg > boot.txt; numasim bootlog boot.txt                  check the model against your own boot

Exit status: 0 success, 2 bad input (the message names the file and key), 1 internal error,
130 probe interrupted (Ctrl-C).
Docs: README.md, docs/*.md.";

#[derive(Parser)]
#[command(name = "numasim", version, about = "Simulate large NUMA machines and the Linux mechanisms that make them scale", after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    /// Tables shaped like the papers', with published values and deviation.
    Table,
    /// One JSON record per line (the stable contract for tools).
    Jsonl,
    /// One CSV row per record.
    Csv,
}

#[derive(Args)]
struct Output {
    /// How to print the records.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Also write NAME.jsonl, NAME.csv, NAME.txt, NAME-view-N.csv (one per [[view]]) and SVG plots (per node, or against CPU counts) into DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file (your own machine, kernel knobs and workload).
    #[command(
        after_help = "Example:\n  numasim run examples/epyc-touch.toml --set kernel.hashdist=1 --set machine.nodes=16"
    )]
    Run {
        /// The scenario TOML (see README: 'The scenario format').
        file: PathBuf,
        /// Override a key: machine.*, kernel.*, seed or a [[run]] step key, e.g. --set kernel.hashdist=0 (wins over [[case]]; recorded in every record's case).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        #[command(flatten)]
        output: Output,
        /// Also write DIR/index.html: one self-contained page with the plots, the published values marked by role, and the deviation.
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
        /// With --report: leave out the wall-clock run time, so the page is byte-identical run to run.
        #[arg(long, requires = "report")]
        no_timing: bool,
    },
    /// Run a scenario at every combination of --grid values (cartesian, in parallel); every record carries its grid values.
    #[command(after_help = "\
Examples:
  numasim sweep examples/epyc-touch.toml --grid kernel.hashdist=0,1 --grid machine.nodes=2,4,8
  numasim sweep my.toml --grid threads=1,4,16 --set kernel.version=6.8 --format jsonl > out.jsonl

Combinations run in the order Python's numasim.sweep runs them (the last --grid varies fastest),
and the records are the same, with each grid key (and each --set) in the record's case.
Keys are those --set takes: machine.*, kernel.*, seed, or a [[run]] step key. At most 100000
combinations.")]
    Sweep {
        /// The scenario TOML.
        file: PathBuf,
        /// KEY=V1,V2,…: the values of one key (repeat for more keys; each value read as --set reads it).
        #[arg(long = "grid", value_name = "KEY=V1,V2,…", required = true)]
        grid: Vec<String>,
        /// Override a key in every combination, as for `run` (a --grid of the same key wins).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        #[command(flatten)]
        output: Output,
    },
    /// Write one HTML page of experiments beside their papers (plots, deviation, machine, knobs).
    #[command(
        after_help = "Examples:\n  numasim report --all --out report/            every experiment; open report/index.html\n  numasim report bgp-bigmem-stream altix-toss --out r/\n\nThe page is self-contained (inline SVG and CSS, no script, no network) and works from file://."
    )]
    Report {
        /// Experiment ids (see `numasim replay --list`).
        #[arg(required_unless_present = "all")]
        ids: Vec<String>,
        /// Every experiment.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
        /// The folder to write index.html into (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Leave out the wall-clock run times, so the page is byte-identical run to run.
        #[arg(long)]
        no_timing: bool,
        /// Override a key, as for `run` (the published values of changed cases are shown, not compared).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
    /// Replay a published experiment beside the paper's figures.
    #[command(after_help = "Experiments: see `numasim replay --list`.")]
    Replay {
        /// The experiment id (e.g. hashdist-boot).
        #[arg(required_unless_present_any = ["all", "list"])]
        id: Option<String>,
        /// Run every experiment, then summarise the deviation from the papers.
        #[arg(long, conflicts_with = "id")]
        all: bool,
        /// List the experiments and exit.
        #[arg(long)]
        list: bool,
        /// Override a key, as for `run`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Exit 1 when a calibration or validation row lies outside its
        /// tolerance (the table or JSONL is printed in full first).
        #[arg(long)]
        strict: bool,
        /// Print only the summary (the deviation from the papers by role, and the totals), not the records.
        #[arg(long)]
        summary: bool,
        #[command(flatten)]
        output: Output,
    },
    /// List the built-in machines, print one as TOML, check a machine file, or import a real one.
    #[command(
        after_help = "Examples:\n  numasim machines                    the built-in machines\n  numasim machines altix-512          one preset as TOML\n  numasim machines ./my-machine.toml  check a machine file; print it back with every default filled in"
    )]
    Machines {
        /// A preset to print as TOML, or a machine file (a path) to check and print.
        name: Option<String>,
        /// With NAME: also write the topology (packages, nodes, memory, CPUs) as an SVG picture to FILE.
        #[arg(long, value_name = "FILE", requires = "name")]
        svg: Option<PathBuf>,
        #[command(subcommand)]
        import: Option<MachinesCmd>,
    },
    /// The workloads a [[run]] step can name: keys (type, unit, default, range), metrics, an example.
    #[command(
        after_help = "Examples:\n  numasim workloads              every workload, one line each\n  numasim workloads touch        the keys, metrics and an example step of `touch`\n  numasim workloads --markdown   the reference docs/scenario.md holds"
    )]
    Workloads {
        /// A workload to describe in full.
        name: Option<String>,
        /// Print the reference as Markdown (the generated part of docs/scenario.md).
        #[arg(long, conflicts_with = "name")]
        markdown: bool,
    },
    /// The `[kernel]` knobs, by subsystem: allowed values, default by release and arch, what each does.
    #[command(
        after_help = "Examples:\n  numasim knobs                  every knob, one line each\n  numasim knobs dirty_ratio      one knob in full\n  numasim knobs --markdown       the reference docs/knobs.md holds\n\nSet a knob in a scenario's [kernel] table, or on the command line: --set kernel.dirty_ratio=20"
    )]
    Knobs {
        /// A knob to describe in full.
        name: Option<String>,
        /// Print the reference as Markdown (the generated part of docs/knobs.md).
        #[arg(long, conflicts_with = "name")]
        markdown: bool,
    },
    /// Print the boot-time hash table lines a kernel of `kernel.version` prints on a machine.
    #[command(after_help = "\
The lines are the kernel's own (alloc_large_system_hash(), tcp_init()) for the release
`kernel.version` names: 2.6.9 (the default, the papers' era), 2.6.32, 3.10, 4.15, 5.4, 6.8.
Boot parameters away from that release's defaults appear on the `Kernel command line`.

Examples:
  numasim dmesg --machine xeon-4s --set kernel.version=6.8
  numasim dmesg hashdist-boot --case 2          an experiment's second case
  numasim dmesg my.toml --set kernel.version=5.4 --set kernel.thash_entries=2097152
  numasim dmesg --machine epyc-2s-nps4 --set kernel.version=6.8 | numasim bootlog -")]
    Dmesg {
        /// A scenario file or an experiment id (its machine and [kernel] table are used).
        #[arg(required_unless_present = "machine")]
        scenario: Option<String>,
        /// A built-in machine or a machine file, instead of a scenario.
        #[arg(long, conflicts_with = "scenario")]
        machine: Option<String>,
        /// Which of the scenario's cases, from 1.
        #[arg(long, default_value_t = 1)]
        case: usize,
        /// Override a key, as for `run` (e.g. kernel.version=5.4, kernel.hashdist=0).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
    /// Read a real boot log (`dmesg`, `journalctl -k`) and set every hash-table line beside numasim's prediction.
    #[command(after_help = "\
From the log: the release (`Linux version`; vendor kernels such as el7, lp151 or -generic map to the
upstream release they are built from, with the backports that change the tables), the architecture
(release suffix, else lines only some architectures print; 32/64-bit from the dentry buckets), the
page size (from the table lines: ilog2(bytes) - order), memory as the kernel counts it (the zonelist
\"Total pages\", zone lines, node ranges, \"On node N totalpages\", else `Memory:`), CPUs, nodes, and
hashdist=/*hash_entries= from the command line.

Output: one line per table the log prints, real and predicted entries, order, bytes and kind side
by side, with the fields that differ. Exit status: 0 when every table line matched whole, 3 when
some line differs or could not be predicted (the notes say which fact the log lacks), 2 for input
numasim refuses (naming the file and line), such as a log over 64 MiB.

Examples:
  dmesg > boot.txt && numasim bootlog boot.txt
  journalctl -k -b | numasim bootlog -
  numasim bootlog boot.txt --format jsonl
  numasim bootlog old.txt --kernel-version 2.6.32 --arch x86_64   where the log is cut short")]
    Bootlog {
        /// The log file ('-' for stdin).
        file: PathBuf,
        /// The kernel release, where the log has no `Linux version` line.
        #[arg(long, value_name = "RELEASE")]
        kernel_version: Option<String>,
        /// The architecture, where the log does not show it (x86_64, i386, arm64, arm, ppc64le, ppc64, ia64).
        #[arg(long)]
        arch: Option<String>,
        /// table (default) or jsonl (one JSON object per table, then notes and a summary).
        #[arg(long, default_value = "table")]
        format: String,
    },
    /// Measure this host with the papers' micro-benchmarks; --out writes it as a machine.
    #[command(
        after_help = "Example:\n  numasim probe --quick --out host.toml\n  then: [machine] preset = \"host.toml\" in a scenario. See docs/probe.md."
    )]
    Probe {
        #[command(flatten)]
        args: numasim_probe::ProbeArgs,
        /// How to print the records.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
}

#[derive(Subcommand)]
enum MachinesCmd {
    /// Turn a real machine's description into a machine TOML (printed).
    Import {
        /// A /sys/devices/system/node directory (or a copy of one).
        #[arg(long, group = "source")]
        sysfs: Option<PathBuf>,
        /// With --sysfs: a /proc/meminfo to cross-check node memory with
        /// (default: /proc/meminfo when --sysfs is the live tree).
        #[arg(long, requires = "sysfs")]
        meminfo: Option<PathBuf>,
        /// A file holding `numactl --hardware` output ('-' for stdin).
        #[arg(long, group = "source")]
        numactl: Option<PathBuf>,
        /// An hwloc v2 XML file (`lstopo --of xml`).
        #[arg(long, group = "source")]
        hwloc: Option<PathBuf>,
        /// Name for the machine.
        #[arg(long)]
        name: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("numasim: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn parse_sets(sets: &[String]) -> Result<Vec<(String, toml::Value)>, Error> {
    sweep::parse_sets(sets)
}

fn dispatch(cmd: Command) -> Result<(), Error> {
    match cmd {
        Command::Run {
            file,
            sets,
            output,
            report,
            no_timing,
        } => {
            let sets = parse_sets(&sets)?;
            let sc = Scenario::from_file_with_sets(&file, &sets)?;
            let mut run = run_and_print_all(&sc, &sets, &output, true, report.is_some())?;
            if no_timing {
                run.run_ms = None;
            }
            if let Some(dir) = report {
                write_report(&dir, &format!("numasim: {}", sc.name), &[(&sc, run)])?;
            }
            Ok(())
        }
        Command::Sweep {
            file,
            grid,
            sets,
            output,
        } => run_sweep(&file, &grid, &sets, &output),
        Command::Report {
            ids,
            all,
            out,
            no_timing,
            sets,
        } => report(&ids, all, &out, no_timing, &parse_sets(&sets)?),
        Command::Replay {
            id,
            all,
            list,
            sets,
            strict,
            summary,
            output,
        } => {
            if list {
                for (id, _) in EXPERIMENTS {
                    let sc = experiments::load(id)?;
                    println!("{id:<24} {}", sc.description);
                }
                return Ok(());
            }
            let sets = parse_sets(&sets)?;
            let summaries = if all {
                replay_all(&sets, &output, summary)?
            } else {
                let sc = experiments::load(id.as_deref().unwrap_or_default())?;
                let records = if summary {
                    run::run(&sc, &sets)?
                } else {
                    run_and_print(&sc, &sets, &output, true)?
                };
                let summary = Summary::of(&sc.name, &records, &sc.papers).with_fits(&sc.fits);
                print_summary(&summary, output.format);
                vec![summary]
            };
            if strict {
                strict_verdict(&summaries);
            }
            Ok(())
        }
        Command::Machines { name, svg, import } => machines(name, svg, import),
        Command::Workloads { name, markdown } => workloads(name, markdown),
        Command::Knobs { name, markdown } => knobs(name, markdown),
        Command::Probe { args, format } => probe(&args, format),
        Command::Dmesg {
            scenario,
            machine,
            case,
            sets,
        } => dmesg(&DmesgConfig::from_args(scenario, machine, case, &sets)?),
        Command::Bootlog {
            file,
            kernel_version,
            arch,
            format,
        } => bootlog(&file, kernel_version, arch, &format),
    }
}

fn run_and_print(
    sc: &Scenario,
    sets: &[(String, toml::Value)],
    out: &Output,
    header: bool,
) -> Result<Vec<Record>, Error> {
    run_and_print_all(sc, sets, out, header, false).map(|r| r.records)
}

/// A scenario's run, as the report needs it.
struct Ran {
    records: Vec<Record>,
    artifacts: Vec<numasim::report::Artifact>,
    /// Wall-clock milliseconds of the simulation alone.
    run_ms: Option<f64>,
}

/// [`run_and_print`], keeping the run's files when `files` (for a report).
fn run_and_print_all(
    sc: &Scenario,
    sets: &[(String, toml::Value)],
    out: &Output,
    header: bool,
    files: bool,
) -> Result<Ran, Error> {
    let t0 = Instant::now();
    // A bar over cases on a terminal (indicatif draws nothing when stderr is
    // not one); only for scenarios long enough to need it.
    let bar = indicatif::ProgressBar::new(sc.cases.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} cases, {elapsed} elapsed, ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let (records, artifacts) =
        run::run_with_artifacts(sc, sets, out.out.is_some() || files, &|| bar.inc(1))?;
    bar.finish_and_clear();
    let elapsed = t0.elapsed();
    // Every --set goes into the printed records' case (the one that ran),
    // so JSONL from a `--set` run says which value produced it; the
    // unmarked records serve the summary and the warnings.
    let mut keys = sc.varied_keys();
    let marked;
    let shown: &[Record] = if sets.is_empty() {
        &records
    } else {
        let mut m = records.clone();
        sweep::mark(&mut m, sets);
        marked = m;
        for (k, _) in sets {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        &marked
    };
    let text = match out.format {
        Format::Table => {
            let mut s = String::new();
            if header {
                // No dangling "— " when the scenario has no description.
                match sc.description.trim() {
                    "" => s.push_str(&format!("== {}\n", sc.name)),
                    d => s.push_str(&format!("== {} — {d}\n", sc.name)),
                }
            }
            // The scenario's [[view]] pivots follow the per-case tables.
            s + &table::render(shown, &keys) + &view::render_all(&sc.views, &records)
        }
        Format::Jsonl => shown.iter().map(|r| r.to_json_line() + "\n").collect(),
        Format::Csv => csv::to_csv(shown),
    };
    print!("{text}");
    if let Some(dir) = &out.out {
        let files = numasim::report::out::run_files(&sc.describe(), shown, &keys, &artifacts)?;
        let written = out::OutDir::new(dir).write_all(&files)?;
        // Say what --out wrote, so the user need not list the folder.
        let names: Vec<String> = written
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        eprintln!(
            "numasim: wrote {} files to {}: {}",
            names.len(),
            dir.display(),
            names.join(", ")
        );
    }
    eprintln!(
        "numasim: {} — {} records in {:.1} ms",
        sc.name,
        records.len(),
        elapsed.as_secs_f64() * 1e3
    );
    // Metrics are checked at load time; a row can still miss when a --set
    // changed the case keys it names.
    for w in run::incomplete_runs(&records)
        .into_iter()
        .chain(run::windowed_runs(&records))
    {
        eprintln!("numasim: warning: {w}");
    }
    warn_unmatched(sc, sets, &records);
    for w in run::default_warnings(sc, sets) {
        if first_time_shown(&w) {
            eprintln!("numasim: warning: {w}");
        }
    }
    Ok(Ran {
        records,
        artifacts,
        run_ms: Some(elapsed.as_secs_f64() * 1e3),
    })
}

/// Whether a default warning is new to this process. `replay --all` runs
/// several experiments on one built-in machine; what a machine leaves to
/// defaults is said once (the text from "on machine", so the same cause
/// under another workload's name is not said again).
fn first_time_shown(w: &str) -> bool {
    static SHOWN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let key = w.find("on machine ").map_or(w, |i| &w[i..]).to_string();
    let mut shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner());
    if shown.contains(&key) {
        return false;
    }
    shown.push(key);
    true
}

/// Warn of [[paper]] rows no record matched (a typo, or a --set that moved the case).
fn warn_unmatched(sc: &Scenario, sets: &[(String, toml::Value)], records: &[Record]) {
    for p in run::unmatched_papers(records, &sc.papers) {
        let case: Vec<String> = p
            .case
            .iter()
            .map(|(k, v)| format!("{k} = {}", numasim::report::table::fmt_json(v)))
            .collect();
        eprintln!(
            "numasim: warning: {}: [[paper]] {} at {{ {} }} matches no record{}",
            sc.source,
            p.metric,
            case.join(", "),
            if sets.is_empty() {
                " (no case has those keys and values)"
            } else {
                " (a --set changed the keys it names)"
            }
        );
    }
}

/// `numasim report`: run each experiment (quietly), then write one page.
/// `numasim sweep`: check the grid and the scenario under its first
/// combination, then run every combination and print the records.
fn run_sweep(file: &Path, grid: &[String], sets: &[String], out: &Output) -> Result<(), Error> {
    let base = parse_sets(sets)?;
    let grid = sweep::parse_grid(grid)?;
    let total = sweep::count(&grid)?;
    let points = sweep::points(&grid);
    let mut first: Vec<(String, toml::Value)> = base
        .iter()
        .filter(|(k, _)| !grid.iter().any(|(g, _)| g == k))
        .cloned()
        .collect();
    first.extend(points[0].iter().cloned());
    let sc = Scenario::from_file_with_sets(file, &first)?;
    let t0 = Instant::now();
    let records = sweep::run_grid(&sc, &base, &points)?;
    let elapsed = t0.elapsed();
    let mut keys = sc.varied_keys();
    for k in base
        .iter()
        .map(|(k, _)| k)
        .chain(grid.iter().map(|(k, _)| k))
    {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    let text = match out.format {
        Format::Table => {
            let grid_text: Vec<String> = grid
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{k} ∈ {{{}}}",
                        v.iter()
                            .map(|x| x.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
                .collect();
            format!("== {} — sweep over {}\n", sc.name, grid_text.join(", "))
                + &table::render(&records, &keys)
        }
        Format::Jsonl => records.iter().map(|r| r.to_json_line() + "\n").collect(),
        Format::Csv => csv::to_csv(&records),
    };
    print!("{text}");
    if let Some(dir) = &out.out {
        let files = numasim::report::out::run_files(&sc.describe(), &records, &keys, &[])?;
        let written = out::OutDir::new(dir).write_all(&files)?;
        eprintln!(
            "numasim: wrote {} files to {}",
            written.len(),
            dir.display()
        );
    }
    eprintln!(
        "numasim: {} — {total} combinations × {} cases, {} records in {:.1} ms",
        sc.name,
        sc.cases.len(),
        records.len(),
        elapsed.as_secs_f64() * 1e3
    );
    for w in run::incomplete_runs(&records)
        .into_iter()
        .chain(run::windowed_runs(&records))
    {
        eprintln!("numasim: warning: {w}");
    }
    Ok(())
}

fn report(
    ids: &[String],
    all: bool,
    dir: &Path,
    no_timing: bool,
    sets: &[(String, toml::Value)],
) -> Result<(), Error> {
    let ids: Vec<&str> = if all {
        EXPERIMENTS.iter().map(|(id, _)| *id).collect()
    } else {
        ids.iter().map(String::as_str).collect()
    };
    // Every id is checked before anything runs.
    let scs: Vec<Scenario> = ids
        .iter()
        .map(|id| experiments::load(id))
        .collect::<Result<_, _>>()?;
    let t0 = Instant::now();
    let mut runs = Vec::new();
    for sc in &scs {
        let t = Instant::now();
        let (records, artifacts) = run::run_with_artifacts(sc, sets, true, &|| {})?;
        let run_ms = t.elapsed().as_secs_f64() * 1e3;
        for w in run::incomplete_runs(&records)
            .into_iter()
            .chain(run::windowed_runs(&records))
        {
            eprintln!("numasim: warning: {w}");
        }
        warn_unmatched(sc, sets, &records);
        eprintln!(
            "numasim: {} — {} records in {run_ms:.1} ms",
            sc.name,
            records.len()
        );
        runs.push(Ran {
            records,
            artifacts,
            run_ms: (!no_timing).then_some(run_ms),
        });
    }
    let simulated = t0.elapsed();
    let title = if all {
        "numasim: every experiment beside its paper".to_string()
    } else {
        format!("numasim: {}", ids.join(", "))
    };
    let pairs: Vec<(&Scenario, Ran)> = scs.iter().zip(runs).collect();
    let t1 = Instant::now();
    write_report(dir, &title, &pairs)?;
    eprintln!(
        "numasim: {} experiments simulated in {:.2} s; the report took {:.0} ms more",
        scs.len(),
        simulated.as_secs_f64(),
        t1.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// Write DIR/index.html for these runs and say where it is.
fn write_report(dir: &Path, title: &str, runs: &[(&Scenario, Ran)]) -> Result<(), Error> {
    use numasim::report::html;
    std::fs::create_dir_all(dir)
        .map_err(|e| InputError::new(format!("cannot create {}: {e}", dir.display())))?;
    let descs: Vec<_> = runs.iter().map(|(sc, _)| sc.describe()).collect();
    let entries: Vec<html::Entry> = runs
        .iter()
        .zip(&descs)
        .map(|((sc, r), run)| html::Entry {
            run,
            records: &r.records,
            artifacts: &r.artifacts,
            run_ms: r.run_ms,
            doc_href: sc.report.doc.as_deref().and_then(|d| out::doc_href(dir, d)),
        })
        .collect();
    let page = html::page(title, &entries);
    let path = out::OutDir::new(dir).write_one("index.html", &page)?;
    eprintln!(
        "numasim: wrote {} ({} kB); open it in a browser",
        path.display(),
        page.len() / 1024
    );
    Ok(())
}

/// An experiment's summary after its records: the role lines under the
/// table, or one `"summary"` object in JSONL (CSV has no place for it).
fn print_summary(summary: &Summary, format: Format) {
    match format {
        Format::Table => println!("{summary}"),
        Format::Jsonl => println!("{}", summary.to_json_line()),
        Format::Csv => {}
    }
}

/// `replay --strict`: exit 1, naming the experiments and roles, when any
/// calibration or validation row lies outside its tolerance.
fn strict_verdict(summaries: &[Summary]) {
    let failed = Totals::of(summaries).failed;
    if failed.is_empty() {
        return;
    }
    let list: Vec<String> = failed.iter().map(|(e, r)| format!("{e} ({r})")).collect();
    eprintln!(
        "numasim: --strict: rows outside their tolerance in {}",
        list.join(", ")
    );
    std::process::exit(1);
}

/// `replay --all`: every experiment's records (unless `summary_only`),
/// then the summary by role and the totals.
fn replay_all(
    sets: &[(String, toml::Value)],
    out: &Output,
    summary_only: bool,
) -> Result<Vec<Summary>, Error> {
    let bar = indicatif::ProgressBar::new(EXPERIMENTS.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} {msg}, {elapsed} elapsed, ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let t0 = Instant::now();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut summaries = Vec::new();
    for (id, _) in EXPERIMENTS {
        bar.set_message(id.to_string());
        let sc = experiments::load(id)?;
        let records = if summary_only {
            run::run(&sc, sets)?
        } else {
            bar.suspend(|| run_and_print(&sc, sets, out, true))?
        };
        let summary = Summary::of(&sc.name, &records, &sc.papers).with_fits(&sc.fits);
        if out.format == Format::Jsonl {
            bar.suspend(|| print_summary(&summary, out.format));
        }
        summaries.push(summary);
        bar.inc(1);
        // indicatif draws nothing when stderr is not a terminal (a CI log,
        // nohup): there, one line per finished experiment with an estimate.
        if !tty {
            let done = summaries.len();
            let spent = t0.elapsed().as_secs_f64();
            let left = spent / done as f64 * (EXPERIMENTS.len() - done) as f64;
            eprintln!(
                "numasim: [{done}/{}] {id} done; {spent:.1} s elapsed, about {left:.0} s left",
                EXPERIMENTS.len()
            );
        }
    }
    bar.finish_and_clear();
    if out.format == Format::Table {
        println!("\n== Summary: simulated vs published, by role");
        for s in &summaries {
            println!("{s}");
        }
        println!("\n{}", Totals::of(&summaries));
    }
    // Wall-clock time goes to stderr: stdout is byte-identical run to run.
    eprintln!(
        "numasim: {} experiments in {:.2} s",
        summaries.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(summaries)
}

fn machines(
    name: Option<String>,
    svg: Option<PathBuf>,
    cmd: Option<MachinesCmd>,
) -> Result<(), Error> {
    if let Some(MachinesCmd::Import {
        sysfs,
        meminfo,
        numactl,
        hwloc,
        name,
    }) = cmd
    {
        // Every source is read with a bound ('-' is stdin): /dev/zero or an
        // endless pipe is refused, naming it, after at most that many bytes.
        let read = |p: &Path, max: u64, what: &str| -> Result<String, Error> {
            Ok(input::read_bounded_text(p, max, what)?)
        };
        let mut m: Machine = match (sysfs, numactl, hwloc) {
            (Some(d), _, _) => {
                // The live tree is checked against the live /proc/meminfo.
                let live = std::fs::canonicalize(&d)
                    .is_ok_and(|c| c == Path::new("/sys/devices/system/node"));
                let meminfo = meminfo.or_else(|| live.then(|| PathBuf::from("/proc/meminfo")));
                let text = match &meminfo {
                    Some(p) => Some(read(p, input::MAX_SYSFS_FILE_BYTES, "/proc/meminfo")?),
                    None => None,
                };
                let from = meminfo.as_ref().map(|p| p.display().to_string());
                let (m, notes) =
                    import::from_sysfs_checked(&d, text.as_deref().zip(from.as_deref()))?;
                for n in notes {
                    eprintln!("numasim: {n}");
                }
                m
            }
            (_, Some(f), _) => import::from_numactl(
                &read(&f, input::MAX_INPUT_BYTES, "numactl --hardware output")?,
                &f.display().to_string(),
            )?,
            (_, _, Some(f)) => import::from_hwloc_xml(
                &read(&f, input::MAX_INPUT_BYTES, "hwloc XML")?,
                &f.display().to_string(),
            )?,
            _ => {
                return Err(InputError::new(
                    "machines import: give --sysfs DIR, --numactl FILE or --hwloc FILE",
                )
                .into())
            }
        };
        if let Some(n) = name {
            m.name = n;
        }
        print!("{}", m.to_toml_string());
        return Ok(());
    }
    match name {
        // A path (a separator, a .toml suffix, or an existing file) is a
        // machine file to check; anything else names a preset.
        Some(n) if n.contains('/') || n.ends_with(".toml") || Path::new(&n).is_file() => {
            let text =
                input::read_bounded_text(Path::new(&n), input::MAX_INPUT_BYTES, "a machine file")?;
            let m = Machine::from_toml_str(&text, &n)?;
            print!("{}", m.to_toml_string());
            // Name every value the file left to a default: a default
            // chosen for an older machine may decide a result on this one.
            if let Ok(t) = numasim::machine::slit_text::parse_toml(&text) {
                let (era, why) = numasim::machine::defaults::era_of(&t);
                let d = numasim::machine::defaults::defaulted_keys(&t, &m);
                if !d.is_empty() {
                    eprintln!(
                        "numasim: {n}: era {} ({why}); {} values are numasim's defaults, not the file's:",
                        era.name(),
                        d.len(),
                    );
                    for (k, v, src) in &d {
                        eprintln!("numasim:   {k} = {v}  [{src}]");
                    }
                }
            }
            eprintln!(
                "numasim: {n}: a valid machine `{}`: {} nodes, {} CPUs, {}",
                m.name,
                m.node_count(),
                m.cpu_count(),
                numasim::input::size::mem_label(m.mem_bytes())
            );
            // The distances as the kernel will see them (stderr: stdout
            // stays the machine TOML, to redirect into a file).
            eprintln!("{}", topology::matrix_text(&m).trim_end());
            write_topology_svg(svg.as_deref(), &m)?;
        }
        Some(n) => {
            // With the era its defaults come from, as a file's is written back.
            let era = presets::preset(&n)?.era;
            print!(
                "{}",
                numasim::machine::defaults::state_era(presets::preset_text(&n)?, era)
            );
            if svg.is_some() {
                write_topology_svg(svg.as_deref(), &presets::preset(&n)?)?;
            }
        }
        None => {
            println!(
                "{:<20} {:>6} {:>6} {:>10}  description",
                "name", "nodes", "cpus", "memory"
            );
            for (n, _) in presets::PRESETS {
                let m = presets::preset(n)?;
                println!(
                    "{n:<20} {:>6} {:>6} {:>10}  {}",
                    m.node_count(),
                    m.cpu_count(),
                    numasim::input::size::mem_label(m.mem_bytes()),
                    m.description
                );
            }
        }
    }
    Ok(())
}

/// `machines NAME --svg FILE`: the topology picture, and where it went.
fn write_topology_svg(path: Option<&Path>, m: &Machine) -> Result<(), Error> {
    let Some(p) = path else {
        return Ok(());
    };
    std::fs::write(p, topology::svg(m))
        .map_err(|e| InputError::new(format!("cannot write {}: {e}", p.display())))?;
    eprintln!(
        "numasim: wrote {} (the topology of `{}`)",
        p.display(),
        m.name
    );
    Ok(())
}

fn workloads(name: Option<String>, markdown: bool) -> Result<(), Error> {
    use numasim::workload::spec;
    if markdown {
        print!("{}", numasim::workload::reference_markdown());
        return Ok(());
    }
    match name {
        Some(n) => {
            let s = numasim::workload::find(&n).ok_or_else(|| {
                let hint = numasim::input::table::nearest(
                    &n,
                    numasim::workload::WORKLOADS.iter().map(|s| s.name),
                )
                .map(|x| format!(" Did you mean `{x}`?"))
                .unwrap_or_default();
                let all: Vec<&str> = numasim::workload::WORKLOADS
                    .iter()
                    .map(|s| s.name)
                    .collect();
                InputError::new(format!(
                    "no workload `{n}`.{hint} Workloads: {}.",
                    all.join(", ")
                ))
            })?;
            print!("{}", spec::text(s));
        }
        None => {
            for s in numasim::workload::WORKLOADS {
                println!("{:<18} {}", s.name, s.about);
            }
            println!("\n`numasim workloads NAME` shows a workload's keys, metrics and an example step; docs/scenario.md has them all.");
        }
    }
    Ok(())
}

fn knobs(name: Option<String>, markdown: bool) -> Result<(), Error> {
    let all = numasim::kernel::config::knob_docs();
    if markdown {
        print!("{}", numasim::kernel::knobs::markdown(&all));
        return Ok(());
    }
    // Markdown's escaped bars read as plain bars in a terminal.
    let plain = |s: &str| s.replace("\\|", "|").replace('`', "");
    match name {
        Some(n) => {
            let k = all.iter().find(|k| k.name == n).ok_or_else(|| {
                let hint = numasim::input::table::nearest(&n, all.iter().map(|k| k.name))
                    .map(|x| format!(" Did you mean `{x}`?"))
                    .unwrap_or_default();
                InputError::new(format!(
                    "no knob `{}`.{hint} `numasim knobs` lists them all.",
                    numasim::error::clip(&n, 80)
                ))
            })?;
            println!("kernel.{}  ({})", k.name, k.subsystem);
            println!("  {}", plain(k.doc));
            println!("  allowed: {}", plain(&k.allowed));
            println!("  default: {}", plain(k.default));
        }
        None => {
            let mut last = "";
            for k in &all {
                if k.subsystem != last {
                    println!(
                        "{}{}:",
                        if last.is_empty() { "" } else { "\n" },
                        k.subsystem
                    );
                    last = k.subsystem;
                }
                println!("  {:<28} {}", k.name, plain(k.doc));
            }
            println!("\n`numasim knobs NAME` shows a knob's allowed values and default; docs/knobs.md has them all.");
        }
    }
    Ok(())
}

fn probe(args: &numasim_probe::ProbeArgs, format: Format) -> Result<(), Error> {
    let report = numasim_probe::run(args).map_err(|e| match e {
        // Ctrl-C (or SIGTERM) is the user's choice, not a bug: a plain
        // message and the shell's status for an interrupt, 128 + SIGINT.
        numasim_probe::ProbeError::Interrupted => {
            eprintln!("numasim: {e}");
            std::process::exit(130);
        }
        e if e.is_bad_input() => Error::Input(InputError::new(format!("probe: {e}"))),
        e => Error::Internal(format!("probe: {e}")),
    })?;
    let text = match format {
        Format::Table => table::render_labelled(&report.records, &[], "measured"),
        Format::Jsonl => report
            .records
            .iter()
            .map(|r| r.to_json_line() + "\n")
            .collect(),
        Format::Csv => csv::to_csv(&report.records),
    };
    print!("{text}");
    for n in &report.notes {
        eprintln!("note: {n}");
    }
    if let Some(out) = &args.out {
        eprintln!(
            "numasim: wrote {} (use it as [machine] preset = \"{}\")",
            out.display(),
            out.display()
        );
    }
    eprintln!(
        "numasim: probe — {} records in {:.1} s",
        report.records.len(),
        report.elapsed.as_secs_f64()
    );
    Ok(())
}

/// `numasim dmesg`, validated: the scenario and which of its cases to boot.
struct DmesgConfig {
    scenario: numasim::scenario::Scenario,
    case: usize,
    sets: Vec<(String, toml::Value)>,
}

impl DmesgConfig {
    fn from_args(
        scenario: Option<String>,
        machine: Option<String>,
        case: usize,
        sets: &[String],
    ) -> Result<DmesgConfig, Error> {
        let sc = match (scenario, machine) {
            (_, Some(m)) => {
                // A machine alone: a scenario that only names it.
                let key = if m.contains('/') || m.ends_with(".toml") || Path::new(&m).is_file() {
                    "file"
                } else {
                    "preset"
                };
                let m = m.replace('\\', "\\\\").replace('"', "\\\"");
                Scenario::from_str(
                    &format!("name = \"dmesg\"\n[machine]\n{key} = \"{m}\"\n[[run]]\nworkload = \"boot\"\n"),
                    "--machine",
                    std::env::current_dir().ok(),
                )?
            }
            (Some(s), None) if Path::new(&s).is_file() || s.ends_with(".toml") => {
                Scenario::from_file(Path::new(&s))?
            }
            (Some(s), None) => experiments::load(&s)?,
            (None, None) => {
                return Err(InputError::new(
                    "dmesg: give a scenario, an experiment id or --machine NAME",
                )
                .into())
            }
        };
        if case == 0 || case > sc.cases.len() {
            return Err(InputError::new(format!(
                "dmesg --case {case}: {} has {} case(s); allowed 1..={}",
                sc.source,
                sc.cases.len(),
                sc.cases.len()
            ))
            .into());
        }
        Ok(DmesgConfig {
            scenario: sc,
            case: case - 1,
            sets: parse_sets(sets)?,
        })
    }
}

fn dmesg(c: &DmesgConfig) -> Result<(), Error> {
    let rc = c.scenario.resolve(c.case, &c.sets)?;
    // A machine too small to boot is the scenario's (or --machine's) to fix.
    let booted = numasim::kernel::boot::boot(&rc.machine, &rc.kernel, rc.seed)
        .map_err(|e| e.in_file(&c.scenario.source))?;
    print!(
        "{}",
        numasim::bootlog::render(&rc.machine, &rc.kernel, &booted)
    );
    Ok(())
}

fn bootlog(
    file: &Path,
    version: Option<String>,
    arch: Option<String>,
    format: &str,
) -> Result<(), Error> {
    if !matches!(format, "table" | "jsonl") {
        return Err(
            InputError::new(format!("bootlog --format {format}: allowed table, jsonl")).into(),
        );
    }
    let arch = match arch {
        None => None,
        Some(a) => Some(
            numasim::machine::Arch::NAMES
                .iter()
                .find(|(n, _)| *n == a)
                .map(|(_, x)| *x)
                .ok_or_else(|| {
                    let all: Vec<&str> = numasim::machine::Arch::NAMES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect();
                    InputError::new(format!("bootlog --arch {a}: allowed {}", all.join(", ")))
                })?,
        ),
    };
    if let Some(v) = &version {
        if numasim::kernel::release::Release::parse(v).is_none() {
            return Err(InputError::new(format!(
                "bootlog --kernel-version {v}: expected a release such as 5.4, 3.10.0-957.el7 or 2.6.32"
            ))
            .into());
        }
    }
    let name = file.display().to_string();
    let text = if file == Path::new("-") {
        numasim::bootlog::read_log(std::io::stdin().lock(), "stdin")?
    } else {
        let f = std::fs::File::open(file)
            .map_err(|e| InputError::new(format!("cannot read {name}: {e}")))?;
        numasim::bootlog::read_log(f, &name)?
    };
    let facts = numasim::bootlog::parse_log_named(&name, &text);
    let given = numasim::bootlog::Given { version, arch };
    let check = numasim::bootlog::check(&facts, &given)?;
    if format == "jsonl" {
        print!("{}", numasim::bootlog::render_check_jsonl(&check));
    } else {
        print!("{}", numasim::bootlog::render_check(&check));
    }
    if !check.all_matched() {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        std::process::exit(3);
    }
    Ok(())
}
