//! Placeholder until the pps benchmark lands.
fn main() {}
