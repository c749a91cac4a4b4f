//! Fuzzes the frame parser: it must never panic, and whatever it accepts must re-emit to a
//! frame that parses to the same meaning.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgnn_wire::frame;

fuzz_target!(|data: &[u8]| {
    if let Ok((repr, lanes)) = frame::parse(data) {
        let mut buf = [0u8; 256];
        let n = repr.emit(lanes.as_ref(), &mut buf).expect("re-emit of a parsed frame");
        let again = frame::parse(&buf[..n]).expect("re-parse of an emitted frame");
        assert_eq!(again, (repr, lanes));
    }
});
