//! `cargo run -p qoslab-capture --example flows -- CAPTURE`: the per-flow analysis, debug-printed.
fn main() {
    let path = std::env::args().nth(1).expect("usage: flows CAPTURE");
    let bytes = qoslab_capture::reader::decompress(&std::fs::read(&path).expect("read"))
        .expect("xz")
        .into_owned();
    let a = qoslab_capture::analysis::analyze(&bytes, Default::default()).expect("analyze");
    println!(
        "records {} ip {} warnings {:?}",
        a.records, a.ip_packets, a.warnings
    );
    if std::env::var_os("QOSLAB_SEGMENTS").is_some() {
        dump(&a);
        return;
    }
    for f in &a.flows {
        println!(
            "{} {} {} -> {} pk {} sent {} retx {} (fast {} rto {}) ooo {} dup {} sack {} rtt {:?} delivered {} goodput {:.0} tmo {} fr {} bif {}",
            f.id, f.protocol, f.from, f.to, f.packets, f.packets_sent, f.retransmits, f.fast_retransmits,
            f.rto_retransmits, f.out_of_order, f.dup_acks, f.sack_blocks, f.rtt, f.bytes_delivered, f.goodput_bps,
            f.timeouts, f.fast_recoveries, f.max_bytes_in_flight
        );
    }
}

/// With QOSLAB_SEGMENTS=1: the retransmitted segments' times (ns from the first record).
#[allow(dead_code)]
fn dump(a: &qoslab_capture::analysis::Analysis) {
    let s = &a.series;
    for i in 0..s.seg_time_ns.len() {
        if s.seg_retransmit[i] {
            println!("R {} {} {}", s.seg_flow[i], s.seg_time_ns[i], s.seg_seq[i]);
        }
    }
}
