//! The one kind registry: every conditioner kind name qoslab knows, its
//! family, its one-line description, its aliases and its canonical name.
//!
//! Built from `qoslab-core`'s own kind lists (`meter::METER_KINDS`,
//! `shaper::SHAPER_KINDS`, `aqm::AQM_KINDS`, `queue::QUEUE_KINDS`,
//! `sched::CLASSLESS_KINDS`, `sched::CLASSFUL_KINDS`), never retyped: a kind
//! added to the core appears here, in the simulator's trees, in `qoslab
//! shape --list` and in the bindings. Only the aliases are ours.

use qoslab_core::aqm::AQM_KINDS;
use qoslab_core::meter::METER_KINDS;
use qoslab_core::queue::QUEUE_KINDS;
use qoslab_core::sched::{CLASSFUL_KINDS, CLASSLESS_KINDS};
use qoslab_core::shaper::SHAPER_KINDS;
use std::sync::OnceLock;

/// What a kind is, which decides where it may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Colours (and polices) packets, never queues: `police`, `srtcm`, …
    Meter,
    /// Releases packets on a schedule of its own: `tbf`, `shape`, RAS.
    Shaper,
    /// A plain FIFO: `pfifo`, `bfifo`, `pfifo_head_drop`.
    Queue,
    /// An active queue: `red`, `wred`, `rio`, `codel`, `pie`.
    Aqm,
    /// Per-flow queues without classes: `sfq`, `fq_codel`, `fair-queue`.
    Classless,
    /// Classes, filters and a default class: `htb`, `hfsc`, `prio`, `drr`.
    Classful,
}

impl Family {
    /// The family's name as shown in listings.
    pub fn name(self) -> &'static str {
        match self {
            Family::Meter => "meter",
            Family::Shaper => "shaper",
            Family::Queue => "queue",
            Family::Aqm => "aqm",
            Family::Classless => "classless scheduler",
            Family::Classful => "classful scheduler",
        }
    }

    /// Is this a node of a policy tree (a qdisc), as opposed to a meter?
    pub fn is_qdisc(self) -> bool {
        self != Family::Meter
    }

    /// Does a kind of this family pace packets itself? The others are
    /// work-conserving and need a link of some rate to drain them.
    pub fn shapes(self) -> bool {
        self == Family::Shaper
    }
}

/// One registered kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    /// The canonical name (as the core builds it).
    pub name: &'static str,
    pub family: Family,
    /// One line: what it is, its source, its keys.
    pub description: &'static str,
    /// Other accepted spellings (`_`/`-` and case never matter).
    pub aliases: &'static [&'static str],
}

/// Extra spellings, by canonical name. Not `fq`: in tc that is `sch_fq`
/// (per-flow pacing), another qdisc.
const ALIASES: &[(&str, &[&str])] = &[("fair-queue", &["wfq"])];

/// Families in listing order (qdisc kinds as the tree builder reports
/// them: queues, AQMs, classless, classful, shapers; meters first).
const FAMILIES: [(Family, &[(&str, &str)]); 6] = [
    (Family::Meter, METER_KINDS),
    (Family::Queue, QUEUE_KINDS),
    (Family::Aqm, AQM_KINDS),
    (Family::Classless, CLASSLESS_KINDS),
    (Family::Classful, CLASSFUL_KINDS),
    (Family::Shaper, SHAPER_KINDS),
];

/// Every kind, meters first, then the qdisc kinds in `FAMILIES` order.
pub fn kinds() -> &'static [Kind] {
    static KINDS: OnceLock<Vec<Kind>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut v = Vec::new();
        for (family, list) in FAMILIES {
            for (name, description) in list {
                let aliases = ALIASES
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(&[][..], |(_, a)| *a);
                v.push(Kind {
                    name,
                    family,
                    description,
                    aliases,
                });
            }
        }
        v
    })
}

/// `name` with case and `_`/`-` folded (`FQ-CoDel` = `fq_codel`).
fn fold(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('_', "-")
}

/// The kind `name` spells (canonical name or alias, any case, `_` or `-`).
pub fn lookup(name: &str) -> Option<&'static Kind> {
    let k = fold(name);
    kinds()
        .iter()
        .find(|x| fold(x.name) == k || x.aliases.iter().any(|a| fold(a) == k))
}

/// Every kind of the families `keep` accepts, in registry order.
pub fn names(keep: impl Fn(Family) -> bool) -> Vec<&'static str> {
    kinds()
        .iter()
        .filter(|k| keep(k.family))
        .map(|k| k.name)
        .collect()
}

/// Every policy-tree node kind (all but the meters).
pub fn qdisc_kinds() -> Vec<&'static str> {
    names(Family::is_qdisc)
}

/// The canonical spelling of a policy-tree node kind (`fq-codel` →
/// `fq_codel`, `fair_queue`/`wfq` → `fair-queue`), or `None` if unknown
/// or a meter.
pub fn canonical_kind(kind: &str) -> Option<&'static str> {
    lookup(kind).filter(|k| k.family.is_qdisc()).map(|k| k.name)
}

/// "unknown KIND 'x' (did you mean 'y'?); kinds: a, b, …" over `valid`.
pub fn unknown_message(what: &str, given: &str, valid: &[&str]) -> String {
    let hint = qoslab_core::params::nearest(&given.to_ascii_lowercase(), valid)
        .map(|k| format!(" (did you mean '{k}'?)"))
        .unwrap_or_default();
    format!(
        "unknown {what} '{given}'{hint}; kinds: {}",
        valid.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every core list's kinds are registered under their family, and the
    /// registry holds nothing else.
    #[test]
    fn the_registry_is_exactly_the_core_lists() {
        let mut n = 0;
        for (family, list) in FAMILIES {
            for (name, description) in list {
                let k = lookup(name).unwrap_or_else(|| panic!("{name} missing"));
                assert_eq!((k.name, k.family), (*name, family));
                assert_eq!(k.description, *description);
                n += 1;
            }
        }
        assert_eq!(kinds().len(), n, "registry holds kinds no core list has");
        for k in kinds() {
            let listed = FAMILIES
                .iter()
                .find(|(f, _)| *f == k.family)
                .expect("family")
                .1
                .iter()
                .any(|(x, _)| *x == k.name);
            assert!(listed, "{} is not in core's {:?} list", k.name, k.family);
        }
        // Names are unique even after folding case and `_`/`-`.
        let mut folded: Vec<String> = kinds().iter().map(|k| fold(k.name)).collect();
        folded.sort();
        folded.dedup();
        assert_eq!(folded.len(), kinds().len());
    }

    /// Each core builder accepts its family's registered names (a name in
    /// a core list that its builder refused would be a broken kind).
    #[test]
    fn every_registered_kind_is_known_to_its_core_builder() {
        use qoslab_core::{AnyShaper, Params, Policer};
        for k in kinds() {
            let p = Params::new(k.name, std::iter::empty::<(String, String)>());
            let refused_as_unknown =
                |e: qoslab_core::ConfigError| e.param == "kind" || e.message.contains("unknown");
            match k.family {
                Family::Meter => {
                    if let Err(e) = Policer::from_params(k.name, p) {
                        assert!(!refused_as_unknown(e), "{}", k.name);
                    }
                }
                Family::Shaper => {
                    if let Err(e) = AnyShaper::from_params(k.name, p) {
                        assert!(!refused_as_unknown(e), "{}", k.name);
                    }
                }
                Family::Aqm => {
                    if let Err(e) = qoslab_core::aqm::AnyAqm::from_params(k.name, p) {
                        assert!(!refused_as_unknown(e), "{}", k.name);
                    }
                }
                _ => {}
            }
        }
    }

    #[test]
    fn aliases_and_spellings_fold_to_the_canonical_name() {
        assert_eq!(canonical_kind("FQ-CoDel"), Some("fq_codel"));
        assert_eq!(canonical_kind("pfifo-head-drop"), Some("pfifo_head_drop"));
        assert_eq!(canonical_kind("wfq"), Some("fair-queue"));
        assert_eq!(canonical_kind("fair_queue"), Some("fair-queue"));
        assert_eq!(canonical_kind("G_SRRAS"), Some("g-srras"));
        assert_eq!(canonical_kind("fq"), None, "tc's fq is sch_fq, not WFQ");
        assert_eq!(canonical_kind("srtcm"), None, "a meter is not a qdisc");
        assert_eq!(lookup("srtcm").map(|k| k.family), Some(Family::Meter));
        assert_eq!(lookup("htb").map(|k| k.family), Some(Family::Classful));
    }
}
