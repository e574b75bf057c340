//! pcap captures (nanosecond format, LINKTYPE_ETHERNET) of a link
//! direction's frames, written with the `pcap-file` crate to a temporary
//! file renamed into place when the run stops (never a half file at the
//! final path). Timestamps are the emulator's clock (CLOCK_MONOTONIC)
//! shifted to CLOCK_REALTIME by one offset taken at start, so Wireshark
//! shows real dates and the intervals are the model's.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct Capture {
    writer: PcapWriter<BufWriter<File>>,
    tmp: PathBuf,
    path: PathBuf,
    /// realtime − monotonic at start, ns.
    offset_ns: i128,
    pub packets: u64,
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    path.with_file_name(name)
}

impl Capture {
    pub fn create(path: &Path, snaplen: u32, offset_ns: i128) -> Result<Capture, String> {
        let tmp = tmp_path(path);
        let f = File::create(&tmp).map_err(|e| format!("capture {}: {e}", path.display()))?;
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::native(),
        };
        let writer = PcapWriter::with_header(BufWriter::with_capacity(1 << 20, f), header)
            .map_err(|e| format!("capture {}: {e}", path.display()))?;
        Ok(Capture {
            writer,
            tmp,
            path: path.to_path_buf(),
            offset_ns,
            packets: 0,
        })
    }

    /// Appends `frame` seen at monotonic `t_ns`.
    pub fn write(&mut self, t_ns: u64, frame: &[u8]) -> Result<(), String> {
        let real = (i128::from(t_ns) + self.offset_ns).max(0) as u128;
        let ts = Duration::new((real / 1_000_000_000) as u64, (real % 1_000_000_000) as u32);
        let pkt = PcapPacket::new(ts, frame.len() as u32, frame);
        self.writer
            .write_packet(&pkt)
            .map_err(|e| format!("capture {}: {e}", self.path.display()))?;
        self.packets += 1;
        Ok(())
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and renames the file into place.
    pub fn finish(self) -> Result<(), String> {
        let mut w = self.writer.into_writer();
        std::io::Write::flush(&mut w)
            .map_err(|e| format!("capture {}: {e}", self.path.display()))?;
        drop(w);
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| format!("capture {}: {e}", self.path.display()))
    }
}
