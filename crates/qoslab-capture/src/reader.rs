//! Capture files in: pcap (µs and ns, either byte order) and pcapng (any block
//! order, several interfaces, unknown blocks skipped), optionally xz-compressed.
//! Record framing is `pcap-parser`'s; this module only walks the records and
//! turns their timestamps into integer nanoseconds.

use pcap_parser::pcapng::{Block, SectionHeaderBlock};
use pcap_parser::{parse_block_be, parse_block_le, parse_pcap_frame, parse_pcap_frame_be};
use pcap_parser::{parse_pcap_header, parse_sectionheaderblock};
use std::borrow::Cow;
use std::io::Read;

use crate::CaptureError;

/// One captured frame.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Whole seconds of the timestamp.
    pub ts_sec: u64,
    /// Nanoseconds within the second.
    pub ts_nsec: u32,
    /// Link type of the interface that captured it (LINKTYPE_* numbers).
    pub linktype: i32,
    /// Length of the frame on the wire (may exceed `data.len()` with a snap length).
    pub orig_len: u32,
    /// The captured bytes.
    pub data: &'a [u8],
}

impl Record<'_> {
    /// Timestamp in integer nanoseconds since the epoch.
    pub fn ts_ns(&self) -> i64 {
        i64::try_from(self.ts_sec)
            .unwrap_or(i64::MAX)
            .saturating_mul(1_000_000_000)
            .saturating_add(self.ts_nsec as i64)
    }
}

/// What reading a whole file found besides the records.
#[derive(Debug, Default, Clone)]
pub struct ReadSummary {
    pub format: &'static str,
    pub records: u64,
    /// Problems that ended the read early or were skipped (truncated tail, bad block).
    pub warnings: Vec<String>,
}

const XZ_MAGIC: &[u8] = &[0xFD, b'7', b'z', b'X', b'Z', 0x00];

/// The file's bytes, decompressed if they are xz (`.pcap.xz` as published).
pub fn decompress(bytes: &[u8]) -> Result<Cow<'_, [u8]>, CaptureError> {
    if !bytes.starts_with(XZ_MAGIC) {
        return Ok(Cow::Borrowed(bytes));
    }
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(8));
    xz2::read::XzDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| CaptureError::new(format!("xz decompression failed: {e}")))?;
    Ok(Cow::Owned(out))
}

/// Walk every record of a pcap or pcapng capture held in memory.
///
/// A truncated or corrupted tail ends the walk with a warning (the records
/// before it are kept); a file that is not a capture at all is an error.
pub fn read_records<'a>(
    bytes: &'a [u8],
    mut f: impl FnMut(&Record<'a>),
) -> Result<ReadSummary, CaptureError> {
    if bytes.is_empty() {
        return Err(CaptureError::new("empty file (no capture header)"));
    }
    if bytes.len() >= 4 && bytes[..4] == [0x0A, 0x0D, 0x0D, 0x0A] {
        return read_pcapng(bytes, &mut f);
    }
    read_pcap(bytes, &mut f)
}

fn read_pcap<'a>(
    bytes: &'a [u8],
    f: &mut impl FnMut(&Record<'a>),
) -> Result<ReadSummary, CaptureError> {
    let (mut rest, hdr) = parse_pcap_header(bytes).map_err(|_| {
        let magic = bytes.iter().take(4).map(|b| format!("{b:02x}")).collect::<String>();
        CaptureError::new(format!(
            "not a pcap or pcapng capture (first bytes {magic}; expected a pcap magic a1b2c3d4/a1b23c4d or a pcapng section header)"
        ))
    })?;
    let nanos = hdr.is_nanosecond_precision();
    let be = hdr.is_bigendian();
    let linktype = hdr.network.0;
    let mut summary = ReadSummary {
        format: "pcap",
        ..Default::default()
    };
    while !rest.is_empty() {
        let parsed = if be {
            parse_pcap_frame_be(rest)
        } else {
            parse_pcap_frame(rest)
        };
        match parsed {
            Ok((next, block)) => {
                let ts_nsec = if nanos {
                    block.ts_usec
                } else {
                    block.ts_usec.saturating_mul(1000)
                };
                if ts_nsec >= 1_000_000_000 {
                    summary.warnings.push(format!(
                        "record {}: sub-second timestamp {} out of range; record skipped",
                        summary.records + 1,
                        block.ts_usec
                    ));
                } else {
                    summary.records += 1;
                    f(&Record {
                        ts_sec: block.ts_sec as u64,
                        ts_nsec,
                        linktype,
                        orig_len: block.origlen,
                        data: block.data,
                    });
                }
                rest = next;
            }
            Err(_) => {
                summary.warnings.push(format!(
                    "capture truncated or corrupted after record {} ({} trailing bytes ignored)",
                    summary.records,
                    rest.len()
                ));
                break;
            }
        }
    }
    Ok(summary)
}

#[derive(Clone, Copy)]
struct Interface {
    linktype: i32,
    /// Timestamp units per second.
    resolution: u64,
    offset_s: i64,
}

fn read_pcapng<'a>(
    bytes: &'a [u8],
    f: &mut impl FnMut(&Record<'a>),
) -> Result<ReadSummary, CaptureError> {
    let (mut rest, shb): (&[u8], SectionHeaderBlock) = parse_sectionheaderblock(bytes)
        .map_err(|_| CaptureError::new("pcapng section header block is corrupted"))?;
    let mut be = shb.big_endian();
    let mut ifaces: Vec<Interface> = Vec::new();
    let mut summary = ReadSummary {
        format: "pcapng",
        ..Default::default()
    };
    while !rest.is_empty() {
        let parsed = if be {
            parse_block_be(rest)
        } else {
            parse_block_le(rest)
        };
        let (next, block) = match parsed {
            Ok(v) => v,
            Err(_) => {
                summary.warnings.push(format!(
                    "capture truncated or corrupted after record {} ({} trailing bytes ignored)",
                    summary.records,
                    rest.len()
                ));
                break;
            }
        };
        match block {
            Block::SectionHeader(s) => {
                be = s.big_endian();
                ifaces.clear();
            }
            Block::InterfaceDescription(idb) => ifaces.push(Interface {
                linktype: idb.linktype.0,
                resolution: idb.ts_resolution().unwrap_or(1_000_000).max(1),
                offset_s: idb.ts_offset(),
            }),
            Block::EnhancedPacket(epb) => match ifaces.get(epb.if_id as usize) {
                Some(iface) => {
                    let ticks = ((epb.ts_high as u64) << 32) | epb.ts_low as u64;
                    let sec = ticks / iface.resolution;
                    let frac = ticks % iface.resolution;
                    let ts_nsec = (frac as u128 * 1_000_000_000 / iface.resolution as u128) as u32;
                    let ts_sec = (sec as i64).saturating_add(iface.offset_s).max(0) as u64;
                    summary.records += 1;
                    let caplen = (epb.caplen as usize).min(epb.data.len());
                    f(&Record {
                        ts_sec,
                        ts_nsec,
                        linktype: iface.linktype,
                        orig_len: epb.origlen,
                        data: &epb.data[..caplen],
                    });
                }
                None => summary.warnings.push(format!(
                    "packet block for undeclared interface {} skipped",
                    epb.if_id
                )),
            },
            Block::SimplePacket(spb) => {
                // No timestamp in a simple packet block: it inherits time 0.
                if let Some(iface) = ifaces.first() {
                    summary.records += 1;
                    let caplen = (spb.origlen as usize).min(spb.data.len());
                    f(&Record {
                        ts_sec: 0,
                        ts_nsec: 0,
                        linktype: iface.linktype,
                        orig_len: spb.origlen,
                        data: &spb.data[..caplen],
                    });
                }
            }
            // Name resolution, statistics, custom and unknown blocks carry no packets.
            _ => {}
        }
        rest = next;
    }
    Ok(summary)
}
