//! Run the probe without the `numasim` binary: `cargo run --release -p
//! numasim-probe --example probe -- --quick --out host.toml`. Records go to
//! stdout as JSON lines, notes to stderr.

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    probe: numasim_probe::ProbeArgs,
}

fn main() {
    let cli = Cli::parse();
    match numasim_probe::run(&cli.probe) {
        Ok(r) => {
            for rec in &r.records {
                println!("{}", rec.to_json_line());
            }
            for n in &r.notes {
                eprintln!("note: {n}");
            }
        }
        Err(e) => {
            eprintln!("numasim probe: {e}");
            std::process::exit(e.exit_code());
        }
    }
}
