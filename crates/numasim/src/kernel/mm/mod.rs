//! Memory management: page allocation, policies, boot-time tables.
