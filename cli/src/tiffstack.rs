//! What `n5 import` reads from TIFF: a multi-page file (classic or BigTIFF,
//! in strips or tiles, uncompressed, deflate, LZW or PackBits) or a
//! directory of such files taken in natural name order (`z2.tif` before
//! `z10.tif`), as one stack of pages of one shape and sample type. Its
//! shape in N5 order is `[width, height, pages]` (`[width, height]` for a
//! single page), with the samples of a pixel (RGB, multi-band) first when
//! they are interleaved and after width and height when they are planar;
//! or for a single file whose first page's
//! description lays its pages out (ImageJ hyperstacks, OME-TIFF, tifffile:
//! see [`crate::tiffmeta`]), `[width, height]` and the axes of the pages,
//! fastest first. The pages are read one at a time, as a stream of
//! native-order elements, page after page.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use n5::DataType;
use tiff::decoder::ifd::Value;
use tiff::decoder::{Decoder, DecodingResult, Limits};
use tiff::tags::Tag;
use tiff::{ColorType, TiffError};

use crate::tiffmeta::{self, Axis, Described, PageInfo};

/// The largest page decoded (bytes): a bound on what a file's fields can
/// make the decoder allocate.
const PAGE_MAX: usize = 1 << 30;

/// The longest tag value read for a file's description (bytes).
const DESCRIPTION_MAX: usize = 16 << 20;

/// Whether `path` names TIFF input: a file ending in `.tif` or `.tiff`, or
/// a directory.
pub fn is_tiff(path: &Path) -> bool {
    path.is_dir() || has_tiff_extension(path)
}

fn has_tiff_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("tif") || e.eq_ignore_ascii_case("tiff"))
}

/// Compare two names with their runs of digits as numbers (`z2` < `z10`),
/// then as text.
fn natural(a: &str, b: &str) -> Ordering {
    fn runs(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(&rb) {
        let o = match (x, y) {
            ((true, x), (true, y)) => {
                let (x, y) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                x.len().cmp(&y.len()).then_with(|| x.cmp(y))
            }
            ((_, x), (_, y)) => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    ra.len().cmp(&rb.len()).then_with(|| a.cmp(b))
}

/// The TIFF files of a directory in natural order, or the file itself.
fn files_of(path: &Path) -> Result<Vec<PathBuf>, String> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    // Messages name the input; of a directory, each file by its name.
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && has_tiff_extension(p))
        .collect();
    if files.is_empty() {
        return Err("holds no .tif or .tiff files".into());
    }
    files.sort_by(|a, b| {
        let name = |p: &PathBuf| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        };
        natural(&name(a), &name(b))
    });
    Ok(files)
}

/// How messages name the file `path` of a stack: by its name in a
/// directory (`in_dir`), else not at all (the input names it).
fn named(path: &Path, in_dir: bool) -> String {
    match (in_dir, path.file_name()) {
        (true, Some(n)) => format!("{}: ", n.to_string_lossy()),
        _ => String::new(),
    }
}

/// A decoder of the file `path` of a stack (`in_dir`: of a directory).
fn open(path: &Path, in_dir: bool) -> Result<Decoder<BufReader<File>>, String> {
    let name = named(path, in_dir);
    let file = File::open(path).map_err(|e| format!("{name}{e}"))?;
    let mut limits = Limits::default();
    limits.decoding_buffer_size = PAGE_MAX;
    // An uncompressed page is often one strip as large as the page.
    limits.intermediate_buffer_size = PAGE_MAX;
    Decoder::new(BufReader::new(file))
        .map(|d| d.with_limits(limits))
        .map_err(|e| format!("{name}not a TIFF file this tool reads: {e}"))
}

/// A page layout with the axis of a pixel's samples added where the page
/// holds it (first when interleaved, after width and height when planar),
/// named as the description names it, else `c`, or `s` when the pages
/// already have a `c` axis.
fn with_samples(mut d: Described, shape: PageShape) -> Described {
    if shape.samples > 1 {
        let c = d.axes.iter().any(|a| a.name.as_deref() == Some("c"));
        let named = d.axes.iter().all(|a| a.name.is_some());
        let default = if c { "s" } else { "c" };
        let name = d
            .samples_name
            .clone()
            .unwrap_or_else(|| default.to_string());
        let axis = Axis {
            name: named.then_some(name),
            size: u64::from(shape.samples),
            scale: None,
        };
        d.axes.insert(if shape.planar { 2 } else { 0 }, axis);
    }
    d
}

/// How the file `path`'s pages make an array (`Ok(None)`: as a stack of
/// pages), from its first page's description; what was left aside and
/// why goes into `notes`.
fn layout(
    path: &Path,
    shape: PageShape,
    pages: u64,
    notes: &mut Vec<String>,
) -> Result<Option<Described>, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let mut limits = Limits::default();
    limits.decoding_buffer_size = DESCRIPTION_MAX;
    limits.ifd_value_size = DESCRIPTION_MAX;
    let mut d = Decoder::new(BufReader::new(file))
        .map(|d| d.with_limits(limits))
        .map_err(|e| format!("not a TIFF file this tool reads: {e}"))?;
    let description = match d.find_tag(Tag::ImageDescription) {
        Ok(Some(Value::Ascii(text))) => Some(text),
        Ok(_) => None,
        Err(e) => {
            let why = match e {
                TiffError::LimitsExceeded => {
                    format!("is longer than {} MiB", DESCRIPTION_MAX >> 20)
                }
                e => format!("was not read ({e})"),
            };
            notes.push(format!(
                "its description {why}; read as [width, height, pages]"
            ));
            None
        }
    };
    let ratio = |d: &mut Decoder<BufReader<File>>, tag| match d.find_tag(tag) {
        Ok(Some(Value::Rational(n, m))) if m != 0 => Some(f64::from(n) / f64::from(m)),
        _ => None,
    };
    let resolution = ratio(&mut d, Tag::XResolution).zip(ratio(&mut d, Tag::YResolution));
    tiffmeta::describe(
        &PageInfo {
            description: description.as_deref(),
            resolution,
            width: shape.width,
            height: shape.height,
            file_name: path.file_name().and_then(|n| n.to_str()),
            samples: shape.samples,
            planar: shape.planar,
            pages,
        },
        notes,
    )
}

/// What one page is: width, height, bits per sample and sample format
/// (TIFF's 1 unsigned, 2 signed, 3 floating point), samples per pixel
/// and whether they are stored as planes of their own (PlanarConfiguration
/// 2) rather than interleaved.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PageShape {
    width: u32,
    height: u32,
    bits: u8,
    format: u16,
    samples: u16,
    planar: bool,
}

impl PageShape {
    /// The page's shape in N5 order: `[width, height]`, with the samples
    /// of a pixel before them when interleaved, after them when planar.
    fn dims(&self) -> Vec<u64> {
        let (w, h, s) = (
            u64::from(self.width),
            u64::from(self.height),
            u64::from(self.samples),
        );
        match (self.samples, self.planar) {
            (1, _) => vec![w, h],
            (_, false) => vec![s, w, h],
            (_, true) => vec![w, h, s],
        }
    }

    /// Elements in one decoded page.
    fn elements(&self) -> u64 {
        self.dims().iter().product()
    }
}

impl std::fmt::Display for PageShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.format {
            1 => "unsigned",
            2 => "signed",
            3 => "floating-point",
            _ => "undefined",
        };
        write!(
            f,
            "{}x{} of {}-bit {kind} samples",
            self.width, self.height, self.bits
        )?;
        if self.samples > 1 {
            let how = if self.planar { "planar" } else { "interleaved" };
            write!(f, ", {} per pixel ({how})", self.samples)?;
        }
        Ok(())
    }
}

/// A decoder's error as a message: its limits are this tool's page limit.
fn decoding(e: TiffError) -> String {
    match e {
        TiffError::LimitsExceeded => {
            format!(
                "a page of more than {} GiB decoded is not read",
                PAGE_MAX >> 30
            )
        }
        e => e.to_string(),
    }
}

/// The shape of the decoder's current page, checked to be grayscale or
/// samples read as they are stored (RGB, RGBA, gray with alpha, any number
/// of bands; not palette indices, YCbCr, CMYK or Lab), of 8, 16, 32 or 64
/// bits, not MinIsWhite (which the decoder would invert).
fn page_shape(d: &mut Decoder<BufReader<File>>, at: &str) -> Result<PageShape, String> {
    let (width, height) = d
        .dimensions()
        .map_err(|e| format!("{at}: {}", decoding(e)))?;
    let color = d
        .colortype()
        .map_err(|e| format!("{at}: {}", decoding(e)))?;
    let (bits, samples) = match color {
        ColorType::Gray(b) => (b, 1),
        ColorType::GrayA(b) => (b, 2),
        ColorType::RGB(b) => (b, 3),
        ColorType::RGBA(b) => (b, 4),
        ColorType::Multiband {
            bit_depth,
            num_samples,
        } => (bit_depth, num_samples),
        other => {
            return Err(format!(
                "{at}: has {other:?} pixels; n5 import takes grayscale, RGB(A) and multi-band pages as stored, not palette, YCbCr, CMYK or Lab ones"
            ))
        }
    };
    if !matches!(bits, 8 | 16 | 32 | 64) {
        return Err(format!(
            "{at}: has {bits}-bit samples; n5 import takes 8, 16, 32 and 64-bit ones"
        ));
    }
    let tag = |d: &mut Decoder<BufReader<File>>, t: Tag| {
        d.find_tag_unsigned_vec::<u16>(t)
            .map_err(|e| format!("{at}: {}", decoding(e)))
    };
    let format = tag(d, Tag::SampleFormat)?
        .and_then(|v| v.first().copied())
        .unwrap_or(1);
    if tag(d, Tag::PhotometricInterpretation)?.and_then(|v| v.first().copied()) == Some(0) {
        return Err(format!(
            "{at}: is a MinIsWhite page (0 is white), whose values would be read inverted; store it as MinIsBlack"
        ));
    }
    let planar = samples > 1
        && tag(d, Tag::PlanarConfiguration)?.and_then(|v| v.first().copied()) == Some(2);
    Ok(PageShape {
        width,
        height,
        bits,
        format,
        samples,
        planar,
    })
}

/// The data type of a decoded page.
fn data_type(r: &DecodingResult) -> Result<DataType, String> {
    Ok(match r {
        DecodingResult::U8(_) => DataType::U8,
        DecodingResult::U16(_) => DataType::U16,
        DecodingResult::U32(_) => DataType::U32,
        DecodingResult::U64(_) => DataType::U64,
        DecodingResult::I8(_) => DataType::I8,
        DecodingResult::I16(_) => DataType::I16,
        DecodingResult::I32(_) => DataType::I32,
        DecodingResult::I64(_) => DataType::I64,
        DecodingResult::F32(_) => DataType::F32,
        DecodingResult::F64(_) => DataType::F64,
        DecodingResult::F16(_) => {
            return Err("has 16-bit floating-point samples, which N5 and Zarr arrays here do not store (convert them to float32)".into())
        }
    })
}

/// A stack of TIFF pages read as a stream of elements in native byte
/// order, page after page (see the module's description).
pub struct TiffStack {
    files: Vec<PathBuf>,
    /// Whether the files are those of a directory.
    in_dir: bool,
    /// The next file to open.
    next_file: usize,
    /// The open file, and whether its current page is still to be read.
    decoder: Option<(Decoder<BufReader<File>>, bool)>,
    /// The number of the open file's current page.
    page_in_file: u64,
    /// Every page's shape and data type (the first page's).
    shape: PageShape,
    data_type: DataType,
    /// The page being read out, and how much of it is.
    page: DecodingResult,
    at: usize,
    /// Pages read so far.
    pages: u64,
}

/// What a TIFF stack holds.
pub struct Header {
    /// The element type.
    pub data_type: DataType,
    /// The shape in N5 order: `[width, height, pages]`, `[width, height]`
    /// for one page, or the described axes' lengths.
    pub shape: Vec<u64>,
    /// The axes its description gives, if it lays the pages out.
    pub described: Option<Described>,
    /// What of its description was left aside, and why.
    pub notes: Vec<String>,
}

impl TiffStack {
    /// Open the TIFF file or directory `path`: every page's shape is
    /// checked (one shape, one sample per pixel) and the first page is
    /// decoded for its sample type. A single file's description lays its
    /// pages out unless `flat`.
    pub fn open(path: &Path, flat: bool) -> Result<(TiffStack, Header), String> {
        let files = files_of(path)?;
        let in_dir = path.is_dir();
        let mut pages = 0u64;
        let mut first: Option<PageShape> = None;
        for f in &files {
            let mut d = open(f, in_dir)?;
            let mut page = 0u64;
            loop {
                let at = format!("{}page {page}", named(f, in_dir));
                let s = page_shape(&mut d, &at)?;
                match first {
                    None => first = Some(s),
                    Some(p) if p != s => {
                        return Err(format!(
                            "{at}: is {s}, and the first page {p}: every page must have one shape and type"
                        ))
                    }
                    Some(_) => {}
                }
                pages += 1;
                page += 1;
                if !d.more_images() {
                    break;
                }
                let next = format!("{}page {page}", named(f, in_dir));
                d.next_image()
                    .map_err(|e| format!("{next}: {}", decoding(e)))?;
            }
        }
        let shape = first.ok_or("holds no pages")?;
        let mut notes = Vec::new();
        let described = if in_dir || flat {
            None
        } else {
            layout(&files[0], shape, pages, &mut notes)?
        };
        let mut stack = TiffStack {
            files,
            in_dir,
            next_file: 0,
            decoder: None,
            page_in_file: 0,
            shape,
            data_type: DataType::U8,
            page: DecodingResult::U8(Vec::new()),
            at: 0,
            pages: 0,
        };
        // The first page, decoded now for its type, is read out first.
        stack.next_page().map_err(|e| e.to_string())?;
        stack.data_type = data_type(&stack.page)?;
        let described = described.map(|d| with_samples(d, shape));
        let dims = match &described {
            Some(d) => d.axes.iter().map(|a| a.size).collect(),
            None => {
                let mut dims = shape.dims();
                if pages > 1 {
                    dims.push(pages);
                }
                dims
            }
        };
        let header = Header {
            data_type: stack.data_type.clone(),
            shape: dims,
            described,
            notes,
        };
        Ok((stack, header))
    }

    /// Decode the next page into `page`; false after the last. Errors
    /// name the file and the page.
    fn next_page(&mut self) -> std::io::Result<bool> {
        loop {
            let file = match self.next_file.checked_sub(1) {
                Some(i) => named(&self.files[i], self.in_dir),
                None => String::new(),
            };
            if let Some((d, pending)) = &mut self.decoder {
                if !*pending {
                    if d.more_images() {
                        self.page_in_file += 1;
                        let at = format!("{file}page {}", self.page_in_file);
                        d.next_image()
                            .map_err(|e| std::io::Error::other(format!("{at}: {}", decoding(e))))?;
                        *pending = true;
                    } else {
                        self.decoder = None;
                        continue;
                    }
                }
                *pending = false;
                let at = format!("{file}page {}", self.page_in_file);
                let shape = page_shape(d, &at).map_err(std::io::Error::other)?;
                if shape != self.shape {
                    return Err(std::io::Error::other(format!(
                        "{at}: changed shape since the stack was opened"
                    )));
                }
                d.read_image_to_buffer(&mut self.page)
                    .map_err(|e| std::io::Error::other(format!("{at}: {}", decoding(e))))?;
                // The decoder reads only the first plane of a planar page
                // that passes its limits.
                if self.page.as_buffer(0).as_bytes().len() as u64
                    != self.shape.elements() * u64::from(self.shape.bits / 8)
                {
                    return Err(std::io::Error::other(format!(
                        "{at}: decoded to another size than its {}",
                        self.shape
                    )));
                }
                if self.pages > 0 && data_type(&self.page).ok() != Some(self.data_type.clone()) {
                    return Err(std::io::Error::other(format!(
                        "{at}: its samples are not {} like the first page's",
                        self.data_type
                    )));
                }
                self.at = 0;
                self.pages += 1;
                return Ok(true);
            }
            let Some(f) = self.files.get(self.next_file) else {
                return Ok(false);
            };
            self.next_file += 1;
            self.page_in_file = 0;
            self.decoder = Some((open(f, self.in_dir).map_err(std::io::Error::other)?, true));
        }
    }
}

impl Read for TiffStack {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let page = self.page.as_buffer(0);
            let bytes = page.as_bytes();
            if self.at < bytes.len() {
                let n = buf.len().min(bytes.len() - self.at);
                buf[..n].copy_from_slice(&bytes[self.at..self.at + n]);
                self.at += n;
                return Ok(n);
            }
            if !self.next_page()? {
                return Ok(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_takes_numbers_as_numbers() {
        let mut names = vec!["z10.tif", "z2.tif", "z1.tif", "a.tif", "z02.tif", "z1b.tif"];
        names.sort_by(|a, b| natural(a, b));
        assert_eq!(
            names,
            ["a.tif", "z1.tif", "z1b.tif", "z02.tif", "z2.tif", "z10.tif"]
        );
    }

    /// LZW and PackBits pages (written here with the tiff crate's encoder;
    /// tifffile needs imagecodecs for them) read back as written, page
    /// after page, through `Read` in small pieces.
    #[test]
    fn lzw_and_packbits_pages_read_back() {
        use tiff::encoder::{colortype::Gray16, Compression, TiffEncoder};
        let dir = std::env::temp_dir().join(format!("n5-tiffstack-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (w, h) = (37u32, 23u32);
        let pages: Vec<Vec<u16>> = (0..3u32)
            .map(|p| {
                (0..w * h)
                    .map(|i| ((i * 31 + p * 1000) % 60000) as u16 / 7)
                    .collect()
            })
            .collect();
        for (name, compression) in [
            ("lzw.tif", Compression::Lzw),
            ("packbits.tif", Compression::Packbits),
        ] {
            let path = dir.join(name);
            let mut e = TiffEncoder::new(File::create(&path).unwrap())
                .unwrap()
                .with_compression(compression);
            for p in &pages {
                e.write_image::<Gray16>(w, h, p).unwrap();
            }
            drop(e);
            let (mut stack, header) = TiffStack::open(&path, false).unwrap();
            assert_eq!(header.data_type, DataType::U16);
            assert_eq!(header.shape, vec![37, 23, 3]);
            let mut got = Vec::new();
            let mut piece = [0u8; 1000];
            loop {
                let n = stack.read(&mut piece).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&piece[..n]);
            }
            let want: Vec<u8> = pages
                .iter()
                .flatten()
                .flat_map(|v| v.to_ne_bytes())
                .collect();
            assert!(got == want, "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
