//! Deterministic discrete-event core: clock, event queue, RNG streams, shared resources.
