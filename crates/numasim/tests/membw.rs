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

/// A write-allocate copy's ownership reads load the controllers as far as
/// `[hierarchy] rfo_cost` says (2 (rfo_cost - 1) of a line; 1.5, the
/// default, a whole read): a node's copy, where its controllers bind, runs
/// faster when the probe found them nearly free; a copy with non-temporal
/// stores (`write_allocate` off) reads no line for ownership either way.
#[test]
fn ownership_reads_load_the_controllers_as_rfo_cost_says() {
    let run = |extra: &str| {
        values(
            &format!(
                "name = \"t\"\n[machine]\npreset = \"epyc-9004-nps4\"\n{extra}[[run]]\nworkload = \"stream\"\n\
                 nodes = [0]\nthreads = [24]\nop = [\"copy\"]\n"
            ),
            "stream_mbps",
        )[0]
    };
    let full = run("");
    let free = run("[machine.hierarchy]\nrfo_cost = 1.0\n");
    assert!(free > 1.2 * full, "{free} vs {full}");
    let nt = run("[machine.memsys]\nwrite_allocate = false\n");
    let nt_free =
        run("[machine.memsys]\nwrite_allocate = false\n[machine.hierarchy]\nrfo_cost = 1.0\n");
    assert_eq!(nt, nt_free);
}

/// `[memsys] copy_mlp_lines`: one thread's copy keeps its own lines in
/// flight. More lines than the read's `mlp_lines` copy faster where the
/// core binds (one thread) and leave the read (`mlc-bandwidth-matrix`)
/// alone; fewer copy slower; the key equal to `mlp_lines` is the model
/// without it. Refused by name below 1; written back only where set.
#[test]
fn a_copy_keeps_its_own_lines_in_flight() {
    let copy = |extra: &str| genoa_copy(extra, 1);
    let read = genoa_read;
    let m = numasim::machine::presets::preset("epyc-9004-nps4").unwrap();
    let lines = m.memsys.mlp_lines;
    let with = |x: f64| format!("[machine.memsys]\ncopy_mlp_lines = {x}\n");
    let base = copy("");
    assert_eq!(copy(&with(lines)), base);
    let more = copy(&with(1.5 * lines));
    let fewer = copy(&with(0.5 * lines));
    assert!(
        more > 1.05 * base && fewer < 0.95 * base,
        "{fewer} {base} {more}"
    );
    assert_eq!(read(&with(1.5 * lines)), read(""));
    refused_below_one_and_written_only_where_set("copy_mlp_lines", 42.5, |m| {
        &mut m.memsys.copy_mlp_lines
    });
}

/// A written line's controller cost (`memsys.write_cost`, bus
/// turnaround): a costlier written line never copies faster, and where
/// the controllers bind (every CPU of a node copying) it copies slower;
/// the read, which writes nothing, does not move; 1 is the model without
/// the key; below 1 refused by name; written back only where set.
#[test]
fn a_written_line_costs_the_controllers_more_than_a_read() {
    let m = numasim::machine::presets::preset("epyc-9004-nps4").unwrap();
    let cpus = m.nodes[0].cpus;
    let copy = genoa_copy;
    let read = genoa_read;
    let with = |x: f64| format!("[machine.memsys]\nwrite_cost = {x}\n");
    for t in [1, cpus] {
        let base = copy("", t);
        assert_eq!(copy(&with(1.0), t), base);
        let mut last = base;
        for c in [1.25, 1.5, 2.0, 3.0] {
            let v = copy(&with(c), t);
            assert!(v <= last, "{t} threads, write_cost {c}: {v} > {last}");
            last = v;
        }
        if t == cpus {
            assert!(last < 0.9 * base, "{last} vs {base}");
        }
    }
    assert_eq!(read(&with(2.0)), read(""));
    refused_below_one_and_written_only_where_set("write_cost", 1.75, |m| &mut m.memsys.write_cost);
}

/// One workload on epyc-9004-nps4 with `extra` machine tables: the first
/// value of `metric`.
fn on_genoa(extra: &str, workload: &str, metric: &str) -> f64 {
    values(
        &format!(
            "name = \"t\"\n[machine]\npreset = \"epyc-9004-nps4\"\n{extra}[[run]]\n{workload}"
        ),
        metric,
    )[0]
}

/// `stream` copy with `threads` threads on node 0, MB/s.
fn genoa_copy(extra: &str, threads: u32) -> f64 {
    on_genoa(
        extra,
        &format!("workload = \"stream\"\nnodes = [0]\nthreads = [{threads}]\nop = [\"copy\"]\n"),
        "stream_mbps",
    )
}

/// Every CPU of node 0 reading its own memory, MB/s.
fn genoa_read(extra: &str) -> f64 {
    on_genoa(
        extra,
        "workload = \"mlc-bandwidth-matrix\"\nfrom_nodes = [0]\nto_nodes = [0]\n",
        "bandwidth_mbps",
    )
}

/// An optional `[memsys]` key of epyc-9004-nps4: 0.5 refused naming it;
/// a machine written back leaves it out until it is set, then keeps it.
fn refused_below_one_and_written_only_where_set(
    key: &str,
    value: f64,
    field: fn(&mut numasim::machine::Machine) -> &mut f64,
) {
    let e = scenario(&format!(
        "name = \"t\"\n[machine]\npreset = \"epyc-9004-nps4\"\n[machine.memsys]\n{key} = 0.5\n[[run]]\nworkload = \"stream\"\n"
    ))
    .expect_err("0.5");
    assert!(e.to_string().contains(key), "{e}");
    let mut m = numasim::machine::presets::preset("epyc-9004-nps4").unwrap();
    m.memsys.explicit = true;
    assert!(!m.to_toml_string().contains(key));
    *field(&mut m) = value;
    let mut back = numasim::machine::Machine::from_toml_str(&m.to_toml_string(), "t").unwrap();
    assert_eq!(*field(&mut back), value);
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

/// A key with no cited value says why in its warning: `llc_gbps` on a
/// mesh Xeon is left unlimited because no published rate of a core
/// group's own link exists (docs/machine.md, "`llc_gbps` on a mesh"); a
/// machine that states the key is not warned about it.
#[test]
fn an_uncited_llc_link_is_warned_with_its_reason() {
    let body = |memsys: &str| {
        format!(
            "name = \"t\"\n[machine]\npreset = \"xeon-4s\"\n{memsys}[[run]]\nworkload = \"mlc-bandwidth-matrix\"\nfrom_nodes = [0]\nto_nodes = [0]\n"
        )
    };
    let warns = |text: &str| -> Vec<String> {
        run::default_warnings(&scenario(text).unwrap(), &[])
            .into_iter()
            .filter(|w| w.contains("llc_gbps"))
            .collect()
    };
    let left = warns(&body(""));
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].contains("unlimited") && left[0].contains("no published rate"),
        "{}",
        left[0]
    );
    assert!(warns(&body("[machine.memsys]\nllc_gbps = 500.0\n")).is_empty());
}

/// today-mlc-spr runs xeon-8480-snc4 with SNC off: its node's lines are
/// interleaved over the four quadrants, so the case's memory-side latency
/// must stay the preset's plus 3/4 of the quadrant hop; refitting either
/// without the other would break the SNC-off fit silently.
#[test]
fn the_snc_off_case_keeps_the_preset_s_quadrant_hop() {
    let m = numasim::machine::presets::preset("xeon-8480-snc4").unwrap();
    let text = numasim::experiments::EXPERIMENTS
        .iter()
        .find(|(n, _)| *n == "today-mlc-spr")
        .unwrap()
        .1;
    let doc: toml::Table = text.parse().unwrap();
    let case = doc["machine"]["memsys"]["dram_ns"].as_float().unwrap();
    let want = m.memsys.dram_ns + 0.75 * m.memsys.node_hop_ns;
    assert!(
        (case - want).abs() < 0.01,
        "case {case}, preset gives {want}"
    );
}
