//! Size tables: a policy counts frames as the router counts them
//! (tc-stab(8): `tc qdisc add … stab overhead N linklayer ethernet|atm|adsl
//! mpu M [mtu B] [tsize S] …`).
//!
//! The kernel (`__qdisc_calculate_pkt_len`, net/sched/sch_api.c) replaces a
//! packet's length, for everything the qdisc tree accounts (rates, token
//! buckets, byte limits, `qdisc_pkt_len`), by
//!
//! 1. `pkt_len = len + overhead`;
//! 2. without a table (tc builds none when the link layer is Ethernet and
//!    `mpu` is 0, `tc_calc_size_table` in iproute2 tc/tc_core.c): that is
//!    all;
//! 3. with a table: `slot = (pkt_len + cell_align) >> cell_log` with
//!    `cell_align = -1` and the smallest `cell_log` with
//!    `mtu >> cell_log <= tsize - 1` (mtu 2047, tsize 512 by default, so
//!    `cell_log = 2`), and `pkt_len = table[slot]` where tc filled
//!    `table[i] = adjust((i + 1) << cell_log)`, `adjust(s)` = `max(s, mpu)`
//!    then, for ATM (`adsl` is tc's alias), whole 53-byte cells of 48
//!    payload bytes (`tc_align_to_atm`); a slot past the table wraps as
//!    `table[tsize-1]·(slot / tsize) + table[slot % tsize]`;
//! 4. at least 1.
//!
//! The real size is what the wire serialises; only the policy sees this
//! one. A conditioner's *own* `overhead`/`linklayer` options (tbf, htb,
//! police: `psched_l2t_ns` in include/net/sch_generic.h) adjust only its
//! rate arithmetic, not its queue's byte accounting, so they are not this.
//!
//! Example: 1500 bytes with `linklayer atm` → slot 374 → adjust(1500) = 32
//! cells = 1696 bytes; `overhead 14` (the Ethernet header a router counts)
//! makes a 1500-byte IP packet 1514.

use crate::PolicyError;

/// ATM cell and its payload (`ATM_CELL_SIZE`, `ATM_CELL_PAYLOAD`, tc_core.c).
pub const ATM_CELL_BYTES: u32 = 53;
pub const ATM_CELL_PAYLOAD_BYTES: u32 = 48;
/// tc-stab defaults.
pub const DEFAULT_MTU_BYTES: u32 = 2047;
pub const DEFAULT_TSIZE: u32 = 512;

/// The link layer a size table rounds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    Ethernet,
    /// ATM cells (tc also accepts `adsl` for it).
    Atm,
}

/// A tc size table (`stab`), as configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeTable {
    /// Added to every packet's length (may be negative, as tc allows).
    pub overhead_bytes: i32,
    pub linklayer: LinkLayer,
    /// Minimum counted size.
    pub mpu_bytes: u32,
    pub mtu_bytes: u32,
    pub tsize: u32,
    /// `cell_log`, derived (0 without a table).
    cell_log: u32,
    /// `size_log`: table entries are stored `>> size_log` in 16 bits.
    size_log: u32,
    table: bool,
}

impl SizeTable {
    /// A size table from tc-stab's options; `mtu`/`tsize` default to tc's.
    pub fn new(
        overhead_bytes: i32,
        linklayer: LinkLayer,
        mpu_bytes: u32,
        mtu_bytes: Option<u32>,
        tsize: Option<u32>,
    ) -> Result<SizeTable, PolicyError> {
        let table = linklayer != LinkLayer::Ethernet || mpu_bytes != 0;
        let mtu = mtu_bytes.unwrap_or(DEFAULT_MTU_BYTES);
        let tsize = tsize.unwrap_or(DEFAULT_TSIZE);
        if table && !(2..=65_536).contains(&tsize) {
            return Err(PolicyError::new("stab.tsize", "expected 2 to 65536 slots"));
        }
        if table && mtu == 0 {
            return Err(PolicyError::new("stab.mtu", "must be above 0"));
        }
        let mut s = SizeTable {
            overhead_bytes,
            linklayer,
            mpu_bytes,
            mtu_bytes: mtu,
            tsize,
            cell_log: 0,
            size_log: 0,
            table,
        };
        if table {
            while (mtu >> s.cell_log) > tsize - 1 {
                s.cell_log += 1;
            }
            // tc: grow size_log until the largest entry fits 16 bits.
            while (s.adjust((tsize - 1 + 1) << s.cell_log) >> s.size_log) > u16::MAX as u32 {
                s.size_log += 1;
            }
        }
        Ok(s)
    }

    /// tc's `tc_adjust_size`: mpu, then whole ATM cells.
    fn adjust(&self, sz: u32) -> u32 {
        let sz = sz.max(self.mpu_bytes);
        match self.linklayer {
            LinkLayer::Ethernet => sz,
            LinkLayer::Atm => sz.div_ceil(ATM_CELL_PAYLOAD_BYTES) * ATM_CELL_BYTES,
        }
    }

    /// Table entry `i` as the kernel stores it (`>> size_log`, 16 bits).
    fn entry(&self, i: u32) -> u64 {
        (self.adjust((i + 1) << self.cell_log) >> self.size_log) as u64
    }

    /// The length the policy counts for a packet of `len` bytes
    /// (`__qdisc_calculate_pkt_len`).
    pub fn pkt_len(&self, len: u32) -> u32 {
        let pkt_len = len as i64 + self.overhead_bytes as i64;
        let out = if !self.table {
            pkt_len
        } else {
            let slot = ((pkt_len - 1).max(0) as u64) >> self.cell_log;
            let ts = self.tsize as u64;
            let v = if slot < ts {
                self.entry(slot as u32)
            } else {
                self.entry(self.tsize - 1) * (slot / ts) + self.entry((slot % ts) as u32)
            };
            (v << self.size_log) as i64
        };
        out.clamp(1, u32::MAX as i64) as u32
    }

    /// `key=value` pairs for a policy's description.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let ll = match self.linklayer {
            LinkLayer::Ethernet => "ethernet",
            LinkLayer::Atm => "atm",
        };
        vec![
            ("stab_overhead", format!("{}B", self.overhead_bytes)),
            ("stab_linklayer", ll.to_string()),
            ("stab_mpu", format!("{}B", self.mpu_bytes)),
        ]
    }
}

/// Parses tc's link-layer names.
pub fn parse_linklayer(s: &str) -> Option<LinkLayer> {
    match s.to_ascii_lowercase().as_str() {
        "ethernet" => Some(LinkLayer::Ethernet),
        "atm" | "adsl" => Some(LinkLayer::Atm),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(o: i32, ll: LinkLayer, mpu: u32) -> SizeTable {
        SizeTable::new(o, ll, mpu, None, None).unwrap()
    }

    #[test]
    fn ethernet_overhead_only_adds_the_header() {
        let s = st(14, LinkLayer::Ethernet, 0);
        assert_eq!(s.pkt_len(1500), 1514);
        assert_eq!(s.pkt_len(40), 54);
        // A negative overhead never yields 0 (the kernel's floor of 1).
        assert_eq!(st(-100, LinkLayer::Ethernet, 0).pkt_len(40), 1);
    }

    #[test]
    fn atm_counts_whole_cells_as_the_kernel_table_does() {
        let s = st(0, LinkLayer::Atm, 0);
        assert_eq!(s.cell_log, 2, "mtu 2047, tsize 512 → cell_log 2");
        // 1500 B: ⌈1500/48⌉ = 32 cells = 1696 B.
        assert_eq!(s.pkt_len(1500), 1696);
        // 40 B ACK: one cell.
        assert_eq!(s.pkt_len(40), 53);
        // 48 B fits one cell, 49 B needs two; the table's 4-byte slots
        // round 49 up to 52 first: still two cells.
        assert_eq!(s.pkt_len(48), 53);
        assert_eq!(s.pkt_len(49), 106);
        // PPPoA-style overhead 10 on a 1500 B packet: ⌈1510/48⌉ = 32 cells,
        // but the slot rounds 1510 up to 1512: still 32 = 1696.
        assert_eq!(st(10, LinkLayer::Atm, 0).pkt_len(1500), 1696);
        // 1526 B: slot rounds to 1528 → ⌈1528/48⌉ = 32 cells; 1537 → 1540 → 33.
        assert_eq!(s.pkt_len(1526), 1696);
        assert_eq!(s.pkt_len(1537), 33 * 53);
    }

    #[test]
    fn the_table_rounds_up_to_its_slot_and_wraps_past_the_mtu() {
        // mpu forces a table on Ethernet: lengths round up to 4 bytes.
        let s = st(0, LinkLayer::Ethernet, 64);
        assert_eq!(s.pkt_len(40), 64);
        assert_eq!(s.pkt_len(1501), 1504);
        assert_eq!(s.pkt_len(1500), 1500);
        // Past tsize·4 = 2048 B the kernel wraps: 4000 B → slot 999 →
        // table[511]·1 + table[487] = 2048 + 1952 = 4000.
        assert_eq!(s.pkt_len(4000), 4000);
        // 9000 B jumbo through an ATM table (wrap: 4 × 2067 + entry 201).
        let a = st(0, LinkLayer::Atm, 0);
        let wrap = 4 * a.entry(511) + a.entry((8999 >> 2) % 512);
        assert_eq!(a.pkt_len(9000) as u64, wrap);
    }

    #[test]
    fn tsize_and_linklayer_names() {
        assert!(SizeTable::new(0, LinkLayer::Atm, 0, None, Some(1)).is_err());
        assert_eq!(parse_linklayer("ADSL"), Some(LinkLayer::Atm));
        assert_eq!(parse_linklayer("ethernet"), Some(LinkLayer::Ethernet));
        assert_eq!(parse_linklayer("ppp"), None);
        // A small table (tsize 8, mtu 2047) has cell_log 8: 256-byte slots.
        let s = SizeTable::new(0, LinkLayer::Atm, 0, None, Some(8)).unwrap();
        assert_eq!(s.cell_log, 8);
        assert_eq!(s.pkt_len(100), 6 * 53, "slot 0 = adjust(256) = 6 cells");
    }
}
