//! Storage presets (`machines/storage/*.toml`): a drive, its controller and
//! the host's I/O path lengths, named from a machine's `[block] preset`.
//! The preset's `[block]` and `[io]` keys are merged under the machine's own
//! (the machine wins, key by key) before the readers run, so a machine file
//! needs no more than `[block] preset = "nvme-gen4"` to run the I/O
//! workloads (docs/machine.md, "Storage presets").

use crate::error::InputError;
use toml::{Table, Value};

/// Name, file text. The files are embedded, as the machine presets are.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "nvme-gen4",
        include_str!("../../../../machines/storage/nvme-gen4.toml"),
    ),
    (
        "sas-10k",
        include_str!("../../../../machines/storage/sas-10k.toml"),
    ),
    (
        "sas-raid0",
        include_str!("../../../../machines/storage/sas-raid0.toml"),
    ),
];

/// The preset's description line, for listings.
pub fn description(text: &str) -> String {
    crate::machine::slit_text::parse_toml(text)
        .ok()
        .and_then(|t| {
            t.get("description")
                .and_then(|v| v.as_str())
                .map(String::from)
        })
        .unwrap_or_default()
}

/// The machine table with its `[block] preset` expanded, or `None` when it
/// names none (the table is read as it is).
pub fn expand(machine: &Table) -> Result<Option<Table>, InputError> {
    let Some(Value::Table(block)) = machine.get("block") else {
        return Ok(None);
    };
    let Some(v) = block.get("preset") else {
        return Ok(None);
    };
    let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
    let Some(name) = v.as_str() else {
        return Err(
            InputError::at("block.preset", "expected a storage preset name")
                .allowing(names.join(", ")),
        );
    };
    let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
        let hint = crate::input::table::nearest(name, names.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(
            InputError::at("block.preset", format!("no storage preset `{name}`{hint}"))
                .allowing(names.join(", ")),
        );
    };
    let file = format!("machines/storage/{name}.toml");
    let preset = crate::machine::slit_text::parse_toml(text)
        .map_err(|e| InputError::new(format!("not valid TOML: {e}")).in_file(file.clone()))?;
    let mut out = machine.clone();
    for section in ["block", "io"] {
        let Some(Value::Table(base)) = preset.get(section) else {
            continue;
        };
        let mut merged = base.clone();
        if let Some(Value::Table(own)) = machine.get(section) {
            for (k, v) in own {
                if k != "preset" {
                    merged.insert(k.clone(), v.clone());
                }
            }
        }
        out.insert(section.to_string(), Value::Table(merged));
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;

    fn machine(extra: &str) -> Result<Machine, InputError> {
        let text = format!(
            "name = \"t\"\nnodes = 2\ncpus_per_node = 4\nmem_per_node = \"8 GiB\"\n{extra}"
        );
        Machine::from_table(&crate::machine::slit_text::parse_toml(&text).unwrap())
    }

    #[test]
    fn every_preset_supplies_every_required_block_key() {
        for (name, _) in PRESETS {
            let m = machine(&format!(
                "[io]\nio_nodes = [0]\n[block]\npreset = \"{name}\"\n"
            ))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(m.block.is_some(), "{name}");
            assert!(
                m.io.disks.iter().map(|g| g.count).sum::<u32>() > 0,
                "{name}"
            );
        }
    }

    #[test]
    fn the_machine_s_own_keys_win_over_the_preset() {
        let m = machine(
            "[io]\nio_nodes = [0]\ndisks = [{ count = 8, kind = \"nvme\", mibps = 100.0 }]\n\
             [block]\npreset = \"nvme-gen4\"\ncopy_gbps = 3.0\n",
        )
        .unwrap();
        assert_eq!(m.block.as_ref().unwrap().copy_gbps, 3.0);
        assert_eq!(m.io.disks[0].count, 8);
        assert_eq!(m.io.disks[0].mibps, 100.0);
        // Keys the machine leaves out come from the preset.
        assert_eq!(m.block.as_ref().unwrap().disk_latency_us, 70.0);
        assert_eq!(m.io.controllers, 1);
    }

    #[test]
    fn an_unknown_preset_is_named_with_the_nearest_and_the_list() {
        let e = machine("[block]\npreset = \"nvme-gen5\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("block.preset") && e.contains("nvme-gen4"), "{e}");
    }

    #[test]
    fn a_block_table_missing_keys_names_them_all_in_one_error() {
        let e = machine("[block]\ndisk_rpm = 0.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("25 of the [block] keys missing"), "{e}");
        for k in [
            "disk_seek_ms",
            "ext_truncate_block_ns",
            "elevator",
            "copy_gbps",
        ] {
            assert!(e.contains(k), "{k}: {e}");
        }
    }
}
