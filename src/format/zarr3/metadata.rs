//! Zarr v3 metadata: the zarr.json document of an array (shape, data type,
//! regular chunk grid, chunk key encoding, fill value, codec chain,
//! dimension names, attributes, the `hdf5_shards` member) parsed and
//! checked before anything is read, and written back in the form the
//! specification gives. Shapes stay
//! in the document's order (C order, last dimension fastest); the API's N5
//! order is their reverse.

#[cfg(test)]
use serde_json::json;
use serde_json::{Map, Value};

use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::fill::{self, Flavor};
use crate::format::uint_list;

/// The name in zarr.json of the member that makes every shard libn5
/// writes an HDF5 file too (hdf5.md A1; what it allows is
/// `hdf5_shards`'s).
pub(crate) const HDF5_SHARDS: &str = "hdf5_shards";

/// The shards of an array with the member are HDF5 files: what the top
/// `sharding_indexed` codec of such an array carries.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Hdf5Shards {
    /// The array's shape (C order): the dataset of a shard at the array's
    /// end is clipped to it.
    pub array_shape: Vec<u64>,
}

impl Hdf5Shards {
    /// The region (C order) of the shard of shape `shard` at the shard-grid
    /// position `at` (C order) inside the array; the whole shard when `at`
    /// is `None` (a shard the caller knows to be inside the array).
    pub(crate) fn extent(&self, shard: &[u64], at: Option<&[u64]>) -> Vec<u64> {
        match at {
            None => shard.to_vec(),
            Some(at) => (0..shard.len())
                .map(|d| {
                    let start = at.get(d).map_or(0, |&p| p.saturating_mul(shard[d]));
                    let size = self.array_shape.get(d).copied().unwrap_or(u64::MAX);
                    size.saturating_sub(start).min(shard[d])
                })
                .collect(),
        }
    }
}

/// The value of the [`HDF5_SHARDS`] member in `map`: `None` when absent; an error when it is
/// not an object (what zarr-python and tensorstore refuse too).
pub(crate) fn hdf5_shards_member(map: &Map<String, Value>) -> Result<Option<&Map<String, Value>>> {
    match map.get(HDF5_SHARDS) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(other) => Err(Error::invalid_metadata(format!(
            "'{HDF5_SHARDS}' is {other}, not an object (write {{\"must_understand\": false}})"
        ))),
    }
}

/// The largest rank an array may have (as for N5 datasets).
pub(crate) const MAX_RANK: usize = crate::format::n5::metadata::MAX_RANK;

/// How grid positions become keys below the array's own key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KeyEncoding {
    /// `default`: `c` then the indices, each after the separator
    /// (`c/1/2/3`, or `c.1.2.3`); `c` alone for a rank-0 array.
    Default {
        /// `/` or `.`.
        separator: char,
    },
    /// `v2`: the indices joined by the separator (`1.2.3`); `0` for rank 0.
    V2 {
        /// `.` or `/`.
        separator: char,
    },
}

impl KeyEncoding {
    /// The key of the chunk at `pos` (document order).
    pub(crate) fn key(&self, pos: &[u64]) -> String {
        let (first, separator) = match self {
            KeyEncoding::Default { separator } => (Some("c"), *separator),
            KeyEncoding::V2 { separator } => (None, *separator),
        };
        let mut key = String::new();
        if let Some(c) = first {
            key.push_str(c);
        }
        for (i, p) in pos.iter().enumerate() {
            if i > 0 || first.is_some() {
                key.push(separator);
            }
            key.push_str(&p.to_string());
        }
        if key.is_empty() {
            key.push('0');
        }
        key
    }

    fn parse(v: &Value) -> Result<KeyEncoding> {
        let (name, config) = named(v, "chunk_key_encoding")?;
        let separator = match config.get("separator") {
            None => None,
            Some(Value::String(s)) if s == "/" || s == "." => s.chars().next(),
            Some(other) => {
                return Err(Error::invalid_metadata(format!(
                    "chunk_key_encoding separator {other} is neither \"/\" nor \".\""
                )))
            }
        };
        match name {
            "default" => Ok(KeyEncoding::Default {
                separator: separator.unwrap_or('/'),
            }),
            "v2" => Ok(KeyEncoding::V2 {
                separator: separator.unwrap_or('.'),
            }),
            other => Err(Error::new(
                ErrorKind::Unsupported,
                format!("chunk_key_encoding '{other}' is not supported (default and v2 are)"),
            )),
        }
    }

    #[cfg(test)]
    fn to_json(&self) -> Value {
        let (name, separator) = match self {
            KeyEncoding::Default { separator } => ("default", separator),
            KeyEncoding::V2 { separator } => ("v2", separator),
        };
        json!({"name": name, "configuration": {"separator": separator.to_string()}})
    }
}

/// Byte order of the `bytes` codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endian {
    /// `little`.
    Little,
    /// `big`.
    Big,
}

/// Blosc's shuffle, as the v3 blosc codec names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shuffle {
    /// `noshuffle`.
    None,
    /// `shuffle` (byte shuffle).
    Byte,
    /// `bitshuffle`.
    Bit,
}

/// Where a shard keeps its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexLocation {
    /// Before the inner chunks.
    Start,
    /// After them (the default).
    End,
}

/// One codec of a chain, with its configuration checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum CodecSpec {
    /// `transpose` (array → array): `order[i]` is the input dimension that
    /// becomes output dimension `i`.
    Transpose {
        /// A permutation of `0..rank`.
        order: Vec<usize>,
    },
    /// `bytes` (array → bytes): the elements in C order, in `endian` order
    /// (absent for one-byte types).
    Bytes {
        /// Byte order; `None` only for one-byte types.
        endian: Option<Endian>,
    },
    /// `vlen-utf8` or `vlen-bytes` (array → bytes) of variable-length
    /// strings or bytes: a u32le count, then per element a u32le length and
    /// its bytes.
    Vlen {
        /// `vlen-utf8` (strings) rather than `vlen-bytes`.
        utf8: bool,
    },
    /// `sharding_indexed` (array → bytes): inner chunks with their own
    /// chain, and an index of (offset, nbytes) per inner chunk.
    Sharding {
        /// Shape of an inner chunk (document order); divides the shard shape.
        chunk_shape: Vec<u64>,
        /// The inner chunks' chain.
        codecs: Vec<CodecSpec>,
        /// The index's chain (fixed size: no compression).
        index_codecs: Vec<CodecSpec>,
        /// Where the index is.
        index_location: IndexLocation,
        /// Set on the codec of an array whose `hdf5_shards` member asks
        /// for shards that are HDF5 files too (and whose codecs allow it).
        hdf5: Option<Hdf5Shards>,
    },
    /// `gzip` (bytes → bytes).
    Gzip {
        /// 0..=9.
        level: u32,
    },
    /// `zstd` (bytes → bytes).
    Zstd {
        /// zstd's level.
        level: i32,
        /// Whether frames carry a content checksum.
        checksum: bool,
    },
    /// `blosc` (bytes → bytes).
    Blosc {
        /// blosclz, lz4, lz4hc, snappy, zlib or zstd.
        cname: String,
        /// 0..=9.
        clevel: u32,
        /// The shuffle.
        shuffle: Shuffle,
        /// Element size the shuffle works on (required unless no shuffle).
        typesize: u32,
        /// Internal block size, 0 = automatic.
        blocksize: u64,
    },
    /// `crc32c` (bytes → bytes): a CRC-32C of the bytes appended, 4 bytes
    /// little-endian.
    Crc32c,
    /// `numcodecs.<id>` (bytes → bytes): a numcodecs compressor with its
    /// numcodecs configuration, as hdmf-zarr's `convert_to_v3` writes for
    /// copied datasets (blosc, zstd, gzip, zlib, bz2, lzma, lz4); read and
    /// written with its own framing, never put in new metadata.
    Numcodecs {
        /// The numcodecs id (`blosc`, `zlib`, ...).
        id: String,
        /// The shared codec doing the work.
        codec: crate::codec::Compression,
    },
}

/// What a codec takes and gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    ArrayToArray,
    ArrayToBytes,
    BytesToBytes,
}

impl CodecSpec {
    fn kind(&self) -> Kind {
        match self {
            CodecSpec::Transpose { .. } => Kind::ArrayToArray,
            CodecSpec::Bytes { .. } | CodecSpec::Vlen { .. } | CodecSpec::Sharding { .. } => {
                Kind::ArrayToBytes
            }
            _ => Kind::BytesToBytes,
        }
    }

    /// The codec's name in zarr.json.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            CodecSpec::Transpose { .. } => "transpose",
            CodecSpec::Bytes { .. } => "bytes",
            CodecSpec::Vlen { utf8: true } => "vlen-utf8",
            CodecSpec::Vlen { utf8: false } => "vlen-bytes",
            CodecSpec::Sharding { .. } => "sharding_indexed",
            CodecSpec::Gzip { .. } => "gzip",
            CodecSpec::Zstd { .. } => "zstd",
            CodecSpec::Blosc { .. } => "blosc",
            CodecSpec::Crc32c => "crc32c",
            CodecSpec::Numcodecs { .. } => "numcodecs.*",
        }
    }

    /// Parses one codec object for a chain applied to chunks of
    /// `chunk_shape` (document order) of `dtype`.
    fn parse(v: &Value, dtype: DataType, chunk_shape: &[u64], depth: usize) -> Result<CodecSpec> {
        let (name, config) = named(v, "codec")?;
        let rank = chunk_shape.len();
        let bad = |what: String| Error::invalid_metadata(format!("codec '{name}': {what}"));
        let spec = match name {
            "transpose" => {
                let order = match config.get("order") {
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|i| i.as_u64().map(|i| i as usize))
                        .collect::<Option<Vec<usize>>>()
                        .ok_or_else(|| bad("'order' holds a non-integer".into()))?,
                    // Early zarr-python 3 releases wrote "C" and "F".
                    Some(Value::String(s)) if s == "C" => (0..rank).collect(),
                    Some(Value::String(s)) if s == "F" => (0..rank).rev().collect(),
                    other => return Err(bad(format!("'order' is {other:?}, not a permutation"))),
                };
                let mut seen = vec![false; rank];
                if order.len() != rank
                    || order
                        .iter()
                        .any(|&i| i >= rank || std::mem::replace(&mut seen[i], true))
                {
                    return Err(bad(format!(
                        "'order' {order:?} is not a permutation of 0..{rank}"
                    )));
                }
                CodecSpec::Transpose { order }
            }
            "bytes" => {
                let endian = match config.get("endian") {
                    Some(Value::String(s)) if s == "little" => Some(Endian::Little),
                    Some(Value::String(s)) if s == "big" => Some(Endian::Big),
                    None | Some(Value::Null) => None,
                    Some(other) => return Err(bad(format!("'endian' is {other}"))),
                };
                if !dtype.has_layout() {
                    return Err(bad(format!(
                        "{dtype} elements have no fixed size (their codec is vlen-utf8 or vlen-bytes)"
                    )));
                }
                if endian.is_none() && dtype.swap_width().is_some_and(|w| w > 1) {
                    return Err(bad(format!("'endian' is required for {}", dtype.name())));
                }
                CodecSpec::Bytes { endian }
            }
            "vlen-utf8" | "vlen-bytes" => {
                let utf8 = name == "vlen-utf8";
                let fits = match dtype {
                    DataType::String => true,
                    DataType::Object => !utf8,
                    _ => false,
                };
                if !fits {
                    return Err(bad(format!("it does not encode {dtype} elements")));
                }
                CodecSpec::Vlen { utf8 }
            }
            "sharding_indexed" => {
                if depth >= MAX_SHARDING_DEPTH {
                    return Err(bad(format!(
                        "sharding nested more than {MAX_SHARDING_DEPTH} deep"
                    )));
                }
                let inner = uint_list(config, "chunk_shape", MAX_RANK)
                    .map_err(|e| bad(e.message().into()))?;
                if inner.len() != rank {
                    return Err(bad(format!(
                        "chunk_shape {inner:?} has rank {}, the shard {rank}",
                        inner.len()
                    )));
                }
                if let Some(d) =
                    (0..rank).find(|&d| inner[d] == 0 || !chunk_shape[d].is_multiple_of(inner[d]))
                {
                    return Err(bad(format!(
                        "chunk_shape {inner:?} does not divide the shard shape {chunk_shape:?} (dimension {d})"
                    )));
                }
                let codecs = parse_chain(config.get("codecs"), dtype.clone(), &inner, depth + 1)
                    .map_err(|e| e.context("sharding_indexed codecs"))?;
                let per_shard: Vec<u64> = (0..rank).map(|d| chunk_shape[d] / inner[d]).collect();
                let mut index_shape = per_shard.clone();
                index_shape.push(2);
                let index_codecs = parse_chain(
                    config.get("index_codecs"),
                    DataType::U64,
                    &index_shape,
                    depth + 1,
                )
                .map_err(|e| e.context("sharding_indexed index_codecs"))?;
                if let Some(c) = index_codecs.iter().find(|c| {
                    matches!(
                        c,
                        CodecSpec::Gzip { .. }
                            | CodecSpec::Zstd { .. }
                            | CodecSpec::Blosc { .. }
                            | CodecSpec::Sharding { .. }
                    )
                }) {
                    return Err(bad(format!(
                        "index_codecs may not hold '{}': the index must have a fixed size",
                        c.name()
                    )));
                }
                let index_location = match config.get("index_location") {
                    None => IndexLocation::End,
                    Some(Value::String(s)) if s == "end" => IndexLocation::End,
                    Some(Value::String(s)) if s == "start" => IndexLocation::Start,
                    Some(other) => return Err(bad(format!("'index_location' is {other}"))),
                };
                CodecSpec::Sharding {
                    chunk_shape: inner,
                    codecs,
                    index_codecs,
                    index_location,
                    hdf5: None,
                }
            }
            "gzip" => {
                let level = int_member(config, "level")?.unwrap_or(6);
                if !(0..=9).contains(&level) {
                    return Err(bad(format!("'level' {level} is outside 0..=9")));
                }
                CodecSpec::Gzip {
                    level: level as u32,
                }
            }
            "zstd" => {
                let level = int_member(config, "level")?.unwrap_or(0);
                let level = i32::try_from(level).map_err(|_| bad(format!("'level' {level}")))?;
                let checksum = match config.get("checksum") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(other) => return Err(bad(format!("'checksum' is {other}"))),
                };
                CodecSpec::Zstd { level, checksum }
            }
            "blosc" => {
                let cname = match config.get("cname") {
                    None => "lz4".to_string(),
                    Some(Value::String(s))
                        if ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"]
                            .contains(&s.as_str()) =>
                    {
                        s.clone()
                    }
                    Some(other) => return Err(bad(format!("'cname' {other} is not supported"))),
                };
                let clevel = int_member(config, "clevel")?.unwrap_or(5);
                if !(0..=9).contains(&clevel) {
                    return Err(bad(format!("'clevel' {clevel} is outside 0..=9")));
                }
                let shuffle = match config.get("shuffle") {
                    None => Shuffle::None,
                    Some(Value::String(s)) if s == "noshuffle" => Shuffle::None,
                    Some(Value::String(s)) if s == "shuffle" => Shuffle::Byte,
                    Some(Value::String(s)) if s == "bitshuffle" => Shuffle::Bit,
                    Some(other) => return Err(bad(format!("'shuffle' is {other}"))),
                };
                let typesize = match int_member(config, "typesize")? {
                    Some(t) if (1..=255).contains(&t) => t as u32,
                    Some(t) => return Err(bad(format!("'typesize' {t} is outside 1..=255"))),
                    None => dtype.size() as u32,
                };
                let blocksize = int_member(config, "blocksize")?.unwrap_or(0);
                let blocksize = u64::try_from(blocksize)
                    .map_err(|_| bad(format!("'blocksize' {blocksize}")))?;
                CodecSpec::Blosc {
                    cname,
                    clevel: clevel as u32,
                    shuffle,
                    typesize,
                    blocksize,
                }
            }
            "crc32c" => CodecSpec::Crc32c,
            numcodecs if numcodecs.starts_with("numcodecs.") => {
                numcodecs_codec(&numcodecs["numcodecs.".len()..], config)?
            }
            other => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("codec '{other}' is not supported"),
                ))
            }
        };
        Ok(spec)
    }

    /// The codec object as zarr.json writes it.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        let config = match self {
            CodecSpec::Transpose { order } => json!({"order": order}),
            CodecSpec::Vlen { .. } => json!({}),
            CodecSpec::Bytes { endian } => match endian {
                Some(Endian::Little) => json!({"endian": "little"}),
                Some(Endian::Big) => json!({"endian": "big"}),
                None => json!({}),
            },
            CodecSpec::Sharding {
                chunk_shape,
                codecs,
                index_codecs,
                index_location,
                ..
            } => json!({
                "chunk_shape": chunk_shape,
                "codecs": codecs.iter().map(CodecSpec::to_json).collect::<Vec<_>>(),
                "index_codecs": index_codecs.iter().map(CodecSpec::to_json).collect::<Vec<_>>(),
                "index_location": match index_location {
                    IndexLocation::Start => "start",
                    IndexLocation::End => "end",
                },
            }),
            CodecSpec::Gzip { level } => json!({"level": level}),
            CodecSpec::Zstd { level, checksum } => json!({"level": level, "checksum": checksum}),
            CodecSpec::Blosc {
                cname,
                clevel,
                shuffle,
                typesize,
                blocksize,
            } => json!({
                "cname": cname,
                "clevel": clevel,
                "shuffle": match shuffle {
                    Shuffle::None => "noshuffle",
                    Shuffle::Byte => "shuffle",
                    Shuffle::Bit => "bitshuffle",
                },
                "typesize": typesize,
                "blocksize": blocksize,
            }),
            CodecSpec::Crc32c => return json!({"name": "crc32c"}),
            CodecSpec::Numcodecs { id, .. } => return json!({"name": format!("numcodecs.{id}")}),
        };
        json!({"name": self.name(), "configuration": config})
    }
}

/// The `numcodecs.<id>` codec with numcodecs configuration `config`.
fn numcodecs_codec(id: &str, config: &Map<String, Value>) -> Result<CodecSpec> {
    use crate::codec::Compression;
    let bad = |what: String| Error::invalid_metadata(format!("codec 'numcodecs.{id}': {what}"));
    let int = |key: &str, default: i64, lo: i64, hi: i64| -> Result<i64> {
        let v = int_member(config, key)?.unwrap_or(default);
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(bad(format!("'{key}' {v} is outside {lo}..={hi}")))
        }
    };
    let codec = match id {
        "blosc" => Compression::Blosc {
            cname: match config.get("cname") {
                None => "lz4".into(),
                Some(Value::String(c)) if crate::codec::blosc_cname(c) => c.clone(),
                Some(other) => return Err(bad(format!("'cname' {other}"))),
            },
            clevel: int("clevel", 5, 0, 9)? as u32,
            shuffle: int("shuffle", 1, -1, 2)? as i32,
            blocksize: int("blocksize", 0, 0, i64::MAX)? as u64,
        },
        "zstd" => Compression::Zstd {
            level: int("level", 1, -131_072, 22)? as i32,
        },
        "gzip" | "zlib" => Compression::Gzip {
            level: int("level", 1, 0, 9)? as i32,
            use_zlib: id == "zlib",
        },
        "bz2" => Compression::Bzip2 {
            block_size: int("level", 1, 1, 9)? as u32,
        },
        "lzma" => {
            if int("format", 1, 0, 3)? != 1 || config.get("filters").is_some_and(|f| !f.is_null()) {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    "codec 'numcodecs.lzma' with a format other than 1 (.xz) or custom filters is not supported",
                ));
            }
            Compression::Xz {
                preset: int("preset", 6, 0, 9)? as u32,
            }
        }
        "lz4" => Compression::Lz4 { block_size: 0 },
        other => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("codec 'numcodecs.{other}' is not supported (numcodecs blosc, zstd, gzip, zlib, bz2, lzma and lz4 are)"),
            ))
        }
    };
    Ok(CodecSpec::Numcodecs {
        id: id.to_string(),
        codec,
    })
}

/// How deep `sharding_indexed` may nest (real data uses one or two levels).
const MAX_SHARDING_DEPTH: usize = 4;

/// Parses and checks a codec chain: array → array codecs, exactly one
/// array → bytes codec, then bytes → bytes codecs.
pub(crate) fn parse_chain(
    v: Option<&Value>,
    dtype: DataType,
    chunk_shape: &[u64],
    depth: usize,
) -> Result<Vec<CodecSpec>> {
    let items = match v {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(Error::invalid_metadata(format!(
                "'codecs' is {other}, not an array"
            )))
        }
        None => return Err(Error::invalid_metadata("'codecs' is missing")),
    };
    let mut chain = Vec::with_capacity(items.len().min(16));
    // Transposes change the shape the next codec sees.
    let mut shape = chunk_shape.to_vec();
    let mut seen_array_to_bytes = false;
    for item in items {
        let spec = CodecSpec::parse(item, dtype.clone(), &shape, depth)?;
        let misplaced = match spec.kind() {
            Kind::ArrayToArray | Kind::ArrayToBytes => seen_array_to_bytes,
            Kind::BytesToBytes => !seen_array_to_bytes,
        };
        if misplaced {
            let place = if seen_array_to_bytes {
                "after"
            } else {
                "before"
            };
            return Err(Error::invalid_metadata(format!(
                "codec '{}' cannot come {place} the array -> bytes codec",
                spec.name()
            )));
        }
        if let CodecSpec::Transpose { order } = &spec {
            shape = order.iter().map(|&i| shape[i]).collect();
        }
        if spec.kind() == Kind::ArrayToBytes {
            seen_array_to_bytes = true;
        }
        chain.push(spec);
    }
    if !seen_array_to_bytes {
        return Err(Error::invalid_metadata(
            "the codecs have no array -> bytes codec (such as 'bytes')",
        ));
    }
    Ok(chain)
}

/// The metadata of a Zarr v3 array.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArrayMetadata {
    /// The array's shape, document (C) order.
    pub shape: Vec<u64>,
    /// Element type.
    pub data_type: DataType,
    /// The regular grid's chunk shape (the shard shape of a sharded array).
    pub chunk_shape: Vec<u64>,
    /// Chunk keys.
    pub key_encoding: KeyEncoding,
    /// One element of the fill value, native byte order.
    pub fill_value: Vec<u8>,
    /// The codec chain.
    pub codecs: Vec<CodecSpec>,
    /// `dimension_names`, kept as written (`null` entries included).
    pub dimension_names: Option<Value>,
    /// The user attributes.
    pub attributes: Map<String, Value>,
}

impl ArrayMetadata {
    /// Reads an array's zarr.json document.
    pub(crate) fn from_json(doc: &Value) -> Result<ArrayMetadata> {
        let map = doc
            .as_object()
            .ok_or_else(|| Error::invalid_metadata("zarr.json is not a JSON object"))?;
        match map.get("zarr_format") {
            Some(v) if v.as_u64() == Some(3) => {}
            other => {
                return Err(Error::invalid_metadata(format!(
                    "zarr_format is {other:?}, not 3"
                )))
            }
        }
        match map.get("node_type").and_then(Value::as_str) {
            Some("array") => {}
            other => {
                return Err(Error::invalid_metadata(format!(
                    "node_type is {other:?}, not \"array\""
                )))
            }
        }
        Self::from_members(map)
    }

    /// Reads the members of an array document (`zarr_format` and
    /// `node_type` already checked or left out, as `n5_dataset_create_json`
    /// allows).
    pub(crate) fn from_members(map: &Map<String, Value>) -> Result<ArrayMetadata> {
        for (key, value) in map {
            let known = matches!(
                key.as_str(),
                "zarr_format"
                    | "node_type"
                    | "shape"
                    | "data_type"
                    | "chunk_grid"
                    | "chunk_key_encoding"
                    | "fill_value"
                    | "codecs"
                    | "attributes"
                    | "dimension_names"
                    | "storage_transformers"
                    | "consolidated_metadata"
                    | HDF5_SHARDS
            );
            let ignorable = value
                .as_object()
                .and_then(|o| o.get("must_understand"))
                .and_then(Value::as_bool)
                == Some(false);
            if !known && !ignorable {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "zarr.json member '{key}' is an extension this library does not understand"
                    ),
                ));
            }
        }
        if let Some(t) = map.get("storage_transformers") {
            if t.as_array().is_none_or(|a| !a.is_empty()) {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    "storage_transformers are not supported",
                ));
            }
        }
        let shape = uint_list(map, "shape", MAX_RANK)?;
        if shape.len() > MAX_RANK {
            return Err(Error::invalid_metadata(format!(
                "rank {} is above {MAX_RANK}",
                shape.len()
            )));
        }
        let data_type = match map.get("data_type") {
            Some(v) => super::dtype::parse(v)?,
            None => return Err(Error::invalid_metadata("'data_type' is missing")),
        };
        let grid = map
            .get("chunk_grid")
            .ok_or_else(|| Error::invalid_metadata("'chunk_grid' is missing"))?;
        let (grid_name, grid_config) = named(grid, "chunk_grid")?;
        if grid_name != "regular" {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("chunk_grid '{grid_name}' is not supported (regular is)"),
            ));
        }
        let chunk_shape = uint_list(grid_config, "chunk_shape", MAX_RANK)?;
        if chunk_shape.len() != shape.len() {
            return Err(Error::invalid_metadata(format!(
                "chunk_shape {chunk_shape:?} and shape {shape:?} differ in rank"
            )));
        }
        if chunk_shape.contains(&0) {
            return Err(Error::invalid_metadata(format!(
                "chunk_shape {chunk_shape:?} has a zero extent"
            )));
        }
        let chunk_bytes = chunk_shape
            .iter()
            .try_fold(data_type.size() as u64, |a, &b| a.checked_mul(b))
            .filter(|&b| b <= crate::format::n5::metadata::MAX_BLOCK_BYTES);
        if chunk_bytes.is_none() {
            return Err(Error::invalid_metadata(format!(
                "a chunk of {chunk_shape:?} {} holds more than 2 GiB",
                data_type.name()
            )));
        }
        let key_encoding = match map.get("chunk_key_encoding") {
            Some(v) => KeyEncoding::parse(v)?,
            None => KeyEncoding::Default { separator: '/' },
        };
        let fill_value = match map.get("fill_value") {
            Some(v) => fill::parse(v, &data_type, Flavor::V3, None)?,
            None => return Err(Error::invalid_metadata("'fill_value' is missing")),
        };
        let mut codecs = parse_chain(map.get("codecs"), data_type.clone(), &chunk_shape, 0)?;
        // HDF5 shards; writes to an array whose codecs cannot hold them are
        // refused (`hdf5_shards::check_write`).
        if hdf5_shards_member(map)?.is_some() {
            if let [CodecSpec::Sharding { hdf5, .. }] = codecs.as_mut_slice() {
                *hdf5 = Some(Hdf5Shards {
                    array_shape: shape.clone(),
                });
            }
        }
        let dimension_names = match map.get("dimension_names") {
            None | Some(Value::Null) => None,
            Some(Value::Array(names)) => {
                if names.len() != shape.len()
                    || names.iter().any(|n| !(n.is_string() || n.is_null()))
                {
                    return Err(Error::invalid_metadata(format!(
                        "dimension_names {} is not one string or null per dimension",
                        Value::Array(names.clone())
                    )));
                }
                Some(Value::Array(names.clone()))
            }
            Some(other) => {
                return Err(Error::invalid_metadata(format!(
                    "dimension_names is {other}, not an array"
                )))
            }
        };
        let attributes = match map.get("attributes") {
            None => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(other) => {
                return Err(Error::invalid_metadata(format!(
                    "attributes is {other}, not an object"
                )))
            }
        };
        Ok(ArrayMetadata {
            shape,
            data_type,
            chunk_shape,
            key_encoding,
            fill_value,
            codecs,
            dimension_names,
            attributes,
        })
    }

    /// The zarr.json document.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("zarr_format".into(), json!(3));
        doc.insert("node_type".into(), json!("array"));
        doc.insert("shape".into(), json!(self.shape));
        doc.insert("data_type".into(), super::dtype::to_json(&self.data_type));
        doc.insert(
            "chunk_grid".into(),
            json!({"name": "regular", "configuration": {"chunk_shape": self.chunk_shape}}),
        );
        doc.insert("chunk_key_encoding".into(), self.key_encoding.to_json());
        doc.insert(
            "fill_value".into(),
            fill::to_json(&self.fill_value, &self.data_type, Flavor::V3, None),
        );
        doc.insert(
            "codecs".into(),
            Value::Array(self.codecs.iter().map(CodecSpec::to_json).collect()),
        );
        doc.insert("attributes".into(), Value::Object(self.attributes.clone()));
        if let [CodecSpec::Sharding { hdf5: Some(_), .. }] = self.codecs.as_slice() {
            doc.insert(HDF5_SHARDS.into(), json!({"must_understand": false}));
        }
        if let Some(names) = &self.dimension_names {
            doc.insert("dimension_names".into(), names.clone());
        }
        Value::Object(doc)
    }
}

/// `(name, configuration)` of a named object (`{"name": ..., "configuration": {...}}`),
/// or of a bare name string.
fn named<'a>(v: &'a Value, what: &str) -> Result<(&'a str, &'a Map<String, Value>)> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let empty = EMPTY.get_or_init(Map::new);
    match v {
        Value::String(name) => Ok((name, empty)),
        Value::Object(o) => {
            let name = o.get("name").and_then(Value::as_str).ok_or_else(|| {
                Error::invalid_metadata(format!("{what} {v} has no string 'name'"))
            })?;
            match o.get("configuration") {
                None | Some(Value::Null) => Ok((name, empty)),
                Some(Value::Object(c)) => Ok((name, c)),
                Some(other) => Err(Error::invalid_metadata(format!(
                    "{what} '{name}': configuration {other} is not an object"
                ))),
            }
        }
        other => Err(Error::invalid_metadata(format!(
            "{what} {other} is neither a name nor an object"
        ))),
    }
}

/// The integer member `key`, if present.
fn int_member(map: &Map<String, Value>, key: &str) -> Result<Option<i64>> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| Error::invalid_metadata(format!("'{key}' is {v}, not an integer"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(extra: Value) -> Value {
        let mut doc = json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": [100, 60],
            "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32, 32]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 7,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": {"a": 1},
        });
        for (k, v) in extra.as_object().unwrap() {
            doc[k] = v.clone();
        }
        doc
    }

    #[test]
    fn reads_a_plain_array_and_writes_it_back() {
        let m = ArrayMetadata::from_json(&array(json!({}))).unwrap();
        assert_eq!(m.shape, [100, 60]);
        assert_eq!(m.chunk_shape, [32, 32]);
        assert_eq!(m.data_type, DataType::U16);
        assert_eq!(m.fill_value, 7u16.to_ne_bytes());
        assert_eq!(m.key_encoding.key(&[1, 2]), "c/1/2");
        assert_eq!(ArrayMetadata::from_json(&m.to_json()).unwrap(), m);
    }

    #[test]
    fn chunk_keys() {
        let d = KeyEncoding::Default { separator: '.' };
        assert_eq!(d.key(&[0, 3]), "c.0.3");
        assert_eq!(d.key(&[]), "c");
        let v2 = KeyEncoding::V2 { separator: '.' };
        assert_eq!(v2.key(&[4, 5, 6]), "4.5.6");
        assert_eq!(v2.key(&[]), "0");
        let v2 = KeyEncoding::V2 { separator: '/' };
        assert_eq!(v2.key(&[4, 5]), "4/5");
    }

    #[test]
    fn sharding_nests_and_checks_its_shapes() {
        let doc = array(json!({
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 64]}},
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [16, 32],
                "codecs": [{"name": "bytes", "configuration": {"endian": "big"}},
                           {"name": "zstd", "configuration": {"level": 3, "checksum": true}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}],
                "index_location": "start"}}],
        }));
        let m = ArrayMetadata::from_json(&doc).unwrap();
        let CodecSpec::Sharding {
            chunk_shape,
            codecs,
            index_codecs,
            index_location,
            hdf5: None,
        } = &m.codecs[0]
        else {
            panic!("not sharded: {:?}", m.codecs)
        };
        assert_eq!(chunk_shape, &[16, 32]);
        assert_eq!(codecs.len(), 2);
        assert_eq!(index_codecs[1], CodecSpec::Crc32c);
        assert_eq!(*index_location, IndexLocation::Start);
        assert_eq!(ArrayMetadata::from_json(&m.to_json()).unwrap(), m);

        let mut bad = doc.clone();
        bad["codecs"][0]["configuration"]["chunk_shape"] = json!([24, 32]);
        let e = ArrayMetadata::from_json(&bad).unwrap_err();
        assert!(e.message().contains("does not divide"), "{e}");
        let mut bad = doc.clone();
        bad["codecs"][0]["configuration"]["index_codecs"] =
            json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip"}]);
        let e = ArrayMetadata::from_json(&bad).unwrap_err();
        assert!(e.message().contains("fixed size"), "{e}");
    }

    #[test]
    fn the_chain_has_one_array_to_bytes_codec_in_its_place() {
        for codecs in [
            json!([]),
            json!([{"name": "gzip"}]),
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "transpose", "configuration": {"order": [1, 0]}}]),
            json!([{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "bytes", "configuration": {"endian": "little"}}]),
            json!([{"name": "bytes"}]),
            json!([{"name": "transpose", "configuration": {"order": [0, 0]}},
                   {"name": "bytes", "configuration": {"endian": "little"}}]),
        ] {
            let e =
                ArrayMetadata::from_json(&array(json!({ "codecs": codecs.clone() }))).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{codecs}: {e}");
        }
        let ok = json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "gzip", "configuration": {"level": 1}},
                        {"name": "crc32c"}]);
        ArrayMetadata::from_json(&array(json!({ "codecs": ok }))).unwrap();
    }

    #[test]
    fn unknown_things_are_unsupported_and_named() {
        for (extra, named) in [
            (json!({"data_type": "int128"}), "int128"),
            (json!({"data_type": "float8_e4m3"}), "float8_e4m3"),
            (
                json!({"codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "lzf"}]}),
                "lzf",
            ),
            (
                json!({"chunk_grid": {"name": "rectilinear", "configuration": {}}}),
                "rectilinear",
            ),
            (json!({"chunk_key_encoding": {"name": "morton"}}), "morton"),
            (json!({"my_extension": {"x": 1}}), "my_extension"),
            (
                json!({"storage_transformers": [{"name": "t"}]}),
                "storage_transformers",
            ),
        ] {
            let e = ArrayMetadata::from_json(&array(extra.clone())).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{extra}: {e}");
            assert!(e.message().contains(named), "{extra}: {e}");
        }
        // An extension that need not be understood is ignored.
        ArrayMetadata::from_json(&array(json!({"my_extension": {"must_understand": false}})))
            .unwrap();
    }

    #[test]
    fn fill_values() {
        let f = |v: Value, t: DataType| fill::parse(&v, &t, Flavor::V3, None);
        assert_eq!(f(json!(255), DataType::U8).unwrap(), [255]);
        assert!(f(json!(256), DataType::U8).is_err());
        assert!(f(json!(-1), DataType::U16).is_err());
        assert_eq!(f(json!(-2), DataType::I16).unwrap(), (-2i16).to_ne_bytes());
        assert_eq!(
            f(json!(u64::MAX), DataType::U64).unwrap(),
            u64::MAX.to_ne_bytes()
        );
        assert!(
            f32::from_ne_bytes(f(json!("NaN"), DataType::F32).unwrap().try_into().unwrap())
                .is_nan()
        );
        assert_eq!(
            f(json!("-Infinity"), DataType::F64).unwrap(),
            f64::NEG_INFINITY.to_ne_bytes()
        );
        assert_eq!(
            f(json!("0x7fc00001"), DataType::F32).unwrap(),
            0x7fc0_0001u32.to_ne_bytes()
        );
        assert!(f(json!("0x7fc0"), DataType::F32).is_err());
        assert_eq!(f(json!(1.5), DataType::F64).unwrap(), 1.5f64.to_ne_bytes());
        assert!(f(json!("1.5"), DataType::F64).is_err());
        assert!(f(json!(1.5), DataType::I32).is_err());
        // Written back as read.
        for (v, t) in [
            (json!("NaN"), DataType::F64),
            (json!("Infinity"), DataType::F32),
            (json!("0x7fc00001"), DataType::F32),
            (json!(-3), DataType::I8),
            (json!(2.5), DataType::F32),
        ] {
            let bytes = f(v.clone(), t.clone()).unwrap();
            assert_eq!(fill::to_json(&bytes, &t, Flavor::V3, None), v);
        }
    }

    #[test]
    fn numcodecs_codecs_read_as_their_compressor() {
        let chain = |c: Value| {
            parse_chain(
                Some(&json!([{"name": "bytes", "configuration": {"endian": "little"}}, c])),
                DataType::U16,
                &[4],
                0,
            )
        };
        let specs = chain(json!({"name": "numcodecs.blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}})).unwrap();
        assert!(
            matches!(&specs[1], CodecSpec::Numcodecs { id, codec: crate::codec::Compression::Blosc { shuffle: 1, .. } } if id == "blosc")
        );
        for ok in ["zstd", "zlib", "gzip", "bz2", "lzma", "lz4"] {
            chain(json!({"name": format!("numcodecs.{ok}"), "configuration": {}})).unwrap();
        }
        for (c, kind) in [
            (json!({"name": "numcodecs.snappy"}), ErrorKind::Unsupported),
            (
                json!({"name": "numcodecs.lzma", "configuration": {"format": 2}}),
                ErrorKind::Unsupported,
            ),
            (
                json!({"name": "numcodecs.zlib", "configuration": {"level": 12}}),
                ErrorKind::InvalidMetadata,
            ),
            (
                json!({"name": "numcodecs.blosc", "configuration": {"cname": "brotli"}}),
                ErrorKind::InvalidMetadata,
            ),
        ] {
            assert_eq!(chain(c.clone()).unwrap_err().kind(), kind, "{c}");
        }
    }

    #[test]
    fn hostile_documents_are_errors() {
        for extra in [
            json!({"shape": [1, -1]}),
            json!({"shape": "big"}),
            json!({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [0, 32]}}}),
            json!({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32]}}}),
            json!({"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4294967296u64, 4294967296u64]}}}),
            json!({"fill_value": null}),
            json!({"attributes": []}),
            json!({"dimension_names": ["x"]}),
        ] {
            let e = ArrayMetadata::from_json(&array(extra.clone())).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidMetadata, "{extra}: {e}");
        }
        let mut deep = json!({"name": "bytes", "configuration": {"endian": "little"}});
        for _ in 0..10 {
            deep = json!({"name": "sharding_indexed", "configuration": {
                "chunk_shape": [32, 32], "codecs": [deep],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}});
        }
        let e = ArrayMetadata::from_json(&array(json!({ "codecs": [deep] }))).unwrap_err();
        assert!(e.message().contains("nested"), "{e}");
    }
}
