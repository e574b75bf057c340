//! What a link direction (or a trace) does with packets: the policy specs,
//! plain data with every conditioner's parameters as strings. The scenario
//! file layer (TOML), the Python bindings and the CLI fill them in; nothing
//! here parses text except through `qoslab-core`'s `Params` when a
//! conditioner is built ([`crate::policy`], [`crate::tree`]).

/// What a link direction does with packets before its transmitter.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicySpec {
    /// A meter/policer (`qoslab_core::Policer`) in front of the link's
    /// device FIFO: it drops or remarks, never delays.
    Police(MeterSpec),
    /// A shaper (`qoslab_core::AnyShaper`) replacing the device FIFO.
    Shape(ShaperSpec),
    /// A plain FIFO with this limit instead of the default device queue.
    Fifo(FifoSpec),
    /// A policy tree (a tc qdisc hierarchy, a Cisco MQC policy-map)
    /// replacing the device FIFO: one `qoslab_core::Shaper` built by
    /// [`crate::tree`].
    Tree(Box<TreeSpec>),
    /// Another policy behind a size table (tc-stab): everything the policy
    /// accounts sees [`SizeTable::pkt_len`](crate::stab::SizeTable::pkt_len)
    /// of each packet; the wire still serialises the real size.
    Sized {
        stab: crate::stab::SizeTable,
        inner: Box<PolicySpec>,
    },
}

impl PolicySpec {
    /// The policy without its size table, and the table if any.
    pub fn without_stab(&self) -> (&PolicySpec, Option<crate::stab::SizeTable>) {
        match self {
            PolicySpec::Sized { stab, inner } => (inner.without_stab().0, Some(*stab)),
            p => (p, None),
        }
    }
}

/// A policy tree: the root qdisc, optionally behind a policer (Cisco
/// `police` in `class-default` of the parent policy, tc `action police` on
/// a match-all filter).
#[derive(Clone, Debug, PartialEq)]
pub struct TreeSpec {
    pub police: Option<MeterSpec>,
    pub root: QdiscSpec,
}

/// One node of a policy tree: a tc qdisc / an MQC policy-map.
///
/// `kind` is a queue (`pfifo`, `bfifo`, `pfifo_head_drop`), an AQM (`red`,
/// `rio`, `wred`, `codel`, `pie`), a classless scheduler (`sfq`,
/// `fq_codel`, `fair-queue`), a classful scheduler (`htb`, `hfsc`, `prio`, `drr`)
/// or a shaper (`tbf`, `shape`, `srras`, `trras`, `g-srras`, `g-trras`).
/// `params` are the kind's own keys as strings, as for the other specs;
/// classful kinds also read `default` (the default class id).
#[derive(Clone, Debug, PartialEq)]
pub struct QdiscSpec {
    pub kind: String,
    pub params: Vec<(String, String)>,
    /// Classful kinds: the classes, parents listed before children.
    pub classes: Vec<ClassSpec>,
    /// Classful kinds: first match wins, then `default`.
    pub filters: Vec<FilterSpec>,
    /// Shapers: the queue the shaper drains instead of its own FIFO (MQC
    /// `shape average` + `fair-queue`, tc `tbf` with a child qdisc).
    pub child: Option<Box<QdiscSpec>>,
}

impl QdiscSpec {
    /// A classless node of `kind` with `params`.
    pub fn leaf(kind: &str, params: &[(&str, &str)]) -> QdiscSpec {
        QdiscSpec {
            kind: kind.to_string(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            classes: Vec::new(),
            filters: Vec::new(),
            child: None,
        }
    }
}

/// A class of a classful qdisc (tc `class add … classid`, MQC `class`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassSpec {
    /// The class's name, unique within its qdisc (tc minor such as "10",
    /// or "1:10"; an MQC class-map name).
    pub id: String,
    /// HTB, HFSC: the parent class's id; `None` for a root class.
    pub parent: Option<String>,
    /// The kind's class keys (HTB rate, ceil, burst, cburst, prio,
    /// quantum, mtu, mpu; HFSC sc, rt, ls, ul as tc's curve text
    /// `"m1 RATE d TIME m2 RATE"`; DRR quantum; PRIO none).
    pub params: Vec<(String, String)>,
    /// A meter in front of the class (MQC child `police`).
    pub police: Option<MeterSpec>,
    /// The class's queue (default `pfifo` limit 1000, as Linux).
    pub qdisc: Option<QdiscSpec>,
}

/// A filter: a `qoslab_core::classify::Classifier` in its text form
/// (`dport 5001 proto udp`, `dscp ef`, `color red`, `hash 16`, `any`) and
/// the class it sends matching packets to.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterSpec {
    pub classifier: String,
    pub class: String,
}

/// A meter kind (`police`, `linux-police`, `srtcm`, `trtcm`, `tswtcm`,
/// `mef`) and its parameters as strings, exactly as `qoslab meter` takes
/// them (`cir = "20mbit"`, `exceed = "drop"`).
#[derive(Clone, Debug, PartialEq)]
pub struct MeterSpec {
    pub kind: String,
    pub params: Vec<(String, String)>,
}

/// A shaper kind (`tbf`, `shape`, `srras`, `trras`, `g-srras`, `g-trras`)
/// and its parameters as strings, exactly as `qoslab shape` takes them.
#[derive(Clone, Debug, PartialEq)]
pub struct ShaperSpec {
    pub kind: String,
    pub params: Vec<(String, String)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FifoSpec {
    pub limit: FifoLimit,
    /// Drop from the head instead of the tail when full.
    pub head_drop: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoLimit {
    Packets(u32),
    Bytes(u64),
}
