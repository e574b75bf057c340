//! What a policy reported: its totals and, for a policy tree, one row per
//! class. The simulator's `SimResult` and the trace drivers both carry them.

/// One policy (queue, shaper or policer) on a link direction.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyResult {
    /// e.g. `r1->r2 egress`.
    pub name: String,
    /// `police`, `shape`, `fifo`, or the core kind (`tbf`, `srtcm`, …).
    pub kind: String,
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_dropped: u64,
    pub bytes_dropped: u64,
    /// Packets / bytes per colour [green, yellow, red] (meters), or all
    /// green for queues and shapers.
    pub color_packets: [u64; 3],
    pub color_bytes: [u64; 3],
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
    /// The conditioner's own description (derived defaults shown).
    pub describe: Vec<(String, String)>,
    /// Policy trees: one row per class (the root first, parents before
    /// children); empty for the other policies.
    pub classes: Vec<ClassResult>,
}

/// One class of a policy tree (`tc -s class show`, `show policy-map
/// interface`). Counters are hierarchical: a class counts every packet of
/// its subtree. Colours are [green, yellow, red] as the packet carried
/// them at that point: on arrival (as marked upstream), on departure and
/// on drop (after the class's own meter, if any).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassResult {
    /// `root`, a class id (`10`), or a nested path (`10/2`).
    pub name: String,
    /// The class's queue kind (`pfifo`, `sfq`, …), or `inner` for an HTB
    /// class with child classes.
    pub kind: String,
    /// Index of the parent row in [`PolicyResult::classes`].
    pub parent: Option<u32>,
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub packets_dropped: u64,
    pub bytes_dropped: u64,
    pub color_packets_in: [u64; 3],
    pub color_packets_out: [u64; 3],
    pub color_packets_dropped: [u64; 3],
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
}
