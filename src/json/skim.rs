//! A fast path for reading audit lines: the same callbacks as [`super::parse_object_line`],
//! for lines in the shape a writer produces, several times faster than going through serde.
//!
//! It never decides anything on its own: whenever a line is not plainly well-formed (a byte
//! below 0x20, an escape in a key or in a string the caller reads, a number other than a plain
//! non-negative integer where the caller reads one, deep nesting, any syntax error) it gives up
//! with [`Bail`] and the caller parses the line again with serde_json. What it accepts,
//! serde_json accepts too, with the same callbacks in the same order (a differential test
//! checks this on random and mutated lines).

use super::{PyText, Scalar, ValueError, ValueSink};
use std::borrow::Cow;

/// Nesting deeper than this is left to serde_json.
const MAX_DEPTH: u32 = 64;

/// The fast path gave up; parse the line with serde_json instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

/// The entry callback, as [`super::parse_object_line`] takes it.
type OnEntry<'f, 'de> = dyn FnMut(&str, &mut dyn ValueSink<'de>) -> Result<(), ValueError> + 'f;

/// What one 64-byte block holds: bit i set for a quote (a backslash, a byte below 0x20) at
/// byte i.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    quotes: u64,
    backslashes: u64,
    control: u64,
}

/// The bitmaps of a line, one word per 64 bytes, bit i for byte i.
struct Index<'s> {
    /// The quotes no escape takes: where strings open and close.
    quotes: &'s [u64],
    /// Every backslash (a string holding one has escapes).
    backslashes: &'s [u64],
}

/// Fills the bitmaps of `bytes`; false when a byte below 0x20 is present, or an escape that
/// is not one of JSON's. On x86_64 it uses the widest vectors the processor has (AVX-512BW,
/// AVX2, or the baseline SSE2), chosen once per line.
fn index_specials(bytes: &[u8], quotes: &mut [u64], backslashes: &mut [u64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the processor has AVX-512BW (checked just above).
            return unsafe { simd::index_avx512(bytes, quotes, backslashes) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2 (checked just above).
            return unsafe { simd::index_avx2(bytes, quotes, backslashes) };
        }
    }
    index_with(bytes, quotes, backslashes, simd::eq_any, simd::control)
}

/// The loop of [`index_specials`] around one vector flavour (inlined into each flavour's
/// function, so the flavour's code is compiled with its features): `eq_any` gives the bytes of
/// a block equal to any of some values, `control` those below 0x20.
#[inline(always)]
fn index_with(
    bytes: &[u8],
    quotes: &mut [u64],
    backslashes: &mut [u64],
    eq_any: impl Fn(&[u8; 64], &[u8]) -> u64,
    control: impl Fn(&[u8; 64]) -> u64,
) -> bool {
    let classify = |block: &[u8; 64]| Block {
        quotes: eq_any(block, b"\""),
        backslashes: eq_any(block, b"\\"),
        control: control(block),
    };
    let escape_set = |block: &[u8; 64]| EscapeSet {
        simple: eq_any(block, &SIMPLE_ESCAPES),
        unicode: eq_any(block, b"u"),
    };
    let mut state = Resolve {
        carry: false,
        valid: true,
        control: 0,
    };
    let mut blocks = bytes.chunks_exact(64);
    for (w, block) in (&mut blocks).enumerate() {
        let block: &[u8; 64] = block.try_into().expect("64 bytes");
        (quotes[w], backslashes[w]) = state.word(bytes, w, block, classify(block), escape_set);
    }
    let rest = blocks.remainder();
    if !rest.is_empty() {
        // The last bytes, padded with spaces (neither special nor control).
        let mut tail = [b' '; 64];
        tail[..rest.len()].copy_from_slice(rest);
        let w = bytes.len() / 64;
        (quotes[w], backslashes[w]) = state.word(bytes, w, &tail, classify(&tail), escape_set);
    }
    // A line ending in a backslash escapes a byte of the padding: a space, not an escape.
    state.valid && state.control == 0
}

/// The escapes of a line, resolved block after block.
struct Resolve {
    /// Whether the next block's first byte is escaped.
    carry: bool,
    /// Whether every escape so far is one of JSON's.
    valid: bool,
    /// Nonzero once a byte below 0x20 was seen.
    control: u64,
}

impl Resolve {
    /// The words of block `w` (`bytes` from `w * 64`, `block` as classified): its quotes that
    /// no escape takes, and its backslashes.
    #[inline(always)]
    fn word(
        &mut self,
        line: &[u8],
        w: usize,
        bytes: &[u8; 64],
        block: Block,
        escape_set: impl Fn(&[u8; 64]) -> EscapeSet,
    ) -> (u64, u64) {
        self.control |= block.control;
        if block.backslashes == 0 && !self.carry {
            return (block.quotes, 0);
        }
        let escaped = escaped_bytes(block.backslashes, &mut self.carry);
        if escaped != 0 {
            let set = escape_set(bytes);
            self.valid &= escaped & !set.simple & !set.unicode == 0;
            // `\u` takes four hex digits (read from the line: they may run into the next block).
            let mut unicode = escaped & set.unicode;
            while unicode != 0 {
                let i = w * 64 + unicode.trailing_zeros() as usize;
                self.valid &= line
                    .get(i + 1..i + 5)
                    .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
                unicode &= unicode - 1;
            }
        }
        (block.quotes & !escaped, block.backslashes)
    }
}

/// Which bytes of a block may end an escape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EscapeSet {
    /// `"`, `/`, `b`, `f`, `n`, `r` and `t`.
    simple: u64,
    /// `u`.
    unicode: u64,
}

/// The bytes that end JSON's two-byte escapes (the escaped backslash aside).
const SIMPLE_ESCAPES: [u8; 7] = *b"\"/bfnrt";

const EVEN_BITS: u64 = 0x5555_5555_5555_5555;

/// The bytes that end an escape after an odd run of backslashes (the `n` of `\n`, the quote of
/// `\"`; the escaped backslashes inside a run are left out, they are always valid), given the
/// block's backslashes and whether its first byte is escaped (`carry`, updated for the next
/// block).
///
/// A run of backslashes from bit `s` of length `n` escapes bit `s + n` when `n` is odd. Adding
/// its start bit to the run carries through it and sets bit `s + n`; `n` is odd when `s` and
/// `s + n` differ in parity. Runs starting on even and on odd bits are added apart, so each
/// sum's carries stop at the ends of its own runs.
#[inline(always)]
fn escaped_bytes(backslashes: u64, carry: &mut bool) -> u64 {
    let first = u64::from(*carry);
    // An escaped backslash in bit 0 starts nothing; an escaped other byte is an escape's end.
    let runs = backslashes & !first;
    let first_end = first & !backslashes;
    let starts = runs & !(runs << 1);
    let (even_sum, _) = runs.overflowing_add(starts & EVEN_BITS);
    let (odd_sum, odd_out) = runs.overflowing_add(starts & !EVEN_BITS);
    // A run reaching bit 63 escapes the next block's first byte when it started on an odd bit.
    *carry = odd_out;
    ((even_sum & !runs & !EVEN_BITS) | (odd_sum & !runs & EVEN_BITS)) | first_end
}

/// The first set bit at or after `from`.
#[inline]
fn next_bit(words: &[u64], from: usize) -> Option<usize> {
    let mut word = from / 64;
    let mut bits = *words.get(word)? & (!0u64 << (from % 64));
    while bits == 0 {
        word += 1;
        bits = *words.get(word)?;
    }
    Some(word * 64 + bits.trailing_zeros() as usize)
}

/// Whether a bit in `from..to` is set.
#[inline]
fn any_bit(words: &[u64], from: usize, to: usize) -> bool {
    if from >= to {
        return false;
    }
    let (first, last) = (from / 64, (to - 1) / 64);
    let low = !0u64 << (from % 64);
    let high = !0u64 >> (63 - (to - 1) % 64);
    if first == last {
        words[first] & low & high != 0
    } else {
        words[first] & low != 0 || words[first + 1..last].iter().any(|&w| w != 0) || words[last] & high != 0
    }
}

/// The vector flavours: the bytes of a 64-byte block equal to any of `values`, and the bytes
/// below 0x20 (bit i for byte i).
mod simd {
    #[cfg(target_arch = "x86_64")]
    use super::index_with;
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::*;

    /// The bits of a block from its `W`-byte lanes: `lane` gives a lane's bits (bit i for its
    /// byte i), placed at the lane's offset.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn by_lanes<const W: usize>(block: &[u8; 64], lane: impl Fn(&[u8]) -> u64) -> u64 {
        block
            .chunks_exact(W)
            .enumerate()
            .fold(0, |bits, (k, c)| bits | lane(c) << (W * k))
    }

    #[cfg(target_arch = "x86_64")]
    pub fn eq_any(block: &[u8; 64], values: &[u8]) -> u64 {
        // SAFETY: SSE2 is part of the x86_64 baseline, so the feature is always present.
        unsafe { sse2_eq_any(block, values) }
    }

    #[cfg(target_arch = "x86_64")]
    pub fn control(block: &[u8; 64]) -> u64 {
        // SAFETY: SSE2 is part of the x86_64 baseline, so the feature is always present.
        unsafe { sse2_control(block) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse2")]
    pub fn sse2_eq_any(block: &[u8; 64], values: &[u8]) -> u64 {
        by_lanes::<16>(block, |c| {
            // SAFETY: `c` is 16 readable bytes; the load has no alignment requirement.
            let v = unsafe { _mm_loadu_si128(c.as_ptr().cast::<__m128i>()) };
            let any = values.iter().fold(_mm_setzero_si128(), |m, &x| {
                _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8(x as i8)))
            });
            u64::from(_mm_movemask_epi8(any) as u16)
        })
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse2")]
    pub fn sse2_control(block: &[u8; 64]) -> u64 {
        // Bytes below 0x20, compared as signed after flipping the top bit.
        let (flip, limit) = (_mm_set1_epi8(i8::MIN), _mm_set1_epi8((0x20i32 - 128) as i8));
        by_lanes::<16>(block, |c| {
            // SAFETY: `c` is 16 readable bytes; the load has no alignment requirement.
            let v = unsafe { _mm_loadu_si128(c.as_ptr().cast::<__m128i>()) };
            u64::from(_mm_movemask_epi8(_mm_cmplt_epi8(_mm_xor_si128(v, flip), limit)) as u16)
        })
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub fn avx2_eq_any(block: &[u8; 64], values: &[u8]) -> u64 {
        by_lanes::<32>(block, |c| {
            // SAFETY: `c` is 32 readable bytes; the load has no alignment requirement.
            let v = unsafe { _mm256_loadu_si256(c.as_ptr().cast::<__m256i>()) };
            let any = values.iter().fold(_mm256_setzero_si256(), |m, &x| {
                _mm256_or_si256(m, _mm256_cmpeq_epi8(v, _mm256_set1_epi8(x as i8)))
            });
            u64::from(_mm256_movemask_epi8(any) as u32)
        })
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub fn avx2_control(block: &[u8; 64]) -> u64 {
        let (flip, limit) = (_mm256_set1_epi8(i8::MIN), _mm256_set1_epi8((0x20i32 - 128) as i8));
        by_lanes::<32>(block, |c| {
            // SAFETY: `c` is 32 readable bytes; the load has no alignment requirement.
            let v = unsafe { _mm256_loadu_si256(c.as_ptr().cast::<__m256i>()) };
            u64::from(_mm256_movemask_epi8(_mm256_cmpgt_epi8(limit, _mm256_xor_si256(v, flip))) as u32)
        })
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    pub fn avx512_eq_any(block: &[u8; 64], values: &[u8]) -> u64 {
        // SAFETY: `block` is 64 readable bytes; the load has no alignment requirement.
        let v = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
        values
            .iter()
            .fold(0, |m, &x| m | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(x as i8)))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    pub fn avx512_control(block: &[u8; 64]) -> u64 {
        // SAFETY: `block` is 64 readable bytes; the load has no alignment requirement.
        let v = unsafe { _mm512_loadu_si512(block.as_ptr().cast()) };
        _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(0x20))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub fn index_avx2(bytes: &[u8], quotes: &mut [u64], backslashes: &mut [u64]) -> bool {
        index_with(
            bytes,
            quotes,
            backslashes,
            |b, v| avx2_eq_any(b, v),
            |b| avx2_control(b),
        )
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512bw")]
    pub fn index_avx512(bytes: &[u8], quotes: &mut [u64], backslashes: &mut [u64]) -> bool {
        index_with(
            bytes,
            quotes,
            backslashes,
            |b, v| avx512_eq_any(b, v),
            |b| avx512_control(b),
        )
    }

    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    use core::arch::wasm32::*;

    /// The 16-byte lanes of a block.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    fn lanes(block: &[u8; 64]) -> impl Iterator<Item = (usize, v128)> + '_ {
        // SAFETY: each chunk is 16 readable bytes; the load has no alignment requirement.
        block
            .chunks_exact(16)
            .enumerate()
            .map(|(k, c)| (k, unsafe { v128_load(c.as_ptr().cast::<v128>()) }))
    }

    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    pub fn eq_any(block: &[u8; 64], values: &[u8]) -> u64 {
        lanes(block).fold(0, |bits, (k, v)| {
            let any = values
                .iter()
                .fold(u8x16_splat(0), |m, &x| v128_or(m, u8x16_eq(v, u8x16_splat(x))));
            bits | u64::from(u8x16_bitmask(any)) << (16 * k)
        })
    }

    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    pub fn control(block: &[u8; 64]) -> u64 {
        lanes(block).fold(0, |bits, (k, v)| {
            bits | u64::from(u8x16_bitmask(u8x16_lt(v, u8x16_splat(0x20)))) << (16 * k)
        })
    }

    #[cfg(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))))]
    pub fn eq_any(block: &[u8; 64], values: &[u8]) -> u64 {
        (0..64).fold(0, |bits, i| bits | u64::from(values.contains(&block[i])) << i)
    }

    #[cfg(not(any(target_arch = "x86_64", all(target_arch = "wasm32", target_feature = "simd128"))))]
    pub fn control(block: &[u8; 64]) -> u64 {
        (0..64).fold(0, |bits, i| bits | u64::from(block[i] < 0x20) << i)
    }
}

/// Visits the entries of a one-line JSON object, as [`super::parse_object_line`] does
/// after UTF-8 validation; `Err(Bail)` when the line needs serde_json.
pub fn parse_object<'de>(text: &'de str, on_entry: &mut OnEntry<'_, 'de>) -> Result<(), Bail> {
    // The bitmaps go in this thread's scratch words (taken, so a callback that parses another
    // line gets words of its own), filled afresh for each line rather than zeroed. Words for a
    // very long line are freed after it, not kept for the thread's lifetime.
    let mut words = SCRATCH.take();
    let parsed = parse_indexed(text, &mut words, on_entry);
    if words.capacity() <= SCRATCH_KEPT {
        SCRATCH.set(words);
    }
    parsed
}

/// The most scratch words a thread keeps between lines (those of a 64 KiB line: 16 KiB).
const SCRATCH_KEPT: usize = 2 * 1024;

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

fn parse_indexed<'de>(text: &'de str, words: &mut Vec<u64>, on_entry: &mut OnEntry<'_, 'de>) -> Result<(), Bail> {
    let bytes = text.as_bytes();
    let blocks = bytes.len().div_ceil(64);
    if words.len() < 2 * blocks {
        words.resize(2 * blocks, 0);
    }
    let (quotes, backslashes) = words[..2 * blocks].split_at_mut(blocks);
    if !index_specials(bytes, quotes, backslashes) {
        return Err(Bail);
    }
    let mut c = Cursor {
        text,
        bytes,
        index: Index { quotes, backslashes },
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
    index: Index<'s>,
    pos: usize,
    depth: u32,
}

impl<'de> Cursor<'de, '_> {
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

    /// A string at the cursor (its escapes were checked with the index): its content's byte
    /// range.
    #[inline]
    fn string(&mut self) -> Result<(usize, usize), Bail> {
        self.eat(b'"')?;
        let start = self.pos;
        let end = next_bit(self.index.quotes, start).ok_or(Bail)?;
        self.pos = end + 1;
        Ok((start, end))
    }

    /// A string without escapes (a key, or a string the caller reads).
    #[inline]
    fn plain_string(&mut self) -> Result<&'de str, Bail> {
        let (start, end) = self.string()?;
        if any_bit(self.index.backslashes, start, end) {
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

    /// A number, as serde_json reads it: an integer of at most 18 digits exactly (`-0` is the
    /// float `-0.0`, as serde_json makes it), any other with a fraction or an exponent
    /// correctly rounded by the standard library's parser (serde_json's `float_roundtrip` gives
    /// the same double); `Err(Bail)` for longer integers and numbers beyond the range of a
    /// double, which serde_json decides.
    fn number(&mut self) -> Result<Scalar<'de>, Bail> {
        let start = self.pos;
        let (int_end, _) = self.number_grammar()?;
        let negative = self.bytes[start] == b'-';
        let int_start = start + usize::from(negative);
        if int_end == self.pos {
            if int_end - int_start > 18 {
                return Err(Bail);
            }
            let n = self.bytes[int_start..int_end]
                .iter()
                .fold(0i128, |n, &d| n * 10 + i128::from(d - b'0'));
            return Ok(match (negative, n) {
                (false, n) => Scalar::Int(n),
                (true, 0) => Scalar::Float(-0.0),
                (true, n) => Scalar::Int(-n),
            });
        }
        match self.text[start..self.pos].parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Scalar::Float(x)),
            _ => Err(Bail),
        }
    }

    /// Steps over a number, checking it against the JSON grammar: where its integer part ends
    /// and whether it is a plain non-negative integer (no sign, fraction or exponent). Skipping
    /// a number needs no more (and returns nothing wide: an `i128` in the result made every
    /// skipped number wait on a store to the stack).
    #[inline]
    fn number_grammar(&mut self) -> Result<(usize, bool), Bail> {
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
        Ok((int_end, plain))
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

    /// `sep` with any spaces around it (`": "`, as writers put it, in one step).
    #[inline]
    fn separator(&mut self, sep: u8) -> Result<(), Bail> {
        if self.bytes.get(self.pos..self.pos + 2) == Some(&[sep, b' ']) && self.bytes.get(self.pos + 2) != Some(&b' ') {
            self.pos += 2;
            return Ok(());
        }
        self.spaces();
        self.eat(sep)?;
        self.spaces();
        Ok(())
    }

    /// After an element: a comma (false, another element follows) or the close (true).
    fn next_or_close(&mut self, close: u8) -> Result<bool, Bail> {
        if self.bytes.get(self.pos..self.pos + 2) == Some(b", ") && self.bytes.get(self.pos + 2) != Some(&b' ') {
            self.pos += 2;
            return Ok(false);
        }
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
            self.separator(b':')?;
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
            b'-' | b'0'..=b'9' => self.number_grammar().map(drop),
            _ => Err(Bail),
        }
    }
}

/// The value of one entry, read the way the callback asks.
struct Sink<'c, 'de, 's> {
    cursor: &'c mut Cursor<'de, 's>,
    used: bool,
}

/// A bail travels through the callbacks as [`ValueError::Bail`] (and stops the line).
impl From<Bail> for ValueError {
    fn from(_: Bail) -> ValueError {
        ValueError::Bail
    }
}

impl<'de> ValueSink<'de> for Sink<'_, 'de, '_> {
    fn scalar(&mut self) -> Result<Scalar<'de>, ValueError> {
        self.used = true;
        let c = &mut *self.cursor;
        Ok(match c.peek().ok_or(Bail)? {
            b'"' => Scalar::Str(Cow::Borrowed(c.plain_string()?)),
            b't' => c.literal(b"true").map(|()| Scalar::Bool(true))?,
            b'f' => c.literal(b"false").map(|()| Scalar::Bool(false))?,
            b'n' => c.literal(b"null").map(|()| Scalar::Null)?,
            b'{' | b'[' => c.skip().map(|()| Scalar::Composite)?,
            _ => c.number()?,
        })
    }

    fn text(&mut self) -> Result<PyText<'de>, ValueError> {
        self.used = true;
        let c = &mut *self.cursor;
        Ok(match c.peek().ok_or(Bail)? {
            b'"' => PyText::Text(Cow::Borrowed(c.plain_string()?)),
            b't' => c.literal(b"true").map(|()| PyText::Text(Cow::Borrowed("True")))?,
            b'f' => c.literal(b"false").map(|()| PyText::Text(Cow::Borrowed("")))?,
            b'n' => c.literal(b"null").map(|()| PyText::Null)?,
            b'{' | b'[' => c.skip().map(|()| PyText::Composite)?,
            _ => {
                let start = c.pos;
                c.number_grammar()?;
                let text = c.text;
                PyText::Text(crate::compat::py_number_text(&text[start..c.pos]))
            }
        })
    }

    fn raw(&mut self) -> Result<&'de serde_json::value::RawValue, ValueError> {
        Err(Bail.into())
    }

    fn span(&mut self) -> Result<&'de str, ValueError> {
        self.used = true;
        let c = &mut *self.cursor;
        let start = c.pos;
        c.skip()?;
        Ok(&c.text[start..c.pos])
    }

    fn flag(&mut self) -> Result<bool, ValueError> {
        self.used = true;
        let c = &mut *self.cursor;
        if c.peek() == Some(b'n') {
            Ok(c.literal(b"null").map(|()| false)?)
        } else {
            Ok(c.skip().map(|()| true)?)
        }
    }

    fn skip(&mut self) -> Result<(), ValueError> {
        self.used = true;
        Ok(self.cursor.skip()?)
    }

    fn object(&mut self, on_entry: &mut OnEntry<'_, 'de>) -> Result<bool, ValueError> {
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

    /// Reads every value the way its key says (`s…` scalar, `v…` text, `f…` flag, `o…` object,
    /// `p…` span, else skip) and records what it got.
    fn record<'de>(log: &mut Vec<String>, key: &str, v: &mut dyn ValueSink<'de>) -> Result<(), ValueError> {
        let got = match key.as_bytes().first() {
            Some(b's') => format!("{:?}", v.scalar()?),
            Some(b'v') => format!("{:?}", v.text()?),
            Some(b'f') => format!("{}", v.flag()?),
            Some(b'p') => format!("{:?}", v.span()?),
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

    /// A bail is its own error, never a message: it used to travel as an empty string, which
    /// a caller could not tell from a refusal with no words.
    #[test]
    fn a_bail_is_not_a_message() {
        assert_eq!(ValueError::from(Bail), ValueError::Bail);
        assert_ne!(ValueError::from(Bail), ValueError::Invalid(String::new()));
        assert!(!ValueError::Bail.to_string().is_empty());
        // A value the fast path leaves to serde (`raw`) bails the line; serde then reads it.
        let mut seen = None;
        assert_eq!(
            parse_object("{\"a\": [1]}", &mut |_, v| v
                .raw()
                .map(|r| seen = Some(r.get().to_owned()))),
            Err(Bail)
        );
        assert_eq!(seen, None);
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
            let bits = |c: u8| (0..64).fold(0u64, |b, i| b | (u64::from(block[i] == c) << i));
            Block {
                quotes: bits(b'"'),
                backslashes: bits(b'\\'),
                control: (0..64).fold(0u64, |m, i| m | (u64::from(block[i] < 0x20) << i)),
            }
        };
        let plain_escapes = |block: &[u8; 64]| EscapeSet {
            simple: (0..64).fold(0u64, |m, i| m | (u64::from(SIMPLE_ESCAPES.contains(&block[i])) << i)),
            unicode: (0..64).fold(0u64, |m, i| m | (u64::from(block[i] == b'u') << i)),
        };
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        // Mostly the bytes that matter (quote, backslash, both sides of 0x20 and of 0x80, the
        // escape letters and their neighbours).
        let byte = prop_oneof![
            prop::sample::select(vec![b'"', b'\\', 0x1f, 0x20, 0x00, 0x7f, 0x80, 0xff, b'a']),
            prop::sample::select(b"/bfnrtuvUBN.0".to_vec()),
            any::<u8>()
        ];
        runner
            .run(&prop::array::uniform32((byte.clone(), byte)), |pairs| {
                let mut block = [0u8; 64];
                for (i, (a, b)) in pairs.iter().enumerate() {
                    (block[2 * i], block[2 * i + 1]) = (*a, *b);
                }
                let want = (plain(&block), plain_escapes(&block));
                // What a flavour makes of the block, from its two primitives.
                let flavour = |eq_any: &dyn Fn(&[u8], &[u8; 64]) -> u64, control: u64| {
                    let block_bits = Block {
                        quotes: eq_any(b"\"", &block),
                        backslashes: eq_any(b"\\", &block),
                        control,
                    };
                    let escapes = EscapeSet {
                        simple: eq_any(&SIMPLE_ESCAPES, &block),
                        unicode: eq_any(b"u", &block),
                    };
                    (block_bits, escapes)
                };
                // SAFETY: SSE2 is in the x86_64 baseline; the others run only when present.
                unsafe {
                    let got = flavour(&|v, b| simd::sse2_eq_any(b, v), simd::sse2_control(&block));
                    prop_assert_eq!(got, want);
                    if std::arch::is_x86_feature_detected!("avx2") {
                        let got = flavour(&|v, b| simd::avx2_eq_any(b, v), simd::avx2_control(&block));
                        prop_assert_eq!(got, want);
                    }
                    if std::arch::is_x86_feature_detected!("avx512bw") {
                        let got = flavour(&|v, b| simd::avx512_eq_any(b, v), simd::avx512_control(&block));
                        prop_assert_eq!(got, want);
                    }
                }
                Ok(())
            })
            .unwrap();
    }

    /// Every flavour indexes whole lines alike: the quotes no escape takes, the backslashes,
    /// and whether the line's escapes and bytes pass.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vector_flavours_index_lines_alike() {
        let index = |bytes: &[u8], flavour: u8| {
            let blocks = bytes.len().div_ceil(64);
            let (mut q, mut b) = (vec![0u64; blocks], vec![0u64; blocks]);
            // SAFETY: each flavour runs only when the processor has it (checked by the caller).
            let ok = match flavour {
                0 => index_with(bytes, &mut q, &mut b, simd::eq_any, simd::control),
                1 => unsafe { simd::index_avx2(bytes, &mut q, &mut b) },
                _ => unsafe { simd::index_avx512(bytes, &mut q, &mut b) },
            };
            (ok, q, b)
        };
        let mut flavours = vec![0];
        if std::arch::is_x86_feature_detected!("avx2") {
            flavours.push(1);
        }
        if std::arch::is_x86_feature_detected!("avx512bw") {
            flavours.push(2);
        }
        let byte = prop::sample::select(b"\\\\\\\"\"nu0aF/ \t".to_vec());
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        runner
            .run(&prop::collection::vec(byte, 0..300), |bytes| {
                let want = index(&bytes, 0);
                for &f in &flavours[1..] {
                    prop_assert_eq!(index(&bytes, f), want.clone(), "flavour {}", f);
                }
                Ok(())
            })
            .unwrap();
    }

    /// The escapes found with bit arithmetic, block by block, are the ones a byte-by-byte walk
    /// finds, whatever the runs of backslashes and wherever they cross a block's edge.
    #[test]
    fn escapes_found_by_arithmetic_are_those_of_a_walk() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let byte = prop::sample::select(vec![b'\\', b'\\', b'\\', b'"', b'n', b'x']);
        runner
            .run(&prop::collection::vec(byte, 0..400), |bytes| {
                // The walk: a backslash that is not escaped escapes the byte after it.
                let mut want = vec![0u64; bytes.len().div_ceil(64) + 1];
                let mut escaped = false;
                for (i, &b) in bytes.iter().enumerate() {
                    if escaped && b != b'\\' {
                        want[i / 64] |= 1 << (i % 64);
                    }
                    escaped = !escaped && b == b'\\';
                }
                if escaped {
                    want[bytes.len() / 64] |= 1 << (bytes.len() % 64);
                }
                let mut got = vec![0u64; want.len()];
                let mut carry = false;
                for (w, word) in got.iter_mut().enumerate() {
                    let backslashes =
                        (0..64).fold(0u64, |m, i| m | (u64::from(bytes.get(w * 64 + i) == Some(&b'\\')) << i));
                    *word = escaped_bytes(backslashes, &mut carry);
                }
                prop_assert_eq!(got, want);
                Ok(())
            })
            .unwrap();
    }

    /// Strings full of escapes, crossing blocks at every offset, are skipped as serde reads them.
    #[test]
    fn long_escaped_strings_take_the_fast_path() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let text = "[\\\\\"a\u{e9}\n/]{0,150}";
        runner
            .run(&(0usize..70, text, text), |(pad, a, b)| {
                let line = format!(
                    "{{\"x{}\": {}, \"y\": [{}, \"\\u00E9\\/\"], \"s\": \"plain\"}}",
                    "p".repeat(pad),
                    serde_json::to_string(&a).unwrap(),
                    serde_json::to_string(&b).unwrap()
                );
                prop_assert!(agree(line.as_bytes()).is_some(), "{}", line);
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
        // Lines longer than the scratch a thread keeps, then a short one again.
        for n in [100_000, 3_000, 200_000] {
            let long = format!("{{\"x\": \"{}\\n\", \"s\": \"ok\"}}", "ab\\\"".repeat(n / 4));
            assert_eq!(agree(long.as_bytes()).map(|log| log.len()), Some(2), "{n}");
        }
        assert!(agree(line).is_some());
    }

    #[test]
    fn numbers_are_read_on_the_fast_path_correctly_rounded() {
        // serde_json's default parsing is one ulp off on the third; `float_roundtrip` is not.
        let line =
            br#"{"s": 1.5, "sa": -1, "sb": 0.10957860598549463, "sc": -0, "sd": 2E-3, "va": 9, "vb": 1e16, "vc": 0.0}"#;
        let got = agree(line).expect("the fast path reads it");
        assert_eq!(
            got,
            [
                "s=Float(1.5)",
                "sa=Int(-1)",
                "sb=Float(0.10957860598549463)",
                "sc=Float(-0.0)",
                "sd=Float(0.002)",
                "va=Text(\"9\")",
                "vb=Text(\"1e+16\")",
                "vc=Text(\"\")",
            ]
        );
    }

    #[test]
    fn unusual_lines_are_left_to_serde() {
        for line in [
            &b"{\"a\":\t1}"[..],
            b"{\"s\\u0041\": 1}",
            b"{\"s\": \"\\u00e9\"}",
            b"{\"s\": 1234567890123456789012}",
            b"{\"s\": -1234567890123456789012}",
            b"{\"s\": 1e999}",
            b"{\"o\": 1e999}",
            b"{\"a\": 01}",
            b"{\"a\": 1,}",
            b"{\"a\": \"x\\q\"}",
            b"{\"a\": \"x\\u12G4\"}",
            b"{\"a\": \"x\\u12\"}",
            b"{\"a\": \"x\\\\\\\"}",
            b"{\"a\": \"x\"}\\",
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
            "-?(0|[1-9][0-9]{0,20})(\\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?",
            Just("-0".to_owned()),
            "[a-z \"\\\\\\n\u{e9}\u{1F680}]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            Just("\"\\ud800\"".to_owned()),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
                prop::collection::vec(("[sfvopx][a-c]{0,2}", inner), 0..5).prop_map(|v| {
                    let entries: Vec<String> = v.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
                    format!("{{{}}}", entries.join(","))
                }),
            ]
        })
    }

    fn object_line() -> impl Strategy<Value = String> {
        prop::collection::vec(("[sfvopx][a-c]{0,2}", json_value()), 0..8).prop_map(|v| {
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
