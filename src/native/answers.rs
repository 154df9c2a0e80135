//! The models' answers read again from a verdict file by byte range, for the cases a rendering
//! shows (the HTML report's, at most 200): the file is never read whole for them.

use crate::input::Side;
use crate::session::Session;
use crate::verdicts::{read_output, OutputAt};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// `side`'s answers of the test cases at `cases` (their places in the test set, which are the
/// report's cases), read from the verdict file at `path` by byte range: each the answer's JSON
/// text and whether its record says it was cut. A case whose record carries no answer is left
/// out. An error names the file: it cannot be read again, or a range no longer holds an answer
/// (the file changed since it was read).
pub fn read_case_answers(
    session: &Session,
    side: Side,
    path: &Path,
    cases: &[usize],
) -> Result<HashMap<usize, (String, bool)>, String> {
    let cannot = |e: std::io::Error| format!("cannot read {} again: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let mut answers = HashMap::new();
    for &index in cases {
        let Some(at) = session.output_at(side, index) else {
            continue;
        };
        let changed = || {
            format!(
                "{}: bytes {}–{} no longer hold a case's answer: the file changed since it was read",
                path.display(),
                at.start,
                at.end
            )
        };
        let mut bytes = vec![0; usize::try_from(at.end - at.start).map_err(|_| changed())?];
        file.seek(SeekFrom::Start(at.start))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(cannot)?;
        let here = OutputAt {
            start: 0,
            end: bytes.len() as u64,
            ..at
        };
        let text = read_output(&bytes, &here).ok_or_else(changed)?;
        answers.insert(index, (text, at.truncated));
    }
    Ok(answers)
}
