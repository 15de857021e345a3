//! One scenario case made concrete, as the workloads run it. The scenario
//! resolves it (`Scenario::resolve`); it lives here, below the scenario,
//! because the workloads take it.

use crate::kernel::KernelConfig;
use crate::machine::Machine;
use serde_json::Value as Json;
use std::sync::Arc;
use toml::Table;

/// One case made concrete: the machine, the kernel and the steps to run.
#[derive(Debug, Clone)]
pub struct ResolvedCase {
    /// The case's varied keys, as they appear in records.
    pub keys: Vec<(String, Json)>,
    /// Shared with the scenario's other cases on the same machine.
    pub machine: Arc<Machine>,
    pub kernel: KernelConfig,
    pub seed: u64,
    /// The `[[run]]` tables as resolved (case keys applied): records read
    /// the values of step keys a case varies from them.
    pub steps: Vec<Table>,
    /// The same steps read once, on this case's machine: what runs.
    pub parsed: Vec<crate::workload::ParsedStep>,
}
