//! Entry points of the fuzz targets (`fuzz/`) into decoders that the API
//! reaches only through datasets of a kind the targets cannot easily make.
//! Not part of the API: hidden from its documentation, and free to change
//! with the code they call.

use serde_json::Value;

use crate::error::Result;
use crate::format::zarr2::pickle;

/// Decodes `bytes` as a pickle (a legacy hdmf-zarr object chunk or fill
/// value), as the pickle reader does for a chunk, and gives the decoded
/// value as JSON (an error there, a dict key that is not a string, comes
/// back as `Ok(Err(..))`).
pub fn pickle_decode(bytes: &[u8]) -> Result<std::result::Result<Value, String>> {
    pickle::decode(bytes, "fuzz input").map(|p| p.to_json())
}

/// The elements of a numcodecs `pickle` chunk of an array whose `.zarray`
/// `dtype` is `dtype`, which must hold `expected` elements.
pub fn pickle_object_chunk(bytes: &[u8], dtype: &Value, expected: usize) -> Result<Vec<Value>> {
    pickle::decode_object_chunk(bytes, "fuzz input", dtype, expected)
}

/// The elements of a numcodecs `json2` chunk, as [`pickle_object_chunk`].
pub fn json2_object_chunk(bytes: &[u8], dtype: &Value, expected: usize) -> Result<Vec<Value>> {
    pickle::decode_json2_chunk(bytes, "fuzz input", dtype, expected)
}

/// The fill value `text` (base64 of a pickle) of an array of `dtype`.
pub fn pickle_fill_value(text: &str, dtype: &Value) -> Result<Value> {
    pickle::fill_value_json(text, "fuzz input", dtype)
}
