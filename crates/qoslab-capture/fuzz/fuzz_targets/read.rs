//! Any bytes: the reader, the TCP analysis and the policing detector return
//! an error or a result, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qoslab_capture::analysis::{analyze, Options};

fuzz_target!(|data: &[u8]| {
    let _ = analyze(data, Options::default());
    if let Ok((packets, _)) = qoslab_capture::policing_input(data, None) {
        let _ = qoslab_capture::policing::detect_all(&packets);
    }
});
