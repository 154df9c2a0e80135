//! One audit line: the fast path (`skim::parse_object`) and serde_json must agree. Whatever the
//! fast path accepts, serde accepts too, with the same callbacks in the same order; and the
//! line reader used by pass 1 (fast path, then serde) gives serde's result.
#![no_main]

use deploy_gate::json::{parse_object_line, read_object_line, ValueError, ValueSink};
use deploy_gate::json::skim::parse_object;
use libfuzzer_sys::fuzz_target;

/// Reads each value the way its key's first letter says (`s` scalar, `f` flag, `r` raw, `o`
/// object, `n` nested field `s`, else skip) and records what it got.
fn record<'de>(log: &mut Vec<String>, key: &str, v: &mut dyn ValueSink<'de>) -> Result<(), ValueError> {
    let got = match key.as_bytes().first() {
        Some(b's') => format!("{:?}", v.scalar()?),
        Some(b'f') => format!("{}", v.flag()?),
        Some(b'r') => v.raw()?.get().to_owned(),
        Some(b'o') => {
            let mut inner = Vec::new();
            let is = v.object(&mut |k, s| record(&mut inner, k, s))?;
            format!("{is} {inner:?}")
        }
        Some(b'n') => format!("{:?}", deploy_gate::json::nested_field(v, "s", |s| s.scalar())?),
        _ => {
            v.skip()?;
            "skipped".into()
        }
    };
    log.push(format!("{key}={got}"));
    Ok(())
}

fuzz_target!(|line: &[u8]| {
    let mut slow = Vec::new();
    let serde = parse_object_line(line, |k, v| record(&mut slow, k, v));
    let through_reader = read_object_line(line, |log: &mut Vec<String>, k, v| record(log, k, v));
    assert_eq!(
        through_reader,
        serde.map(|()| slow.clone()),
        "the line reader and serde differ on {:?}",
        String::from_utf8_lossy(line)
    );
    let Ok(text) = std::str::from_utf8(line) else {
        return;
    };
    let mut fast = Vec::new();
    if parse_object(text, &mut |k, v| record(&mut fast, k, v)).is_ok() {
        assert_eq!(serde, Ok(()), "the fast path accepted what serde refuses: {text:?}");
        assert_eq!(fast, slow, "different callbacks for {text:?}");
    }
});
