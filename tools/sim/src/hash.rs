//! The simulator's seeded hashes: every random choice (loss, ECMP paths, background flows,
//! the approximate strategies' samples) is a hash of a seed and a name, so a run is
//! reproducible and a test can recompute any choice.

/// SplitMix64 (Steele, Lea, Flood 2014): the seeded, reproducible hash the approximate
/// strategies use for their random choices (chunks, samples), so a test can recompute them.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of `v` in a random draw named by `(seed, stream)`: `splitmix64(splitmix64(seed ^
/// splitmix64(stream)) ^ v)`.
pub fn draw_key(seed: u64, stream: u64, v: u64) -> u64 {
    splitmix64(splitmix64(seed ^ splitmix64(stream)) ^ v)
}
