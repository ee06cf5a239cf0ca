//! What the description of a TIFF file's first page says of how its pages
//! make an array: the axes beyond width and height (channels, slices,
//! frames) in page order, and the pixel sizes with their units. Three
//! writers' descriptions are read: ImageJ hyperstacks (`ImageJ=...` lines),
//! OME-TIFF (`<OME>` XML; one image in one file, its pages in the order of
//! `DimensionOrder`) and tifffile's shaped files (`{"shape": [...]}`).
//! Anything else, or a description that does not fit the file's pages,
//! leaves the stack as `[width, height, pages]` with a note saying why.

use quick_xml::events::Event;
use quick_xml::{Reader, XmlVersion};
use serde_json::Value;

use crate::cmd::common::grid_count;

/// One axis of a described stack, in N5 order (x, y, then the axes of the
/// pages, fastest first).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// Its name (`x`, `y`, `z`, `c`, `t`, or tifffile's letter in lower
    /// case); `None` when the description names no axes.
    pub name: Option<String>,
    /// Its length.
    pub size: u64,
    /// The size of one step along it and the unit (`um`, `nm`, `s`...),
    /// when the description gives one.
    pub scale: Option<(f64, String)>,
}

/// A stack laid out by its description.
#[derive(Clone, Debug, PartialEq)]
pub struct Described {
    /// Who wrote the description: `ImageJ`, `OME-TIFF` or `tifffile`.
    pub by: &'static str,
    /// The axes, N5 order; those of the pages of length 1 left out.
    pub axes: Vec<Axis>,
    /// The name the description gives the samples of a pixel, if any
    /// other than samples.
    pub samples_name: Option<String>,
}

/// What a file's first page holds besides its pixels. Its samples per
/// pixel are not an axis of the layout: the caller adds that axis where
/// the page holds it.
pub struct PageInfo<'a> {
    /// Its ImageDescription, if any.
    pub description: Option<&'a str>,
    /// XResolution and YResolution (pixels per unit), if given.
    pub resolution: Option<(f64, f64)>,
    /// The page's width and height, and the number of pages in the file.
    pub width: u32,
    /// See `width`.
    pub height: u32,
    /// See `width`.
    pub pages: u64,
    /// The file's name, which OME TiffData may name.
    pub file_name: Option<&'a str>,
    /// Samples per pixel, and whether each is a plane of its own.
    pub samples: u16,
    /// See `samples`.
    pub planar: bool,
}

/// The layout `info` describes: `Ok(Some)` when a description lays the
/// pages out, `Ok(None)` when there is none or it is left aside (with a
/// note in `notes` saying why), `Err` when it shows that the file's pages
/// are not the image (ImageJ's stacks written without a page directory
/// per image).
pub fn describe(info: &PageInfo, notes: &mut Vec<String>) -> Result<Option<Described>, String> {
    let Some(text) = info.description.map(str::trim) else {
        return Ok(None);
    };
    let found = if text.starts_with("ImageJ=") {
        imagej(text, info)?
    } else if text.starts_with('<') {
        match ome(text, info)? {
            Some(found) => found,
            // XML of another kind.
            None => return Ok(None),
        }
    } else if text.starts_with('{') {
        shaped(text, info)?
    } else {
        return Ok(None);
    };
    Ok(match found {
        Ok(mut d) => {
            // x and y stay; page axes of length 1 go.
            let mut i = 0;
            d.axes.retain(|a| {
                i += 1;
                i <= 2 || a.size != 1
            });
            Some(d)
        }
        Err(why) => {
            notes.push(why);
            None
        }
    })
}

/// The longest tifffile shaped description read (its own are tens of
/// bytes): what parsing it as a JSON value may allocate is a multiple of
/// its length.
const SHAPED_MAX: usize = 64 << 10;

/// What a size measures.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Length,
    Time,
}

/// A step of `value` in the unit `u`, a `kind` of unit, as an SI unit
/// neuroglancer and tensorstore read (`um`, `nm`, `mm`, `m`, `s`, `ms`...):
/// micrometres spelt any way become `um`, inches and centimetres `mm`,
/// ångströms `nm`, minutes, hours and days seconds. `None` for any other
/// unit (`pixel`, a reference frame), a unit of the other kind, or a size
/// outside 1e-30 to 1e30, which gives the axis no size.
fn si(value: f64, u: &str, kind: Kind) -> Option<(f64, String)> {
    use Kind::{Length, Time};
    let value = positive(value)?;
    let (factor, unit, of) = match u.trim().to_lowercase().as_str() {
        "m" | "meter" | "meters" | "metre" | "metres" => (1.0, "m", Length),
        "km" | "kilometer" | "kilometers" | "kilometre" | "kilometres" => (1.0, "km", Length),
        "mm" | "millimeter" | "millimeters" | "millimetre" | "millimetres" => (1.0, "mm", Length),
        "cm" | "centimeter" | "centimeters" | "centimetre" | "centimetres" => (10.0, "mm", Length),
        "in" | "inch" | "inches" => (25.4, "mm", Length),
        "um" | "µm" | "μm" | "\\u00b5m" | "\\u03bcm" | "micron" | "microns" | "micrometer"
        | "micrometers" | "micrometre" | "micrometres" => (1.0, "um", Length),
        "nm" | "nanometer" | "nanometers" | "nanometre" | "nanometres" => (1.0, "nm", Length),
        "å" | "\\u00c5" | "\\u00e5" | "angstrom" | "angstroms" => (0.1, "nm", Length),
        "pm" | "picometer" | "picometers" | "picometre" | "picometres" => (1.0, "pm", Length),
        "s" | "sec" | "secs" | "second" | "seconds" => (1.0, "s", Time),
        "ms" | "msec" | "millisecond" | "milliseconds" => (1.0, "ms", Time),
        "us" | "µs" | "μs" | "\\u00b5s" | "\\u03bcs" | "microsecond" | "microseconds" => {
            (1.0, "us", Time)
        }
        "ns" | "nanosecond" | "nanoseconds" => (1.0, "ns", Time),
        "min" | "mins" | "minute" | "minutes" => (60.0, "s", Time),
        "h" | "hr" | "hrs" | "hour" | "hours" => (3600.0, "s", Time),
        "d" | "day" | "days" => (86400.0, "s", Time),
        _ => return None,
    };
    let v = tidy(value * factor);
    (of == kind && (1e-30..=1e30).contains(&v)).then(|| (v, unit.to_string()))
}

/// `v` to 13 significant digits, so that a converted size reads as it
/// was meant (`0.3` nm from 3 Å, not `0.30000000000000004`).
pub fn tidy(v: f64) -> f64 {
    format!("{v:.12e}").parse().unwrap_or(v)
}

/// A positive, finite number.
fn positive(v: f64) -> Option<f64> {
    (v.is_finite() && v > 0.0).then_some(v)
}

/// An ImageJ hyperstack: `images` pages in the order channel, slice,
/// frame (channel fastest); pixel size from XResolution and YResolution
/// in `unit`, slice spacing `spacing`, frame interval `finterval`.
fn imagej(text: &str, info: &PageInfo) -> Result<Result<Described, String>, String> {
    // A key with an empty value is as if absent.
    let get = |key: &str| {
        text.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    };
    let count = |key: &str| get(key).and_then(|v| v.parse::<u64>().ok());
    let images = count("images").unwrap_or(info.pages);
    if images > info.pages {
        return Err(format!(
            "its ImageJ description counts {images} images but the file has {} page{}: ImageJ writes the images of a stack over 4 GiB without a page directory each, which n5 import does not read (save it as OME-TIFF, or as a directory of pages)",
            info.pages,
            if info.pages == 1 { "" } else { "s" }
        ));
    }
    let (c, mut z, t) = (
        count("channels").unwrap_or(1),
        count("slices").unwrap_or(1),
        count("frames").unwrap_or(1),
    );
    if grid_count(&[c, z, t]) == Some(1) {
        z = images;
    }
    if grid_count(&[c, z, t]) != Some(images) || images != info.pages {
        return Ok(Err(format!(
            "its ImageJ description (images={images}, channels, slices, frames) does not fit its {} pages; read as [width, height, pages]",
            info.pages
        )));
    }
    // y and z have units of their own when they differ from x's.
    let unit = get("unit").unwrap_or("");
    let sized = |v: Option<f64>, u: &str| v.and_then(|v| si(v, u, Kind::Length));
    let (px, py) = match info.resolution {
        Some((x, y)) => (Some(1.0 / x), Some(1.0 / y)),
        None => (None, None),
    };
    let axis = |name: &str, size, scale| Axis {
        name: Some(name.into()),
        size,
        scale,
    };
    Ok(Ok(Described {
        by: "ImageJ",
        samples_name: None,
        axes: vec![
            axis("x", u64::from(info.width), sized(px, unit)),
            axis(
                "y",
                u64::from(info.height),
                sized(py, get("yunit").unwrap_or(unit)),
            ),
            axis("c", c, None),
            axis(
                "z",
                z,
                sized(
                    get("spacing").and_then(|v| v.parse().ok()),
                    get("zunit").unwrap_or(unit),
                ),
            ),
            axis(
                "t",
                t,
                get("finterval")
                    .and_then(|v| v.parse().ok())
                    .and_then(|v| si(v, get("tunit").unwrap_or("s"), Kind::Time)),
            ),
        ],
    }))
}

/// The attributes `keys` of an XML element, by name, values unescaped;
/// the others are skipped unread, so memory is what the keys hold.
fn attributes(e: &quick_xml::events::BytesStart, keys: &[&str]) -> Vec<(String, String)> {
    // Without the check for repeated names, which costs time quadratic in
    // their number; of a repeated name, the first is looked up.
    e.attributes()
        .with_checks(false)
        .filter_map(Result::ok)
        .filter_map(|a| {
            let key = a.key.local_name().as_ref().to_string();
            if !keys.contains(&key.as_str()) {
                return None;
            }
            let value = a
                .normalized_value(XmlVersion::Implicit1_0)
                .ok()?
                .into_owned();
            Some((key, value))
        })
        .collect()
}

/// The attributes of OME's `Pixels` element read.
const PIXELS: [&str; 14] = [
    "DimensionOrder",
    "SizeX",
    "SizeY",
    "SizeZ",
    "SizeC",
    "SizeT",
    "PhysicalSizeX",
    "PhysicalSizeXUnit",
    "PhysicalSizeY",
    "PhysicalSizeYUnit",
    "PhysicalSizeZ",
    "PhysicalSizeZUnit",
    "TimeIncrement",
    "TimeIncrementUnit",
];

/// One OME `TiffData` element: the first page (IFD) of a run of
/// `PlaneCount` planes starting at plane (FirstZ, FirstC, FirstT).
#[derive(Default)]
struct TiffData {
    ifd: Option<u64>,
    planes: Option<u64>,
    first: [u64; 3],
    /// Whether it has a `UUID` child, the file that child names (its
    /// text, and its FileName).
    has_uuid: bool,
    uuid: String,
    file: Option<String>,
}

/// An OME-TIFF: one image whose planes are the file's pages, one after
/// the other in the order `DimensionOrder` gives (the letters after XY,
/// fastest first), with PhysicalSizeX/Y/Z and TimeIncrement.
fn ome(text: &str, info: &PageInfo) -> Result<Option<Result<Described, String>>, String> {
    let mut reader = Reader::from_str(text);
    let mut images = 0u32;
    let mut pixels: Option<Vec<(String, String)>> = None;
    let mut data: Vec<TiffData> = Vec::new();
    // Elements open, and at which depth the first image's Pixels and the
    // current TiffData in it opened.
    let mut depth = 0usize;
    let (mut pixels_at, mut tiffdata_at, mut uuid_at) = (None, None, None);
    // The UUID of this file, which TiffData name to point to it.
    let mut own_uuid = None;
    // Whether the XML is OME's (its root named OME, with any prefix).
    let mut saw_ome = false;
    loop {
        let event = match reader.read_event() {
            Ok(e) => e,
            // XML of another kind may end anywhere.
            Err(_) if !saw_ome => return Ok(None),
            Err(e) => {
                return Ok(Some(Err(format!(
                "its OME-XML description is not well-formed ({e}); read as [width, height, pages]"
            ))))
            }
        };
        let (e, opens) = match &event {
            Event::Start(e) => (e, true),
            Event::Empty(e) => (e, false),
            Event::Text(t) => {
                if let (Some(_), Some(d)) = (uuid_at, data.last_mut()) {
                    d.uuid.push_str(&t.xml10_content());
                }
                continue;
            }
            Event::End(_) => {
                if uuid_at == Some(depth) {
                    uuid_at = None;
                }
                if tiffdata_at == Some(depth) {
                    tiffdata_at = None;
                }
                if pixels_at == Some(depth) {
                    pixels_at = None;
                }
                depth = depth.saturating_sub(1);
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        if opens {
            depth += 1;
        }
        let name = e.local_name();
        match name.as_ref() {
            "OME" if !saw_ome => {
                saw_ome = true;
                own_uuid = attributes(e, &["UUID"])
                    .into_iter()
                    .find(|(k, _)| k == "UUID")
                    .map(|(_, v)| v.trim().to_string());
            }
            "Image" => images += 1,
            "Pixels" if images == 1 && pixels.is_none() => {
                pixels = Some(attributes(e, &PIXELS));
                pixels_at = opens.then_some(depth);
            }
            "TiffData" if pixels_at.is_some() => {
                let mut d = TiffData::default();
                let mut seen = Vec::new();
                for (k, v) in attributes(e, &["IFD", "PlaneCount", "FirstZ", "FirstC", "FirstT"]) {
                    if seen.contains(&k) {
                        continue;
                    }
                    let n = v.trim().parse::<u64>().ok();
                    match k.as_str() {
                        "IFD" => d.ifd = n,
                        "PlaneCount" => d.planes = n,
                        "FirstZ" => d.first[0] = n.unwrap_or(0),
                        "FirstC" => d.first[1] = n.unwrap_or(0),
                        "FirstT" => d.first[2] = n.unwrap_or(0),
                        _ => {}
                    }
                    seen.push(k);
                }
                data.push(d);
                tiffdata_at = opens.then_some(depth);
            }
            "UUID" if tiffdata_at.is_some() => {
                if let Some(d) = data.last_mut() {
                    d.has_uuid = true;
                    d.file = attributes(e, &["FileName"])
                        .into_iter()
                        .find(|(k, _)| k == "FileName")
                        .map(|(_, v)| v);
                }
                uuid_at = opens.then_some(depth);
            }
            _ => {}
        }
    }
    if !saw_ome {
        return Ok(None);
    }
    let plain = |why: String| Ok(Some(Err(format!("{why}; read as [width, height, pages]"))));
    if images != 1 {
        return plain(format!(
            "its OME-XML description holds {images} images (a series), not one"
        ));
    }
    let Some(pixels) = pixels else {
        return plain("its OME-XML description has no Pixels".into());
    };
    let get = |key: &str| pixels.iter().find(|(k, _)| k == key).map(|(_, v)| v.trim());
    let size = |key: &str| get(key).and_then(|v| v.parse::<u64>().ok()).unwrap_or(1);
    let order = get("DimensionOrder").unwrap_or("XYZCT");
    let rest: Vec<char> = order.chars().skip(2).collect();
    let mut sorted = rest.clone();
    sorted.sort_unstable();
    if !order.starts_with("XY") || sorted != ['C', 'T', 'Z'] {
        return plain(format!(
            "its OME DimensionOrder {order:?} is not XY then Z, C and T"
        ));
    }
    let (sx, sy) = (size("SizeX"), size("SizeY"));
    // SizeC counts every sample: a plane holds `samples` of them.
    let samples = u64::from(info.samples);
    if size("SizeC") % samples != 0 {
        return plain(format!(
            "its OME SizeC {} is no multiple of the pages' {samples} samples per pixel",
            size("SizeC")
        ));
    }
    let sizes: Vec<u64> = rest
        .iter()
        .map(|&a| match a {
            'C' => size("SizeC") / samples,
            _ => size(&format!("Size{a}")),
        })
        .collect();
    let planes = grid_count(&sizes);
    if (sx, sy) != (u64::from(info.width), u64::from(info.height)) || planes != Some(info.pages) {
        let planes = planes.map_or("more than 2^64".into(), |p| p.to_string());
        return plain(format!(
            "its OME-XML description has {sx}x{sy} pixels in {planes} planes, the file {}x{} in {} pages",
            info.width, info.height, info.pages
        ));
    }
    // Each TiffData's first page must be its first plane's place in the
    // order of DimensionOrder (then page i is plane i), in this file: one
    // that names a file names this one, by the UUID of its OME element or
    // by its file name.
    let index = |first: [u64; 3]| {
        let at = |a: char| {
            first[match a {
                'Z' => 0,
                'C' => 1,
                _ => 2,
            }]
        };
        // Each coordinate below its size, so the index is below the pages.
        let inside = rest.iter().zip(&sizes).all(|(&a, &s)| at(a) < s);
        inside.then(|| at(rest[0]) + sizes[0] * (at(rest[1]) + sizes[1] * at(rest[2])))
    };
    for d in &data {
        let ifd = d.ifd.unwrap_or(0);
        let here = !d.has_uuid
            || own_uuid.as_deref() == Some(d.uuid.trim())
            || (d.file.is_some() && d.file.as_deref() == info.file_name);
        let past = d
            .planes
            .is_some_and(|n| ifd.checked_add(n).is_none_or(|end| end > info.pages));
        if !here || index(d.first) != Some(ifd) || past {
            return plain(
                "its OME TiffData put planes in other files or another page order".into(),
            );
        }
    }
    let physical = |key: &str, default: &str, kind| {
        get(key)
            .and_then(|v| v.parse::<f64>().ok())
            .and_then(|v| si(v, get(&format!("{key}Unit")).unwrap_or(default), kind))
    };
    let axis = |name: char, size, scale| Axis {
        name: Some(name.to_ascii_lowercase().to_string()),
        size,
        scale,
    };
    let mut axes = vec![
        axis('X', sx, physical("PhysicalSizeX", "µm", Kind::Length)),
        axis('Y', sy, physical("PhysicalSizeY", "µm", Kind::Length)),
    ];
    for (&a, &s) in rest.iter().zip(&sizes) {
        let scale = match a {
            'Z' => physical("PhysicalSizeZ", "µm", Kind::Length),
            'T' => physical("TimeIncrement", "s", Kind::Time),
            _ => None,
        };
        axes.push(axis(a, s, scale));
    }
    Ok(Some(Ok(Described {
        by: "OME-TIFF",
        axes,
        samples_name: None,
    })))
}

/// A tifffile shaped description: `{"shape": [...]}` in C order ending in
/// height and width, with `"axes"` letters when given.
fn shaped(text: &str, info: &PageInfo) -> Result<Result<Described, String>, String> {
    if text.len() > SHAPED_MAX {
        return Ok(Err(format!(
            "its JSON description is longer than {} KiB, more than a shape; read as [width, height, pages]",
            SHAPED_MAX >> 10
        )));
    }
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return Ok(Err(
            "its description is not the JSON it seems; read as [width, height, pages]".into(),
        ));
    };
    let Some(shape) = v.get("shape").and_then(Value::as_array) else {
        return Ok(Err(
            "its JSON description has no shape; read as [width, height, pages]".into(),
        ));
    };
    let shape: Option<Vec<u64>> = shape.iter().map(Value::as_u64).collect();
    // A page's own dimensions, C order: its samples last when interleaved,
    // before height and width when planar.
    let (h, w, n) = (
        u64::from(info.height),
        u64::from(info.width),
        u64::from(info.samples),
    );
    let (page, at): (Vec<u64>, Option<usize>) = match (n, info.planar) {
        (1, _) => (vec![h, w], None),
        (_, false) => (vec![h, w, n], Some(2)),
        (_, true) => (vec![n, h, w], Some(0)),
    };
    let fits = shape.as_ref().is_some_and(|s| {
        s.len() >= page.len()
            && s[s.len() - page.len()..] == page[..]
            && grid_count(&s[..s.len() - page.len()]) == Some(info.pages)
    });
    let Some(mut shape) = shape.filter(|_| fits) else {
        return Ok(Err(format!(
            "its description's shape is not {}x{} pixels in {} pages; read as [width, height, pages]",
            info.width, info.height, info.pages
        )));
    };
    let mut letters: Option<Vec<String>> = v
        .get("axes")
        .and_then(Value::as_str)
        .filter(|a| a.chars().count() == shape.len())
        .map(|a| {
            a.chars()
                .map(|c| c.to_ascii_lowercase().to_string())
                .collect()
        });
    // The samples' dimension is the caller's to place, under the letter
    // the description gives it unless that is tifffile's S (samples).
    let mut samples_name = None;
    if let Some(i) = at {
        let i = shape.len() - page.len() + i;
        shape.remove(i);
        if let Some(l) = &mut letters {
            samples_name = Some(l.remove(i)).filter(|n| n != "s");
        }
    }
    // Letters that do not end in Y and X name no axes.
    if let Some(l) = &mut letters {
        if !l.ends_with(&["y".to_string(), "x".to_string()]) {
            letters = None;
            samples_name = None;
        } else {
            l.reverse();
        }
    }
    let axes = shape
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &size)| Axis {
            name: letters.as_ref().map(|l| l[i].clone()),
            size,
            scale: None,
        })
        .collect();
    Ok(Ok(Described {
        by: "tifffile",
        axes,
        samples_name,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(description: &str, width: u32, height: u32, pages: u64) -> PageInfo<'_> {
        PageInfo {
            description: Some(description),
            resolution: Some((4.0, 2.0)),
            width,
            height,
            pages,
            file_name: Some("f.ome.tif"),
            samples: 1,
            planar: false,
        }
    }

    fn names(d: &Described) -> Vec<String> {
        d.axes.iter().map(|a| a.name.clone().unwrap()).collect()
    }

    #[test]
    fn imagej_hyperstacks_are_channel_slice_frame() {
        let text = "ImageJ=1.11a\nimages=24\nchannels=3\nslices=4\nframes=2\nhyperstack=true\nspacing=2.0\nunit=micron\nfinterval=1.5";
        let d = describe(&info(text, 6, 5, 24), &mut Vec::new())
            .unwrap()
            .unwrap();
        assert_eq!(names(&d), ["x", "y", "c", "z", "t"]);
        let sizes: Vec<u64> = d.axes.iter().map(|a| a.size).collect();
        assert_eq!(sizes, [6, 5, 3, 4, 2]);
        assert_eq!(d.axes[0].scale, Some((0.25, "um".into())));
        assert_eq!(d.axes[1].scale, Some((0.5, "um".into())));
        assert_eq!(d.axes[2].scale, None);
        assert_eq!(d.axes[3].scale, Some((2.0, "um".into())));
        assert_eq!(d.axes[4].scale, Some((1.5, "s".into())));
        // A plain stack: its images are slices; no unit, no pixel sizes.
        let d = describe(
            &info("ImageJ=1.54f\nimages=7\nslices=7", 6, 5, 7),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(names(&d), ["x", "y", "z"]);
        assert!(d.axes.iter().all(|a| a.scale.is_none()));
        // Fewer pages than images: ImageJ's contiguous large stacks.
        let e = describe(
            &info("ImageJ=1.54f\nimages=7\nslices=7", 6, 5, 1),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(e.contains("4 GiB"), "{e}");
        // Counts that do not multiply to the images: a note, no layout.
        let mut notes = Vec::new();
        let d = describe(
            &info("ImageJ=1\nimages=6\nchannels=4\nslices=2", 6, 5, 6),
            &mut notes,
        )
        .unwrap();
        assert!(d.is_none() && notes.len() == 1, "{notes:?}");
        // No images= line: every page is an image.
        let d = describe(
            &info("ImageJ=1\nchannels=3\nslices=2", 6, 5, 6),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(names(&d), ["x", "y", "c", "z"]);
        // Only images=: they are slices.
        let d = describe(&info("ImageJ=1\nimages=6", 6, 5, 6), &mut Vec::new())
            .unwrap()
            .unwrap();
        assert_eq!(names(&d), ["x", "y", "z"]);
        // Fewer images than pages: a note, the pages as they come.
        let mut notes = Vec::new();
        assert!(
            describe(&info("ImageJ=1\nimages=4\nslices=4", 6, 5, 6), &mut notes)
                .unwrap()
                .is_none()
        );
        assert!(notes[0].contains("does not fit its 6 pages"), "{notes:?}");
    }

    /// Sizes become SI units neuroglancer reads, each axis in its own;
    /// sizes in other units are left out.
    #[test]
    fn units_become_si_units() {
        let text = "ImageJ=1\nimages=6\nchannels=2\nslices=3\nunit=inch\nzunit=nm\nspacing=300\nfinterval=2\ntunit=min";
        let mut one = info(text, 6, 5, 6);
        one.resolution = Some((72.0, 72.0));
        let d = describe(&one, &mut Vec::new()).unwrap().unwrap();
        let (x, unit) = d.axes[0].scale.clone().unwrap();
        assert!(
            (x - 25.4 / 72.0).abs() < 1e-12 && unit == "mm",
            "{x} {unit}"
        );
        assert_eq!(d.axes[3].scale, Some((300.0, "nm".into())));
        let d = describe(
            &info(&text.replace("unit=inch", "unit=pixel"), 6, 5, 6),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(d.axes[0].scale, None);
        assert_eq!(d.axes[3].scale, Some((300.0, "nm".into())));
        let d = describe(
            &info(
                &text
                    .replace("unit=inch", "unit=\\u03BCm")
                    .replace("zunit=nm\n", ""),
                6,
                5,
                6,
            ),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(d.axes[1].scale, Some((0.5, "um".into())));
        assert_eq!(d.axes[3].scale, Some((300.0, "um".into())));
        // Units of the other kind, empty units, absurd sizes, µ escaped.
        let d = describe(
            &info(
                "ImageJ=1\nimages=12\nchannels=2\nslices=3\nframes=2\nunit=um\nzunit=\nspacing=1e-320\nfinterval=2\ntunit=\\u00B5s",
                6,
                5,
                12,
            ),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(d.axes[0].scale, Some((0.25, "um".into())));
        assert_eq!(d.axes[3].scale, None);
        assert_eq!(d.axes[4].scale, Some((2.0, "us".into())));
        let d = describe(
            &info(
                "ImageJ=1\nimages=6\nslices=3\nframes=2\nunit=s\nfinterval=2\ntunit=um",
                6,
                5,
                6,
            ),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert!(d.axes.iter().all(|a| a.scale.is_none()), "{d:?}");
        let ome = r#"<OME><Image><Pixels DimensionOrder="XYZCT" SizeX="6" SizeY="5" SizeZ="2" PhysicalSizeX="3" PhysicalSizeXUnit="Å" PhysicalSizeY="1" PhysicalSizeYUnit="pixel" PhysicalSizeZ="2" PhysicalSizeZUnit="cm"/></Image></OME>"#;
        let d = describe(&info(ome, 6, 5, 2), &mut Vec::new())
            .unwrap()
            .unwrap();
        assert_eq!(d.axes[0].scale, Some((0.3, "nm".into())));
        assert_eq!(d.axes[1].scale, None);
        assert_eq!(d.axes[2].scale, Some((20.0, "mm".into())));
    }

    #[test]
    fn ome_pages_follow_the_dimension_order() {
        let text = r#"<?xml version="1.0" encoding="UTF-8"?><OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06"><Image ID="Image:0"><Pixels ID="Pixels:0" DimensionOrder="XYCZT" Type="uint16" SizeX="6" SizeY="5" SizeZ="4" SizeC="3" SizeT="1" PhysicalSizeX="0.25" PhysicalSizeXUnit="nm" PhysicalSizeY="0.5" PhysicalSizeZ="2.0"><Channel ID="Channel:0:0"/><TiffData IFD="0" PlaneCount="12"/></Pixels></Image></OME>"#;
        let d = describe(&info(text, 6, 5, 12), &mut Vec::new())
            .unwrap()
            .unwrap();
        assert_eq!(d.by, "OME-TIFF");
        assert_eq!(names(&d), ["x", "y", "c", "z"]);
        assert_eq!(d.axes[0].scale, Some((0.25, "nm".into())));
        assert_eq!(d.axes[1].scale, Some((0.5, "um".into())));
        assert_eq!(d.axes[3].scale, Some((2.0, "um".into())));
        // One TiffData per plane, each at its place in the order.
        let per_plane: String = (0..12)
            .map(|i| format!(r#"<TiffData IFD="{i}" FirstC="{}" FirstZ="{}" PlaneCount="1"><UUID FileName="">x</UUID></TiffData>"#, i % 3, i / 3))
            .collect();
        let elsewhere = text.replace(r#"<TiffData IFD="0" PlaneCount="12"/>"#, &per_plane);
        let mut notes = Vec::new();
        assert!(describe(&info(&elsewhere, 6, 5, 12), &mut notes)
            .unwrap()
            .is_none());
        assert!(notes[0].contains("other files"), "{notes:?}");
        let in_order = elsewhere.replace(r#"<UUID FileName="">x</UUID>"#, "");
        assert!(describe(&info(&in_order, 6, 5, 12), &mut Vec::new())
            .unwrap()
            .is_some());
        let swapped = in_order.replace(r#"IFD="1" FirstC="1""#, r#"IFD="1" FirstC="2""#);
        assert!(describe(&info(&swapped, 6, 5, 12), &mut Vec::new())
            .unwrap()
            .is_none());
        // Bio-Formats names this file in every TiffData, by the UUID of
        // its OME element (and its name); the planes here have T too.
        let order = "XYCTZ";
        let bf = |uuid: &str, file: &str| {
            let planes: String = (0..12)
                .map(|i| format!(r#"<TiffData FirstC="{}" FirstT="{}" FirstZ="{}" IFD="{i}" PlaneCount="1"><UUID FileName="{file}">{uuid}</UUID></TiffData>"#, i % 3, (i / 3) % 2, i / 6))
                .collect();
            format!(
                r#"<?xml version="1.0"?><OME UUID="urn:uuid:1" xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06"><Image ID="Image:0"><Pixels DimensionOrder="{order}" SizeX="6" SizeY="5" SizeZ="2" SizeC="3" SizeT="2" Type="uint8">{planes}</Pixels></Image></OME>"#
            )
        };
        for (uuid, file, fits) in [
            ("urn:uuid:1", "f.ome.tif", true),
            ("urn:uuid:1", "other.ome.tif", true),
            ("urn:uuid:2", "f.ome.tif", true),
            ("urn:uuid:2", "other.ome.tif", false),
        ] {
            let d = describe(&info(&bf(uuid, file), 6, 5, 12), &mut Vec::new()).unwrap();
            assert_eq!(d.is_some(), fits, "{uuid} {file}");
            if let Some(d) = d {
                assert_eq!(names(&d), ["x", "y", "c", "t", "z"]);
            }
        }
        // T's stride is C's size: FirstT=1 of plane 3, not 2.
        let wrong_t = bf("urn:uuid:1", "f.ome.tif").replace(
            r#"FirstT="1" FirstZ="0" IFD="3""#,
            r#"FirstT="0" FirstZ="0" IFD="3""#,
        );
        assert!(describe(&info(&wrong_t, 6, 5, 12), &mut Vec::new())
            .unwrap()
            .is_none());
        // A run of planes past the last page.
        let past = text.replace(r#"PlaneCount="12""#, r#"PlaneCount="13""#);
        assert!(describe(&info(&past, 6, 5, 12), &mut Vec::new())
            .unwrap()
            .is_none());
        // A prefixed root is OME's; XML of another kind, well-formed or
        // not, says nothing.
        let prefixed = r#"<?xml version="1.0"?><ome:OME xmlns:ome="http://www.openmicroscopy.org/Schemas/OME/2016-06"><ome:Image><ome:Pixels DimensionOrder="XYZCT" SizeX="6" SizeY="5" SizeZ="12"/></ome:Image></ome:OME>"#;
        let d = describe(&info(prefixed, 6, 5, 12), &mut Vec::new())
            .unwrap()
            .unwrap();
        assert_eq!(names(&d), ["x", "y", "z"]);
        let mut notes = Vec::new();
        for vendor in [
            r#"<?xml version="1.0"?><Camera gain="2"/>"#,
            "<Camera gain=\"2\"><x>",
        ] {
            assert!(describe(&info(vendor, 6, 5, 12), &mut notes)
                .unwrap()
                .is_none());
        }
        assert!(notes.is_empty(), "{notes:?}");
        // Two images, a wrong plane count, broken XML: notes.
        for (bad, why) in [
            (
                text.replace("</Image>", "</Image><Image ID=\"Image:1\"/>"),
                "series",
            ),
            (text.replace("SizeT=\"1\"", "SizeT=\"2\""), "planes"),
            (text.replace("</Pixels>", ""), "well-formed"),
        ] {
            let mut notes = Vec::new();
            assert!(describe(&info(&bad, 6, 5, 12), &mut notes)
                .unwrap()
                .is_none());
            assert!(notes[0].contains(why), "{notes:?}");
        }
    }

    /// Hostile descriptions give a note or nothing, never a panic or a
    /// layout that does not fit the pages.
    #[test]
    fn hostile_descriptions_lay_nothing_out() {
        let deep = format!("<OME>{}", "<a>".repeat(100_000));
        let huge = "ImageJ=1\nimages=3\nchannels=18446744073709551615\nslices=2\nframes=2";
        let ome_huge = r#"<OME><Image><Pixels DimensionOrder="XYZCT" SizeX="6" SizeY="5" SizeZ="18446744073709551615" SizeC="2" SizeT="9"/></Image></OME>"#;
        let zero = "ImageJ=1\nimages=0\nchannels=0";
        let nan = "ImageJ=1\nimages=3\nslices=3\nunit=um\nspacing=NaN\nfinterval=-1";
        for text in [
            deep.as_str(),
            huge,
            ome_huge,
            zero,
            "{\"shape\": [1e300, 5, 6]}",
            "{\"shape\": [3, 5, 6], \"axes\": \"ZYXQ\"}",
            "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"&b;&b;\">]><OME a=\"&a;\"/>",
            r#"<OME><Image><Pixels SizeX="6" SizeY="5" SizeZ="3"><TiffData IFD="0" FirstC="18446744073709551615" FirstT="18446744073709551615"/></Pixels></Image></OME>"#,
            r#"<OME><Image><Pixels SizeX="6" SizeY="5" SizeZ="3"><TiffData IFD="1" FirstZ="1" PlaneCount="18446744073709551615"/></Pixels></Image></OME>"#,
        ] {
            let mut notes = Vec::new();
            if let Ok(Some(d)) = describe(&info(text, 6, 5, 3), &mut notes) {
                assert_eq!(
                    d.axes.iter().map(|a| a.size).product::<u64>(),
                    6 * 5 * 3,
                    "{text}"
                );
            }
        }
        let d = describe(&info(nan, 6, 5, 3), &mut Vec::new())
            .unwrap()
            .unwrap();
        assert!(d.axes[2].scale.is_none(), "{d:?}");
        // Repeated attribute names cost linear time: 200,000 of them.
        let mut many = String::from(r#"<OME><Image><Pixels SizeX="6" SizeY="5" SizeZ="3""#);
        for i in 0..100_000 {
            many.push_str(&format!(" a{i}=\"1\""));
        }
        many.push_str(&r#" a99999="1""#.repeat(100_000));
        many.push_str("/></Image></OME>");
        let t = std::time::Instant::now();
        assert!(describe(&info(&many, 6, 5, 3), &mut Vec::new())
            .unwrap()
            .is_some());
        assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
        // A shaped description past its limit is not parsed.
        let long = format!(
            r#"{{"shape": [3, 5, 6], "x": "{}"}}"#,
            " ".repeat(SHAPED_MAX)
        );
        assert!(describe(&info(&long, 6, 5, 3), &mut Vec::new())
            .unwrap()
            .is_none());
    }

    #[test]
    fn tifffile_shapes_reverse_into_n5_order() {
        let d = describe(
            &info(r#"{"shape": [2, 3, 5, 6], "axes": "TZYX"}"#, 6, 5, 6),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(names(&d), ["x", "y", "z", "t"]);
        let d = describe(
            &info(r#"{"shape": [2, 1, 5, 6]}"#, 6, 5, 2),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(d.axes.len(), 3);
        assert!(d.axes[0].name.is_none());
        let mut notes = Vec::new();
        assert!(
            describe(&info(r#"{"shape": [4, 5, 6]}"#, 6, 5, 3), &mut notes)
                .unwrap()
                .is_none()
        );
        assert_eq!(notes.len(), 1);
        // Letters that do not end in Y and X name nothing; a planar
        // samples dimension keeps its letter.
        let d = describe(
            &info(r#"{"shape": [2, 3, 5, 6], "axes": "XYZT"}"#, 6, 5, 6),
            &mut Vec::new(),
        )
        .unwrap()
        .unwrap();
        assert!(d.axes.iter().all(|a| a.name.is_none()));
        let mut planar = info(r#"{"shape": [2, 3, 5, 6], "axes": "TZYX"}"#, 6, 5, 2);
        (planar.samples, planar.planar) = (3, true);
        let d = describe(&planar, &mut Vec::new()).unwrap().unwrap();
        assert_eq!(names(&d), ["x", "y", "t"]);
        assert_eq!(d.samples_name.as_deref(), Some("z"));
        // Other descriptions say nothing.
        assert!(describe(&info("made by a camera", 6, 5, 3), &mut notes)
            .unwrap()
            .is_none());
        assert_eq!(notes.len(), 1);
    }
}
