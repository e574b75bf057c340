//! Placeholder until the shapers benchmark lands.
fn main() {}
