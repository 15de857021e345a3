//! Built-in machines: the TOML files under `machines/`, embedded in the binary.

use super::Machine;
use crate::error::InputError;
use crate::input::table::nearest;

/// (name, TOML text) of every preset, in the order `numasim machines` lists them.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "altix-hashdist-16",
        include_str!("../../../../machines/altix-hashdist-16.toml"),
    ),
    (
        "altix-512",
        include_str!("../../../../machines/altix-512.toml"),
    ),
    (
        "altix-256g",
        include_str!("../../../../machines/altix-256g.toml"),
    ),
    (
        "altix-a3700",
        include_str!("../../../../machines/altix-a3700.toml"),
    ),
    (
        "wildfire-gs320",
        include_str!("../../../../machines/wildfire-gs320.toml"),
    ),
    (
        "bgp-node",
        include_str!("../../../../machines/bgp-node.toml"),
    ),
    (
        "epyc-2s-nps4",
        include_str!("../../../../machines/epyc-2s-nps4.toml"),
    ),
    ("xeon-4s", include_str!("../../../../machines/xeon-4s.toml")),
    (
        "epyc-9004-nps1",
        include_str!("../../../../machines/epyc-9004-nps1.toml"),
    ),
    (
        "epyc-9004-nps2",
        include_str!("../../../../machines/epyc-9004-nps2.toml"),
    ),
    (
        "epyc-9004-nps4",
        include_str!("../../../../machines/epyc-9004-nps4.toml"),
    ),
    (
        "xeon-8480-snc4",
        include_str!("../../../../machines/xeon-8480-snc4.toml"),
    ),
    ("nvme-2s", include_str!("../../../../machines/nvme-2s.toml")),
];

/// The TOML text of a preset, or an error listing the presets.
pub fn preset_text(name: &str) -> Result<&'static str, InputError> {
    PRESETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let hint = nearest(name, PRESETS.iter().map(|(n, _)| *n))
                .map(|n| format!(" Did you mean `{n}`?"))
                .unwrap_or_default();
            let all: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
            InputError::at(
                "machine.preset",
                format!(
                    "no preset named `{}`.{hint} Presets: {}.",
                    crate::error::clip(name, 80),
                    all.join(", ")
                ),
            )
            .allowing(all.join(", "))
        })
}

pub fn preset(name: &str) -> Result<Machine, InputError> {
    Machine::from_toml_str(preset_text(name)?, &format!("machines/{name}.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_loads_and_round_trips() {
        for (name, _) in PRESETS {
            let m = preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(&m.name, name);
            let again = Machine::from_toml_str(&m.to_toml_string(), name).unwrap();
            assert_eq!(m, again, "{name} does not round-trip");
        }
    }

    #[test]
    fn unknown_preset_suggests() {
        let e = preset("altix-521").unwrap_err();
        assert!(e.message.contains("altix-512"), "{}", e.message);
    }
}
