//! Programs that simulated tasks run.
