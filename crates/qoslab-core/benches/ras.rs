//! Placeholder until the RAS benchmark lands.
fn main() {}
