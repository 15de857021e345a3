//! numasim-probe: measures the real host.
