//! Placeholder until the meters benchmark lands.
fn main() {}
