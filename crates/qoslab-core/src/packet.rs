//! The packet as conditioners see it, and the colours and verdicts they give.

use core::fmt;

/// Drop precedence colour (RFC 2697 §1 / RFC 2698 §1; Cisco conform / exceed /
/// violate). Ordered from best to worst, so `a.max(b)` is the worse colour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Color {
    #[default]
    Green = 0,
    Yellow = 1,
    Red = 2,
}

impl Color {
    pub const ALL: [Color; 3] = [Color::Green, Color::Yellow, Color::Red];

    pub const fn index(self) -> usize {
        self as usize
    }
    pub const fn from_u8(v: u8) -> Option<Color> {
        match v {
            0 => Some(Color::Green),
            1 => Some(Color::Yellow),
            2 => Some(Color::Red),
            _ => None,
        }
    }
    pub const fn name(self) -> &'static str {
        match self {
            Color::Green => "green",
            Color::Yellow => "yellow",
            Color::Red => "red",
        }
    }
    /// Parses `green`/`yellow`/`red` (any case) or the single letters `g`/`y`/`r`.
    pub fn parse(s: &str) -> Option<Color> {
        match s.trim().to_ascii_lowercase().as_str() {
            "green" | "g" => Some(Color::Green),
            "yellow" | "y" => Some(Color::Yellow),
            "red" | "r" => Some(Color::Red),
            _ => None,
        }
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A packet's header fields that conditioners read or rewrite. `Copy` and
/// small, so queues hold packets by value and nothing allocates per packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Packet {
    /// Caller-assigned identity (e.g. the index in a trace).
    pub id: u64,
    /// Flow identity (e.g. a 5-tuple hash); opaque to meters and shapers.
    pub flow: u32,
    /// Size on the wire as the conditioner accounts it, in bytes.
    pub size_bytes: u32,
    /// DiffServ code point (6 bits).
    pub dscp: u8,
    /// Colour carried in from upstream; read by colour-aware meters.
    pub color: Color,
    /// Addresses, ports and protocol, for classifiers (u32 match, flow
    /// hashing). All zero when the caller has none (traces).
    pub tuple: FiveTuple,
}

/// An IPv4 5-tuple. Addresses are host-order `u32`s (10.0.0.1 =
/// 0x0a000001), as tc's u32 classifier compares them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiveTuple {
    pub src_addr: u32,
    pub dst_addr: u32,
    pub src_port: u16,
    pub dst_port: u16,
    /// IP protocol number (6 TCP, 17 UDP, 1 ICMP).
    pub protocol: u8,
}

impl Packet {
    pub const fn new(id: u64, size_bytes: u32) -> Self {
        Packet {
            id,
            flow: 0,
            size_bytes,
            dscp: 0,
            color: Color::Green,
            tuple: FiveTuple {
                src_addr: 0,
                dst_addr: 0,
                src_port: 0,
                dst_port: 0,
                protocol: 0,
            },
        }
    }
}

/// What a policer does with a packet of a given colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Forward unchanged (Cisco `transmit`, tc `ok`/`pass`).
    Transmit,
    /// Discard (Cisco `drop`, tc `drop`/`shot`).
    Drop,
    /// Rewrite the DSCP and forward (Cisco `set-dscp-transmit`).
    SetDscp(u8),
}

impl Action {
    /// Stable small code used in tidy outputs: 0 transmit, 1 drop, 2 remark.
    pub const fn code(self) -> u8 {
        match self {
            Action::Transmit => 0,
            Action::Drop => 1,
            Action::SetDscp(_) => 2,
        }
    }
    pub const fn name(self) -> &'static str {
        match self {
            Action::Transmit => "transmit",
            Action::Drop => "drop",
            Action::SetDscp(_) => "remark",
        }
    }
    /// Parses `transmit`, `drop`, `set-dscp:N` / `set-dscp-transmit:N`
    /// (also tc's `ok`, `pass`, `shot`). Returns `None` for anything else.
    pub fn parse(s: &str) -> Option<Action> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "transmit" | "ok" | "pass" | "continue" | "pipe" => return Some(Action::Transmit),
            "drop" | "shot" => return Some(Action::Drop),
            _ => {}
        }
        let (name, value) = s.split_once([':', '='])?;
        if name == "set-dscp" || name == "set-dscp-transmit" || name == "remark" {
            let v: u8 = value.trim().parse().ok()?;
            if v < 64 {
                return Some(Action::SetDscp(v));
            }
        }
        None
    }
}

/// The outcome of metering one packet: its colour and what to do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Verdict {
    pub color: Color,
    pub action: Action,
}

/// Per-colour actions: conform (green), exceed (yellow), violate (red).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Actions {
    pub conform: Action,
    pub exceed: Action,
    pub violate: Action,
}

impl Actions {
    /// Cisco's defaults for `police`: conform-action transmit, exceed-action
    /// drop, violate-action drop.
    pub const CISCO_DEFAULT: Actions = Actions {
        conform: Action::Transmit,
        exceed: Action::Drop,
        violate: Action::Drop,
    };
    /// Pure marking (RFC 2697/2698 markers): every packet is forwarded with its colour.
    pub const MARK_ONLY: Actions = Actions {
        conform: Action::Transmit,
        exceed: Action::Transmit,
        violate: Action::Transmit,
    };

    pub const fn for_color(&self, c: Color) -> Action {
        match c {
            Color::Green => self.conform,
            Color::Yellow => self.exceed,
            Color::Red => self.violate,
        }
    }
    pub const fn verdict(&self, color: Color) -> Verdict {
        Verdict {
            color,
            action: self.for_color(color),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colors_order_from_best_to_worst() {
        assert!(Color::Green < Color::Yellow && Color::Yellow < Color::Red);
        assert_eq!(Color::Green.max(Color::Red), Color::Red);
    }

    #[test]
    fn actions_parse_cisco_and_tc_words() {
        assert_eq!(Action::parse("transmit"), Some(Action::Transmit));
        assert_eq!(Action::parse("shot"), Some(Action::Drop));
        assert_eq!(
            Action::parse("set-dscp-transmit:10"),
            Some(Action::SetDscp(10))
        );
        assert_eq!(Action::parse("set-dscp:64"), None);
        assert_eq!(Action::parse("explode"), None);
    }
}
