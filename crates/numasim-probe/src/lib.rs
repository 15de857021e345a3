//! numasim-probe: measures the real host (stub until the probe lands).

#[derive(clap::Args, Debug, Clone)]
pub struct ProbeArgs {
    /// Finish within 60 s.
    #[arg(long)]
    pub quick: bool,
}
