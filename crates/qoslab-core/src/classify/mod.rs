//! Classifiers: which class of a scheduler a packet belongs to.
//!
//! A scheduler (PRIO, DRR, HTB …) holds a [`Filters`] list: the first
//! [`Filter`] whose [`Classifier`] matches gives the class index, else the
//! list's default class, else none (the scheduler then does what its Linux
//! counterpart does with an unclassified packet: HTB's direct queue, DRR's
//! drop, PRIO's priomap). First match wins, as in a tc filter chain ordered
//! by `prio` or a Cisco class-map list.
//!
//! Matches, modelled on:
//! - [`TupleMatch`] — tc `u32` (`man tc-u32`, `net/sched/cls_u32.c`):
//!   value/mask on source and destination address, ports and protocol;
//!   a packet matches when `(field & mask) == value` for every key.
//! - [`DscpSet`] — Cisco `match dscp` / `match ip dscp` (up to 8 values per
//!   line, here any set of 0–63 given as a list of values and ranges).
//! - [`ColorSet`] — the colour a policer or marker gave the packet
//!   (Cisco `match discard-class`/RFC 2697 colour-aware classes).
//! - [`FlowHash`] ([`flow_hash`]) — the Linux flow hash of the 5-tuple,
//!   perturbable, reduced to a bucket like tc's `flow` classifier with
//!   `divisor` (`man tc-flow`, `net/sched/cls_flow.c`): class = the filter's
//!   class + bucket.
//! - [`Classifier::Any`] — matches everything (tc `matchall`, Cisco
//!   `match any`), for a catch-all in the middle of a list.
//!
//! Left out: u32 hash tables and links, offsets into arbitrary header
//! bytes, IPv6, tc `basic`/`ematch` expressions, actions attached to
//! filters (the policer in front of a class is [`crate::sched::Metered`]).

pub mod flow_hash;

use crate::packet::{Color, FiveTuple, Packet};
use crate::params::ConfigError;

pub use flow_hash::FlowHash;

/// tc `u32`-style match on the IPv4 5-tuple: every field is compared as
/// `(field & mask) == value`, with `value` already masked. A zero mask
/// ignores the field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TupleMatch {
    /// (value, mask) pairs, host order, value ⊆ mask.
    pub src_addr: (u32, u32),
    pub dst_addr: (u32, u32),
    pub src_port: (u16, u16),
    pub dst_port: (u16, u16),
    pub protocol: (u8, u8),
}

impl TupleMatch {
    /// True when every masked field equals its value.
    #[inline]
    pub fn matches(&self, t: &FiveTuple) -> bool {
        (t.src_addr & self.src_addr.1) == self.src_addr.0
            && (t.dst_addr & self.dst_addr.1) == self.dst_addr.0
            && (t.src_port & self.src_port.1) == self.src_port.0
            && (t.dst_port & self.dst_port.1) == self.dst_port.0
            && (t.protocol & self.protocol.1) == self.protocol.0
    }

    /// Parses `key value` pairs, e.g. `src 10.0.0.0/8 dport 80 proto tcp`.
    /// Keys: `src`, `dst` (a.b.c.d[/len]), `sport`, `dport` (n or n/mask,
    /// mask in hex `0xfff0` or decimal), `proto` (number, `tcp`, `udp`,
    /// `icmp`). A value outside its mask is an error, as in tc.
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        let mut m = TupleMatch::default();
        let words: Vec<&str> = spec.split_whitespace().collect();
        if words.is_empty() || words.len() % 2 != 0 {
            return Err(ConfigError::new(
                "match",
                format!("expected 'key value' pairs (src, dst, sport, dport, proto), got '{spec}'"),
            ));
        }
        for kv in words.chunks(2) {
            let (k, v) = (kv[0].to_ascii_lowercase(), kv[1]);
            match k.as_str() {
                "src" => m.src_addr = parse_prefix(v)?,
                "dst" => m.dst_addr = parse_prefix(v)?,
                "sport" => m.src_port = parse_port(v)?,
                "dport" => m.dst_port = parse_port(v)?,
                "proto" | "protocol" => m.protocol = (parse_proto(v)?, 0xff),
                other => {
                    return Err(ConfigError::new(
                        "match",
                        format!("unknown key '{other}'; valid: src, dst, sport, dport, proto"),
                    ))
                }
            }
        }
        Ok(m)
    }
}

fn parse_prefix(v: &str) -> Result<(u32, u32), ConfigError> {
    let err = || {
        ConfigError::new(
            "match",
            format!("expected a.b.c.d or a.b.c.d/len, got '{v}'"),
        )
    };
    let (addr, len) = match v.split_once('/') {
        Some((a, l)) => (a, l.parse::<u32>().map_err(|_| err())?),
        None => (v, 32),
    };
    if len > 32 {
        return Err(err());
    }
    let octets: Vec<u32> = addr
        .split('.')
        .map(|o| o.parse::<u8>().map(u32::from))
        .collect::<Result<_, _>>()
        .map_err(|_| err())?;
    if octets.len() != 4 {
        return Err(err());
    }
    let a = octets.iter().fold(0u32, |acc, o| (acc << 8) | o);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    if a & !mask != 0 {
        return Err(ConfigError::new(
            "match",
            format!("'{v}' has bits outside the /{len} mask (tc refuses this)"),
        ));
    }
    Ok((a, mask))
}

fn parse_u16(s: &str) -> Option<u16> {
    match s.strip_prefix("0x") {
        Some(h) => u16::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn parse_port(v: &str) -> Result<(u16, u16), ConfigError> {
    let err = || ConfigError::new("match", format!("expected a port or port/mask, got '{v}'"));
    let (p, mask) = match v.split_once('/') {
        Some((p, m)) => (parse_u16(p).ok_or_else(err)?, parse_u16(m).ok_or_else(err)?),
        None => (parse_u16(v).ok_or_else(err)?, 0xffff),
    };
    if p & !mask != 0 {
        return Err(ConfigError::new(
            "match",
            format!("port {p:#x} has bits outside mask {mask:#x} (tc refuses this)"),
        ));
    }
    Ok((p, mask))
}

fn parse_proto(v: &str) -> Result<u8, ConfigError> {
    match v.to_ascii_lowercase().as_str() {
        "tcp" => Ok(6),
        "udp" => Ok(17),
        "icmp" => Ok(1),
        n => n.parse().map_err(|_| {
            ConfigError::new(
                "match",
                format!("expected a protocol number or tcp/udp/icmp, got '{v}'"),
            )
        }),
    }
}

/// A set of DSCP values (0–63) as a bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DscpSet(pub u64);

impl DscpSet {
    /// The set holding exactly `values`; values above 63 are an error.
    pub fn of(values: &[u8]) -> Result<Self, ConfigError> {
        let mut s = 0u64;
        for &v in values {
            if v > 63 {
                return Err(ConfigError::new("dscp", format!("{v} is above 63")));
            }
            s |= 1 << v;
        }
        Ok(DscpSet(s))
    }

    /// Parses `46`, `10,12,14`, `8-15`, `ef`, `af41`, `cs6` (any mix,
    /// separated by commas or spaces).
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        let mut s = 0u64;
        let mut any = false;
        for item in spec.split([',', ' ']).filter(|x| !x.is_empty()) {
            any = true;
            let (lo, hi) = match item.split_once('-') {
                Some((a, b)) => (dscp_value(a)?, dscp_value(b)?),
                None => {
                    let v = dscp_value(item)?;
                    (v, v)
                }
            };
            if lo > hi {
                return Err(ConfigError::new(
                    "dscp",
                    format!("range '{item}' runs backwards"),
                ));
            }
            for v in lo..=hi {
                s |= 1 << v;
            }
        }
        if !any {
            return Err(ConfigError::new("dscp", "empty DSCP list"));
        }
        Ok(DscpSet(s))
    }

    #[inline]
    pub fn contains(self, dscp: u8) -> bool {
        dscp < 64 && self.0 & (1 << dscp) != 0
    }
}

/// A DSCP number or RFC 2474/2597/3246 name (`ef`, `afXY`, `csN`, `default`).
fn dscp_value(s: &str) -> Result<u8, ConfigError> {
    let l = s.trim().to_ascii_lowercase();
    let named = match l.as_str() {
        "ef" => Some(46),
        "default" | "be" => Some(0),
        _ => None,
    };
    if let Some(v) = named {
        return Ok(v);
    }
    let bad = || {
        ConfigError::new(
            "dscp",
            format!("expected 0..63, ef, afXY or csN, got '{s}'"),
        )
    };
    if let Some(n) = l.strip_prefix("cs") {
        let n: u8 = n.parse().map_err(|_| bad())?;
        return if n <= 7 { Ok(n << 3) } else { Err(bad()) };
    }
    if let Some(xy) = l.strip_prefix("af") {
        let b = xy.as_bytes();
        if b.len() == 2 && (b'1'..=b'4').contains(&b[0]) && (b'1'..=b'3').contains(&b[1]) {
            // AFxy = 8x + 2y (RFC 2597 §6).
            return Ok(8 * (b[0] - b'0') + 2 * (b[1] - b'0'));
        }
        return Err(bad());
    }
    let v: u8 = l.parse().map_err(|_| bad())?;
    if v > 63 {
        return Err(bad());
    }
    Ok(v)
}

/// A set of colours as a 3-bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColorSet(pub u8);

impl ColorSet {
    pub fn of(colors: &[Color]) -> Self {
        ColorSet(colors.iter().fold(0, |m, c| m | (1 << c.index())))
    }
    /// Parses `green`, `yellow,red`, `g y`.
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        let mut m = 0u8;
        for item in spec.split([',', ' ']).filter(|x| !x.is_empty()) {
            let c = Color::parse(item).ok_or_else(|| {
                ConfigError::new(
                    "color",
                    format!("expected green, yellow or red, got '{item}'"),
                )
            })?;
            m |= 1 << c.index();
        }
        if m == 0 {
            return Err(ConfigError::new("color", "empty colour list"));
        }
        Ok(ColorSet(m))
    }
    #[inline]
    pub fn contains(self, c: Color) -> bool {
        self.0 & (1 << c.index()) != 0
    }
}

/// One match condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Classifier {
    /// u32-like 5-tuple value/mask match.
    Tuple(TupleMatch),
    /// DSCP in the set.
    Dscp(DscpSet),
    /// Colour in the set.
    Color(ColorSet),
    /// Always matches; the class offset is the flow-hash bucket.
    FlowHash(FlowHash),
    /// Always matches (tc `matchall`, Cisco `match any`).
    Any,
}

impl Classifier {
    /// `None` if the packet does not match, else the offset to add to the
    /// filter's class (0 for every kind but [`Classifier::FlowHash`]).
    #[inline]
    pub fn offset(&self, pkt: &Packet) -> Option<usize> {
        match self {
            Classifier::Tuple(m) => m.matches(&pkt.tuple).then_some(0),
            Classifier::Dscp(s) => s.contains(pkt.dscp).then_some(0),
            Classifier::Color(s) => s.contains(pkt.color).then_some(0),
            Classifier::FlowHash(h) => Some(h.bucket(pkt) as usize),
            Classifier::Any => Some(0),
        }
    }

    /// Parses one condition: `dscp LIST`, `color LIST`, `hash DIVISOR
    /// [perturb N]`, `any`, or u32 keys (`src …`, `dst …`, `sport …`,
    /// `dport …`, `proto …`).
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        let s = spec.trim();
        let (head, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
        match head.to_ascii_lowercase().as_str() {
            "any" if rest.trim().is_empty() => Ok(Classifier::Any),
            "dscp" => Ok(Classifier::Dscp(DscpSet::parse(rest)?)),
            "color" | "colour" => Ok(Classifier::Color(ColorSet::parse(rest)?)),
            "hash" => FlowHash::parse(rest).map(Classifier::FlowHash),
            _ => TupleMatch::parse(s).map(Classifier::Tuple),
        }
    }
}

/// A classifier and the class it sends matching packets to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub classifier: Classifier,
    pub class: usize,
}

/// An ordered filter list with an optional default class.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    pub list: Vec<Filter>,
    pub default: Option<usize>,
}

impl Filters {
    /// No filters and no default: every packet is unclassified.
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends a filter (checked after the ones already there).
    pub fn push(mut self, classifier: Classifier, class: usize) -> Self {
        self.list.push(Filter { classifier, class });
        self
    }
    /// Sets the class for packets no filter matches.
    pub fn with_default(mut self, class: usize) -> Self {
        self.default = Some(class);
        self
    }

    /// The first matching filter's class (plus its flow-hash offset), else
    /// the default, else `None`.
    #[inline]
    pub fn classify(&self, pkt: &Packet) -> Option<usize> {
        for f in &self.list {
            if let Some(off) = f.classifier.offset(pkt) {
                return Some(f.class + off);
            }
        }
        self.default
    }

    /// The largest class index any filter or the default can return, to
    /// check a list against a scheduler's class count at build time.
    pub fn max_class(&self) -> Option<usize> {
        let filters = self.list.iter().map(|f| match &f.classifier {
            Classifier::FlowHash(h) => f.class + h.divisor() as usize - 1,
            _ => f.class,
        });
        filters.chain(self.default).max()
    }

    /// Errors unless every class a filter can return is below `n_classes`.
    pub fn check(&self, n_classes: usize) -> Result<(), ConfigError> {
        match self.max_class() {
            Some(m) if m >= n_classes => Err(ConfigError::new(
                "filter",
                format!("a filter or the default points at class {m}, but there are only {n_classes} classes"),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn pkt(src: u32, dst: u32, sport: u16, dport: u16, proto: u8) -> Packet {
        let mut p = Packet::new(0, 100);
        p.tuple = FiveTuple {
            src_addr: src,
            dst_addr: dst,
            src_port: sport,
            dst_port: dport,
            protocol: proto,
        };
        p
    }

    #[test]
    fn u32_match_applies_value_and_mask_to_each_field() {
        let m = TupleMatch::parse("dst 10.1.0.0/16 dport 80 proto tcp").unwrap();
        assert!(m.matches(&pkt(1, 0x0a01_0203, 5, 80, 6).tuple));
        assert!(!m.matches(&pkt(1, 0x0a02_0203, 5, 80, 6).tuple));
        assert!(!m.matches(&pkt(1, 0x0a01_0203, 5, 81, 6).tuple));
        assert!(!m.matches(&pkt(1, 0x0a01_0203, 5, 80, 17).tuple));
        let m = TupleMatch::parse("sport 0x1000/0xf000").unwrap();
        assert!(m.matches(&pkt(0, 0, 0x1abc, 0, 0).tuple));
        assert!(!m.matches(&pkt(0, 0, 0x2abc, 0, 0).tuple));
        assert!(TupleMatch::parse("dst 10.1.2.3/16").is_err());
        assert!(TupleMatch::parse("sport 0x11/0x10").is_err());
        assert!(TupleMatch::parse("dport").is_err());
        assert!(TupleMatch::parse("port 80").is_err());
    }

    #[test]
    fn dscp_sets_take_numbers_ranges_and_names() {
        let s = DscpSet::parse("ef, af41 8-10 cs6").unwrap();
        for v in [46, 34, 8, 9, 10, 48] {
            assert!(s.contains(v), "{v}");
        }
        assert!(!s.contains(0) && !s.contains(11) && !s.contains(64));
        assert!(DscpSet::parse("64").is_err());
        assert!(DscpSet::parse("af51").is_err());
        assert!(DscpSet::parse("10-8").is_err());
        assert!(DscpSet::parse("").is_err());
    }

    #[test]
    fn first_match_wins_then_default_then_none() {
        let f = Filters::new()
            .push(Classifier::parse("dscp ef").unwrap(), 0)
            .push(Classifier::parse("proto udp").unwrap(), 1)
            .push(Classifier::parse("color red").unwrap(), 2);
        let mut p = pkt(0, 0, 0, 0, 17);
        p.dscp = 46;
        assert_eq!(f.classify(&p), Some(0));
        p.dscp = 0;
        assert_eq!(f.classify(&p), Some(1));
        p.tuple.protocol = 6;
        p.color = Color::Red;
        assert_eq!(f.classify(&p), Some(2));
        p.color = Color::Green;
        assert_eq!(f.classify(&p), None);
        let f = f.with_default(3);
        assert_eq!(f.classify(&p), Some(3));
        assert_eq!(f.max_class(), Some(3));
        assert!(f.check(4).is_ok());
        assert!(f.check(3).is_err());
    }

    #[test]
    fn flow_hash_filter_spreads_over_its_divisor() {
        let f = Filters::new().push(Classifier::parse("hash 8").unwrap(), 10);
        assert_eq!(f.max_class(), Some(17));
        let mut seen = [false; 8];
        for port in 0..200u16 {
            let c = f.classify(&pkt(1, 2, port, 80, 6)).unwrap();
            assert!((10..18).contains(&c));
            seen[c - 10] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
