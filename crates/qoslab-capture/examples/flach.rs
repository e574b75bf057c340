//! `cargo run --release -p qoslab-capture --example flach -- CAPTURE [PORT]`:
//! the policing detector's rows in the published CSV layout.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let port = args.get(2).map(|p| p.parse::<u16>().expect("port"));
    let bytes = qoslab_capture::reader::decompress(&std::fs::read(path).expect("read"))
        .expect("xz")
        .into_owned();
    let (pk, _) = qoslab_capture::policing_input(&bytes, port).expect("capture");
    let name = std::path::Path::new(path)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let stem = name.trim_end_matches(".xz").trim_end_matches(".pcap");
    for row in qoslab_capture::policing::detect_all(&pk) {
        if row.direction == "b2a" {
            println!("{}", row.flach_csv(&format!("{stem}.filtered")));
        }
    }
}
