//! Byte sizes on the command line (`10MB`, `64KiB`) and in printed tables.

/// Parses a byte size: a number with an optional unit `B`, `KB`/`MB`/`GB` (powers of 1000) or
/// `KiB`/`MiB`/`GiB` (powers of 1024), case-insensitive; fractions are allowed (`1.5MB`).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if let (Ok(n), "" | "b" | "B") = (num.parse::<u64>(), unit.trim()) {
        // Whole bytes, exactly (an f64 holds integers exactly only up to 2^53).
        return Ok(n);
    }
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size: expected a number with an optional unit such as 10MB, 512KiB or 1048576"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" | "m" => 1e6,
        "gb" | "g" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {s:?}: use B, KB, MB, GB (x1000) or KiB, MiB, GiB (x1024)"
            ))
        }
    };
    let bytes = (value * mult).round();
    // 2^64 as f64: an `as u64` cast would silently saturate anything larger to 2^64 - 1.
    if !bytes.is_finite() || bytes >= 18_446_744_073_709_551_616.0 {
        return Err(format!(
            "{s:?} is too large a size: at most {} bytes (about 18.4 EB)",
            u64::MAX
        ));
    }
    Ok(bytes as u64)
}

/// Formats bytes with a decimal unit, e.g. `12.35 MB`.
pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.2} kB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("10MB").unwrap(), 10_000_000);
        assert_eq!(parse_bytes("100mb").unwrap(), 100_000_000);
        assert_eq!(parse_bytes("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("128").unwrap(), 128);
        assert_eq!(parse_bytes("1.5KB").unwrap(), 1500);
        assert!(parse_bytes("10XB")
            .unwrap_err()
            .contains("unknown size unit"));
        assert!(parse_bytes("MB").is_err());
        assert!(parse_bytes("99999999999GB")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_bytes("18446744073709551616").is_err());
        assert_eq!(parse_bytes("18446744073709551615").unwrap(), u64::MAX);
        assert_eq!(fmt_bytes(12_345_678), "12.35 MB");
    }
}
