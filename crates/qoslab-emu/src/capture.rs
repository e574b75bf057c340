//! pcap captures (nanosecond format, LINKTYPE_ETHERNET) of a link
//! direction's frames, written with the `pcap-file` crate to a temporary
//! file renamed into place when the run stops (never a half file at the
//! final path). Timestamps are the emulator's clock (CLOCK_MONOTONIC)
//! shifted to CLOCK_REALTIME by one offset taken at start, so Wireshark
//! shows real dates and the intervals are the model's.
//!
//! The forwarder's thread only copies each record into memory: chunks of
//! [`CHUNK_BYTES`] go to a writer thread of their own (ordinary
//! scheduling, any CPU), which does the `write()`s. Measured (issue 16,
//! 2026-11-25, strace and perf of the forwarder thread on the delay line
//! with a capture of a hop carrying 300 Mbit/s): each 1 MB `write()` of a
//! buffered writer in the forwarder's own loop took 3 – 19 ms into ext4's
//! page cache on a busy host, a quarter of the thread's CPU, and every frame
//! due meanwhile was released that much late.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Duration;

/// A chunk handed to the writer thread once this full.
pub const CHUNK_BYTES: usize = 256 << 10;
/// Chunks in flight to the writer thread (64 MiB): a disk slower than the
/// capture for longer than this holds the forwarder back (no frame of a
/// capture is ever dropped).
pub const CHUNKS_IN_FLIGHT: usize = 256;

/// The in-memory side of the writer thread: `pcap-file` writes records
/// into it; full chunks are sent to the thread, and come back to be reused.
struct ChunkWriter {
    buf: Vec<u8>,
    tx: Option<SyncSender<Vec<u8>>>,
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl ChunkWriter {
    fn spawn(mut file: File, name: String) -> io::Result<ChunkWriter> {
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
        let (back, spare) = mpsc::sync_channel::<Vec<u8>>(4);
        let thread = std::thread::Builder::new()
            .name("qoslab-pcap".into())
            .spawn(move || {
                // Spawned by a forwarder thread: drop its SCHED_FIFO and its
                // CPU, which are for the real-time loop, not for disk I/O.
                crate::sys::ordinary_scheduling();
                for mut chunk in rx {
                    file.write_all(&chunk)?;
                    chunk.clear();
                    let _ = back.try_send(chunk);
                }
                file.flush()
            })
            .map_err(|e| io::Error::other(format!("{name}: writer thread: {e}")))?;
        Ok(ChunkWriter {
            buf: Vec::with_capacity(CHUNK_BYTES),
            tx: Some(tx),
            spare,
            thread: Some(thread),
        })
    }

    fn hand_over(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK_BYTES));
        let full = std::mem::replace(&mut self.buf, next);
        let sent = self.tx.as_ref().map(|tx| tx.send(full));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped on a write error: report that error.
            _ => {
                self.tx = None;
                Err(self
                    .join()
                    .err()
                    .unwrap_or_else(|| io::Error::other("the capture's writer thread stopped")))
            }
        }
    }

    fn join(&mut self) -> io::Result<()> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("writer thread panicked"))),
            None => Ok(()),
        }
    }

    /// Hands over the rest, stops the thread, returns its first error.
    fn close(&mut self) -> io::Result<()> {
        let handed = self.hand_over();
        self.tx = None;
        let joined = self.join();
        handed.and(joined)
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.hand_over()?;
        }
        Ok(data.len())
    }

    /// Nothing: the chunks go when full or at `close`, never per record.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

pub struct Capture {
    writer: PcapWriter<ChunkWriter>,
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
        let chunks = ChunkWriter::spawn(f, path.display().to_string())
            .map_err(|e| format!("capture {}: {e}", path.display()))?;
        let writer = PcapWriter::with_header(chunks, header)
            .map_err(|e| format!("capture {}: {e}", path.display()))?;
        Ok(Capture {
            writer,
            tmp,
            path: path.to_path_buf(),
            offset_ns,
            packets: 0,
        })
    }

    /// Appends `frame` seen at monotonic `t_ns` (a copy into memory; the
    /// writer thread writes it to the file).
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

    /// Writes the rest, waits for the writer thread and renames the file
    /// into place.
    pub fn finish(self) -> Result<(), String> {
        let mut w = self.writer.into_writer();
        w.close()
            .map_err(|e| format!("capture {}: {e}", self.path.display()))?;
        drop(w);
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| format!("capture {}: {e}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_chunks_reach_the_file_whole_and_in_order() {
        let dir = std::env::temp_dir().join(format!("qoslab-capture-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.pcap");
        let mut c = Capture::create(&path, 1514, 0).unwrap();
        // 3000 frames of 1514 B: about 18 chunks through the writer thread.
        let n = 3000u64;
        for i in 0..n {
            let mut f = vec![0u8; 1514];
            f[..8].copy_from_slice(&i.to_be_bytes());
            c.write(1_000_000_000 + i * 1000, &f).unwrap();
        }
        assert!(!path.exists(), "never a half file at the final path");
        c.finish().unwrap();
        let data = std::fs::read(&path).unwrap();
        let mut r = pcap_file::pcap::PcapReader::new(&data[..]).unwrap();
        let mut seen = 0u64;
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            assert_eq!(p.data.len(), 1514);
            assert_eq!(u64::from_be_bytes(p.data[..8].try_into().unwrap()), seen);
            assert_eq!(p.timestamp, Duration::new(1, (seen * 1000) as u32));
            seen += 1;
        }
        assert_eq!(seen, n);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_error_of_the_writer_thread_reaches_the_forwarder() {
        // /dev/full: every write fails with ENOSPC.
        let Ok(f) = File::options().write(true).open("/dev/full") else {
            return;
        };
        let mut w = ChunkWriter::spawn(f, "full".into()).unwrap();
        let chunk = vec![0u8; CHUNK_BYTES];
        // The first chunk is taken by the thread, whose write fails; a later
        // hand-over or the close reports that error, not a vague one.
        let mut err = None;
        for _ in 0..4 {
            if let Err(e) = w.write_all(&chunk) {
                err = Some(e);
                break;
            }
        }
        let err = err.or_else(|| w.close().err()).expect("an error");
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    }
}
