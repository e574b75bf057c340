//! Strict priority bands, Linux `prio` (`net/sched/sch_prio.c`, `man
//! tc-prio`; iproute2 `tc/q_prio.c`).
//!
//! `bands` classes (2..=16, default 3), each holding a child (default
//! `pfifo`, limit `tx_queue_len` = 1000). Dequeue asks band 0, then 1, …
//! and returns the first packet a band gives (`prio_dequeue`): a lower band
//! is served only when every higher one is empty or holds nothing ready
//! (a shaped child that is waiting does not block the bands below it).
//! Work-conserving when its children are.
//!
//! Classification (`prio_classify`): the [`Filters`] first (a match gives
//! the band); otherwise the packet's priority picks the band through the
//! `priomap` (16 entries, default `1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1`, from
//! `prio_change`/tc's `prio2band`). The priority is `skb->priority`, which
//! for forwarded IPv4 traffic the kernel sets from the TOS byte
//! (`ip_forward`: `skb->priority = rt_tos2priority(iph->tos)`):
//! `ip_tos2prio[(tos & 0x1E) >> 1]` (`net/ipv4/route.c`), a table of the
//! RFC 1349 TOS bits, not of DiffServ. With `tos = dscp << 2` and ECN 0 this
//! reads only the three low DSCP bits — see [`dscp_to_priority`]:
//!
//! | dscp & 7 | TOS bits      | priority            | default band |
//! |----------|---------------|---------------------|--------------|
//! | 0, 1     | none / cost   | 0 best effort       | 1            |
//! | 2, 3     | throughput    | 2 bulk              | 2            |
//! | 4, 5     | low delay     | 6 interactive       | 0            |
//! | 6, 7     | delay+thruput | 4 interactive bulk  | 1            |
//!
//! So EF (46, low bits 110) lands in band 1 and CS6/CS7 in band 1 too; to
//! prioritise by DSCP add a `dscp` filter, as on a real Linux box.
//!
//! Left out: `skb->priority` set by the sending socket (`SO_PRIORITY`) and
//! by classid (`TC_H_MAJ(priority) == handle`), multiqueue offload.

use super::tree::{inline, pfifo, Child, DEFAULT_TXQUEUELEN};
use crate::classify::Filters;
use crate::packet::Packet;
use crate::params::{ConfigError, Params};
use crate::shaper::{Dropped, Shaper};
use crate::time::Instant;

/// `TCQ_PRIO_BANDS` (include/uapi/linux/pkt_sched.h).
pub const MAX_BANDS: usize = 16;
/// `TC_PRIO_MAX + 1`: the priomap's length.
pub const PRIOMAP_LEN: usize = 16;
/// tc's default priomap (`prio2band` in q_prio.c, sch_prio.c).
pub const DEFAULT_PRIOMAP: [u8; PRIOMAP_LEN] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/// `ip_tos2prio` (net/ipv4/route.c): TC_PRIO_* by `(tos & 0x1E) >> 1`.
const IP_TOS2PRIO: [u8; 16] = [0, 1, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4];

/// `rt_tos2priority(dscp << 2)` — the Linux priority of a forwarded IPv4
/// packet with this DSCP and ECN 0.
#[inline]
pub const fn dscp_to_priority(dscp: u8) -> u8 {
    let tos = (dscp << 2) & 0xfc;
    IP_TOS2PRIO[((tos & 0x1e) >> 1) as usize]
}

/// Linux `prio` qdisc.
pub struct Prio {
    bands: Vec<Child>,
    priomap: [u8; PRIOMAP_LEN],
    filters: Filters,
    /// Bit b set: band b may hold packets (cleared lazily when it is found empty).
    active: u32,
}

impl Prio {
    /// `children.len()` bands (2..=16); every priomap entry must name a band.
    pub fn new(
        children: Vec<Child>,
        priomap: [u8; PRIOMAP_LEN],
        filters: Filters,
    ) -> Result<Self, ConfigError> {
        let n = children.len();
        if !(2..=MAX_BANDS).contains(&n) {
            return Err(ConfigError::new(
                "bands",
                format!("{n} is outside 2..=16 (TCQ_PRIO_BANDS)"),
            ));
        }
        if let Some(b) = priomap.iter().find(|&&b| b as usize >= n) {
            return Err(ConfigError::new(
                "priomap",
                format!("entry {b} is not a band of {n} (tc: \"Illegal priomap\")"),
            ));
        }
        filters.check(n)?;
        Ok(Prio {
            bands: children,
            priomap,
            filters,
            active: 0,
        })
    }

    /// Reads `bands` (default 3), `priomap` (16 band numbers), `limit`
    /// (packets of each default pfifo band, default 1000 = tx_queue_len).
    pub fn from_params(p: &mut Params, filters: Filters) -> Result<Self, ConfigError> {
        let bands = p.opt_u64("bands")?.unwrap_or(3);
        if !(2..=MAX_BANDS as u64).contains(&bands) {
            return Err(ConfigError::new(
                "bands",
                format!("{bands} is outside 2..=16 (TCQ_PRIO_BANDS)"),
            ));
        }
        let limit = p.opt_packets("limit")?.unwrap_or(DEFAULT_TXQUEUELEN as u64);
        let limit = u32::try_from(limit)
            .map_err(|_| ConfigError::new("limit", format!("{limit} packets is too many")))?;
        let priomap = match p.opt_str("priomap")? {
            None => DEFAULT_PRIOMAP,
            Some(s) => parse_priomap(&s)?,
        };
        let children = (0..bands).map(|_| pfifo(limit)).collect();
        Self::new(children, priomap, filters)
    }

    /// The band a packet goes to.
    #[inline]
    pub fn band_of(&self, pkt: &Packet) -> usize {
        match self.filters.classify(pkt) {
            Some(b) => b,
            None => self.priomap[dscp_to_priority(pkt.dscp) as usize] as usize,
        }
    }

    /// Band `i`'s child.
    pub fn band(&self, i: usize) -> &dyn Shaper {
        self.bands[i].as_ref()
    }
}

/// 16 band numbers separated by spaces or commas.
fn parse_priomap(s: &str) -> Result<[u8; PRIOMAP_LEN], ConfigError> {
    let v: Vec<u8> = s
        .split([' ', ','])
        .filter(|x| !x.is_empty())
        .map(|x| x.parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| ConfigError::new("priomap", format!("expected 16 band numbers, got '{s}'")))?;
    v.try_into().map_err(|v: Vec<u8>| {
        ConfigError::new(
            "priomap",
            format!("expected 16 band numbers, got {}", v.len()),
        )
    })
}

impl Shaper for Prio {
    #[inline]
    fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), Dropped> {
        let b = self.band_of(&pkt);
        // A head-drop child may take the packet and hand back an older
        // one: the band is active whenever its child holds something.
        let r = self.bands[b].enqueue(now, pkt);
        if self.bands[b].backlog_packets() > 0 {
            self.active |= 1 << b;
        }
        r
    }

    #[inline]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        let mut m = self.active;
        while m != 0 {
            let b = m.trailing_zeros() as usize;
            m &= m - 1;
            if let Some(p) = self.bands[b].dequeue(now) {
                return Some(p);
            }
            if self.bands[b].backlog_packets() == 0 {
                self.active &= !(1 << b);
            }
        }
        None
    }

    fn next_ready(&self, now: Instant) -> Option<Instant> {
        let mut m = self.active;
        let mut best: Option<Instant> = None;
        while m != 0 {
            let b = m.trailing_zeros() as usize;
            m &= m - 1;
            if let Some(t) = self.bands[b].next_ready(now) {
                if t <= now {
                    return Some(t);
                }
                best = Some(best.map_or(t, |x| x.min(t)));
            }
        }
        best
    }

    fn backlog_packets(&self) -> usize {
        self.bands.iter().map(|c| c.backlog_packets()).sum()
    }
    fn backlog_bytes(&self) -> u64 {
        self.bands.iter().map(|c| c.backlog_bytes()).sum()
    }

    fn drain_dropped(&mut self, out: &mut Vec<Dropped>) {
        for b in &mut self.bands {
            b.drain_dropped(out);
        }
    }
    fn describe(&self) -> Vec<(&'static str, String)> {
        let pm: Vec<String> = self.priomap.iter().map(|b| b.to_string()).collect();
        let mut d = vec![
            ("kind", "prio".to_string()),
            ("bands", self.bands.len().to_string()),
            ("priomap", pm.join(" ")),
            ("filters", self.filters.list.len().to_string()),
        ];
        for c in &self.bands {
            d.push(("band", inline(&c.describe())));
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Classifier;
    use crate::shaper::Tbf;
    use crate::units::{Bytes, Rate};

    fn prio3() -> Prio {
        Prio::from_params(&mut Params::new("prio", [("limit", "100")]), Filters::new()).unwrap()
    }

    #[test]
    fn a_child_that_displaces_an_older_packet_still_activates_its_band() {
        use crate::sched::testutil::{check_displacing_child_activates, Displacing};
        let bands = (0..3)
            .map(|_| Box::new(Displacing::default()) as Child)
            .collect();
        let mut q = Prio::new(bands, DEFAULT_PRIOMAP, Filters::new()).unwrap();
        check_displacing_child_activates(&mut q);
    }

    #[test]
    fn dscp_maps_through_rt_tos2priority_and_the_default_priomap() {
        // tos2prio by the three low DSCP bits.
        let pr: Vec<u8> = (0..8).map(dscp_to_priority).collect();
        assert_eq!(pr, [0, 0, 2, 2, 6, 6, 4, 4]);
        let q = prio3();
        let band = |d: u8| {
            let mut p = Packet::new(0, 100);
            p.dscp = d;
            q.band_of(&p)
        };
        assert_eq!(band(0), 1); // best effort
        assert_eq!(band(46), 1); // EF: low bits 110 → interactive bulk → 1
        assert_eq!(band(10), 2); // AF11: 010 → bulk → band 2
        assert_eq!(band(4), 0); // 100 → interactive → band 0
        assert_eq!(band(48), 1); // CS6
    }

    #[test]
    fn band_zero_is_strictly_preferred() {
        let f = Filters::new().push(Classifier::parse("dscp ef").unwrap(), 0);
        let mut q = Prio::new(
            vec![pfifo(1000), pfifo(1000), pfifo(1000)],
            DEFAULT_PRIOMAP,
            f,
        )
        .unwrap();
        let t = Instant::ZERO;
        // Interleave 300 best-effort and 300 EF packets.
        for i in 0..600u64 {
            let mut p = Packet::new(i, 1000);
            p.dscp = if i % 2 == 0 { 46 } else { 0 };
            q.enqueue(t, p).unwrap();
        }
        let out: Vec<u8> = std::iter::from_fn(|| q.dequeue(t))
            .map(|p| p.dscp)
            .collect();
        assert_eq!(out.len(), 600);
        assert!(out[..300].iter().all(|&d| d == 46));
        assert!(out[300..].iter().all(|&d| d == 0));
        assert_eq!(q.next_ready(t), None);
    }

    #[test]
    fn a_waiting_shaped_band_does_not_block_lower_bands() {
        let tbf = Tbf::new(
            Rate::from_bps(8_000_000),
            Bytes::new(1000),
            crate::shaper::tbf::TbfLimit::Bytes(Bytes::new(100_000)),
            None,
            None,
            Bytes::new(0),
        )
        .unwrap();
        let f = Filters::new().push(Classifier::parse("dscp ef").unwrap(), 0);
        let mut q = Prio::new(
            vec![Box::new(tbf), pfifo(10), pfifo(10)],
            DEFAULT_PRIOMAP,
            f,
        )
        .unwrap();
        let t = Instant::ZERO;
        for i in 0..2 {
            let mut p = Packet::new(i, 1000);
            p.dscp = 46;
            q.enqueue(t, p).unwrap();
        }
        q.enqueue(t, Packet::new(9, 1000)).unwrap();
        assert_eq!(q.dequeue(t).unwrap().id, 0);
        // Band 0 waits 1 ms for tokens; band 1 goes meanwhile.
        assert_eq!(q.next_ready(t), Some(t));
        assert_eq!(q.dequeue(t).unwrap().id, 9);
        assert_eq!(q.next_ready(t), Some(Instant::from_ns(1_000_000)));
        assert!(q.dequeue(t).is_none());
        assert_eq!(q.dequeue(Instant::from_ns(1_000_000)).unwrap().id, 1);
    }

    #[test]
    fn bad_configs_are_refused() {
        let e = Prio::from_params(&mut Params::new("prio", [("bands", "1")]), Filters::new());
        assert_eq!(e.err().unwrap().param, "bands");
        let e = Prio::from_params(
            &mut Params::new(
                "prio",
                [
                    ("bands", "2"),
                    ("priomap", "1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1"),
                ],
            ),
            Filters::new(),
        );
        assert_eq!(e.err().unwrap().param, "priomap");
        let e = Prio::from_params(
            &mut Params::new("prio", [("priomap", "1 2")]),
            Filters::new(),
        );
        assert!(e.err().unwrap().message.contains("got 2"));
        let f = Filters::new().push(Classifier::Any, 3);
        assert_eq!(
            Prio::from_params(&mut Params::new("prio", Vec::<(&str, &str)>::new()), f)
                .err()
                .unwrap()
                .param,
            "filter"
        );
        let q = prio3();
        assert_eq!(q.describe()[2].1, "1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1");
    }
}
