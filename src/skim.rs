//! A fast path for reading audit lines: the same callbacks as [`crate::json::parse_object_line`],
//! for lines in the shape a writer produces, several times faster than going through serde.
//!
//! It never decides anything on its own: whenever a line is not plainly well-formed (a byte
//! below 0x20, an escape in a key or in a string the caller reads, a number other than a plain
//! non-negative integer where the caller reads one, deep nesting, any syntax error) it gives up
//! with [`Bail`] and the caller parses the line again with serde_json. What it accepts,
//! serde_json accepts too, with the same callbacks in the same order (a differential test
//! checks this on random and mutated lines).

use crate::json::{Scalar, ValueSink};
use std::borrow::Cow;

/// Nesting deeper than this is left to serde_json.
const MAX_DEPTH: u32 = 64;

/// The fast path gave up; parse the line with serde_json instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

/// The entry callback, as [`crate::json::parse_object_line`] takes it.
type OnEntry<'f, 'de> = dyn FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), String> + 'f;

/// Lines up to this many 64-byte blocks keep their bitmaps on the stack.
const STACK_BLOCKS: usize = 64;

/// Fills `bits` (one word per 64 bytes, bit i for byte i) with the positions of quotes and
/// backslashes; false when a byte below 0x20 is present. On x86_64 it uses the widest vectors
/// the processor has (AVX-512BW, AVX2, or the baseline SSE2), chosen once per line.
fn index_specials(bytes: &[u8], bits: &mut [u64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the processor has AVX-512BW (checked just above).
            return unsafe { simd::index_avx512(bytes, bits) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (checked just above).
            return unsafe { simd::index_avx2(bytes, bits) };
        }
    }
    index_with(bytes, bits, simd::block_bits)
}

/// The loop of [`index_specials`] around one flavour of block classifier (inlined into each
/// flavour's function, so the classifier is compiled with that flavour's features).
#[inline(always)]
fn index_with(bytes: &[u8], bits: &mut [u64], block_bits: impl Fn(&[u8; 64]) -> (u64, bool)) -> bool {
    let mut control = false;
    let mut blocks = bytes.chunks_exact(64);
    for (word, block) in bits.iter_mut().zip(&mut blocks) {
        let (b, c) = block_bits(block.try_into().expect("64 bytes"));
        *word = b;
        control |= c;
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        // The last bytes, padded with spaces (neither special nor control).
        let mut tail = [b' '; 64];
        tail[..rest.len()].copy_from_slice(rest);
        let (b, c) = block_bits(&tail);
        bits[bits.len() - 1] = b;
        control |= c;
    }
    !control
}

/// Classifies 64 bytes at once: the quote-or-backslash bits and whether a byte is below 0x20.
mod simd {
    #[cfg(target_arch = "x86_64")]
    use super::index_with;
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::*;

    #[cfg(target_arch = "x86_64")]
    pub fn block_bits(block: &[u8; 64]) -> (u64, bool) {
        // SAFETY: SSE2 is part of the x86_64 baseline, so the feature is always present.
        unsafe { sse2(block) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse2")]
    pub fn sse2(block: &[u8; 64]) -> (u64, bool) {
        let (quote, backslash) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8));
        // Bytes below 0x20, compared as signed after flipping the top bit.
        let (flip, limit) = (_mm_set1_epi8(i8::MIN), _mm_set1_epi8((0x20i32 - 128) as i8));
        let (mut bits, mut control) = (0u64, 0i32);
        for (k, c) in block.chunks_exact(16).enumerate() {
            // SAFETY: `c` is 16 readable bytes; the load has no alignment requirement.
            let v = unsafe { _mm_loadu_si128(c.as_ptr().cast::<__m128i>()) };
            let special = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
            control |= _mm_movemask_epi8(_mm_cmplt_epi8(_mm_xor_si128(v, flip), limit));
            bits |= u64::from(_mm_movemask_epi8(special) as u16) << (16 * k);
        }
        (bits, control != 0)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub fn avx2(block: &[u8; 64]) -> (u64, bool) {
        let (quote, backslash) = (_mm256_set1_epi8(b'"' as i8), _mm256_set1_epi8(b'\\' as i8));
        let (flip, limit) = (_mm256_set1_epi8(i8::MIN), _mm256_set1_epi8((0x20i32 - 128) as i8));
        let (mut bits, mut control) = (0u64, 0i32);
        for (k, c) in block.chunks_exact(32).enumerate() {
            // SAFETY: `c` is 32 readable bytes; the load has no alignment requirement.
            let v = unsafe { _mm256_loadu_si256(c.as_ptr().cast::<__m256i>()) };
            let special = _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash));
            control |= _mm256_movemask_epi8(_mm256_cmpgt_epi8(limit, _mm256_xor_si256(v, flip)));
            bits |= u64::from(_mm256_movemask_epi8(special) as u32) << (32 * k);
        }
        (bits, control != 0)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    pub fn avx512(block: &[u8; 64]) -> (u64, bool) {
        // SAFETY: `block` is 64 readable bytes; the load has no alignment requirement.
        let v = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
        let bits = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'"' as i8))
            | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\\' as i8));
        (bits, _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(0x20)) != 0)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub fn index_avx2(bytes: &[u8], bits: &mut [u64]) -> bool {
        index_with(bytes, bits, |b| avx2(b))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    pub fn index_avx512(bytes: &[u8], bits: &mut [u64]) -> bool {
        index_with(bytes, bits, |b| avx512(b))
    }

    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    pub fn block_bits(block: &[u8; 64]) -> (u64, bool) {
        use core::arch::wasm32::*;
        let (quote, backslash, limit) = (u8x16_splat(b'"'), u8x16_splat(b'\\'), u8x16_splat(0x20));
        let (mut bits, mut control) = (0u64, false);
        for (k, c) in block.chunks_exact(16).enumerate() {
            let a: [u8; 16] = c.try_into().expect("16 bytes");
            let v = u8x16(
                a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15],
            );
            let special = v128_or(u8x16_eq(v, quote), u8x16_eq(v, backslash));
            control |= v128_any_true(u8x16_lt(v, limit));
            bits |= u64::from(u8x16_bitmask(special)) << (16 * k);
        }
        (bits, control)
    }

    #[cfg(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))))]
    pub fn block_bits(block: &[u8; 64]) -> (u64, bool) {
        let (mut bits, mut control) = (0u64, false);
        for (i, &b) in block.iter().enumerate() {
            bits |= u64::from((b == b'"') | (b == b'\\')) << i;
            control |= b < 0x20;
        }
        (bits, control)
    }
}

/// Visits the entries of a one-line JSON object, as [`crate::json::parse_object_line`] does
/// after UTF-8 validation; `Err(Bail)` when the line needs serde_json.
pub fn parse_object<'de>(text: &'de str, on_entry: &mut OnEntry<'_, 'de>) -> Result<(), Bail> {
    let bytes = text.as_bytes();
    let blocks = bytes.len().div_ceil(64);
    let mut stack = [0u64; STACK_BLOCKS];
    let mut heap = Vec::new();
    let specials = if blocks <= STACK_BLOCKS {
        &mut stack[..blocks]
    } else {
        heap.resize(blocks, 0);
        &mut heap[..]
    };
    if !index_specials(bytes, specials) {
        return Err(Bail);
    }
    let mut c = Cursor {
        text,
        bytes,
        specials,
        pos: 0,
        depth: 0,
    };
    c.spaces();
    if c.peek() != Some(b'{') {
        return Err(Bail);
    }
    c.object(Some(on_entry))?;
    c.spaces();
    if c.pos == c.bytes.len() {
        Ok(())
    } else {
        Err(Bail)
    }
}

struct Cursor<'de, 's> {
    text: &'de str,
    bytes: &'de [u8],
    /// Where the quotes and backslashes are (see [`index_specials`]).
    specials: &'s [u64],
    pos: usize,
    depth: u32,
}

impl<'de> Cursor<'de, '_> {
    /// The position of the next quote or backslash at or after `from`.
    #[inline]
    fn next_special(&self, from: usize) -> Option<usize> {
        let mut word = from / 64;
        let mut bits = *self.specials.get(word)? & (!0u64 << (from % 64));
        while bits == 0 {
            word += 1;
            bits = *self.specials.get(word)?;
        }
        Some(word * 64 + bits.trailing_zeros() as usize)
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Skips spaces (the only whitespace left once control bytes are ruled out).
    #[inline]
    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    #[inline]
    fn eat(&mut self, b: u8) -> Result<(), Bail> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// A string at the cursor: its content's byte range and whether it had escapes.
    #[inline]
    fn string(&mut self) -> Result<(usize, usize, bool), Bail> {
        self.eat(b'"')?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            self.pos = self.next_special(self.pos).ok_or(Bail)?;
            if self.bytes[self.pos] == b'"' {
                self.pos += 1;
                return Ok((start, self.pos - 1, escaped));
            }
            escaped = true;
            match self.bytes.get(self.pos + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.pos += 2,
                Some(b'u') => {
                    let hex = self.bytes.get(self.pos + 2..self.pos + 6).ok_or(Bail)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return Err(Bail);
                    }
                    self.pos += 6;
                }
                _ => return Err(Bail),
            }
        }
    }

    /// A string without escapes (a key, or a string the caller reads).
    #[inline]
    fn plain_string(&mut self) -> Result<&'de str, Bail> {
        let (start, end, escaped) = self.string()?;
        if escaped {
            return Err(Bail);
        }
        let text = self.text;
        Ok(&text[start..end])
    }

    fn digits(&mut self) -> Result<(), Bail> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return Err(Bail);
        }
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        Ok(())
    }

    /// A number: checked against the JSON grammar; its value when it is a non-negative integer
    /// of at most 18 digits.
    fn number(&mut self) -> Result<Option<i128>, Bail> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits()?,
            _ => return Err(Bail),
        }
        let int_end = self.pos;
        let mut plain = !negative;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.digits()?;
            plain = false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.digits()?;
            plain = false;
        }
        if !plain || int_end - start > 18 {
            return Ok(None);
        }
        Ok(Some(
            self.bytes[start..int_end]
                .iter()
                .fold(0i128, |n, &d| n * 10 + i128::from(d - b'0')),
        ))
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Bail> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// Opens a container (`{` or `[`); true when it is empty (and closed already).
    fn open(&mut self, open: u8, close: u8) -> Result<bool, Bail> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail);
        }
        self.eat(open)?;
        self.spaces();
        let empty = self.peek() == Some(close);
        if empty {
            self.pos += 1;
            self.depth -= 1;
        }
        Ok(empty)
    }

    /// After an element: a comma (false, another element follows) or the close (true).
    fn next_or_close(&mut self, close: u8) -> Result<bool, Bail> {
        self.spaces();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.spaces();
                Ok(false)
            }
            Some(c) if c == close => {
                self.pos += 1;
                self.depth -= 1;
                Ok(true)
            }
            _ => Err(Bail),
        }
    }

    /// An object at the cursor; with a callback, each entry goes to it (which must consume the
    /// value), otherwise the values are skipped.
    fn object(&mut self, mut on_entry: Option<&mut OnEntry<'_, 'de>>) -> Result<(), Bail> {
        if self.open(b'{', b'}')? {
            return Ok(());
        }
        loop {
            let key = self.plain_string()?;
            self.spaces();
            self.eat(b':')?;
            self.spaces();
            match on_entry.as_mut() {
                Some(f) => {
                    let mut sink = Sink {
                        cursor: self,
                        used: false,
                    };
                    f(key, &mut sink).map_err(|_| Bail)?;
                    if !sink.used {
                        return Err(Bail);
                    }
                }
                None => self.skip()?,
            }
            if self.next_or_close(b'}')? {
                return Ok(());
            }
        }
    }

    fn array(&mut self) -> Result<(), Bail> {
        if self.open(b'[', b']')? {
            return Ok(());
        }
        loop {
            self.skip()?;
            if self.next_or_close(b']')? {
                return Ok(());
            }
        }
    }

    /// Skips any value, checking its grammar.
    fn skip(&mut self) -> Result<(), Bail> {
        match self.peek().ok_or(Bail)? {
            b'"' => self.string().map(drop),
            b'{' => self.object(None),
            b'[' => self.array(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => Err(Bail),
        }
    }
}

/// The value of one entry, read the way the callback asks.
struct Sink<'c, 'de, 's> {
    cursor: &'c mut Cursor<'de, 's>,
    used: bool,
}

/// The callbacks' error type is `String`; a bail travels through them as an empty one.
impl From<Bail> for String {
    fn from(_: Bail) -> String {
        String::new()
    }
}

impl<'de> ValueSink<'de> for Sink<'_, 'de, '_> {
    fn scalar(&mut self) -> Result<Scalar<'de>, String> {
        self.used = true;
        let c = &mut *self.cursor;
        Ok(match c.peek().ok_or(Bail)? {
            b'"' => Scalar::Str(Cow::Borrowed(c.plain_string()?)),
            b't' => c.literal(b"true").map(|()| Scalar::Bool(true))?,
            b'f' => c.literal(b"false").map(|()| Scalar::Bool(false))?,
            b'n' => c.literal(b"null").map(|()| Scalar::Null)?,
            b'{' | b'[' => c.skip().map(|()| Scalar::Composite)?,
            _ => Scalar::Int(c.number()?.ok_or(Bail)?),
        })
    }

    fn raw(&mut self) -> Result<&'de serde_json::value::RawValue, String> {
        Err(Bail.into())
    }

    fn flag(&mut self) -> Result<bool, String> {
        self.used = true;
        let c = &mut *self.cursor;
        if c.peek() == Some(b'n') {
            Ok(c.literal(b"null").map(|()| false)?)
        } else {
            Ok(c.skip().map(|()| true)?)
        }
    }

    fn skip(&mut self) -> Result<(), String> {
        self.used = true;
        Ok(self.cursor.skip()?)
    }

    fn object(&mut self, on_entry: &mut OnEntry<'_, 'de>) -> Result<bool, String> {
        self.used = true;
        let c = &mut *self.cursor;
        Ok(match c.peek() {
            Some(b'{') => c.object(Some(on_entry)).map(|()| true)?,
            // serde_json reads a string here in full (refusing lone surrogates in escapes).
            Some(b'"') => c.plain_string().map(|_| false)?,
            // It reads a number in full too (and may refuse it): leave it to serde.
            Some(b'-' | b'0'..=b'9') | None => return Err(Bail.into()),
            Some(_) => c.skip().map(|()| false)?,
        })
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::json::parse_object_line;
    use proptest::prelude::*;

    /// Reads every value the way its key says (`s…` scalar, `f…` flag, `o…` object, else
    /// skip) and records what it got.
    fn record<'de>(log: &mut Vec<String>, key: &str, v: &mut dyn ValueSink<'de>) -> Result<(), String> {
        let got = match key.as_bytes().first() {
            Some(b's') => format!("{:?}", v.scalar()?),
            Some(b'f') => format!("{}", v.flag()?),
            Some(b'o') => {
                let mut inner = Vec::new();
                let is = v.object(&mut |k, s| record(&mut inner, k, s))?;
                format!("{is} {inner:?}")
            }
            _ => {
                v.skip()?;
                "skipped".into()
            }
        };
        log.push(format!("{key}={got}"));
        Ok(())
    }

    /// Fast path, then serde: if the fast path accepts, serde must accept with the same calls.
    fn agree(line: &[u8]) -> Option<Vec<String>> {
        let mut slow = Vec::new();
        let serde = parse_object_line(line, |k, v| record(&mut slow, k, v));
        let text = std::str::from_utf8(line).ok()?;
        let mut fast = Vec::new();
        let got = parse_object(text, &mut |k, v| record(&mut fast, k, v));
        if got.is_ok() {
            assert_eq!(serde, Ok(()), "the fast path accepted what serde refuses: {text}");
            assert_eq!(fast, slow, "different callbacks for {text}");
            Some(fast)
        } else {
            None
        }
    }

    /// Every vector flavour the processor has classifies blocks as the plain byte loop does.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vector_flavours_agree_with_the_byte_loop() {
        let plain = |block: &[u8; 64]| {
            let bits = (0..64).fold(0u64, |b, i| b | (u64::from(block[i] == b'"' || block[i] == b'\\') << i));
            (bits, block.iter().any(|&b| b < 0x20))
        };
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        // Mostly the bytes that matter (quote, backslash, both sides of 0x20 and of 0x80).
        let byte = prop_oneof![
            prop::sample::select(vec![b'"', b'\\', 0x1f, 0x20, 0x00, 0x7f, 0x80, 0xff, b'a']),
            any::<u8>()
        ];
        runner
            .run(&prop::array::uniform32((byte.clone(), byte)), |pairs| {
                let mut block = [0u8; 64];
                for (i, (a, b)) in pairs.iter().enumerate() {
                    (block[2 * i], block[2 * i + 1]) = (*a, *b);
                }
                let want = plain(&block);
                // SAFETY: SSE2 is in the x86_64 baseline; the others run only when present.
                prop_assert_eq!(unsafe { simd::sse2(&block) }, want);
                if std::arch::is_x86_feature_detected!("avx2") {
                    prop_assert_eq!(unsafe { simd::avx2(&block) }, want);
                }
                if std::arch::is_x86_feature_detected!("avx512bw") {
                    prop_assert_eq!(unsafe { simd::avx512(&block) }, want);
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn a_writer_shaped_line_takes_the_fast_path() {
        let line = br#"{"timestamp": "2026-06-10T10:00:32", "pipeline_id": "f8-1", "iteration": 1, "is_retry": false, "text": "line\nbreak \"quoted\" back\\slash \u00e9", "cost_usd": null, "reward": 0.2444, "exp": -1.5e-3, "state_snapshot": {"input_text": "hi", "stage_outputs": {}}, "tags": [1, "a", [], {}]}"#;
        assert!(agree(line).is_some());
        let renamed = String::from_utf8_lossy(line)
            .replace("\"pipeline_id\"", "\"spid\"")
            .replace("\"state_snapshot\"", "\"osnap\"")
            .replace("\"cost_usd\"", "\"fcost\"");
        assert!(agree(renamed.as_bytes()).is_some());
    }

    #[test]
    fn unusual_lines_are_left_to_serde() {
        for line in [
            &b"{\"a\":\t1}"[..],
            b"{\"s\\u0041\": 1}",
            b"{\"s\": \"\\u00e9\"}",
            b"{\"s\": 1.5}",
            b"{\"s\": -1}",
            b"{\"s\": 1234567890123456789012}",
            b"{\"o\": 1e999}",
            b"{\"a\": 01}",
            b"{\"a\": 1,}",
            b"{\"a\": \"x\\q\"}",
            b"[1]",
            b"{\"a\": 1} x",
            b"{\"a\": tru}",
        ] {
            let text = std::str::from_utf8(line).unwrap();
            let mut log = Vec::new();
            assert_eq!(
                parse_object(text, &mut |k, v| record(&mut log, k, v)),
                Err(Bail),
                "{text}"
            );
        }
        let deep = format!("{{\"a\": {}{}}}", "[".repeat(80), "]".repeat(80));
        assert_eq!(parse_object(&deep, &mut |_, v| v.skip()), Err(Bail));
    }

    fn json_value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            (any::<f64>()).prop_map(|f| serde_json::to_string(&f).unwrap()),
            Just("1e400".to_owned()),
            Just("-0".to_owned()),
            "[a-z \"\\\\\\n\u{e9}\u{1F680}]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            Just("\"\\ud800\"".to_owned()),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
                prop::collection::vec(("[sfox][a-c]{0,2}", inner), 0..5).prop_map(|v| {
                    let entries: Vec<String> = v.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                    format!("{{{}}}", entries.join(","))
                }),
            ]
        })
    }

    fn object_line() -> impl Strategy<Value = String> {
        prop::collection::vec(("[sfox][a-c]{0,2}", json_value()), 0..8).prop_map(|v| {
            let entries: Vec<String> = v.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            format!("{{{}}}", entries.join(", "))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn fast_and_serde_agree_on_generated_lines(line in object_line()) {
            agree(line.as_bytes());
        }

        #[test]
        fn fast_and_serde_agree_on_mutated_lines(
            line in object_line(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(
                b"\"\\{}[],: 0-e.uEx\t".to_vec())), 1..4),
        ) {
            let mut bytes = line.into_bytes();
            for (at, op, b) in edits {
                if bytes.is_empty() { break; }
                let i = at.index(bytes.len());
                match op {
                    0 => bytes[i] = b,
                    1 => bytes.insert(i, b),
                    _ => { bytes.remove(i); }
                }
            }
            agree(&bytes);
        }
    }

    #[test]
    fn most_generated_lines_take_the_fast_path() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut fast, total) = (0, 500);
        for _ in 0..total {
            let line = object_line().new_tree(&mut runner).unwrap().current();
            fast += usize::from(agree(line.as_bytes()).is_some());
        }
        assert!(fast > total / 5, "only {fast} of {total} took the fast path");
    }
}
