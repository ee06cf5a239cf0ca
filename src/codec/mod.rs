//! Compression codecs: the `compression` object of a dataset's
//! attributes.json ([`Compression`]), its JSON forms as every peer writes
//! them, and the encoding and decoding of block payloads.
//!
//! Encoding writes what the Java reference writes; decoding reads what any
//! peer writes (see `shared/design/n5-format.md` b3–b5), writes into a buffer
//! of the exact expected size and decodes no further than needed, so a hostile
//! payload cannot make it allocate much more than that buffer. Payloads whose
//! decoded size is not known (variable-length Zarr chunks) are decoded to the
//! size their data has (`growing`).

mod blosc;
mod bzip2;
mod growing;
mod gzip;
mod lz4;
mod stream;
mod xxh32;
mod xz;
mod zstd;

#[cfg(test)]
mod corpus_tests;

pub(crate) use growing::decode_unsized;
pub(crate) use lz4::encode_numcodecs as lz4_encode_numcodecs;
pub(crate) use zstd::encode_frame as zstd_encode_frame;

/// Whether `cname` is a compressor c-blosc is built with here.
pub(crate) fn blosc_cname(cname: &str) -> bool {
    blosc::CNAMES.contains(&cname)
}

/// Checks that a payload of `c` meant to decode to exactly `n` bytes does
/// not state another size: a Blosc frame's header gives its decoded size,
/// and a Zarr chunk is exactly its chunk's bytes (where
/// [`Compression::decode`], for N5 blocks, decodes the first `n` bytes of a
/// larger frame). Other codecs state no size; `decode` checks they hold
/// at least `n` bytes.
pub(crate) fn check_decoded_size(
    c: &Compression,
    payload: &[u8],
    n: usize,
) -> crate::error::Result<()> {
    if let (Compression::Blosc { .. }, Some(header)) = (c, payload.get(4..8)) {
        let nbytes = u32::from_le_bytes(header.try_into().expect("4 bytes")) as usize;
        if nbytes != n {
            return Err(crate::error::Error::codec(format!(
                "blosc: the frame holds {nbytes} bytes, the chunk {n}"
            )));
        }
    }
    Ok(())
}

use serde_json::{json, Map, Value};

use crate::error::{Error, ErrorKind, Result};

/// The `compression` object of a dataset's attributes.json.
#[derive(Clone, Debug, PartialEq)]
pub enum Compression {
    /// `raw`: the bytes as they are.
    Raw,
    /// `gzip`: RFC 1952 gzip, or RFC 1950 zlib with `useZlib`.
    Gzip {
        /// Deflate level -1..=9 (-1 = zlib's default, 6); default 6 (Java master).
        level: i32,
        /// Write a zlib stream instead of gzip; default false.
        use_zlib: bool,
    },
    /// `bzip2`.
    Bzip2 {
        /// Block size in units of 100 kB, 1..=9; default 9.
        block_size: u32,
    },
    /// `xz`: the .xz container.
    Xz {
        /// liblzma preset 0..=9; default 6.
        preset: u32,
    },
    /// `lz4`: lz4-java `LZ4Block` framing when writing; every peer's framing
    /// when reading.
    Lz4 {
        /// Bytes per piece, 64..=32 MiB for writing (other values, such as
        /// the level z5 stores here, are clamped); default 65536.
        block_size: u32,
    },
    /// `blosc` (n5-blosc): one Blosc1 frame.
    Blosc {
        /// blosclz, lz4, lz4hc, snappy, zlib or zstd; default blosclz.
        cname: String,
        /// 0..=9; default 6.
        clevel: u32,
        /// 0 none, 1 byte, 2 bit, -1 byte shuffle when the element size > 1; default 0.
        shuffle: i32,
        /// Internal block size in bytes, 0 = automatic; default 0.
        blocksize: u64,
    },
    /// `zstd` (n5-zstandard).
    Zstd {
        /// Compression level, -131072..=22 (0 = zstd's default, 3); default 3.
        level: i32,
    },
}

/// Default gzip level (Java N5 master; ≤ 3.5.1 used -1, the same output).
const GZIP_DEFAULT_LEVEL: i32 = 6;
const BZIP2_DEFAULT_BLOCK_SIZE: u32 = 9;
const XZ_DEFAULT_PRESET: u32 = 6;
const LZ4_DEFAULT_BLOCK_SIZE: u32 = 65536;
const BLOSC_DEFAULT_CNAME: &str = "blosclz";
const BLOSC_DEFAULT_CLEVEL: u32 = 6;
const BLOSC_DEFAULT_SHUFFLE: i32 = 0;
const BLOSC_DEFAULT_BLOCKSIZE: u64 = 0;
const ZSTD_DEFAULT_LEVEL: i32 = 3;

/// The integer parameter `key` of a compression object; `None` when absent
/// or null. Integral floats (`6.0`) are accepted, as Gson does.
fn int_param<T: TryFrom<i64>>(obj: &Map<String, Value>, key: &str) -> Result<Option<T>> {
    let value = match obj.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    let wrong = || {
        Error::invalid_metadata(format!(
            "compression parameter '{key}' must be an integer in range, found {value}"
        ))
    };
    let n = match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            })
            .ok_or_else(wrong)?,
        _ => return Err(wrong()),
    };
    T::try_from(n).map(Some).map_err(|_| wrong())
}

/// The boolean parameter `key`; `None` when absent or null.
fn bool_param(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(Error::invalid_metadata(format!(
            "compression parameter '{key}' must be a boolean, found {v}"
        ))),
    }
}

/// The string parameter `key`; `None` when absent or null.
fn string_param(obj: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(Error::invalid_metadata(format!(
            "compression parameter '{key}' must be a string, found {v}"
        ))),
    }
}

impl Compression {
    /// Parses the `compression` object (the one with `"type"`).
    ///
    /// Missing parameters take their defaults; keys this library does not use
    /// are ignored (blosc `nthreads`/`typesize`, zarr's `id`, `checksum`,
    /// `acceleration`...). Parameter values are only type-checked here: any
    /// value of the right type is accepted for reading, and ranges are checked
    /// by [`Compression::encode`]. An unknown `type` is
    /// [`ErrorKind::Unsupported`]; a wrongly typed parameter is
    /// [`ErrorKind::InvalidMetadata`].
    pub fn from_json(v: &Value) -> Result<Compression> {
        let obj = v.as_object().ok_or_else(|| {
            Error::invalid_metadata(format!("'compression' must be a JSON object, found {v}"))
        })?;
        let type_name = match obj.get("type") {
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(Error::invalid_metadata(format!(
                    "compression 'type' must be a string, found {other}"
                )))
            }
            None => return Err(Error::invalid_metadata("'compression' has no 'type'")),
        };
        Ok(match type_name {
            "raw" => Compression::Raw,
            "gzip" => Compression::Gzip {
                level: int_param(obj, "level")?.unwrap_or(GZIP_DEFAULT_LEVEL),
                use_zlib: bool_param(obj, "useZlib")?.unwrap_or(false),
            },
            "bzip2" => Compression::Bzip2 {
                block_size: int_param(obj, "blockSize")?.unwrap_or(BZIP2_DEFAULT_BLOCK_SIZE),
            },
            "xz" => Compression::Xz {
                preset: int_param(obj, "preset")?.unwrap_or(XZ_DEFAULT_PRESET),
            },
            "lz4" => Compression::Lz4 {
                block_size: int_param(obj, "blockSize")?.unwrap_or(LZ4_DEFAULT_BLOCK_SIZE),
            },
            "blosc" => Compression::Blosc {
                cname: string_param(obj, "cname")?
                    .unwrap_or_else(|| BLOSC_DEFAULT_CNAME.to_string()),
                clevel: int_param(obj, "clevel")?.unwrap_or(BLOSC_DEFAULT_CLEVEL),
                shuffle: int_param(obj, "shuffle")?.unwrap_or(BLOSC_DEFAULT_SHUFFLE),
                blocksize: int_param(obj, "blocksize")?.unwrap_or(BLOSC_DEFAULT_BLOCKSIZE),
            },
            "zstd" => Compression::Zstd {
                level: int_param(obj, "level")?.unwrap_or(ZSTD_DEFAULT_LEVEL),
            },
            other => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("unsupported compression type \"{other}\""),
                ))
            }
        })
    }

    /// Parses a compression object given by a user creating a dataset: as
    /// [`Compression::from_json`], but strict. A key the type does not have
    /// (a typo such as `"lvl"`) and a parameter outside what the compressor
    /// accepts are [`ErrorKind::InvalidArgument`]; the keys other writers
    /// add and this library does not store (`nthreads`, `typesize`, `id`)
    /// are accepted, so a compression object copied from any peer's
    /// attributes.json works.
    pub fn from_user_json(v: &Value) -> Result<Compression> {
        let as_argument = |e: Error| match e.kind() {
            ErrorKind::InvalidMetadata => Error::invalid_argument(e.message()),
            _ => e,
        };
        let c = Compression::from_json(v).map_err(as_argument)?;
        let complete = c.to_json();
        let known: Vec<&str> = complete
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if let Some(obj) = v.as_object() {
            for key in obj.keys() {
                if !known.contains(&key.as_str())
                    && !["nthreads", "typesize", "id"].contains(&key.as_str())
                {
                    let params: Vec<&str> =
                        known.iter().copied().filter(|k| *k != "type").collect();
                    return Err(Error::invalid_argument(format!(
                        "{} compression has no parameter '{key}' ({})",
                        c.type_name(),
                        if params.is_empty() {
                            "it has none".to_string()
                        } else {
                            format!("it has: {}", params.join(", "))
                        }
                    )));
                }
            }
        }
        c.check_parameters().map_err(as_argument)?;
        Ok(c)
    }

    /// Checks that every parameter is one the compressor accepts (gzip level
    /// -1..=9, bzip2 blockSize 1..=9, xz preset 0..=9, zstd level in zstd's
    /// range, blosc cname, clevel 0..=9 and shuffle -1..=2), as
    /// [`Compression::encode`] would: [`ErrorKind::InvalidMetadata`]
    /// otherwise. lz4 block sizes are clamped, never refused.
    pub fn check_parameters(&self) -> Result<()> {
        match self {
            Compression::Raw | Compression::Lz4 { .. } => Ok(()),
            Compression::Gzip { level, .. } => gzip::deflate_level(*level).map(|_| ()),
            Compression::Bzip2 { block_size } => bzip2::check_block_size(*block_size),
            Compression::Xz { preset } => xz::check_preset(*preset),
            Compression::Blosc {
                cname,
                clevel,
                shuffle,
                ..
            } => blosc::check_params(cname, *clevel, *shuffle),
            Compression::Zstd { level } => zstd::check_level(*level),
        }
    }

    /// The compression of a Java N5 1.x dataset's `"compressionType"`
    /// (`raw`, `gzip`, `bzip2`, `lz4` or `xz`, any letter case), with default
    /// parameters. Anything else is [`ErrorKind::Unsupported`].
    pub fn from_legacy_type(name: &str) -> Result<Compression> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "raw" => Compression::Raw,
            "gzip" => Compression::Gzip {
                level: GZIP_DEFAULT_LEVEL,
                use_zlib: false,
            },
            "bzip2" => Compression::Bzip2 {
                block_size: BZIP2_DEFAULT_BLOCK_SIZE,
            },
            "lz4" => Compression::Lz4 {
                block_size: LZ4_DEFAULT_BLOCK_SIZE,
            },
            "xz" => Compression::Xz {
                preset: XZ_DEFAULT_PRESET,
            },
            _ => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("unsupported compressionType \"{name}\""),
                ))
            }
        })
    }

    /// The `compression` object as Java N5 master writes it, with every
    /// parameter, `type` first. Blosc leaves out `nthreads` and `typesize`,
    /// which tensorstore rejects.
    pub fn to_json(&self) -> Value {
        match self {
            Compression::Raw => json!({"type": "raw"}),
            Compression::Gzip { level, use_zlib } => {
                json!({"type": "gzip", "level": level, "useZlib": use_zlib})
            }
            Compression::Bzip2 { block_size } => json!({"type": "bzip2", "blockSize": block_size}),
            Compression::Xz { preset } => json!({"type": "xz", "preset": preset}),
            Compression::Lz4 { block_size } => json!({"type": "lz4", "blockSize": block_size}),
            Compression::Blosc {
                cname,
                clevel,
                shuffle,
                blocksize,
            } => json!({
                "type": "blosc",
                "cname": cname,
                "clevel": clevel,
                "shuffle": shuffle,
                "blocksize": blocksize,
            }),
            Compression::Zstd { level } => json!({"type": "zstd", "level": level}),
        }
    }

    /// The `"type"` name: raw, gzip, bzip2, xz, lz4, blosc or zstd.
    pub fn type_name(&self) -> &'static str {
        match self {
            Compression::Raw => "raw",
            Compression::Gzip { .. } => "gzip",
            Compression::Bzip2 { .. } => "bzip2",
            Compression::Xz { .. } => "xz",
            Compression::Lz4 { .. } => "lz4",
            Compression::Blosc { .. } => "blosc",
            Compression::Zstd { .. } => "zstd",
        }
    }

    /// Append the compressed payload of `data` to `out`. `elem_size` is the
    /// real element size (blosc typesize).
    ///
    /// Parameters outside what the compressor accepts are
    /// [`ErrorKind::InvalidMetadata`] (gzip level -1..=9, bzip2 blockSize
    /// 1..=9, xz preset 0..=9, zstd level in zstd's range, blosc cname, clevel
    /// 0..=9 and shuffle -1..=2); an lz4 blockSize outside 64..=32 MiB is
    /// clamped into it.
    pub fn encode(&self, data: &[u8], elem_size: usize, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Compression::Raw => {
                out.extend_from_slice(data);
                Ok(())
            }
            Compression::Gzip { level, use_zlib } => gzip::encode(data, *level, *use_zlib, out),
            Compression::Bzip2 { block_size } => bzip2::encode(data, *block_size, out),
            Compression::Xz { preset } => xz::encode(data, *preset, out),
            Compression::Lz4 { block_size } => lz4::encode(data, *block_size, out),
            Compression::Blosc {
                cname,
                clevel,
                shuffle,
                blocksize,
            } => blosc::encode(data, elem_size, cname, *clevel, *shuffle, *blocksize, out),
            Compression::Zstd { level } => zstd::encode(data, *level, out),
        }
    }

    /// Decode `payload` into exactly `out.len()` bytes. Fewer available bytes is an error;
    /// data beyond out.len() is ignored and never decompressed further than needed.
    /// Never allocate more than about out.len() plus a small constant, whatever the payload claims (hostile input).
    ///
    /// Errors are [`ErrorKind::Codec`]. Parameters other than the type do not
    /// matter: every format describes itself. gzip and zlib are told apart by
    /// their bytes; lz4 accepts the `LZ4Block` stream, the LZ4 frame format,
    /// numcodecs' size-prefixed block and a bare block. When the stream ends
    /// exactly at `out.len()` its trailing checksum is verified. An empty
    /// `out` needs nothing from the payload and always succeeds.
    ///
    /// Decoder memory beyond `out`: a few hundred KiB for most codecs; xz up
    /// to its dictionary (≤ 64 MiB for any preset, limit 96 MiB); zstd up to
    /// its window (≤ max(16 MiB, 2 × out.len())); blosc reading a part of a
    /// larger frame ≤ 3 internal blocks of ≤ max(4 MiB, out.len()).
    pub fn decode(&self, payload: &[u8], out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        match self {
            Compression::Raw => match payload.get(..out.len()) {
                Some(data) => {
                    out.copy_from_slice(data);
                    Ok(())
                }
                None => Err(Error::codec(format!(
                    "raw: the payload has {} bytes, {} expected",
                    payload.len(),
                    out.len()
                ))),
            },
            Compression::Gzip { use_zlib, .. } => gzip::decode(payload, *use_zlib, out),
            Compression::Bzip2 { .. } => bzip2::decode(payload, out),
            Compression::Xz { .. } => xz::decode(payload, out),
            Compression::Lz4 { .. } => lz4::decode(payload, out),
            Compression::Blosc { .. } => blosc::decode(payload, out),
            Compression::Zstd { .. } => zstd::decode(payload, out),
        }
    }
}

#[cfg(test)]
mod tests;
