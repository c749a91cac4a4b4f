//! NumPy `.npy` arrays: reading (versions 1-3, C order) and writing (version 1).
//!
//! `.npy` is the toolkit's array format for edge lists, features and plans, so a Python
//! training script can read everything with `numpy.load`.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use crate::error::GraphError;

/// The element data of an array, converted to native endianness.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    /// `<i1` / `|i1`
    I8(Vec<i8>),
    /// `|u1`
    U8(Vec<u8>),
    /// `|b1`
    Bool(Vec<bool>),
    /// `<i4`
    I32(Vec<i32>),
    /// `<i8`
    I64(Vec<i64>),
    /// `<u4`
    U32(Vec<u32>),
    /// `<u8`
    U64(Vec<u64>),
    /// `<f4`
    F32(Vec<f32>),
    /// `<f8`
    F64(Vec<f64>),
}

impl NpyData {
    /// NumPy's name of the dtype, for messages.
    pub fn dtype_name(&self) -> &'static str {
        match self {
            NpyData::I8(_) => "int8",
            NpyData::U8(_) => "uint8",
            NpyData::Bool(_) => "bool",
            NpyData::I32(_) => "int32",
            NpyData::I64(_) => "int64",
            NpyData::U32(_) => "uint32",
            NpyData::U64(_) => "uint64",
            NpyData::F32(_) => "float32",
            NpyData::F64(_) => "float64",
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            NpyData::I8(v) => v.len(),
            NpyData::U8(v) => v.len(),
            NpyData::Bool(v) => v.len(),
            NpyData::I32(v) => v.len(),
            NpyData::I64(v) => v.len(),
            NpyData::U32(v) => v.len(),
            NpyData::U64(v) => v.len(),
            NpyData::F32(v) => v.len(),
            NpyData::F64(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as a signed integer (None for floats).
    pub fn get_int(&self, i: usize) -> Option<i128> {
        Some(match self {
            NpyData::I8(v) => v[i] as i128,
            NpyData::U8(v) => v[i] as i128,
            NpyData::Bool(v) => v[i] as i128,
            NpyData::I32(v) => v[i] as i128,
            NpyData::I64(v) => v[i] as i128,
            NpyData::U32(v) => v[i] as i128,
            NpyData::U64(v) => v[i] as i128,
            NpyData::F32(_) | NpyData::F64(_) => return None,
        })
    }

    /// All elements converted to f32 (None for booleans).
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        Some(match self {
            NpyData::I8(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::U8(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::I32(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::I64(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::U32(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::U64(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::F32(v) => v.clone(),
            NpyData::F64(v) => v.iter().map(|&x| x as f32).collect(),
            NpyData::Bool(_) => return None,
        })
    }
}

/// A whole array.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    /// Shape (C order).
    pub shape: Vec<usize>,
    /// Elements.
    pub data: NpyData,
}

/// Element types [`write_npy`] can write.
pub trait NpyElement: Copy {
    /// NumPy `descr` string.
    const DESCR: &'static str;
    /// Appends the little-endian bytes of `self`.
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! element {
    ($t:ty, $d:expr) => {
        impl NpyElement for $t {
            const DESCR: &'static str = $d;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
element!(i32, "<i4");
element!(i64, "<i8");
element!(u32, "<u4");
element!(u64, "<u8");
element!(f32, "<f4");
element!(u8, "|u1");

/// Writes a C-order array in `.npy` version 1.0 (header padded to a multiple of 64 bytes).
pub fn write_npy<T: NpyElement>(path: &Path, shape: &[usize], data: &[T]) -> std::io::Result<()> {
    let count: usize = shape.iter().product();
    if count != data.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("shape {shape:?} holds {count} elements, got {}", data.len()),
        ));
    }
    let shape_s = match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        T::DESCR,
        shape_s
    );
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    w.write_all(b"\x93NUMPY\x01\x00")?;
    w.write_all(&(header.len() as u16).to_le_bytes())?;
    w.write_all(header.as_bytes())?;
    let mut buf = Vec::with_capacity(1 << 20);
    for chunk in data.chunks(1 << 16) {
        buf.clear();
        for &x in chunk {
            x.put(&mut buf);
        }
        w.write_all(&buf)?;
    }
    w.flush()
}

/// Value of `'key': value` in a header dict, up to the next top-level comma or brace.
fn header_field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let start = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[start..].trim_start().strip_prefix(':')?.trim_start();
    if rest.starts_with('(') {
        let end = rest.find(')')?;
        Some(&rest[..=end])
    } else {
        let end = rest.find([',', '}'])?;
        Some(rest[..end].trim())
    }
}

/// Reads a `.npy` file.
///
/// Nothing larger than the file is allocated: the data size the header's `shape` and `descr`
/// claim is checked against the bytes the file holds after its header before the array is
/// allocated, so a header claiming 10^10 rows is a [`GraphError::NpyShape`] naming the file,
/// not an abort on an 80 GB allocation.
pub fn read_npy(path: &Path) -> Result<NpyArray, GraphError> {
    let file = File::open(path).map_err(|e| GraphError::io(path, e))?;
    let len = file.metadata().map_err(|e| GraphError::io(path, e))?.len();
    read_npy_from(BufReader::with_capacity(1 << 20, file), len, path)
}

/// Reads a `.npy` array held in memory (`name` is the file it came from, for messages): what
/// [`read_npy`] does with a file's bytes.
pub fn read_npy_bytes(bytes: &[u8], name: &Path) -> Result<NpyArray, GraphError> {
    read_npy_from(bytes, bytes.len() as u64, name)
}

/// Reads a `.npy` array of `len` bytes from `r`; `path` names it in errors.
fn read_npy_from(mut r: impl Read, len: u64, path: &Path) -> Result<NpyArray, GraphError> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)
        .map_err(|_| GraphError::npy(path, "file too short for a .npy header"))?;
    if &magic[..6] != b"\x93NUMPY" {
        return Err(GraphError::npy(path, "not a .npy file (bad magic bytes)"));
    }
    let (hlen, prefix) = match magic[6] {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b)
                .map_err(|_| GraphError::npy(path, "truncated header length"))?;
            (u16::from_le_bytes(b) as u64, 10u64)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b)
                .map_err(|_| GraphError::npy(path, "truncated header length"))?;
            (u32::from_le_bytes(b) as u64, 12u64)
        }
        v => {
            return Err(GraphError::npy(
                path,
                format!("unsupported .npy version {v}"),
            ))
        }
    };
    if prefix + hlen > len {
        return Err(GraphError::npy(path, "header length beyond end of file"));
    }
    let mut hbytes = vec![0u8; hlen as usize];
    r.read_exact(&mut hbytes)
        .map_err(|_| GraphError::npy(path, "truncated header"))?;
    let header = String::from_utf8_lossy(&hbytes);
    let descr = header_field(&header, "descr")
        .ok_or_else(|| GraphError::npy(path, "header has no 'descr'"))?
        .trim_matches(|c| c == '\'' || c == '"');
    if header_field(&header, "fortran_order") == Some("True") {
        return Err(GraphError::npy(
            path,
            "Fortran-order arrays are not supported; save with numpy.ascontiguousarray",
        ));
    }
    let shape_s = header_field(&header, "shape")
        .ok_or_else(|| GraphError::npy(path, "header has no 'shape'"))?;
    let shape: Vec<usize> = shape_s
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| GraphError::npy(path, format!("bad shape {shape_s}")))?;
    let (size, dtype): (u64, &'static str) = match descr {
        "|i1" | "<i1" => (1, "int8"),
        "|u1" | "<u1" => (1, "uint8"),
        "|b1" => (1, "bool"),
        "<i4" => (4, "int32"),
        "<u4" => (4, "uint32"),
        "<f4" => (4, "float32"),
        "<i8" => (8, "int64"),
        "<u8" => (8, "uint64"),
        "<f8" => (8, "float64"),
        other => {
            return Err(GraphError::npy(
                path,
                format!("unsupported dtype {other:?}: use little-endian int32/int64/uint32/uint64/float32/float64, uint8, int8 or bool"),
            ))
        }
    };
    // The data the header claims must be in the file before anything is allocated for it.
    let available = len - prefix - hlen;
    let claimed = shape
        .iter()
        .try_fold(size as u128, |acc, &d| acc.checked_mul(d as u128));
    let bytes = match claimed {
        Some(b) if b <= available as u128 => b as usize,
        _ => {
            return Err(GraphError::NpyShape {
                path: path.to_path_buf(),
                field: "shape",
                shape: shape_s.to_string(),
                dtype,
                claimed: match claimed {
                    Some(b) => format!("{b} bytes"),
                    None => "more than 2^128 bytes".to_string(),
                },
                limit: available,
            })
        }
    };
    let mut raw = vec![0u8; bytes];
    r.read_exact(&mut raw).map_err(|_| {
        GraphError::npy(
            path,
            format!("truncated data: shape {shape:?} needs {bytes} bytes"),
        )
    })?;
    macro_rules! conv {
        ($t:ty, $n:expr) => {
            raw.chunks_exact($n)
                .map(|c| {
                    let mut b = [0u8; $n];
                    b.copy_from_slice(c);
                    <$t>::from_le_bytes(b)
                })
                .collect()
        };
    }
    let data = match descr {
        "|i1" | "<i1" => NpyData::I8(raw.iter().map(|&b| b as i8).collect()),
        "|u1" | "<u1" => NpyData::U8(raw),
        "|b1" => NpyData::Bool(raw.iter().map(|&b| b != 0).collect()),
        "<i4" => NpyData::I32(conv!(i32, 4)),
        "<u4" => NpyData::U32(conv!(u32, 4)),
        "<f4" => NpyData::F32(conv!(f32, 4)),
        "<i8" => NpyData::I64(conv!(i64, 8)),
        "<u8" => NpyData::U64(conv!(u64, 8)),
        _ => NpyData::F64(conv!(f64, 8)),
    };
    Ok(NpyArray { shape, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_writable_dtype() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npy");
        write_npy(&p, &[2, 3], &[1i32, -2, 3, 4, 5, 6]).unwrap();
        assert_eq!(
            read_npy(&p).unwrap(),
            NpyArray {
                shape: vec![2, 3],
                data: NpyData::I32(vec![1, -2, 3, 4, 5, 6])
            }
        );
        write_npy(&p, &[3], &[1u64, 2, u64::MAX]).unwrap();
        assert_eq!(
            read_npy(&p).unwrap().data,
            NpyData::U64(vec![1, 2, u64::MAX])
        );
        write_npy(&p, &[2], &[1.5f32, -0.25]).unwrap();
        assert_eq!(read_npy(&p).unwrap().data, NpyData::F32(vec![1.5, -0.25]));
        write_npy(&p, &[2], &[7u8, 9]).unwrap();
        assert_eq!(read_npy(&p).unwrap().data, NpyData::U8(vec![7, 9]));
        write_npy(&p, &[0, 2], &[] as &[i64]).unwrap();
        assert_eq!(read_npy(&p).unwrap().shape, vec![0, 2]);
        // Header is padded so data starts at a multiple of 64.
        let bytes = std::fs::read(&p).unwrap();
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
    }

    #[test]
    fn reads_hand_written_numpy_bytes() {
        // What numpy.save writes for np.array([[0, 1], [1, 2]], dtype='<i8').
        let header = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }";
        let mut h = header.to_string();
        h.push_str(&" ".repeat(128 - 10 - header.len() - 1));
        h.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
        bytes.extend_from_slice(h.as_bytes());
        for x in [0i64, 1, 1, 2] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.npy");
        std::fs::write(&p, &bytes).unwrap();
        let a = read_npy(&p).unwrap();
        assert_eq!(a.shape, vec![2, 2]);
        assert_eq!(a.data, NpyData::I64(vec![0, 1, 1, 2]));
        // Truncated data and bad magic are errors naming the file.
        std::fs::write(&p, &bytes[..bytes.len() - 3]).unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(e.contains("e.npy") && e.contains("truncated"), "{e}");
        std::fs::write(&p, b"hello world, not numpy").unwrap();
        assert!(read_npy(&p).unwrap_err().to_string().contains("magic"));
    }

    /// A version-1 `.npy` file with `header` (padded) followed by `data`.
    fn crafted(header: &str, data: &[u8]) -> Vec<u8> {
        let mut h = header.to_string();
        h.push_str(&" ".repeat((64 - (10 + h.len() + 1) % 64) % 64));
        h.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
        bytes.extend_from_slice(h.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    /// A header claiming 10^10 rows over 10 bytes of data is an error naming the file, the
    /// field and the limit, before anything is allocated (the old reader allocated the 160 GB
    /// the header claimed and aborted).
    #[test]
    fn a_header_claiming_more_than_the_file_holds_is_refused_before_allocating() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("edges.npy");
        let h = "{'descr': '<i8', 'fortran_order': False, 'shape': (10000000000, 2), }";
        std::fs::write(&p, crafted(h, &[7u8; 10])).unwrap();
        let e = read_npy(&p).unwrap_err();
        match &e {
            GraphError::NpyShape {
                path,
                field,
                limit,
                claimed,
                ..
            } => {
                assert_eq!(path, &p);
                assert_eq!(*field, "shape");
                assert_eq!(*limit, 10);
                assert_eq!(claimed, "160000000000 bytes");
            }
            other => panic!("expected NpyShape, got {other:?}"),
        }
        let m = e.to_string();
        assert!(
            m.contains("edges.npy") && m.contains("'shape'") && m.contains("only 10 bytes"),
            "{m}"
        );
        // A shape whose element count overflows every integer type is the same error, not an
        // arithmetic overflow.
        let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 18446744073709551615, 18446744073709551615), }";
        let e = read_npy_bytes(&crafted(h, &[]), Path::new("f.npy")).unwrap_err();
        assert!(
            matches!(&e, GraphError::NpyShape { claimed, limit: 0, .. } if claimed.starts_with("more than")),
            "{e:?}"
        );
        // One byte short of the claim is refused; exactly the claim is read.
        let h = "{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }";
        let e = read_npy_bytes(&crafted(h, &[1u8; 11]), Path::new("g.npy")).unwrap_err();
        assert!(matches!(e, GraphError::NpyShape { limit: 11, .. }), "{e:?}");
        let a = read_npy_bytes(&crafted(h, &[0u8; 12]), Path::new("g.npy")).unwrap();
        assert_eq!(a.data, NpyData::U32(vec![0, 0, 0]));
        // A version-2 header length beyond the file is refused before it is allocated.
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend_from_slice(&u32::MAX.to_le_bytes());
        v2.extend_from_slice(b"{}");
        let e = read_npy_bytes(&v2, Path::new("h.npy")).unwrap_err();
        assert!(
            e.to_string().contains("header length beyond end of file"),
            "{e}"
        );
    }
}
