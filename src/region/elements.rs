//! Regions as elements rather than bytes: `n5_region_read_json` (every
//! element of a region as JSON, in N5 order), the description of a
//! dataset's element type (`n5_dataset_dtype_json`), and the hdmf-zarr
//! reference markers that make a dataset's elements or fields object
//! references (nwb.md §3), which the JSON gives normalised.

use std::sync::{Mutex, OnceLock};

use serde_json::{json, Map, Value};

use super::{check_region, Grid};
use crate::dataset::Dataset;
use crate::dtype::json::{utf32_string, write_element, write_string};
use crate::dtype::DataType;
use crate::error::{Error, ErrorKind, Result};
use crate::format::array::Elements;

/// Which parts of a dataset hold object references (hdmf-zarr's markers in
/// its attributes).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct References {
    /// Every element is a reference (`_DTYPE: "object_reference"`, or
    /// `zarr_dtype: "object"`).
    pub whole: bool,
    /// The struct fields that are references (`_REFERENCE_FIELDS`, or the
    /// `"object"` entries of a `zarr_dtype` field list).
    pub fields: Vec<String>,
}

impl References {
    /// The markers in a dataset's user attributes.
    pub(crate) fn of(attributes: &Value) -> References {
        let mut r = References::default();
        match attributes.get("_DTYPE") {
            Some(Value::String(s)) if s == "object_reference" => r.whole = true,
            _ => {}
        }
        match attributes.get("zarr_dtype") {
            Some(Value::String(s)) if s == "object" => r.whole = true,
            Some(Value::Array(fields)) => {
                for f in fields {
                    if f.get("dtype").and_then(Value::as_str) == Some("object") {
                        if let Some(name) = f.get("name").and_then(Value::as_str) {
                            r.fields.push(name.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
        if let Some(Value::Array(names)) = attributes.get("_REFERENCE_FIELDS") {
            for n in names.iter().filter_map(Value::as_str) {
                if !r.fields.iter().any(|f| f == n) {
                    r.fields.push(n.to_string());
                }
            }
        }
        r
    }
}

/// A reference stored as text (a v3 element or a fixed-string field),
/// normalised: a plain path is `{"source": ".", "path": ...}`, a JSON
/// object with a `path` is itself (with `source` `"."` when it has none),
/// an empty string is `null`.
pub(crate) fn normalise_text_reference(s: &str) -> Value {
    if s.is_empty() {
        return Value::Null;
    }
    if s.starts_with('{') {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s) {
            if o.get("path").is_some_and(Value::is_string) {
                return normalise_object_reference(&o);
            }
        }
    }
    json!({"source": ".", "path": s})
}

/// A stored reference element of any form, normalised: an object with a
/// `path` (v2 `ZarrReference`s, normalised ones), a string (a path or JSON
/// text), and `null`, `0` or `""` (a fill value) as `null`; anything else
/// is a [`ErrorKind::Codec`] error.
pub(crate) fn normalise_reference(v: &Value) -> Result<Value> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(Value::Null),
        Value::String(s) => Ok(normalise_text_reference(s)),
        Value::Object(o) if o.get("path").is_some_and(Value::is_string) => {
            Ok(normalise_object_reference(o))
        }
        other => Err(Error::codec(format!("{other} is not an object reference"))),
    }
}

/// A reference stored as an object (`{"source", "path", "object_id",
/// "source_object_id"}`), normalised: `source` and `path` first, the two
/// ids when the object has them (as stored, null included).
pub(crate) fn normalise_object_reference(o: &Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert(
        "source".into(),
        o.get("source").cloned().unwrap_or_else(|| json!(".")),
    );
    m.insert("path".into(), o.get("path").cloned().unwrap_or(Value::Null));
    for key in ["object_id", "source_object_id"] {
        if let Some(v) = o.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    Value::Object(m)
}

impl Dataset {
    /// Bytes per element of the binary layout (`n5_dataset_element_size`);
    /// 0 for elements of variable length.
    pub fn element_size(&self) -> usize {
        self.attributes().data_type.element_size()
    }

    /// The hdmf-zarr reference markers of the dataset.
    pub(crate) fn references(&self) -> Result<References> {
        Ok(References::of(&self.container().attributes(self.path())?))
    }

    /// The description of the element type (`n5_dataset_dtype_json`):
    /// [`DataType::describe`] with the stored byte order, plus `stored`
    /// (the format's own spelling), `object_codec`, and for hdmf-zarr
    /// reference datasets `reference: true` or `reference_fields`.
    pub fn dtype_json(&self) -> Result<Value> {
        let stored = self.array().stored_type();
        let t = self.data_type();
        let mut m = t.describe(stored.byte_order);
        m.insert("stored".into(), stored.stored);
        if let Some(codec) = stored.object_codec {
            m.insert("object_codec".into(), json!(codec));
        }
        let refs = self.references()?;
        if refs.whole {
            m.insert("reference".into(), json!(true));
        }
        if !refs.fields.is_empty() && matches!(t, DataType::Struct(_)) {
            m.insert("reference_fields".into(), json!(refs.fields));
        }
        Ok(Value::Object(m))
    }

    /// The elements of the region at `offset` of `shape` as one flat JSON
    /// array in N5 order (`n5_region_read_json`), each as nwb.md §1 says;
    /// reference fields of a struct normalised (§3).
    pub fn read_region_json(&self, offset: &[u64], shape: &[u64]) -> Result<String> {
        let attrs = self.attributes();
        let t = attrs.data_type.clone();
        if !t.has_layout() {
            return self.read_region_json_variable(offset, shape);
        }
        attrs.check_rank(shape.len(), "shape")?;
        let size = t.size();
        let mut buf = region_buffer(shape, size)?;
        self.read_region(offset, shape, &mut buf)?;
        let refs = self.references()?;
        let ref_fields: Vec<usize> = match &t {
            DataType::Struct(s) => s
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| refs.fields.contains(&f.name))
                .map(|(i, _)| i)
                .collect(),
            _ => Vec::new(),
        };
        let mut out = String::with_capacity(2 + buf.len() / size.max(1) * 4);
        out.push('[');
        for (i, e) in buf.chunks_exact(size.max(1)).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let written = if ref_fields.is_empty() {
                write_element(&mut out, &t, e)
            } else {
                write_struct_with_references(&mut out, &t, e, &ref_fields)
            };
            written.map_err(|err| err.context(self.element_place(offset, shape, i)))?;
        }
        out.push(']');
        Ok(out)
    }
}

/// About how many bytes of variable-length elements one thread puts
/// together at a time into the output of a region read.
const ASSEMBLY_UNIT: usize = 1 << 20;

/// The strides (in elements) of an N5-order `shape`, dimension 0 fastest.
fn strides(shape: &[u64]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in 1..shape.len() {
        s[d] = s[d - 1] * shape[d - 1] as usize;
    }
    s
}

/// Visits every position of the N5-order box `extent`, dimension 0
/// fastest, giving `f` its index along `a` (strides, from `at_a`) and
/// along `b` (from `at_b`).
fn each_position(
    extent: &[u64],
    (a, at_a): (&[usize], &[u64]),
    (b, at_b): (&[usize], &[u64]),
    mut f: impl FnMut(usize, usize),
) {
    let n: u64 = extent.iter().product();
    let mut idx = vec![0u64; extent.len()];
    for _ in 0..n {
        let (mut ia, mut ib) = (0usize, 0usize);
        for d in 0..extent.len() {
            ia += (at_a[d] + idx[d]) as usize * a[d];
            ib += (at_b[d] + idx[d]) as usize * b[d];
        }
        f(ia, ib);
        for d in 0..extent.len() {
            idx[d] += 1;
            if idx[d] < extent[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// The number of elements of `shape`, checked.
fn count(shape: &[u64]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1u64, |a, &s| a.checked_mul(s))
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= isize::MAX as usize / 16)
        .ok_or_else(|| Error::invalid_argument(format!("a region of {shape:?} is too large")))
}

/// A zeroed buffer for the region `shape` of `size`-byte elements, its
/// size checked.
fn region_buffer(shape: &[u64], size: usize) -> Result<Vec<u8>> {
    let bytes = count(shape)?
        .checked_mul(size)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| Error::invalid_argument(format!("a region of {shape:?} is too large")))?;
    Ok(vec![0u8; bytes])
}

impl Dataset {
    /// Check that the dataset holds variable-length elements.
    fn check_variable(&self, what: &str) -> Result<()> {
        let t = self.data_type();
        if t.has_layout() || self.array().own_blocks("").is_ok() {
            return Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!(
                    "{what} takes Zarr string and bytes arrays; dataset '{}' holds {t}",
                    crate::path::display(self.path())
                ),
            ));
        }
        Ok(())
    }

    /// The variable-length elements of the region at `offset` of `shape`
    /// (N5 order): each block the region touches read and decoded once, in
    /// parallel on the container's threads, missing blocks giving the fill
    /// value. Packed elements are then put together run by run: the
    /// elements of a block along dimension 0 lie next to each other in the
    /// block and in the region, so each such run is one copy of its bytes,
    /// into an output sized beforehand.
    pub(crate) fn read_region_elements(&self, offset: &[u64], shape: &[u64]) -> Result<Elements> {
        self.check_variable("reading elements")?;
        let array = self.array();
        let attrs = array.attributes();
        check_region(&attrs, offset, shape)?;
        let n = count(shape)?;
        let grid = Grid::new(&attrs, offset, shape)?;
        let nominal: Vec<u64> = attrs.block_size.iter().map(|&b| u64::from(b)).collect();
        let (sr, sb) = (strides(shape), strides(&nominal));
        let per_block = attrs.block_num_elements();
        let overlaps = (0..grid.total)
            .map(|i| grid.overlap(i))
            .collect::<Result<Vec<_>>>()?;
        let slots: Vec<OnceLock<Option<Elements>>> =
            (0..grid.total).map(|_| OnceLock::new()).collect();
        self.container().pool().run(
            grid.total,
            || (),
            |_, i| {
                let pos = &overlaps[i].grid_pos;
                let block = array
                    .read_elements(pos)
                    .map_err(|e| e.context(format!("block {pos:?}")))?;
                if let Some(b) = &block {
                    if b.len() != per_block {
                        return Err(Error::codec(format!(
                            "block {pos:?} holds {} elements, {per_block} expected",
                            b.len()
                        )));
                    }
                }
                let _ = slots[i].set(block);
                Ok(())
            },
        )?;
        let blocks: Vec<Option<Elements>> = slots
            .into_iter()
            .map(|s| s.into_inner().flatten())
            .collect();
        // Every run along dimension 0: (start in the region, block, start
        // in the block, length), in the region's order.
        let mut runs = Vec::new();
        for (i, o) in overlaps.iter().enumerate() {
            // A scalar (rank 0) is one run of one element.
            let mut rows = o.extent.clone();
            let len = rows.first_mut().map_or(1, |l| std::mem::replace(l, 1)) as usize;
            each_position(&rows, (&sr, &o.in_region), (&sb, &o.in_block), |r, b| {
                runs.push((r, i, b, len))
            });
        }
        runs.sort_unstable_by_key(|&(r, ..)| r);
        let fill = array.fill().to_vec();
        let legacy = blocks
            .iter()
            .flatten()
            .any(|b| matches!(b, Elements::Json(_)))
            || matches!(
                array.stored_type().object_codec.as_deref(),
                Some("pickle" | "json2")
            );
        if legacy {
            let fill = array.fill_json()?;
            let mut values = Vec::with_capacity(n);
            for &(_, i, b, len) in &runs {
                for e in b..b + len {
                    values.push(match &blocks[i] {
                        Some(Elements::Json(v)) => v[e].clone(),
                        _ => fill.clone(),
                    });
                }
            }
            return Ok(Elements::Json(values));
        }
        // The bytes of elements `b..b + len` of a block's packed data.
        let span = |ends: &[usize], b: usize, len: usize| {
            let start = if b == 0 { 0 } else { ends[b - 1] };
            (start, ends[b + len - 1])
        };
        let sizes: Vec<usize> = runs
            .iter()
            .map(|&(_, i, b, len)| match &blocks[i] {
                Some(Elements::Packed { ends, .. }) => {
                    let (start, end) = span(ends, b, len);
                    end - start
                }
                _ => fill.len() * len,
            })
            .collect();
        // The output (zeroed pages the copies fault in), cut into units of
        // consecutive runs, about ASSEMBLY_UNIT bytes each, that the
        // container's threads fill side by side.
        let mut data = vec![0u8; sizes.iter().sum()];
        let mut ends = vec![0usize; n];
        let mut units = Vec::new();
        {
            let (mut rest_data, mut rest_ends) = (&mut data[..], &mut ends[..]);
            let (mut first, mut base) = (0, 0);
            while first < runs.len() {
                let (mut last, mut bytes, mut count) = (first, 0, 0);
                while last < runs.len() && (last == first || bytes < ASSEMBLY_UNIT) {
                    bytes += sizes[last];
                    count += runs[last].3;
                    last += 1;
                }
                let (d, rd) = std::mem::take(&mut rest_data).split_at_mut(bytes);
                let (e, re) = std::mem::take(&mut rest_ends).split_at_mut(count);
                (rest_data, rest_ends) = (rd, re);
                units.push(Mutex::new((first..last, base, d, e)));
                (first, base) = (last, base + bytes);
            }
        }
        self.container().pool().run(
            units.len(),
            || (),
            |_, u| {
                let mut unit = units[u].lock().unwrap_or_else(|p| p.into_inner());
                let (range, base, out, out_ends) = &mut *unit;
                let (mut at, mut k) = (0usize, 0usize);
                for (&(_, i, b, len), &size) in
                    runs[range.clone()].iter().zip(&sizes[range.clone()])
                {
                    match &blocks[i] {
                        Some(Elements::Packed {
                            data: bytes,
                            ends: block_ends,
                        }) => {
                            let (start, end) = span(block_ends, b, len);
                            out[at..at + size].copy_from_slice(&bytes[start..end]);
                            // Where the run starts in the output.
                            let to = *base + at;
                            for (slot, &e) in
                                out_ends[k..k + len].iter_mut().zip(&block_ends[b..b + len])
                            {
                                *slot = e - start + to;
                            }
                        }
                        _ => {
                            let f = fill.len();
                            for j in 0..len {
                                out[at + j * f..at + (j + 1) * f].copy_from_slice(&fill);
                                out_ends[k + j] = *base + at + (j + 1) * f;
                            }
                        }
                    }
                    at += size;
                    k += len;
                }
                Ok(())
            },
        )?;
        drop(units);
        Ok(Elements::Packed { data, ends })
    }

    /// Write packed variable-length elements (N5 order, exactly
    /// `prod(shape)`) to the region at `offset`: blocks it covers are
    /// replaced, blocks it covers in part read, changed and written back.
    pub(crate) fn write_region_elements(
        &self,
        offset: &[u64],
        shape: &[u64],
        elements: &Elements,
    ) -> Result<()> {
        self.container().check_writable()?;
        self.check_variable("writing elements")?;
        let array = self.array();
        array.check_write()?;
        let attrs = array.attributes();
        check_region(&attrs, offset, shape)?;
        let n = count(shape)?;
        if elements.len() != n {
            return Err(Error::new(
                ErrorKind::BufferSize,
                format!("{} elements for a region of {n}", elements.len()),
            ));
        }
        if self.data_type() == DataType::String {
            for i in 0..n {
                if std::str::from_utf8(elements.bytes(i).unwrap_or_default()).is_err() {
                    return Err(Error::new(
                        ErrorKind::InvalidUtf8,
                        format!("element {i} of the region is not valid UTF-8"),
                    ));
                }
            }
        }
        let grid = Grid::new(&attrs, offset, shape)?;
        let nominal: Vec<u64> = attrs.block_size.iter().map(|&b| u64::from(b)).collect();
        let (sr, sb) = (strides(shape), strides(&nominal));
        let per_block = attrs.block_num_elements();
        let fill = array.fill().to_vec();
        for i in 0..grid.total {
            let o = grid.overlap(i)?;
            let covered = o.extent.iter().product::<u64>() as usize == per_block;
            let current = if covered {
                None
            } else {
                array.read_elements(&o.grid_pos)?
            };
            let mut slots: Vec<&[u8]> = match &current {
                Some(b) if b.len() == per_block => (0..per_block)
                    .map(|j| b.bytes(j).unwrap_or_default())
                    .collect(),
                Some(_) => {
                    return Err(Error::codec(format!(
                        "block {:?} does not hold {per_block} elements",
                        o.grid_pos
                    )))
                }
                None => vec![&fill[..]; per_block],
            };
            each_position(
                &o.extent,
                (&sr, &o.in_region),
                (&sb, &o.in_block),
                |r, b| {
                    slots[b] = elements.bytes(r).unwrap_or_default();
                },
            );
            let mut data = Vec::new();
            let mut ends = Vec::with_capacity(per_block);
            for s in &slots {
                data.extend_from_slice(s);
                ends.push(data.len());
            }
            array
                .write_elements(&o.grid_pos, &Elements::Packed { data, ends })
                .map_err(|e| e.context(format!("block {:?}", o.grid_pos)))?;
        }
        Ok(())
    }

    /// Where element `i` of the region at `offset` of `shape` lies, for an
    /// error message: its index, the key of its chunk and the dataset.
    fn element_place(&self, offset: &[u64], shape: &[u64], i: usize) -> String {
        let block = self.attributes().block_size.clone();
        let mut rest = i as u64;
        let grid_pos: Vec<u64> = offset
            .iter()
            .zip(shape)
            .zip(&block)
            .map(|((&o, &n), &b)| {
                let at = o + rest % n.max(1);
                rest /= n.max(1);
                at / u64::from(b.max(1))
            })
            .collect();
        format!(
            "element {i} of the region (chunk {grid_pos:?}, key '{}') of dataset '{}'",
            self.block_key(&grid_pos),
            crate::path::display(self.path())
        )
    }

    /// [`Dataset::read_region_json`] of variable-length elements: strings,
    /// bytes as base64, legacy objects as decoded, references normalised.
    fn read_region_json_variable(&self, offset: &[u64], shape: &[u64]) -> Result<String> {
        let refs = self.references()?;
        let elements = self.read_region_elements(offset, shape)?;
        let string = self.data_type() == DataType::String;
        let mut out = String::from("[");
        for i in 0..elements.len() {
            if i > 0 {
                out.push_str(", ");
            }
            match &elements {
                Elements::Packed { .. } => {
                    let bytes = elements.bytes(i).unwrap_or_default();
                    if string {
                        let text = std::str::from_utf8(bytes).map_err(|_| {
                            Error::codec(format!(
                                "{} is not valid UTF-8",
                                self.element_place(offset, shape, i)
                            ))
                        })?;
                        if refs.whole {
                            out.push_str(&normalise_text_reference(text).to_string());
                        } else {
                            write_string(&mut out, text);
                        }
                    } else {
                        use base64::Engine;
                        out.push('"');
                        out.push_str(&base64::engine::general_purpose::STANDARD.encode(bytes));
                        out.push('"');
                    }
                }
                Elements::Json(values) => {
                    let v = &values[i];
                    let v = if refs.whole {
                        normalise_reference(v)
                            .map_err(|e| e.context(self.element_place(offset, shape, i)))?
                    } else if let (Value::Object(row), false) = (v, refs.fields.is_empty()) {
                        let mut row = row.clone();
                        for f in &refs.fields {
                            if let Some(r) = row.get(f) {
                                let n = normalise_reference(r).map_err(|e| {
                                    e.context(format!(
                                        "field '{f}' of {}",
                                        self.element_place(offset, shape, i)
                                    ))
                                })?;
                                row.insert(f.clone(), n);
                            }
                        }
                        Value::Object(row)
                    } else {
                        v.clone()
                    };
                    out.push_str(&v.to_string());
                }
            }
        }
        out.push(']');
        Ok(out)
    }

    /// The strings of the block at `grid_pos`, with its shape and whether it
    /// is stored (`n5_block_read_strings`): an N5 `string` block with its
    /// header's shape (no strings when not stored), or a Zarr chunk of a
    /// `string` or `fixed_utf32` array with its nominal shape (the fill
    /// value's strings when not stored).
    pub fn read_block_strings(&self, grid_pos: &[u64]) -> Result<(Vec<u64>, Vec<String>, bool)> {
        let array = self.array();
        if array.own_blocks("").is_ok() {
            return Ok(match self.read_string_block(grid_pos)? {
                Some((shape, strings)) => {
                    (shape.iter().map(|&s| u64::from(s)).collect(), strings, true)
                }
                None => (self.block_shape(grid_pos)?, Vec::new(), false),
            });
        }
        let attrs = array.attributes();
        attrs.check_grid_pos(grid_pos)?;
        let shape: Vec<u64> = attrs.block_size.iter().map(|&b| u64::from(b)).collect();
        let n = attrs.block_num_elements();
        match self.data_type() {
            DataType::String => {
                let (elements, found) = match array.read_elements(grid_pos)? {
                    Some(e) => (e, true),
                    None => {
                        let fill = array.fill().to_vec();
                        let data = fill.repeat(n);
                        let ends = (1..=n).map(|i| i * fill.len()).collect();
                        (Elements::Packed { data, ends }, false)
                    }
                };
                let strings = (0..elements.len())
                    .map(|i| {
                        String::from_utf8(elements.bytes(i).unwrap_or_default().to_vec()).map_err(
                            |_| {
                                Error::codec(format!(
                                    "element {i} of block {grid_pos:?} is not valid UTF-8"
                                ))
                            },
                        )
                    })
                    .collect::<Result<Vec<String>>>()?;
                Ok((shape, strings, found))
            }
            DataType::FixedUtf32 { chars } => {
                let mut buf = vec![0u8; n * 4 * chars as usize];
                let found = array.read_block_into(grid_pos, &mut buf)?;
                let strings = buf
                    .chunks_exact(4 * chars as usize)
                    .map(utf32_string)
                    .collect::<Result<Vec<String>>>()?;
                Ok((shape, strings, found))
            }
            t => Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!(
                    "dataset '{}' holds {t}, not strings",
                    crate::path::display(self.path())
                ),
            )),
        }
    }

    /// Write the strings of the block at `grid_pos` (`n5_block_write_strings`):
    /// an N5 `string` block with header `shape`, or a Zarr chunk of a
    /// `string` or `fixed_utf32` array, whose `shape` must be the nominal
    /// block shape.
    pub fn write_block_strings<S: AsRef<str>>(
        &self,
        grid_pos: &[u64],
        shape: &[u64],
        strings: &[S],
    ) -> Result<()> {
        let array = self.array();
        if array.own_blocks("").is_ok() {
            return self.write_string_block(grid_pos, shape, strings);
        }
        let attrs = array.attributes();
        attrs.check_grid_pos(grid_pos)?;
        let nominal: Vec<u64> = attrs.block_size.iter().map(|&b| u64::from(b)).collect();
        if shape != nominal.as_slice() {
            return Err(Error::new(
                ErrorKind::ShapeMismatch,
                format!("a Zarr chunk of strings is written whole: shape {shape:?}, the block is {nominal:?}"),
            ));
        }
        let offset: Vec<u64> = grid_pos.iter().zip(&nominal).map(|(p, b)| p * b).collect();
        // The chunk's part inside the array is a region; Zarr keeps the
        // rest of an edge chunk as the fill value.
        let inside: Vec<u64> = (0..offset.len())
            .map(|d| nominal[d].min(attrs.dimensions[d] - offset[d]))
            .collect();
        if inside == nominal {
            return self.write_region_strings(&offset, &nominal, strings);
        }
        let n = count(&nominal)?;
        if strings.len() != n {
            return Err(Error::new(
                ErrorKind::BufferSize,
                format!("{} strings for a block of {n}", strings.len()),
            ));
        }
        let sn = strides(&nominal);
        let zeros = vec![0u64; inside.len()];
        let mut part = vec![""; count(&inside)?];
        each_position(
            &inside,
            (&strides(&inside), &zeros),
            (&sn, &zeros),
            |r, b| {
                part[r] = strings[b].as_ref();
            },
        );
        self.write_region_strings(&offset, &inside, &part)
    }

    /// The region's strings, N5 order (`n5_region_read_strings`): of a
    /// variable-length string array, or of a fixed UTF-32 one without its
    /// padding.
    pub fn read_region_strings(&self, offset: &[u64], shape: &[u64]) -> Result<Vec<String>> {
        match self.data_type() {
            DataType::FixedUtf32 { chars } => {
                let size = 4 * chars as usize;
                let mut buf = region_buffer(shape, size)?;
                self.read_region(offset, shape, &mut buf)?;
                buf.chunks_exact(size)
                    .enumerate()
                    .map(|(i, e)| {
                        utf32_string(e).map_err(|err| err.context(format!("element {i}")))
                    })
                    .collect()
            }
            DataType::String => {
                let e = self.read_region_elements(offset, shape)?;
                (0..e.len())
                    .map(|i| {
                        String::from_utf8(e.bytes(i).unwrap_or_default().to_vec()).map_err(|_| {
                            Error::codec(format!("element {i} of the region is not valid UTF-8"))
                        })
                    })
                    .collect()
            }
            t => Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!(
                    "strings are read from string and fixed_utf32 datasets; '{}' holds {t}",
                    crate::path::display(self.path())
                ),
            )),
        }
    }

    /// Write strings (N5 order, exactly `prod(shape)`) to the region
    /// (`n5_region_write_strings`): of a variable-length string array, or of
    /// a fixed UTF-32 one (a string longer than the field is
    /// [`ErrorKind::InvalidArgument`] naming it).
    pub fn write_region_strings<S: AsRef<str>>(
        &self,
        offset: &[u64],
        shape: &[u64],
        strings: &[S],
    ) -> Result<()> {
        let n = count(shape)?;
        if strings.len() != n {
            return Err(Error::new(
                ErrorKind::BufferSize,
                format!("{} strings for a region of {n} elements", strings.len()),
            ));
        }
        match self.data_type() {
            DataType::FixedUtf32 { chars } => {
                let size = 4 * chars as usize;
                let mut buf = Vec::with_capacity(n * size);
                for (i, s) in strings.iter().enumerate() {
                    let start = buf.len();
                    for c in s.as_ref().chars() {
                        buf.extend_from_slice(&(c as u32).to_ne_bytes());
                    }
                    if buf.len() - start > size {
                        return Err(Error::invalid_argument(format!(
                            "string {i} has more than the {chars} characters of the field"
                        )));
                    }
                    buf.resize(start + size, 0);
                }
                self.write_region(offset, shape, &buf)
            }
            DataType::String => {
                let mut data = Vec::new();
                let mut ends = Vec::with_capacity(n);
                for s in strings {
                    data.extend_from_slice(s.as_ref().as_bytes());
                    ends.push(data.len());
                }
                self.write_region_elements(offset, shape, &Elements::Packed { data, ends })
            }
            t => Err(Error::new(
                ErrorKind::DtypeMismatch,
                format!(
                    "strings are written to string and fixed_utf32 datasets; '{}' holds {t}",
                    crate::path::display(self.path())
                ),
            )),
        }
    }

    /// The region's elements as bytes with their lengths, N5 order
    /// (`n5_region_read_bytes`): of a `bytes` (vlen-bytes) or `string`
    /// array.
    pub fn read_region_bytes(&self, offset: &[u64], shape: &[u64]) -> Result<(Vec<u8>, Vec<u64>)> {
        self.check_bytes("n5_region_read_bytes")?;
        match self.read_region_elements(offset, shape)? {
            Elements::Packed { data, ends } => {
                // Into the vector of the ends itself (an in-place collect:
                // same size and alignment), no second one to fault in.
                let mut start = 0;
                let lengths = ends
                    .into_iter()
                    .map(|e| {
                        let l = (e - start) as u64;
                        start = e;
                        l
                    })
                    .collect();
                Ok((data, lengths))
            }
            Elements::Json(_) => Err(self.legacy_objects()),
        }
    }

    /// Write elements given as bytes and lengths (`n5_region_write_bytes`);
    /// the lengths must add up to `data`'s length.
    pub fn write_region_bytes(
        &self,
        offset: &[u64],
        shape: &[u64],
        data: &[u8],
        lengths: &[u64],
    ) -> Result<()> {
        self.check_bytes("n5_region_write_bytes")?;
        let n = count(shape)?;
        if lengths.len() != n {
            return Err(Error::new(
                ErrorKind::BufferSize,
                format!("{} lengths for a region of {n} elements", lengths.len()),
            ));
        }
        let mut ends = Vec::with_capacity(n);
        let mut end = 0u64;
        for &l in lengths {
            end = end
                .checked_add(l)
                .ok_or_else(|| Error::new(ErrorKind::BufferSize, "the lengths overflow"))?;
            ends.push(end as usize);
        }
        if end != data.len() as u64 {
            return Err(Error::new(
                ErrorKind::BufferSize,
                format!(
                    "the lengths add up to {end} bytes; data_len is {}",
                    data.len()
                ),
            ));
        }
        self.write_region_elements(
            offset,
            shape,
            &Elements::Packed {
                data: data.to_vec(),
                ends,
            },
        )
    }

    fn check_bytes(&self, what: &str) -> Result<()> {
        self.check_variable(what)?;
        let stored = self.array().stored_type();
        if matches!(stored.object_codec.as_deref(), Some("pickle" | "json2")) {
            return Err(self.legacy_objects());
        }
        Ok(())
    }

    fn legacy_objects(&self) -> Error {
        Error::new(
            ErrorKind::Unsupported,
            format!(
                "the elements of '{}' are pickled or JSON objects, not bytes: use n5_region_read_json",
                crate::path::display(self.path())
            ),
        )
    }
}

/// A struct element whose fields at `ref_fields` are fixed strings holding
/// references, written with those normalised.
fn write_struct_with_references(
    out: &mut String,
    t: &DataType,
    e: &[u8],
    ref_fields: &[usize],
) -> Result<()> {
    let DataType::Struct(s) = t else {
        return write_element(out, t, e);
    };
    out.push('{');
    for (i, f) in s.fields().iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        crate::dtype::json::write_string(out, &f.name);
        out.push_str(": ");
        let part = &e[f.offset..f.offset + f.data_type.size()];
        if ref_fields.contains(&i) && matches!(f.data_type, DataType::FixedUtf32 { .. }) {
            let text = utf32_string(part)?;
            out.push_str(&normalise_text_reference(&text).to_string());
        } else {
            write_element(out, &f.data_type, part)?;
        }
    }
    out.push('}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{Container, Mode, Options};

    /// Regions of a 3-D string array (Zarr v3 and v2, edge chunks, chunks
    /// never written) read on one thread and on three: every element as a
    /// model of the array says, runs of every length put together in order.
    #[test]
    #[cfg_attr(miri, ignore = "writes files and runs the C zstd codec")]
    fn string_regions_read_in_parallel_as_written() {
        let dir = std::env::temp_dir().join(format!("n5-elements-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // N5 order (x fastest); the documents' shapes are C order.
        let dims = [4u64, 7, 5];
        let index = |p: [u64; 3]| (p[0] + dims[0] * (p[1] + dims[1] * p[2])) as usize;
        let mut model = vec![String::new(); dims.iter().product::<u64>() as usize];
        let (w_off, w_shape) = ([1u64, 2, 0], [3u64, 4, 3]);
        let mut written = Vec::new();
        for z in 0..w_shape[2] {
            for y in 0..w_shape[1] {
                for x in 0..w_shape[0] {
                    let p = [w_off[0] + x, w_off[1] + y, w_off[2] + z];
                    let s = "é".repeat(index(p) % 5) + &index(p).to_string();
                    model[index(p)] = s.clone();
                    written.push(s);
                }
            }
        }
        let documents = [
            (
                "zarr3",
                json!({"shape": [5, 7, 4], "data_type": "string", "fill_value": "",
                       "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3, 3]}},
                       "chunk_key_encoding": {"name": "default"},
                       "codecs": [{"name": "vlen-utf8"}, {"name": "zstd", "configuration": {"level": 1}}]}),
            ),
            (
                "zarr2",
                json!({"shape": [5, 7, 4], "chunks": [2, 3, 3], "dtype": "|O", "fill_value": "",
                       "filters": [{"id": "vlen-utf8"}], "compressor": null, "order": "C",
                       "zarr_format": 2}),
            ),
        ];
        for (format, doc) in documents {
            let root = dir.join(format);
            let options =
                Options::from_json(&json!({"format": format, "threads": 1}).to_string()).unwrap();
            let c = Container::open_with(root.to_str().unwrap(), Mode::Create, options).unwrap();
            let d = c.create_dataset_json("s", &doc).unwrap();
            d.write_region_strings(&w_off, &w_shape, &written).unwrap();
            for threads in [1, 3] {
                let options = Options::from_json(&json!({"threads": threads}).to_string()).unwrap();
                let c = Container::open_with(root.to_str().unwrap(), Mode::Read, options).unwrap();
                let d = c.open_dataset("s").unwrap();
                for (off, shape) in [
                    ([0u64, 0, 0], dims),
                    ([1, 1, 1], [3, 5, 4]),
                    ([3, 6, 4], [1, 1, 1]),
                    ([0, 2, 1], [4, 1, 2]),
                ] {
                    let mut expected = Vec::new();
                    for z in 0..shape[2] {
                        for y in 0..shape[1] {
                            for x in 0..shape[0] {
                                expected.push(
                                    model[index([off[0] + x, off[1] + y, off[2] + z])].clone(),
                                );
                            }
                        }
                    }
                    let what = format!("{format}, {threads} threads, {off:?} {shape:?}");
                    assert_eq!(
                        d.read_region_strings(&off, &shape).unwrap(),
                        expected,
                        "{what}"
                    );
                    let (data, lengths) = d.read_region_bytes(&off, &shape).unwrap();
                    assert_eq!(data, expected.concat().into_bytes(), "{what}");
                    let want: Vec<u64> = expected.iter().map(|s| s.len() as u64).collect();
                    assert_eq!(lengths, want, "{what}");
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn references_normalise_from_every_form() {
        assert_eq!(normalise_text_reference(""), Value::Null);
        assert_eq!(
            normalise_text_reference("/acquisition/ts_a"),
            json!({"source": ".", "path": "/acquisition/ts_a"})
        );
        assert_eq!(
            normalise_text_reference(r#"{"path": "/a", "source": "../b.zarr"}"#),
            json!({"source": "../b.zarr", "path": "/a"})
        );
        let o = json!({"object_id": null, "path": "/x", "source": ".", "extra": 1, "source_object_id": "id"});
        assert_eq!(
            normalise_object_reference(o.as_object().unwrap()),
            json!({"source": ".", "path": "/x", "object_id": null, "source_object_id": "id"})
        );
        let r = References::of(
            &json!({"zarr_dtype": [{"name": "idx", "dtype": "int32"}, {"name": "ts", "dtype": "object"}]}),
        );
        assert_eq!(r.fields, ["ts"]);
        assert!(!r.whole);
        assert!(References::of(&json!({"_DTYPE": "object_reference"})).whole);
        assert_eq!(
            References::of(&json!({"_REFERENCE_FIELDS": ["ts"]})).fields,
            ["ts"]
        );
    }
}
