//! Fixed-point codec: f32 features to int32 lanes a switch can add, and back.
//!
//! A switch pipeline adds integers, not floats, so a value `x` travels as `round(x * 2^f)`
//! (ties away from zero) with `f` fraction bits. The scale is chosen by
//! [`FixedPoint::for_sum`] so that `max_terms` values of magnitude up to `max_abs` can be
//! summed in int32 without overflow; each encoded value is clamped to `limit <=
//! i32::MAX / max_terms` so even values beyond `max_abs` can never make a sum overflow.
//! Clamping (and NaN) is counted and returned, never silent; [`accumulate`], the addition
//! the switch and the hosts share, reports saturation too.
//!
//! Error bound of `decode(sum(encode(x_i)))` against the exact real `sum(x_i)` over `n`
//! terms, none clamped and no addition saturated:
//!
//! * `x * 2^f` is exact in f32 (a power-of-two scale only changes the exponent; a product
//!   that overflows to infinity is clamped and counted);
//! * rounding to the nearest integer errs by at most 1/2 unit per term: `n * 2^-(f+1)` in
//!   all;
//! * the int32 sum `s` is exact;
//! * converting `s` to f32 (24-bit significand) errs by at most half an ulp of `|s|`; as
//!   `|s| <= i32::MAX < 2^31`, that ulp is at most `2^(30-23) = 2^7`, so at most `2^6`
//!   units, i.e. `2^(6-f)` (relative: at most `|s| * 2^-24`);
//! * multiplying by `2^-f` is exact (`f <= 30`, so no underflow).
//!
//! So `|error| <= n * 2^-(f+1) + 2^(6-f)` per lane ([`FixedPoint::error_bound`]).

use crate::LANES;

/// The largest f32 below 1/2 (`0.5 - 2^-25`); see [`FixedPoint::encode`].
const HALF_BELOW: f32 = 0.499_999_97;

/// Why no scale fits.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum CodecError {
    /// Even with no fraction bits the sum can overflow int32.
    #[error("{max_terms} terms of magnitude {max_abs} overflow int32 even without fraction bits")]
    NoScale {
        /// Requested magnitude.
        max_abs: f32,
        /// Requested number of terms.
        max_terms: u32,
    },
    /// Bad arguments (non-finite or negative magnitude, zero terms).
    #[error("max_abs must be finite and positive and max_terms at least 1")]
    BadArguments,
}

/// A fixed-point format: `frac_bits` fraction bits and a per-value clamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedPoint {
    /// Fraction bits `f` (0..=30); the scale is `2^f`.
    pub frac_bits: u8,
    /// Largest magnitude of one encoded value.
    pub limit: i32,
}

impl FixedPoint {
    /// Most fraction bits allowed.
    pub const MAX_FRAC_BITS: u8 = 30;

    /// A format with `frac_bits` fraction bits whose values are clamped so `max_terms` of them
    /// cannot overflow a sum.
    /// The limit is the largest f32-representable integer not above `i32::MAX / max_terms`,
    /// so clamping in f32 can never round past it. `frac_bits` above
    /// [`FixedPoint::MAX_FRAC_BITS`] is capped to it (the header cannot carry more).
    pub fn new(frac_bits: u8, max_terms: u32) -> FixedPoint {
        let bound = i32::MAX as u32 / max_terms.max(1);
        let mut lim = bound as f32;
        while lim as u64 > bound as u64 {
            lim = f32::from_bits(lim.to_bits() - 1);
        }
        FixedPoint {
            frac_bits: frac_bits.min(Self::MAX_FRAC_BITS),
            limit: lim as i32,
        }
    }

    /// The largest scale at which `max_terms` values of magnitude `max_abs` sum without
    /// overflowing int32.
    pub fn for_sum(max_abs: f32, max_terms: u32) -> Result<FixedPoint, CodecError> {
        if !(max_abs.is_finite() && max_abs > 0.0) || max_terms == 0 {
            return Err(CodecError::BadArguments);
        }
        let limit = i32::MAX as f64 / max_terms as f64;
        for f in (0..=Self::MAX_FRAC_BITS).rev() {
            let one = (max_abs as f64 * (1u64 << f) as f64).round();
            if one <= limit.floor() {
                return Ok(FixedPoint::new(f, max_terms));
            }
        }
        Err(CodecError::NoScale { max_abs, max_terms })
    }

    /// `2^f`.
    pub fn scale(&self) -> f32 {
        (1u64 << self.frac_bits) as f32
    }

    /// Absolute error bound, per lane, of `decode(sum(encode(x_i)))` against the exact
    /// `sum(x_i)` over `terms` terms when nothing was clamped or saturated:
    /// `terms * 2^-(f+1) + 2^(6-f)` (derived in the module documentation), rounded up to
    /// the next f32 so it is never an underestimate.
    pub fn error_bound(&self, terms: u32) -> f32 {
        let unit = 1.0 / (1u64 << self.frac_bits) as f64;
        // Exact in f64: both terms are multiples of 2^-(f+1) below 2^33.
        let bound = terms as f64 * unit / 2.0 + 64.0 * unit;
        let r = bound as f32;
        if (r as f64) < bound {
            f32::from_bits(r.to_bits() + 1)
        } else {
            r
        }
    }

    /// Encodes `src` into `dst` (same length); returns how many values were clamped or NaN.
    pub fn encode(&self, src: &[f32], dst: &mut [i32]) -> usize {
        assert_eq!(src.len(), dst.len(), "encode: length mismatch");
        let scale = self.scale();
        let lim = self.limit as f32;
        // Counted in u32 per lane so the loop stays in 32-bit vector lanes.
        let mut saturated = 0u32;
        for (d, &x) in dst.iter_mut().zip(src) {
            let y = x * scale;
            // NaN counts as saturated and encodes as 0.
            saturated += (y.abs() > lim || y.is_nan()) as u32;
            let c = if y.is_nan() { 0.0 } else { y.clamp(-lim, lim) };
            // Round half away from zero without a libm call: add the largest f32 below 1/2
            // with the sign of c, then truncate. Adding exactly 1/2 would be wrong for
            // c = 0.5 - 2^-25, whose sum 1 - 2^-25 rounds up to 1.0 in f32; with
            // 0.5 - 2^-25 added, exact ties still round away (the sum rounds up to the next
            // integer) and everything else truncates to the nearest integer. For
            // |c| >= 2^23, c is an integer and the addition rounds back to c.
            let r = c + HALF_BELOW.copysign(c);
            // SAFETY: c is finite with |c| <= limit < 2^31 - 1 and |r| <= |c| + 1/2, so r
            // truncates to an i32; this avoids the saturating cast that blocks
            // vectorisation.
            *d = unsafe { r.to_int_unchecked::<i32>() };
        }
        saturated as usize
    }

    /// Decodes `src` into `dst` (same length).
    pub fn decode(&self, src: &[i32], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len(), "decode: length mismatch");
        let inv = 1.0 / self.scale();
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = s as f32 * inv;
        }
    }

    /// [`FixedPoint::decode`] appending to `dst`, value for value the same: a round's sums
    /// are decoded into a vector that is never zeroed first.
    ///
    /// A worker decodes every value of its round's sums, so on x86-64 CPUs with AVX2 (checked
    /// once at run time) the conversion runs 8 values per instruction; the result is the same.
    pub fn decode_extend(&self, src: &[i32], dst: &mut Vec<f32>) {
        let inv = 1.0 / self.scale();
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `decode_extend_avx2` only needs the AVX2 instructions, which the CPU
            // was just found to have; it touches nothing but its arguments.
            return unsafe { decode_extend_avx2(inv, src, dst) };
        }
        decode_extend_loop(inv, src, dst)
    }
}

/// [`FixedPoint::decode_extend`]'s loop compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn decode_extend_avx2(inv: f32, src: &[i32], dst: &mut Vec<f32>) {
    decode_extend_loop(inv, src, dst)
}

#[inline(always)]
fn decode_extend_loop(inv: f32, src: &[i32], dst: &mut Vec<f32>) {
    dst.extend(src.iter().map(|&s| s as f32 * inv));
}

/// `acc[i] += x[i]` with saturation; returns how many lanes saturated. This is the addition
/// the switch's aggregators and the hosts perform. A host adds every raw vertex it receives
/// into each of its local neighbours, the largest share of its receive path, so on x86-64
/// CPUs with AVX2 (checked once at run time) the same loop runs 8 lanes per instruction
/// instead of SSE2's 4; the result is the same lane for lane.
#[inline]
pub fn accumulate(acc: &mut [i32], x: &[i32]) -> usize {
    assert_eq!(acc.len(), x.len(), "accumulate: length mismatch");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `accumulate_avx2` only needs the AVX2 instructions, which the CPU was just
        // found to have; its arguments are the same checked slices.
        return unsafe { accumulate_avx2(acc, x) };
    }
    accumulate_any(acc, x)
}

/// [`accumulate`]'s loop compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn accumulate_avx2(acc: &mut [i32], x: &[i32]) -> usize {
    accumulate_any(acc, x)
}

/// A frame's 32 lanes (the common case) through a loop of known length, which compiles to
/// straight-line code with no remainder handling; any other length through the general loop.
#[inline(always)]
fn accumulate_any(acc: &mut [i32], x: &[i32]) -> usize {
    match (
        <&mut [i32; LANES]>::try_from(&mut *acc),
        <&[i32; LANES]>::try_from(x),
    ) {
        (Ok(a), Ok(b)) => accumulate_lanes(a, b),
        _ => accumulate_lanes(acc, x),
    }
}

/// `acc[r] += x` with saturation for every row `r` of `rows`; returns how many lanes
/// saturated in all. The same addition as [`accumulate`] row after row, but `x` is loaded
/// and the CPU's features are checked once for all the rows: a host adds each raw vertex it
/// receives into every local neighbour of it this way. Panics if a row is out of range.
#[inline]
pub fn accumulate_rows<I: IntoIterator<Item = usize>>(
    acc: &mut [[i32; LANES]],
    rows: I,
    x: &[i32; LANES],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `accumulate_rows_avx2` only needs the AVX2 instructions, which the CPU was
        // just found to have; it indexes `acc` with bounds checks.
        return unsafe { accumulate_rows_avx2(acc, rows, x) };
    }
    accumulate_rows_loop(acc, rows, x)
}

/// [`accumulate_rows`]'s loop compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn accumulate_rows_avx2<I: IntoIterator<Item = usize>>(
    acc: &mut [[i32; LANES]],
    rows: I,
    x: &[i32; LANES],
) -> usize {
    accumulate_rows_loop(acc, rows, x)
}

#[inline(always)]
fn accumulate_rows_loop<I: IntoIterator<Item = usize>>(
    acc: &mut [[i32; LANES]],
    rows: I,
    x: &[i32; LANES],
) -> usize {
    let mut saturated = 0;
    for r in rows {
        saturated += accumulate_lanes(&mut acc[r], x);
    }
    saturated
}

/// The saturating lane-wise addition, in two passes so the common case is short. The first
/// adds wrapping and ORs every lane's overflow sign into one word: branch-free, it vectorises
/// to an add, three logic operations and a store per vector. A lane overflows only when the
/// sum leaves `i32`, which the fixed-point scale is chosen to make rare, so the second pass,
/// which recovers each lane's old value (`s - b`, exact in wrapping arithmetic) and clamps the
/// ones that overflowed, runs only then.
#[inline(always)]
fn accumulate_lanes(acc: &mut [i32], x: &[i32]) -> usize {
    let mut any = 0i32;
    for (a, &b) in acc.iter_mut().zip(x) {
        let s = a.wrapping_add(b);
        any |= (*a ^ s) & (b ^ s);
        *a = s;
    }
    if any >= 0 {
        return 0;
    }
    let mut saturated = 0usize;
    for (a, &b) in acc.iter_mut().zip(x) {
        let s = *a;
        let old = s.wrapping_sub(b);
        if ((old ^ s) & (b ^ s)) < 0 {
            saturated += 1;
            // i32::MAX when the old value was >= 0, i32::MIN when it was negative.
            *a = (old >> 31) ^ i32::MAX;
        }
    }
    saturated
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_largest_safe_scale() {
        let f = FixedPoint::for_sum(1.0, 1).unwrap();
        assert_eq!(f.frac_bits, 30);
        let f = FixedPoint::for_sum(8.0, 1000).unwrap();
        // 1000 * 8 * 2^f <= 2^31 - 1  ->  f = 18 (2^18*8000 = 2.1e9 > 2.147e9? no: 2.097e9 ok)
        assert_eq!(f.frac_bits, 18);
        assert!(1000.0 * 8.0 * f.scale() as f64 <= i32::MAX as f64);
        assert!(1000.0 * 8.0 * 2.0 * f.scale() as f64 > i32::MAX as f64);
        assert!(FixedPoint::for_sum(1e12, 10).is_err());
        assert!(FixedPoint::for_sum(f32::NAN, 10).is_err());
    }

    #[test]
    fn saturation_is_counted() {
        let f = FixedPoint::for_sum(1.0, 4).unwrap();
        let mut out = [0i32; 4];
        let n = f.encode(&[0.5, 1e9, f32::NAN, -1e9], &mut out);
        assert_eq!(n, 3);
        assert_eq!(out[1], f.limit);
        assert!(
            f.limit as i64 * 4 <= i32::MAX as i64,
            "four clamped values still sum"
        );
        assert_eq!(out[2], 0);
        assert_eq!(out[3], -f.limit);
        let mut acc = [i32::MAX - 1, i32::MIN + 1, 5];
        assert_eq!(accumulate(&mut acc, &[5, -5, 5]), 2);
        assert_eq!(acc, [i32::MAX, i32::MIN, 10]);
    }

    /// The vectorised loops (SSE2, and AVX2 where the CPU has it) against a plain scalar
    /// clamp in 64 bits, on lengths around the vector widths and values near both limits.
    #[test]
    fn accumulate_equals_a_scalar_clamp_lane_for_lane() {
        let mut z = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            z
        };
        let value = |r: u64| match r % 4 {
            0 => i32::MAX - (r >> 40) as i32 % 8,
            1 => i32::MIN + (r >> 40) as i32 % 8,
            2 => (r >> 32) as i32,
            _ => ((r >> 32) as i32) >> 8,
        };
        for len in [1, 3, 4, 7, 8, 9, 31, 32, 33, 64] {
            for _ in 0..300 {
                let acc: Vec<i32> = (0..len).map(|_| value(next())).collect();
                let x: Vec<i32> = (0..len).map(|_| value(next())).collect();
                let mut want = acc.clone();
                let mut want_sat = 0;
                for (a, &b) in want.iter_mut().zip(&x) {
                    let s = *a as i64 + b as i64;
                    let c = s.clamp(i32::MIN as i64, i32::MAX as i64);
                    want_sat += (c != s) as usize;
                    *a = c as i32;
                }
                let mut got = acc.clone();
                assert_eq!(accumulate(&mut got, &x), want_sat);
                assert_eq!(got, want, "accumulate, {len} lanes");
                let mut got = acc.clone();
                assert_eq!(accumulate_lanes(&mut got, &x), want_sat);
                assert_eq!(got, want, "the portable loop, {len} lanes");
            }
        }
    }

    /// Many rows at once (a row may repeat) against [`accumulate`] one row at a time, with
    /// values near both limits so that some lanes saturate.
    #[test]
    fn accumulate_rows_equals_accumulate_row_by_row() {
        let mut z = 0x0123_4567_89ab_cdefu64;
        let mut next = move || {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            z
        };
        let value = |r: u64| match r % 3 {
            0 => i32::MAX - (r >> 40) as i32 % 64,
            1 => i32::MIN + (r >> 40) as i32 % 64,
            _ => (r >> 32) as i32 >> 4,
        };
        for _ in 0..200 {
            let acc: Vec<[i32; LANES]> = (0..6)
                .map(|_| std::array::from_fn(|_| value(next())))
                .collect();
            let x: [i32; LANES] = std::array::from_fn(|_| value(next()));
            let rows: Vec<usize> = (0..next() % 8).map(|_| (next() % 6) as usize).collect();
            let mut want = acc.clone();
            let mut want_sat = 0;
            for &r in &rows {
                want_sat += accumulate(&mut want[r], &x);
            }
            let mut got = acc.clone();
            assert_eq!(
                accumulate_rows(&mut got, rows.iter().copied(), &x),
                want_sat
            );
            assert_eq!(got, want);
            let mut got = acc.clone();
            assert_eq!(
                accumulate_rows_loop(&mut got, rows.iter().copied(), &x),
                want_sat
            );
            assert_eq!(got, want, "the portable loop");
        }
    }

    #[test]
    fn decode_extend_appends_what_decode_writes() {
        let f = FixedPoint::new(12, 1);
        let src = [0, 1, -1, 4096, -4096, i32::MAX, i32::MIN, 123_456];
        let mut want = [0f32; 8];
        f.decode(&src, &mut want);
        let mut got = vec![7.5f32];
        f.decode_extend(&src, &mut got);
        assert_eq!(got[0], 7.5);
        assert_eq!(&got[1..], &want[..]);
    }

    #[test]
    fn rounds_half_away_from_zero() {
        let f = FixedPoint::new(0, 1);
        let below_half = f32::from_bits(0.5f32.to_bits() - 1);
        let below_3_5 = f32::from_bits(3.5f32.to_bits() - 1);
        let src = [
            0.5,
            -0.5,
            1.49,
            -1.5,
            2.5,
            16777217.0,
            below_half,
            -below_half,
            below_3_5,
            4194304.5,
            -4194304.5,
            8388607.5,
            0.0,
            -0.0,
            1e-40,
        ];
        let mut out = [0i32; 15];
        assert_eq!(f.encode(&src, &mut out), 0);
        assert_eq!(
            out,
            [1, -1, 1, -2, 3, 16777216, 0, 0, 3, 4194305, -4194305, 8388608, 0, 0, 0]
        );
        assert_eq!(HALF_BELOW.to_bits(), 0x3eff_ffff, "0.5 - 2^-25");
    }

    #[test]
    fn encode_matches_f64_rounding_at_every_scale() {
        // Spread of magnitudes and fraction bits; the reference is f64 round (ties away).
        let mut x = 1.0e-9f32;
        while x < 1.0e9 {
            for v in [
                x,
                -x,
                f32::from_bits(x.to_bits() + 1),
                -f32::from_bits(x.to_bits() - 1),
            ] {
                for fb in [0u8, 7, 16, 23, 30] {
                    let f = FixedPoint::new(fb, 1);
                    let want = (v as f64 * (1u64 << fb) as f64).round();
                    let mut out = [0i32];
                    let sat = f.encode(&[v], &mut out);
                    if want.abs() <= f.limit as f64 {
                        assert_eq!((sat, out[0] as f64), (0, want), "x={v:e} f={fb}");
                    } else {
                        assert_eq!(sat, 1, "x={v:e} f={fb}");
                    }
                }
            }
            x *= 1.37;
        }
    }

    #[test]
    fn error_bound_is_the_derived_formula() {
        let f = FixedPoint::new(10, 1);
        // 4 * 2^-11 + 2^-4
        assert_eq!(f.error_bound(4), 4.0 / 2048.0 + 1.0 / 16.0);
        assert_eq!(FixedPoint::new(0, 1).error_bound(0), 64.0);
        // Not exactly representable in f32: rounded up, never down.
        let f = FixedPoint::new(30, 1);
        let exact = u32::MAX as f64 / 2f64.powi(31) + 2f64.powi(-24);
        let b = f.error_bound(u32::MAX) as f64;
        assert!(b >= exact && b < exact * (1.0 + 2f64.powi(-22)));
    }

    #[test]
    fn conversion_error_reaches_half_an_ulp_but_not_more() {
        // f32s near 2^30 are 2^7 apart. 2^30 + 2^6 is a tie and rounds to 2^30: error 2^6
        // units, exactly the bound's conversion term; 2^30 + 65 rounds up: error 63.
        let f = FixedPoint::new(0, 1);
        let mut out = [0f32; 2];
        f.decode(&[(1 << 30) + 64, (1 << 30) + 65], &mut out);
        assert_eq!((out[0] as f64 - ((1 << 30) + 64) as f64).abs(), 64.0);
        assert_eq!((out[1] as f64 - ((1 << 30) + 65) as f64).abs(), 63.0);
        assert!(64.0 <= f.error_bound(0));
    }
}
