//! The memory-system workloads (issue 29): bad input names the key and
//! what is allowed; interleave's gain and loss show in STREAM records; a
//! machine without `[memsys]` keeps the SLIT rule.

use numasim::scenario::{run, Scenario};

fn scenario(text: &str) -> Result<Scenario, numasim::error::InputError> {
    Scenario::from_str(text, "t.toml", None)
}

fn values(text: &str, metric: &str) -> Vec<f64> {
    let sc = scenario(text).unwrap();
    run::run(&sc, &[])
        .unwrap()
        .into_iter()
        .filter(|r| r.metric == metric)
        .map(|r| r.value.unwrap())
        .collect()
}

#[test]
fn bad_keys_are_named_with_what_is_allowed() {
    for (step, key, what) in [
        (
            "workload = \"stream\"\nthreads = 100000",
            "threads",
            "allowed 1..384",
        ),
        (
            "workload = \"stream\"\nop = [\"triad\", \"tri\"]",
            "op",
            "copy, scale, add, triad",
        ),
        (
            "workload = \"stream\"\npolicy = \"bind\"",
            "policy_nodes",
            "needs `policy_nodes`",
        ),
        (
            "workload = \"mlc-latency-matrix\"\nfrom_nodes = [9]",
            "from_nodes",
            "does not exist",
        ),
        (
            "workload = \"c2c-latency\"\ncpus = [0]",
            "cpus",
            "allowed 2..256",
        ),
        (
            "workload = \"mlc-loaded-latency\"\ninject_delay = 2000000",
            "inject_delay",
            "0..1000000",
        ),
    ] {
        let text =
            format!("name = \"t\"\n[machine]\npreset = \"epyc-9004-nps4\"\n[[run]]\n{step}\n");
        let e = scenario(&text).expect_err(step);
        let msg = e.to_string();
        assert!(msg.contains(key) && msg.contains(what), "{step}: {msg}");
    }
}

/// Interleave gains where the threads' own controllers bind (48 threads on
/// one node) and loses where latency binds (one thread).
#[test]
fn interleave_gains_where_bandwidth_binds_and_loses_where_latency_binds() {
    let run = |policy: &str| {
        values(
            &format!(
                "name = \"t\"\n[machine]\npreset = \"epyc-9004-nps4\"\n[[run]]\nworkload = \"stream\"\n\
                 nodes = [0]\nthreads = [1, 48]\nop = [\"triad\"]\npolicy = \"{policy}\"\n"
            ),
            "stream_mbps",
        )
    };
    let (local, inter) = (run("local"), run("interleave"));
    assert!(inter[0] < local[0], "one thread: {inter:?} vs {local:?}");
    assert!(
        inter[1] > 1.2 * local[1],
        "48 threads: {inter:?} vs {local:?}"
    );
}

/// Without `[memsys]` the latency matrix is dram.latency_ns × the SLIT ratio.
#[test]
fn without_memsys_the_matrix_is_the_slit_rule() {
    let v = values(
        "name = \"t\"\n[machine]\npreset = \"altix-512\"\n[[run]]\nworkload = \"mlc-latency-matrix\"\n\
         from_nodes = [0]\nto_nodes = [0, 1]\n",
        "idle_latency_ns",
    );
    let m = numasim::machine::presets::preset("altix-512").unwrap();
    assert_eq!(v, vec![m.mem_latency_ns(0, 0), m.mem_latency_ns(0, 1)]);
}

/// The SLIT says 32 across Genoa's sockets; the hop model does not scale
/// latency by 3.2.
#[test]
fn latency_is_not_the_slit_ratio_on_today_s_presets() {
    let v = values(
        "name = \"t\"\n[machine]\npreset = \"epyc-9004-nps1\"\n[[run]]\nworkload = \"mlc-latency-matrix\"\n\
         from_nodes = [0]\n",
        "idle_latency_ns",
    );
    let ratio = v[1] / v[0];
    assert!(ratio > 1.2 && ratio < 3.0, "{v:?}");
}
