//! Pyramid options (the `options_json` of `n5_pyramid_build`), axes, units, factors and the levels they give.
//!
//! Pure computation, no I/O: [`PyramidOptions`] holds what the caller asked
//! for (from JSON or filled by the command line from its flags),
//! [`SourceInfo`] what the engine read from the source dataset, and
//! [`Plan::new`] resolves both into axes, units, geometry and levels, or
//! refuses with the message the command line prints (`n5: <message>`).
//!
//! Every list a caller gives (factors, sizes, resolutions, block and shard
//! shapes) is in N5 order and follows the *source's* axes; a [`Plan`] is in
//! *output* order, which differs only for OME-NGFF outputs (see
//! [`Plan::permutation`]).

use std::fmt;

use serde_json::{json, Map, Value};

use super::downsample::Method;
use crate::error::{Error, ErrorKind, Result};
use crate::storage::options::shown_value;

/// An [`ErrorKind::InvalidArgument`] error naming the option the way the
/// command line spells it (`--min-size: ...`).
fn arg_err(option: &str, message: impl fmt::Display) -> Error {
    Error::invalid_argument(format!("{option}: {message}"))
}

/// A list of integers as the command line shows it (`2,2,1`).
fn show_list<T: fmt::Display>(list: &[T]) -> String {
    list.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

// ---------------------------------------------------------------------------
// Output formats

/// The layout a pyramid is written in (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutFormat {
    /// N5 with the metadata of neuroglancer, n5-viewer, COSEM and webKnossos.
    N5,
    /// Zarr v2 with OME-NGFF 0.4 metadata.
    Zarr2,
    /// Zarr v3 with OME-NGFF 0.5 metadata.
    Zarr3,
    /// BigDataViewer's N5 layout (`setup{S}/timepoint{T}/s{k}`) and `dataset.xml`.
    Bdv,
}

impl OutFormat {
    /// The format named `name` (`"n5"`, `"zarr2"`, `"zarr3"`, `"bdv"`), or `None`.
    pub fn parse(name: &str) -> Option<OutFormat> {
        Some(match name {
            "n5" => OutFormat::N5,
            "zarr2" => OutFormat::Zarr2,
            "zarr3" => OutFormat::Zarr3,
            "bdv" => OutFormat::Bdv,
            _ => return None,
        })
    }

    /// The format's name as options spell it (`"zarr3"`).
    pub fn name(self) -> &'static str {
        match self {
            OutFormat::N5 => "n5",
            OutFormat::Zarr2 => "zarr2",
            OutFormat::Zarr3 => "zarr3",
            OutFormat::Bdv => "bdv",
        }
    }

    /// Whether the format carries OME-NGFF metadata (zarr2, zarr3), whose
    /// axes must be named `x y z c t` and are written in that N5 order.
    pub fn is_ngff(self) -> bool {
        matches!(self, OutFormat::Zarr2 | OutFormat::Zarr3)
    }
}

impl fmt::Display for OutFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------
// Options

/// The factors from each level to the next (`--factors`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Factors {
    /// BigDataViewer's rule with per-axis stops (pyramid.md, "Levels and factors").
    Auto,
    /// One list used by every level, each axis while longer than its stop size.
    One(Vec<u64>),
    /// Exactly these levels after `s0`, one list each.
    Many(Vec<Vec<u64>>),
}

impl Factors {
    /// Parses the command line's spelling: `auto`, `2,2,1` or `2,2,1/2,2,2`
    /// (entries separated by commas, `x` or spaces, as other lists of the
    /// tool). A malformed text is an [`ErrorKind::InvalidArgument`] naming
    /// `--factors`.
    pub fn parse(text: &str) -> Result<Factors> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("auto") {
            return Ok(Factors::Auto);
        }
        let malformed = || {
            arg_err(
                "--factors",
                format!(
                    "malformed factor list '{text}' (auto, or lists such as 2,2,1 or 2,2,1/2,2,2)"
                ),
            )
        };
        let mut lists = Vec::new();
        for list in trimmed.split('/') {
            let inner = list.trim().trim_start_matches('[').trim_end_matches(']');
            let values: std::result::Result<Vec<u64>, _> = inner
                .split([',', 'x', ' '])
                .filter(|s| !s.is_empty())
                .map(|s| s.trim().parse::<u64>())
                .collect();
            match values {
                Ok(v) if !v.is_empty() => lists.push(v),
                _ => return Err(malformed()),
            }
        }
        Ok(if lists.len() == 1 {
            Factors::One(lists.pop().unwrap_or_default())
        } else {
            Factors::Many(lists)
        })
    }
}

/// The size along which an axis stops being downsampled (`--min-size`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MinSize {
    /// The same size for every axis.
    All(u64),
    /// One size per axis (N5 order, the source's axes).
    PerAxis(Vec<u64>),
}

/// What a caller asks of a pyramid build: the `options_json` of
/// `n5_pyramid_build` / `n5_pyramid_plan`, or the command line's flags.
///
/// Lists are in N5 order and follow the source's axes. `None` means "the
/// default of pyramid.md" (mostly: the source's value). The command line
/// fills the fields from its flags directly and then calls
/// [`validate_syntax`](Self::validate_syntax); [`from_json`](Self::from_json)
/// does both.
#[derive(Clone, Debug, PartialEq)]
pub struct PyramidOptions {
    /// The reduction (`--method`, default mean).
    pub method: Method,
    /// The factors (`--factors`, default auto).
    pub factors: Factors,
    /// At most this many levels in all, `s0` included (`--levels`); `None`:
    /// until the stop rule. The JSON value 0 means `None`; `Some(0)` is refused.
    pub levels: Option<u32>,
    /// Stop sizes (`--min-size`); `None`: the output block size.
    pub min_size: Option<MinSize>,
    /// The output layout (`--format`); `None`: the destination container's.
    pub format: Option<OutFormat>,
    /// Axis names (`--axes`); `None`: the source's, else `x,y,z,c,t` cut to the rank.
    pub axes: Option<Vec<String>>,
    /// Units per axis, any spelling of the units table (`--units`); an entry
    /// `None` (or empty): no unit. `None`: the source's.
    pub units: Option<Vec<Option<String>>>,
    /// Voxel size of `s0` per axis (`--resolution`); `None`: the source's, else 1.
    pub resolution: Option<Vec<f64>>,
    /// Physical position of the centre of `s0`'s first voxel (`--translation`); `None`: 0.
    pub translation: Option<Vec<f64>>,
    /// The compression of every level as N5 compression JSON (`-c`), kept
    /// opaque here; `None`: the source's.
    pub compression: Option<Value>,
    /// Block (inner chunk) shape of every level (`-b`); `None`: the source's.
    pub block_size: Option<Vec<u64>>,
    /// Shard shape of every level, zarr3 only (`--shard`); `None`: the source's.
    pub shard_shape: Option<Vec<u64>>,
    /// Worker threads (`--threads`); 0: the destination container's.
    pub threads: usize,
    /// Build only part I of N (`--part I/N`): `(I, N)`.
    pub part: Option<(u64, u64)>,
    /// Finish a build done in parts (`--finalize`).
    pub finalize: bool,
}

impl Default for PyramidOptions {
    fn default() -> Self {
        PyramidOptions {
            method: Method::Mean,
            factors: Factors::Auto,
            levels: None,
            min_size: None,
            format: None,
            axes: None,
            units: None,
            resolution: None,
            translation: None,
            compression: None,
            block_size: None,
            shard_shape: None,
            threads: 0,
            part: None,
            finalize: false,
        }
    }
}

/// The keys of `options_json`, as the unknown-key error lists them.
const OPTION_KEYS: &str = "method, factors, levels, min_size, format, axes, units, resolution, \
                           translation, compression, block_size, shard_shape, threads, part, finalize";

/// A non-empty JSON array of non-negative integers.
fn json_u64_list(option: &str, v: &Value) -> Result<Vec<u64>> {
    let bad = || {
        arg_err(
            option,
            format!(
                "expected a list of non-negative integers, not {}",
                shown_value(v)
            ),
        )
    };
    let items = v.as_array().ok_or_else(bad)?;
    if items.is_empty() {
        return Err(bad());
    }
    items.iter().map(|x| x.as_u64().ok_or_else(bad)).collect()
}

/// A non-empty JSON array of numbers.
fn json_f64_list(option: &str, v: &Value) -> Result<Vec<f64>> {
    let bad = || {
        arg_err(
            option,
            format!("expected a list of numbers, not {}", shown_value(v)),
        )
    };
    let items = v.as_array().ok_or_else(bad)?;
    if items.is_empty() {
        return Err(bad());
    }
    // A number beyond f64's range reads as an infinity, which the
    // validation then names.
    items
        .iter()
        .map(|x| {
            x.as_f64()
                .or_else(|| x.as_number()?.as_str().parse().ok())
                .ok_or_else(bad)
        })
        .collect()
}

impl PyramidOptions {
    /// Parses `options_json` (`None`: every default) and checks it with
    /// [`validate_syntax`](Self::validate_syntax). Malformed JSON or a
    /// document that is not an object is [`ErrorKind::Json`]; an unknown key
    /// or a wrong-typed or invalid value is [`ErrorKind::InvalidArgument`]
    /// with the message the command line would print for its flag. A key
    /// whose value is `null` keeps its default.
    pub fn from_json(text: Option<&str>) -> Result<PyramidOptions> {
        let Some(text) = text else {
            return Ok(PyramidOptions::default());
        };
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Json, format!("pyramid options: {e}")))?;
        let map = value
            .as_object()
            .ok_or_else(|| Error::new(ErrorKind::Json, "pyramid options must be a JSON object"))?;
        let mut o = PyramidOptions::default();
        for (key, v) in map {
            if v.is_null() && OPTION_KEYS.split(", ").any(|k| k == key) {
                continue;
            }
            match key.as_str() {
                "method" => {
                    o.method = match v.as_str() {
                        Some(name) => parse_method(name)?,
                        None => {
                            return Err(arg_err(
                                "--method",
                                format!("expected a method name, not {}", shown_value(v)),
                            ))
                        }
                    }
                }
                "factors" => {
                    o.factors = match v {
                        Value::String(s) => Factors::parse(s)?,
                        Value::Array(items) if items.iter().all(Value::is_array) => {
                            let lists = items
                                .iter()
                                .map(|l| json_u64_list("--factors", l))
                                .collect::<Result<Vec<_>>>()?;
                            if lists.is_empty() {
                                return Err(arg_err("--factors", "expected a factor list, not []"));
                            }
                            Factors::Many(lists)
                        }
                        _ => Factors::One(json_u64_list("--factors", v)?),
                    }
                }
                "levels" => {
                    let n = v
                        .as_u64()
                        .filter(|&n| n <= u32::MAX as u64)
                        .ok_or_else(|| {
                            arg_err(
                                "--levels",
                                format!(
                                    "expected a number of levels (0: until the stop rule), not {}",
                                    shown_value(v)
                                ),
                            )
                        })?;
                    o.levels = if n == 0 { None } else { Some(n as u32) };
                }
                "min_size" => {
                    o.min_size = Some(match v.as_u64() {
                        Some(n) => MinSize::All(n),
                        None => MinSize::PerAxis(json_u64_list("--min-size", v)?),
                    })
                }
                "format" => {
                    o.format = Some(v.as_str().and_then(OutFormat::parse).ok_or_else(|| {
                        arg_err(
                            "--format",
                            format!("unknown format {} (n5, zarr2, zarr3, bdv)", shown_value(v)),
                        )
                    })?)
                }
                "axes" => {
                    let bad = || {
                        arg_err(
                            "--axes",
                            format!("expected a list of names, not {}", shown_value(v)),
                        )
                    };
                    let items = v.as_array().ok_or_else(bad)?;
                    o.axes = Some(
                        items
                            .iter()
                            .map(|x| x.as_str().map(str::to_string).ok_or_else(bad))
                            .collect::<Result<_>>()?,
                    );
                }
                "units" => {
                    let bad = || {
                        arg_err(
                            "--units",
                            format!(
                                "expected a list of units (null: none), not {}",
                                shown_value(v)
                            ),
                        )
                    };
                    let items = v.as_array().ok_or_else(bad)?;
                    o.units = Some(
                        items
                            .iter()
                            .map(|x| match x {
                                Value::Null => Ok(None),
                                Value::String(s) if s.trim().is_empty() => Ok(None),
                                Value::String(s) => Ok(Some(s.clone())),
                                _ => Err(bad()),
                            })
                            .collect::<Result<_>>()?,
                    );
                }
                "resolution" => o.resolution = Some(json_f64_list("--resolution", v)?),
                "translation" => o.translation = Some(json_f64_list("--translation", v)?),
                "compression" => {
                    if !v.is_object() {
                        return Err(arg_err(
                            "-c",
                            format!(
                                "expected N5 compression JSON such as {{\"type\": \"gzip\"}}, not {}",
                                shown_value(v)
                            ),
                        ));
                    }
                    o.compression = Some(v.clone());
                }
                "block_size" => o.block_size = Some(json_u64_list("-b", v)?),
                "shard_shape" => o.shard_shape = Some(json_u64_list("--shard", v)?),
                "threads" => {
                    o.threads = v.as_u64().filter(|&n| n <= 1024).ok_or_else(|| {
                        arg_err(
                            "--threads",
                            format!(
                                "expected an integer from 0 (the container's) to 1024, not {}",
                                shown_value(v)
                            ),
                        )
                    })? as usize
                }
                "part" => {
                    let list = v
                        .as_array()
                        .filter(|a| a.len() == 2)
                        .and_then(|a| Some((a[0].as_u64()?, a[1].as_u64()?)))
                        .ok_or_else(|| {
                            arg_err(
                                "--part",
                                format!("expected [I, N] with 0 <= I < N, not {}", shown_value(v)),
                            )
                        })?;
                    o.part = Some(list);
                }
                "finalize" => {
                    o.finalize = v.as_bool().ok_or_else(|| {
                        arg_err(
                            "--finalize",
                            format!("expected true or false, not {}", shown_value(v)),
                        )
                    })?
                }
                other => {
                    return Err(Error::invalid_argument(format!(
                        "pyramid options: unknown key '{other}' (known: {OPTION_KEYS})"
                    )))
                }
            }
        }
        o.validate_syntax()?;
        Ok(o)
    }

    /// The checks that need no source: factors (< 1, a list of only 1s,
    /// lists of different lengths), `--levels` (0, or with several factor
    /// lists), `--min-size 0`, `--part` (N = 0, I ≥ N, with `--finalize`),
    /// resolutions (≤ 0 or non-finite), translations (non-finite), units
    /// (not in the table), axis names (empty, repeated), zero block or shard
    /// sizes, and `--shard` with a format other than zarr3. Errors are
    /// [`ErrorKind::InvalidArgument`] naming the option.
    pub fn validate_syntax(&self) -> Result<()> {
        let lists: Vec<&Vec<u64>> = match &self.factors {
            Factors::Auto => Vec::new(),
            Factors::One(l) => vec![l],
            Factors::Many(ls) => ls.iter().collect(),
        };
        for list in &lists {
            if list.is_empty() {
                return Err(arg_err("--factors", "an empty factor list"));
            }
            if let Some(&f) = list.iter().find(|&&f| f < 1) {
                return Err(arg_err(
                    "--factors",
                    format!("a factor must be at least 1, not {f}"),
                ));
            }
            if list.iter().all(|&f| f == 1) {
                return Err(arg_err(
                    "--factors",
                    format!("the list {} downsamples nothing", show_list(list)),
                ));
            }
        }
        if let Factors::Many(ls) = &self.factors {
            if ls.iter().any(|l| l.len() != ls[0].len()) {
                return Err(arg_err(
                    "--factors",
                    "the factor lists have different lengths",
                ));
            }
            if self.levels.is_some() {
                return Err(arg_err(
                    "--levels",
                    "not with several factor lists (they give the levels)",
                ));
            }
        }
        if self.levels == Some(0) {
            return Err(arg_err("--levels", "must be at least 1 (s0 counts)"));
        }
        match &self.min_size {
            Some(MinSize::All(0)) => return Err(arg_err("--min-size", "must be at least 1")),
            Some(MinSize::PerAxis(l)) if l.is_empty() || l.contains(&0) => {
                return Err(arg_err("--min-size", "every size must be at least 1"))
            }
            _ => {}
        }
        if let Some((i, n)) = self.part {
            if n == 0 {
                return Err(arg_err("--part", "N must be at least 1 in I/N"));
            }
            if i >= n {
                return Err(arg_err(
                    "--part",
                    format!("part {i}/{n} does not exist (0 <= I < N)"),
                ));
            }
            if self.finalize {
                return Err(arg_err("--part", "not with --finalize"));
            }
        }
        if let Some(res) = &self.resolution {
            if let Some(r) = res.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
                return Err(arg_err(
                    "--resolution",
                    format!("a voxel size must be finite and greater than 0, not {r}"),
                ));
            }
        }
        if let Some(t) = &self.translation {
            if let Some(x) = t.iter().find(|x| !x.is_finite()) {
                return Err(arg_err(
                    "--translation",
                    format!("a translation must be finite, not {x}"),
                ));
            }
        }
        if let Some(units) = &self.units {
            for u in units.iter().flatten() {
                if !u.trim().is_empty() {
                    Unit::from_option(u)?;
                }
            }
        }
        if let Some(axes) = &self.axes {
            check_names("--axes", axes)?;
        }
        if let Some(b) = &self.block_size {
            if b.contains(&0) {
                return Err(arg_err("-b", "a block size must be at least 1"));
            }
        }
        if let Some(s) = &self.shard_shape {
            if s.contains(&0) {
                return Err(arg_err("--shard", "a shard size must be at least 1"));
            }
            if let Some(f) = self.format.filter(|f| *f != OutFormat::Zarr3) {
                return Err(arg_err(
                    "--shard",
                    format!("only zarr3 output has shards, not {f}"),
                ));
            }
        }
        Ok(())
    }
}

/// The method named `name`, or the command line's error.
fn parse_method(name: &str) -> Result<Method> {
    Method::parse(name).ok_or_else(|| {
        arg_err(
            "--method",
            format!("unknown method '{name}' (stride, mean, median, mode, min, max)"),
        )
    })
}

/// Refuses empty and repeated axis names.
fn check_names(option: &str, names: &[String]) -> Result<()> {
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() {
            return Err(arg_err(option, "an empty axis name"));
        }
        if names[..i].contains(n) {
            return Err(arg_err(option, format!("axis '{n}' is named twice")));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Units

/// Whether a unit measures space or time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnitKind {
    /// A length.
    Space,
    /// A duration.
    Time,
}

/// A unit of the units table (pyramid.md, "Units"): its OME-NGFF
/// (UDUNITS-2) name, its N5/COSEM/BDV symbol and the factor from a size in
/// this unit to a size in that symbol (ångström → nm × 0.1, minute → s × 60,
/// hour → s × 3600, else 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unit {
    ngff: &'static str,
    symbol: &'static str,
    kind: UnitKind,
    /// A size in `symbol` is the size in this unit × `mul` / `div` (exact
    /// for the factors of the table).
    mul: f64,
    div: f64,
    /// `symbol` is 10^`exp10` metres or seconds.
    exp10: i32,
}

/// The table: lower-case spellings, then the unit.
const UNITS: &[(&[&str], Unit)] = &[
    (
        &["nm", "nanometer", "nanometre"],
        Unit::new("nanometer", "nm", UnitKind::Space, 1.0, 1.0, -9),
    ),
    (
        &["um", "µm", "μm", "micron", "micrometer", "micrometre"],
        Unit::new("micrometer", "um", UnitKind::Space, 1.0, 1.0, -6),
    ),
    (
        &["mm", "millimeter", "millimetre"],
        Unit::new("millimeter", "mm", UnitKind::Space, 1.0, 1.0, -3),
    ),
    (
        &["cm", "centimeter", "centimetre"],
        Unit::new("centimeter", "cm", UnitKind::Space, 1.0, 1.0, -2),
    ),
    (
        &["m", "meter", "metre"],
        Unit::new("meter", "m", UnitKind::Space, 1.0, 1.0, 0),
    ),
    (
        &["å", "a", "angstrom", "ångström"],
        Unit::new("angstrom", "nm", UnitKind::Space, 1.0, 10.0, -9),
    ),
    (
        &["s", "sec", "second"],
        Unit::new("second", "s", UnitKind::Time, 1.0, 1.0, 0),
    ),
    (
        &["ms", "millisecond"],
        Unit::new("millisecond", "ms", UnitKind::Time, 1.0, 1.0, -3),
    ),
    (
        &["us", "µs", "μs", "microsecond"],
        Unit::new("microsecond", "us", UnitKind::Time, 1.0, 1.0, -6),
    ),
    (
        &["ns", "nanosecond"],
        Unit::new("nanosecond", "ns", UnitKind::Time, 1.0, 1.0, -9),
    ),
    (
        &["min", "minute"],
        Unit::new("minute", "s", UnitKind::Time, 60.0, 1.0, 0),
    ),
    (
        &["h", "hour"],
        Unit::new("hour", "s", UnitKind::Time, 3600.0, 1.0, 0),
    ),
];

/// The units an unknown-unit error lists.
const UNIT_NAMES: &str = "nm, um, mm, cm, m, angstrom, s, ms, us, ns, min, h";

impl Unit {
    const fn new(
        ngff: &'static str,
        symbol: &'static str,
        kind: UnitKind,
        mul: f64,
        div: f64,
        exp10: i32,
    ) -> Unit {
        Unit {
            ngff,
            symbol,
            kind,
            mul,
            div,
            exp10,
        }
    }

    /// The unit spelled `text` (any accepted spelling, any case, surrounding
    /// blanks ignored), or `None`.
    pub fn parse(text: &str) -> Option<Unit> {
        let t = text.trim().to_lowercase();
        UNITS
            .iter()
            .find(|(spellings, _)| spellings.contains(&t.as_str()))
            .map(|(_, u)| *u)
    }

    /// [`Unit::parse`] with the command line's error:
    /// `--units: unknown unit 'parsec' (nm, um, ...)`.
    pub fn from_option(text: &str) -> Result<Unit> {
        Unit::parse(text)
            .ok_or_else(|| arg_err("--units", format!("unknown unit '{text}' ({UNIT_NAMES})")))
    }

    /// The OME-NGFF (UDUNITS-2) name (`"micrometer"`).
    pub fn ngff(&self) -> &'static str {
        self.ngff
    }

    /// The N5, COSEM and BigDataViewer symbol (`"um"`; `"nm"` for ångström,
    /// `"s"` for minute and hour).
    pub fn symbol(&self) -> &'static str {
        self.symbol
    }

    /// Space or time.
    pub fn kind(&self) -> UnitKind {
        self.kind
    }

    /// The factor from a size in this unit to one in [`symbol`](Self::symbol):
    /// 0.1 for ångström, 60 for minute, 3600 for hour, else 1.
    pub fn factor(&self) -> f64 {
        self.mul / self.div
    }

    /// `size` in this unit expressed in [`symbol`](Self::symbol) (3 Å → 0.3 nm,
    /// computed as 3 / 10 so that the result is the nearest double).
    pub fn to_symbol(&self, size: f64) -> f64 {
        size * self.mul / self.div
    }

    /// `size` in this unit expressed in metres (space) or seconds (time).
    pub fn to_si(&self, size: f64) -> f64 {
        pow10(self.to_symbol(size), self.exp10)
    }

    /// The factor from a size in `self`'s symbol to one in `other`'s symbol,
    /// applied to `size` (4 um in nm: 4000), for units of one kind.
    fn symbol_in(&self, other: &Unit, size: f64) -> f64 {
        pow10(size, self.exp10 - other.exp10)
    }
}

/// `x` × 10^`e`, dividing for negative `e` so that decimal results are the
/// nearest doubles.
fn pow10(x: f64, e: i32) -> f64 {
    let p = 10f64.powi(e.abs());
    if e >= 0 {
        x * p
    } else {
        x / p
    }
}

// ---------------------------------------------------------------------------
// Source

/// What the engine read from the source dataset: its shape and the axis
/// names, voxel sizes and units its metadata states (each `None` when
/// absent or not one entry per axis). Lists in N5 order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceInfo {
    /// The source's shape.
    pub shape: Vec<u64>,
    /// Axis names.
    pub axes: Option<Vec<String>>,
    /// Voxel sizes.
    pub resolution: Option<Vec<f64>>,
    /// Units as written (any spelling; unknown ones are left out by [`Plan::new`]).
    pub units: Option<Vec<Option<String>>>,
    /// The multiscale's `name`: the last path component of the destination
    /// (else of the source). [`SourceInfo::from_attributes`] leaves it empty.
    pub name: String,
}

/// The strings of a JSON array, `None` unless every entry is a string.
fn json_strings(v: Option<&Value>) -> Option<Vec<String>> {
    v?.as_array()?
        .iter()
        .map(|x| x.as_str().map(str::to_string))
        .collect()
}

/// The numbers of a JSON array, `None` unless every entry is a number.
fn json_numbers(v: Option<&Value>) -> Option<Vec<f64>> {
    v?.as_array()?.iter().map(Value::as_f64).collect()
}

impl SourceInfo {
    /// Reads the source's axes, voxel sizes and units from its user
    /// attributes `attrs`: axis names from `dimension_names` (given by the
    /// engine from Zarr v3 metadata), else N5 `axes`, else Zarr v2
    /// `_ARRAY_DIMENSIONS`; voxel sizes from `resolution`, else
    /// `pixelResolution` (`{"unit", "dimensions"}` or a plain list), else
    /// `dimension_units` (`["4 nm", ...]`); units from `units`, else
    /// `pixelResolution.unit` (every axis), else `dimension_units`. A list
    /// that is not one valid entry per axis is ignored, as are empty names;
    /// a `null` entry of `dimension_units` is an axis without a unit (size
    /// 1 when other axes have sizes), as `n5 import` writes a channel axis.
    /// `name` is left empty for the engine to set.
    pub fn from_attributes(
        shape: &[u64],
        attrs: &Map<String, Value>,
        dimension_names: Option<Vec<String>>,
    ) -> SourceInfo {
        let rank = shape.len();
        let names_ok = |v: &Vec<String>| v.len() == rank && v.iter().all(|n| !n.is_empty());
        let axes = dimension_names
            .filter(names_ok)
            .or_else(|| json_strings(attrs.get("axes")).filter(names_ok))
            .or_else(|| json_strings(attrs.get("_ARRAY_DIMENSIONS")).filter(names_ok));

        let res_ok = |v: &Vec<f64>| v.len() == rank && v.iter().all(|r| r.is_finite() && *r > 0.0);
        let pixel = attrs.get("pixelResolution");
        let pixel_dims = match pixel {
            Some(Value::Object(o)) => json_numbers(o.get("dimensions")),
            Some(v @ Value::Array(_)) => json_numbers(Some(v)),
            _ => None,
        };
        let pixel_unit = pixel
            .and_then(Value::as_object)
            .and_then(|o| o.get("unit"))
            .and_then(Value::as_str)
            .filter(|u| !u.trim().is_empty())
            .map(|u| vec![Some(u.to_string()); rank]);
        // dimension_units: "4 nm", "4", "nm".
        let dim_units: Option<Vec<(Option<f64>, Option<String>)>> = attrs
            .get("dimension_units")
            .and_then(Value::as_array)
            .filter(|v| v.len() == rank)
            .and_then(|v| {
                v.iter()
                    .map(|entry| match entry {
                        Value::Null => Some((None, None)),
                        Value::String(s) => {
                            let mut words = s.split_whitespace();
                            let first = words.next();
                            Some(match first.map(str::parse::<f64>) {
                                Some(Ok(x)) => (Some(x), words.next().map(str::to_string)),
                                _ => (None, first.map(str::to_string)),
                            })
                        }
                        _ => None,
                    })
                    .collect()
            });
        // Sizes when some entry has one (1 for those without).
        let du_res = dim_units
            .as_ref()
            .filter(|d| d.iter().any(|(x, _)| x.is_some()))
            .map(|d| {
                d.iter()
                    .map(|(x, _)| x.unwrap_or(1.0))
                    .collect::<Vec<f64>>()
            });
        let du_units = dim_units
            .as_ref()
            .map(|d| d.iter().map(|(_, u)| u.clone()).collect::<Vec<_>>())
            .filter(|u| u.iter().any(Option::is_some));

        let resolution = json_numbers(attrs.get("resolution"))
            .filter(res_ok)
            .or_else(|| pixel_dims.filter(res_ok))
            .or_else(|| du_res.filter(res_ok));
        let units = attrs
            .get("units")
            .and_then(Value::as_array)
            .filter(|v| v.len() == rank)
            .and_then(|v| {
                v.iter()
                    .map(|x| match x {
                        Value::String(s) if s.trim().is_empty() => Some(None),
                        Value::String(s) => Some(Some(s.clone())),
                        Value::Null => Some(None),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
            })
            .or(pixel_unit)
            .or(du_units);
        SourceInfo {
            shape: shape.to_vec(),
            axes,
            resolution,
            units,
            name: String::new(),
        }
    }
}

// ---------------------------------------------------------------------------
// Plan

/// What an axis is, by its name: `x`, `y`, `z` space, `t` time, `c`
/// channel; other names (N5 output only) space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AxisKind {
    /// A spatial axis, downsampled by the auto rule.
    Space,
    /// The time axis: never downsampled by the auto rule.
    Time,
    /// The channel axis: never downsampled, no unit.
    Channel,
}

impl AxisKind {
    /// The OME-NGFF axis type (`"space"`, `"time"`, `"channel"`).
    pub fn ngff_type(self) -> &'static str {
        match self {
            AxisKind::Space => "space",
            AxisKind::Time => "time",
            AxisKind::Channel => "channel",
        }
    }
}

/// One axis of the output, with the geometry of `s0` along it.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The name (`"x"`).
    pub name: String,
    /// Space, time or channel.
    pub kind: AxisKind,
    /// The unit, `None` when unknown (always `None` on a channel axis).
    pub unit: Option<Unit>,
    /// The voxel size of `s0`, in [`unit`](Self::unit) as given (not converted
    /// to its symbol).
    pub resolution: f64,
    /// The position of the centre of `s0`'s first voxel, in the same unit.
    pub translation: f64,
}

/// One level of the pyramid. Lists run over [`Plan::level_axes`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    /// `"s{k}"`.
    pub path: String,
    /// The level's shape (for bdv: one 3-D stack's).
    pub shape: Vec<u64>,
    /// The factors from the level before (all 1 for `s0`).
    pub relative: Vec<u64>,
    /// The factors from `s0`.
    pub factors: Vec<u64>,
}

/// A BigDataViewer stack (one channel at one time point); `Stack::default()`
/// for the other formats, which have a single one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stack {
    /// The setup: the channel index.
    pub setup: u64,
    /// The time point: the time index.
    pub timepoint: u64,
}

/// The resolved pyramid: axes, units and geometry of `s0`, and the levels.
///
/// Everything is in *output* order: for OME-NGFF outputs the source's axes
/// permuted to N5 order `x, y, z, c, t` (see [`permutation`](Self::permutation)),
/// for N5 and bdv the source's order. Levels, block and shard shapes run over
/// [`level_axes`](Self::level_axes): every axis, except for bdv, whose levels
/// are 3-D stacks over `x, y, z`.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The output layout.
    pub format: OutFormat,
    /// The reduction.
    pub method: Method,
    /// The multiscale's name.
    pub name: String,
    /// Every axis of `s0`, in output order.
    pub axes: Vec<Axis>,
    /// The shape of `s0` over every axis, in output order.
    pub shape: Vec<u64>,
    /// Output axis `i` is source axis `permutation[i]` (identity except for
    /// zarr2/zarr3 sources whose axes are not in `x, y, z, c, t` order).
    pub permutation: Vec<usize>,
    /// The axes (indices into [`axes`](Self::axes)) the levels span: all of
    /// them, except for bdv (`x`, `y`, `z`).
    pub level_axes: Vec<usize>,
    /// The output block (inner chunk) shape, over the level axes.
    pub block: Vec<u64>,
    /// The output shard shape (the unit a format writes: an N5 block, a Zarr
    /// v2 chunk, a Zarr v3 shard), over the level axes; the same for every level.
    pub shard: Vec<u64>,
    /// `s0`, `s1`, ...
    pub levels: Vec<Level>,
    /// Things worth telling on stderr (factors that are not powers of two,
    /// source units left out).
    pub warnings: Vec<String>,
}

/// The default axis names, cut to the rank.
const DEFAULT_AXES: [&str; 5] = ["x", "y", "z", "c", "t"];

/// The kind of an axis named `name`, `None` for names outside `x y z c t`.
fn kind_of(name: &str) -> Option<AxisKind> {
    match name {
        "x" | "y" | "z" => Some(AxisKind::Space),
        "t" => Some(AxisKind::Time),
        "c" => Some(AxisKind::Channel),
        _ => None,
    }
}

/// Checks that `list` (an option's) has one entry per axis.
fn check_len<T>(option: &str, list: &[T], rank: usize, what: &str) -> Result<()> {
    if list.len() != rank {
        return Err(arg_err(
            option,
            format!("{} {what} for a dataset of rank {rank}", list.len()),
        ));
    }
    Ok(())
}

impl Plan {
    /// Resolves the pyramid of a source described by `src` under `opts`
    /// into `format`, with the output block and shard shapes `out_block`
    /// and `out_shard` (source axis order, one entry per source axis; for
    /// formats without shards `out_shard` is the block shape). Options win
    /// over the source. Refuses (with [`ErrorKind::InvalidArgument`], the
    /// command line's exit 2) every case of pyramid.md that depends on the
    /// source: wrong counts, axis names, factors on channel axes, units of
    /// the wrong kind, and the checks of [`PyramidOptions::validate_syntax`].
    pub fn new(
        src: &SourceInfo,
        opts: &PyramidOptions,
        format: OutFormat,
        out_block: &[u64],
        out_shard: &[u64],
    ) -> Result<Plan> {
        opts.validate_syntax()?;
        let rank = src.shape.len();
        if rank == 0 {
            return Err(Error::invalid_argument(
                "a pyramid needs a dataset of rank 1 or more",
            ));
        }
        if opts.shard_shape.is_some() && format != OutFormat::Zarr3 {
            return Err(arg_err(
                "--shard",
                format!("only zarr3 output has shards, not {format}"),
            ));
        }
        check_len("-b", out_block, rank, "block sizes")?;
        check_len("--shard", out_shard, rank, "shard sizes")?;
        if out_block.contains(&0) || out_shard.contains(&0) {
            return Err(arg_err("-b", "a block or shard size must be at least 1"));
        }
        let mut warnings = Vec::new();

        // Axis names (source order) and kinds.
        let names: Vec<String> = match (&opts.axes, &src.axes) {
            (Some(a), _) => {
                check_len("--axes", a, rank, "names")?;
                a.clone()
            }
            (None, Some(a)) if a.len() == rank => a.clone(),
            _ => {
                if rank > DEFAULT_AXES.len() {
                    return Err(arg_err(
                        "--axes",
                        format!("a dataset of rank {rank} without axis names needs --axes"),
                    ));
                }
                DEFAULT_AXES[..rank].iter().map(|s| s.to_string()).collect()
            }
        };
        check_names("--axes", &names)?;
        let mut kinds = Vec::with_capacity(rank);
        for n in &names {
            kinds.push(match (kind_of(n), format) {
                (Some(k), _) => k,
                (None, OutFormat::N5) => AxisKind::Space,
                (None, _) => {
                    return Err(arg_err(
                        "--axes",
                        format!(
                            "axes {}: {format} output takes the names x, y, z, c, t",
                            names.join(",")
                        ),
                    ))
                }
            });
        }
        let n_space = kinds.iter().filter(|k| **k == AxisKind::Space).count();
        if format.is_ngff() && !(2..=3).contains(&n_space) {
            return Err(arg_err(
                "--axes",
                format!(
                    "axes {}: OME-NGFF needs 2 or 3 space axes (x, y, z), not {n_space}",
                    names.join(",")
                ),
            ));
        }
        if format == OutFormat::Bdv && !["x", "y", "z"].iter().all(|n| names.iter().any(|m| m == n))
        {
            return Err(arg_err(
                "--axes",
                format!(
                    "axes {}: bdv output takes x, y, z with optional c and t",
                    names.join(",")
                ),
            ));
        }

        // Permutation: output axis i is source axis perm[i].
        let mut permutation: Vec<usize> = (0..rank).collect();
        if format.is_ngff() {
            permutation.sort_by_key(|&i| DEFAULT_AXES.iter().position(|n| *n == names[i]));
        }

        // Resolution, translation, units (source order).
        let resolution: Vec<f64> = match (&opts.resolution, &src.resolution) {
            (Some(r), _) => {
                check_len("--resolution", r, rank, "voxel sizes")?;
                r.clone()
            }
            (None, Some(r)) if r.len() == rank && r.iter().all(|x| x.is_finite() && *x > 0.0) => {
                r.clone()
            }
            _ => vec![1.0; rank],
        };
        let translation: Vec<f64> = match &opts.translation {
            Some(t) => {
                check_len("--translation", t, rank, "values")?;
                t.clone()
            }
            None => vec![0.0; rank],
        };
        let mut units: Vec<Option<Unit>> = vec![None; rank];
        if let Some(u) = &opts.units {
            check_len("--units", u, rank, "units")?;
            for (a, text) in u.iter().enumerate() {
                let Some(text) = text.as_deref().filter(|t| !t.trim().is_empty()) else {
                    continue;
                };
                let unit = Unit::from_option(text)?;
                match (kinds[a], unit.kind) {
                    (AxisKind::Channel, _) => warnings.push(format!(
                        "--units: axis '{}' is a channel axis: its unit '{text}' is left out",
                        names[a]
                    )),
                    (AxisKind::Space, UnitKind::Time) | (AxisKind::Time, UnitKind::Space) => {
                        return Err(arg_err(
                            "--units",
                            format!(
                                "'{text}' is a {} unit and axis '{}' a {} axis",
                                unit_kind_name(unit.kind),
                                names[a],
                                kinds[a].ngff_type()
                            ),
                        ))
                    }
                    _ => units[a] = Some(unit),
                }
            }
        } else if let Some(u) = src.units.as_ref().filter(|u| u.len() == rank) {
            for (a, text) in u.iter().enumerate() {
                let Some(text) = text.as_deref().filter(|t| !t.trim().is_empty()) else {
                    continue;
                };
                match Unit::parse(text) {
                    None => warnings.push(format!(
                        "unit '{text}' of axis '{}' is not in the units table: left out",
                        names[a]
                    )),
                    Some(unit) => match (kinds[a], unit.kind) {
                        (AxisKind::Channel, _) => {}
                        (AxisKind::Space, UnitKind::Time) | (AxisKind::Time, UnitKind::Space) => {
                            warnings.push(format!(
                                "unit '{text}' of axis '{}' is a {} unit on a {} axis: left out",
                                names[a],
                                unit_kind_name(unit.kind),
                                kinds[a].ngff_type()
                            ))
                        }
                        _ => units[a] = Some(unit),
                    },
                }
            }
        }

        // Factor lists (source order) against the rank and the axis kinds.
        let check_factors = |list: &[u64]| -> Result<()> {
            check_len("--factors", list, rank, "factors")?;
            for (a, &f) in list.iter().enumerate() {
                if f > 1 && kinds[a] == AxisKind::Channel {
                    return Err(arg_err(
                        "--factors",
                        format!(
                            "axis '{}' is a channel axis: its factor must be 1, not {f}",
                            names[a]
                        ),
                    ));
                }
                if f > 1 && format == OutFormat::Bdv && kinds[a] != AxisKind::Space {
                    return Err(arg_err(
                        "--factors",
                        format!(
                            "bdv output downsamples x, y and z only: axis '{}' must have factor 1, not {f}",
                            names[a]
                        ),
                    ));
                }
            }
            Ok(())
        };
        match &opts.factors {
            Factors::Auto => {}
            Factors::One(l) => check_factors(l)?,
            Factors::Many(ls) => ls.iter().try_for_each(|l| check_factors(l))?,
        }
        let stop_src: Vec<u64> = match &opts.min_size {
            Some(MinSize::All(n)) => vec![*n; rank],
            Some(MinSize::PerAxis(l)) => {
                check_len("--min-size", l, rank, "sizes")?;
                l.clone()
            }
            None => out_block.to_vec(),
        };

        // Everything into output order.
        let perm = |v: &[u64]| -> Vec<u64> { permutation.iter().map(|&i| v[i]).collect() };
        let shape = perm(&src.shape);
        let stop = perm(&stop_src);
        let kinds_out: Vec<AxisKind> = permutation.iter().map(|&i| kinds[i]).collect();
        let axes: Vec<Axis> = permutation
            .iter()
            .map(|&i| Axis {
                name: names[i].clone(),
                kind: kinds[i],
                unit: units[i],
                resolution: resolution[i],
                translation: translation[i],
            })
            .collect();

        // Voxel sizes compared by the auto rule: in metres when every space
        // axis has a unit, else as given.
        let si = axes
            .iter()
            .filter(|a| a.kind == AxisKind::Space)
            .all(|a| a.unit.is_some());
        let voxel: Vec<f64> = axes
            .iter()
            .map(|a| match (si, a.unit) {
                (true, Some(u)) => u.to_si(a.resolution),
                _ => a.resolution,
            })
            .collect();

        let rule = match &opts.factors {
            Factors::Auto => Rule::Auto,
            Factors::One(l) => Rule::One(perm(l)),
            Factors::Many(ls) => Rule::Many(ls.iter().map(|l| perm(l)).collect()),
        };
        let full = compute_levels(&shape, &kinds_out, &rule, &stop, opts.levels, &voxel)?;

        let level_axes: Vec<usize> = if format == OutFormat::Bdv {
            ["x", "y", "z"]
                .iter()
                .filter_map(|n| axes.iter().position(|a| a.name == *n))
                .collect()
        } else {
            (0..rank).collect()
        };
        let pick = |v: &[u64]| -> Vec<u64> { level_axes.iter().map(|&a| v[a]).collect() };
        let levels: Vec<Level> = full
            .iter()
            .enumerate()
            .map(|(k, (shape, relative, factors))| Level {
                path: format!("s{k}"),
                shape: pick(shape),
                relative: pick(relative),
                factors: pick(factors),
            })
            .collect();

        let mut odd: Vec<u64> = levels
            .iter()
            .flat_map(|l| l.relative.iter().copied())
            .filter(|f| !f.is_power_of_two())
            .collect();
        odd.sort_unstable();
        odd.dedup();
        if !odd.is_empty() {
            warnings.push(format!(
                "--factors: {} not a power of two (webKnossos and BigDataViewer expect powers of two)",
                if odd.len() == 1 {
                    format!("factor {} is", odd[0])
                } else {
                    format!("factors {} are", show_list(&odd))
                }
            ));
        }

        Ok(Plan {
            format,
            method: opts.method,
            name: src.name.clone(),
            block: pick(&perm(out_block)),
            shard: pick(&perm(out_shard)),
            axes,
            shape,
            permutation,
            level_axes,
            levels,
            warnings,
        })
    }

    /// The factors of level `k` from `s0` over every axis (output order; 1 on
    /// the axes the levels do not span).
    pub fn full_factors(&self, k: usize) -> Vec<u64> {
        let mut f = vec![1; self.axes.len()];
        for (i, &a) in self.level_axes.iter().enumerate() {
            f[a] = self.levels[k].factors[i];
        }
        f
    }

    /// The voxel size of level `k` per axis (output order, every axis, in
    /// each axis's unit as given): resolution × factor from `s0`.
    pub fn scale(&self, k: usize) -> Vec<f64> {
        self.full_factors(k)
            .iter()
            .zip(&self.axes)
            .map(|(&f, a)| a.resolution * f as f64)
            .collect()
    }

    /// The position of level `k`'s first voxel centre per axis (output
    /// order, every axis, in each axis's unit as given): `t0 + res·(F−1)/2`
    /// for pooling methods, `t0` for stride (pyramid.md, "Geometry").
    pub fn translation(&self, k: usize) -> Vec<f64> {
        self.full_factors(k)
            .iter()
            .zip(&self.axes)
            .map(|(&f, a)| {
                if self.method.is_pooling() {
                    a.translation + a.resolution * (f - 1) as f64 / 2.0
                } else {
                    a.translation
                }
            })
            .collect()
    }

    /// Whether `s0`'s axes are the source's in another order (an OME-NGFF
    /// output of a source not in `x, y, z, c, t` order).
    pub fn permutes(&self) -> bool {
        self.permutation.iter().enumerate().any(|(i, &p)| i != p)
    }

    /// The output axis that is the channel axis, if any.
    pub fn channel_axis(&self) -> Option<usize> {
        self.axes.iter().position(|a| a.kind == AxisKind::Channel)
    }

    /// The output axis that is the time axis, if any.
    pub fn time_axis(&self) -> Option<usize> {
        self.axes.iter().position(|a| a.kind == AxisKind::Time)
    }

    /// The number of BigDataViewer setups (the channel axis's length, else
    /// 1); 1 for the other formats.
    pub fn bdv_setups(&self) -> u64 {
        match (self.format, self.channel_axis()) {
            (OutFormat::Bdv, Some(c)) => self.shape[c],
            _ => 1,
        }
    }

    /// The number of BigDataViewer time points (the time axis's length,
    /// else 1); 1 for the other formats.
    pub fn bdv_timepoints(&self) -> u64 {
        match (self.format, self.time_axis()) {
            (OutFormat::Bdv, Some(t)) => self.shape[t],
            _ => 1,
        }
    }

    /// The number of `stack` among the plan's stacks: setups first, time
    /// points within a setup (0 for the single stack of the other formats).
    pub fn stack_number(&self, stack: Stack) -> u64 {
        stack.setup * self.bdv_timepoints() + stack.timepoint
    }

    /// The number of stacks: setups × time points for bdv, else 1.
    pub fn stacks(&self) -> u64 {
        self.bdv_setups() * self.bdv_timepoints()
    }

    /// The shard grid of level `k`: `ceil(shape / shard)` per level axis.
    pub fn shard_grid(&self, k: usize) -> Vec<u64> {
        self.levels[k]
            .shape
            .iter()
            .zip(&self.shard)
            .map(|(n, s)| n.div_ceil(*s))
            .collect()
    }

    /// The number of shards of level `k` (in one stack for bdv).
    pub fn shard_count(&self, k: usize) -> u64 {
        self.shard_grid(k).iter().product()
    }

    /// Every shard grid position of level `k` (in one stack for bdv),
    /// dimension 0 fastest.
    pub fn shard_positions(&self, k: usize) -> Vec<Vec<u64>> {
        grid_positions(&self.shard_grid(k))
    }

    /// The `--plan` document: `{"format", "method", "levels": [{"path",
    /// "shape", "factors", "relative", "shards"}]}` (for bdv the levels and
    /// shard positions of one stack).
    pub fn to_json(&self) -> Value {
        let levels: Vec<Value> = (0..self.levels.len())
            .map(|k| {
                let l = &self.levels[k];
                json!({
                    "path": l.path,
                    "shape": l.shape,
                    "factors": l.factors,
                    "relative": l.relative,
                    "shards": self.shard_positions(k),
                })
            })
            .collect();
        json!({
            "format": self.format.name(),
            "method": self.method.name(),
            "levels": levels,
        })
    }

    /// The level whose shards make the columns of a build in `n_parts`
    /// parts: the highest level whose shard grid has at least `n_parts`
    /// positions (for bdv, those of every stack together), 0 if none.
    pub fn column_level(&self, n_parts: u64) -> usize {
        (0..self.levels.len())
            .rev()
            .find(|&k| self.shard_count(k).saturating_mul(self.stacks()) >= n_parts)
            .unwrap_or(0)
    }

    /// The column (a grid position of level `column_level`) holding the
    /// level-`level` shard at `grid_pos`: `g / (F_c / F_k)` per axis, for
    /// `level <= column_level`.
    pub fn column_of(&self, level: usize, grid_pos: &[u64], column_level: usize) -> Vec<u64> {
        let fk = &self.levels[level].factors;
        let fc = &self.levels[column_level].factors;
        grid_pos
            .iter()
            .zip(fc.iter().zip(fk))
            .map(|(g, (c, k))| g / (c / k).max(1))
            .collect()
    }

    /// The number of the column at `column_pos` (a grid position of level
    /// `column_level`) in `stack`: its grid position numbered dimension 0
    /// fastest, after every column of the stacks before (bdv: setup, then
    /// time point, then position; `Stack::default()` for other formats).
    pub fn column_index(&self, column_level: usize, stack: Stack, column_pos: &[u64]) -> u64 {
        let grid = self.shard_grid(column_level);
        let mut index = 0u64;
        for (g, n) in column_pos.iter().zip(&grid).rev() {
            index = index * n + g;
        }
        self.stack_number(stack) * self.shard_count(column_level) + index
    }

    /// The part (of `n_parts`) that writes the level-`level` shard at
    /// `grid_pos` of `stack`, for `level <= column_level`: the number of
    /// its column mod `n_parts`.
    pub fn part_of(
        &self,
        level: usize,
        stack: Stack,
        grid_pos: &[u64],
        column_level: usize,
        n_parts: u64,
    ) -> u64 {
        let column = self.column_of(level, grid_pos, column_level);
        self.column_index(column_level, stack, &column) % n_parts.max(1)
    }
}

/// "space" or "time".
fn unit_kind_name(k: UnitKind) -> &'static str {
    match k {
        UnitKind::Space => "space",
        UnitKind::Time => "time",
    }
}

/// The factor rule, in output order.
enum Rule {
    Auto,
    One(Vec<u64>),
    Many(Vec<Vec<u64>>),
}

/// Every level as (shape, relative factors, factors from `s0`), over every
/// axis in output order, `s0` first (pyramid.md, "Levels and factors").
#[allow(clippy::type_complexity)]
fn compute_levels(
    shape: &[u64],
    kinds: &[AxisKind],
    rule: &Rule,
    stop: &[u64],
    max_levels: Option<u32>,
    voxel: &[f64],
) -> Result<Vec<(Vec<u64>, Vec<u64>, Vec<u64>)>> {
    let rank = shape.len();
    let ones = vec![1u64; rank];
    let mut levels = vec![(shape.to_vec(), ones.clone(), ones)];
    let max = max_levels.map_or(usize::MAX, |n| n as usize);
    let mut many = match rule {
        Rule::Many(ls) => Some(ls.iter()),
        _ => None,
    };
    while levels.len() < max {
        let (cur, _, total) = levels.last().cloned().unwrap_or_default();
        let relative: Vec<u64> = match rule {
            Rule::Auto => {
                let active: Vec<usize> = (0..rank)
                    .filter(|&a| kinds[a] == AxisKind::Space && cur[a] > stop[a])
                    .collect();
                if active.is_empty() {
                    break;
                }
                let v = |a: usize| voxel[a] * total[a] as f64;
                let m = active.iter().map(|&a| v(a)).fold(f64::INFINITY, f64::min);
                (0..rank)
                    .map(|a| {
                        if active.contains(&a) && v(a) < 2.0 * m * (1.0 - 1e-9) {
                            2
                        } else {
                            1
                        }
                    })
                    .collect()
            }
            Rule::One(list) => {
                let r: Vec<u64> = (0..rank)
                    .map(|a| if cur[a] > stop[a] { list[a] } else { 1 })
                    .collect();
                if r.iter().all(|&f| f == 1) {
                    break;
                }
                r
            }
            Rule::Many(_) => match many.as_mut().and_then(Iterator::next) {
                Some(l) => l.clone(),
                None => break,
            },
        };
        let next: Vec<u64> = cur
            .iter()
            .zip(&relative)
            .map(|(n, f)| n.div_ceil(*f))
            .collect();
        let factors = total
            .iter()
            .zip(&relative)
            .map(|(t, f)| t.checked_mul(*f))
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| arg_err("--factors", "the factors from s0 overflow"))?;
        levels.push((next, relative, factors));
    }
    Ok(levels)
}

/// Every position of `grid`, dimension 0 fastest.
fn grid_positions(grid: &[u64]) -> Vec<Vec<u64>> {
    let count: u64 = grid.iter().product();
    let mut out = Vec::with_capacity(count.min(1 << 20) as usize);
    if count == 0 {
        return out;
    }
    let mut pos = vec![0u64; grid.len()];
    loop {
        out.push(pos.clone());
        let mut d = 0;
        loop {
            if d == grid.len() {
                return out;
            }
            pos[d] += 1;
            if pos[d] < grid[d] {
                break;
            }
            pos[d] = 0;
            d += 1;
        }
    }
}

impl Plan {
    /// Converts `size` along output axis `a` to its N5/COSEM/BDV symbol
    /// (unchanged without a unit).
    pub fn to_symbol(&self, a: usize, size: f64) -> f64 {
        match self.axes[a].unit {
            Some(u) => u.to_symbol(size),
            None => size,
        }
    }

    /// `size`, in output axis `a`'s symbol, expressed in `target`'s symbol
    /// (units of one kind; unchanged when either is unknown).
    pub fn symbol_in(&self, a: usize, target: Option<Unit>, size: f64) -> f64 {
        match (self.axes[a].unit, target) {
            (Some(u), Some(t)) if u.kind == t.kind => u.symbol_in(&t, size),
            _ => size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(
        shape: &[u64],
        axes: Option<&[&str]>,
        res: Option<&[f64]>,
        unit: Option<&str>,
    ) -> SourceInfo {
        SourceInfo {
            shape: shape.to_vec(),
            axes: axes.map(|a| a.iter().map(|s| s.to_string()).collect()),
            resolution: res.map(<[f64]>::to_vec),
            units: unit.map(|u| vec![Some(u.to_string()); shape.len()]),
            name: "raw".into(),
        }
    }

    fn shapes(plan: &Plan) -> Vec<Vec<u64>> {
        plan.levels.iter().map(|l| l.shape.clone()).collect()
    }

    fn relatives(plan: &Plan) -> Vec<Vec<u64>> {
        plan.levels.iter().map(|l| l.relative.clone()).collect()
    }

    fn err(r: Result<impl fmt::Debug>) -> Error {
        r.expect_err("expected an error")
    }

    #[test]
    fn worked_example_anisotropic_em() {
        let s = src(
            &[2048, 2048, 300],
            None,
            Some(&[4.0, 4.0, 40.0]),
            Some("nm"),
        );
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        assert_eq!(
            shapes(&p),
            vec![
                vec![2048, 2048, 300],
                vec![1024, 1024, 300],
                vec![512, 512, 300],
                vec![256, 256, 300],
                vec![128, 128, 150],
                vec![64, 64, 75],
                vec![64, 64, 38],
            ]
        );
        assert_eq!(
            relatives(&p)[1..],
            [
                vec![2, 2, 1],
                vec![2, 2, 1],
                vec![2, 2, 1],
                vec![2, 2, 2],
                vec![2, 2, 2],
                vec![1, 1, 2]
            ]
        );
        assert_eq!(p.levels[6].factors, vec![32, 32, 8]);
        assert_eq!(p.levels[6].path, "s6");
        assert!(p.warnings.is_empty());
        // The same with the sizes in micrometres: the rule compares physical sizes.
        let s = SourceInfo {
            units: Some(vec![
                Some("nm".into()),
                Some("nm".into()),
                Some("um".into()),
            ]),
            resolution: Some(vec![4.0, 4.0, 0.04]),
            ..s
        };
        let q = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        assert_eq!(shapes(&q), shapes(&p));
    }

    #[test]
    fn worked_example_2d_blocks_256() {
        let s = src(&[10000, 7000], None, None, None);
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[256; 2],
            &[256; 2],
        )
        .unwrap();
        assert_eq!(p.levels.len(), 7);
        assert_eq!(p.levels[5].shape, vec![313, 219]);
        assert_eq!(p.levels[6].shape, vec![157, 219]);
        for k in 1..=5 {
            assert_eq!(p.levels[k].relative, vec![2, 2]);
        }
        assert_eq!(p.levels[6].relative, vec![2, 1]);
        assert_eq!(
            p.axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
    }

    #[test]
    fn worked_example_5d_light_sheet() {
        let s = SourceInfo {
            shape: vec![512, 512, 64, 3, 10],
            axes: Some(["x", "y", "z", "c", "t"].map(String::from).to_vec()),
            resolution: Some(vec![0.1625, 0.1625, 1.0, 1.0, 1.0]),
            units: Some(vec![
                Some("µm".into()),
                Some("µm".into()),
                Some("µm".into()),
                None,
                None,
            ]),
            name: "raw".into(),
        };
        let block = [128, 128, 16, 1, 1];
        for format in [OutFormat::N5, OutFormat::Zarr2, OutFormat::Zarr3] {
            let p = Plan::new(&s, &PyramidOptions::default(), format, &block, &block).unwrap();
            assert_eq!(
                relatives(&p)[1..],
                [
                    vec![2, 2, 1, 1, 1],
                    vec![2, 2, 1, 1, 1],
                    vec![1, 1, 2, 1, 1],
                    vec![1, 1, 2, 1, 1]
                ]
            );
            assert_eq!(p.levels[4].shape, vec![128, 128, 16, 3, 10]);
            assert_eq!(p.permutation, vec![0, 1, 2, 3, 4]);
            assert_eq!(
                p.axes.iter().map(|a| a.kind).collect::<Vec<_>>(),
                [
                    AxisKind::Space,
                    AxisKind::Space,
                    AxisKind::Space,
                    AxisKind::Channel,
                    AxisKind::Time
                ]
            );
        }
        // bdv: 3-D stacks, 3 setups, 10 time points.
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::Bdv,
            &block,
            &block,
        )
        .unwrap();
        assert_eq!(p.level_axes, vec![0, 1, 2]);
        assert_eq!(p.levels[4].shape, vec![128, 128, 16]);
        assert_eq!(p.levels[4].factors, vec![4, 4, 4]);
        assert_eq!(
            (p.bdv_setups(), p.bdv_timepoints(), p.stacks()),
            (3, 10, 30)
        );
        assert_eq!(p.shard, vec![128, 128, 16]);
    }

    #[test]
    fn ngff_permutes_to_xyzct_and_n5_keeps_the_source_order() {
        // An ImageJ hyperstack: x, y, c, z, t.
        let s = src(
            &[100, 90, 2, 30, 4],
            Some(&["x", "y", "c", "z", "t"]),
            None,
            None,
        );
        let block = [32, 32, 1, 8, 1];
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::Zarr3,
            &block,
            &block,
        )
        .unwrap();
        assert_eq!(p.permutation, vec![0, 1, 3, 2, 4]);
        assert_eq!(p.shape, vec![100, 90, 30, 2, 4]);
        assert_eq!(p.block, vec![32, 32, 8, 1, 1]);
        assert_eq!(
            p.axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            ["x", "y", "z", "c", "t"]
        );
        // Factor lists follow the source's axes and are permuted with them.
        let o = PyramidOptions {
            factors: Factors::One(vec![2, 2, 1, 1, 1]),
            ..Default::default()
        };
        let p = Plan::new(&s, &o, OutFormat::Zarr2, &block, &block).unwrap();
        assert_eq!(p.levels[1].relative, vec![2, 2, 1, 1, 1]);
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::N5,
            &block,
            &block,
        )
        .unwrap();
        assert_eq!(p.permutation, vec![0, 1, 2, 3, 4]);
        assert_eq!(p.axes[2].kind, AxisKind::Channel);
        // bdv keeps the order and stacks over x, y, z wherever they are.
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::Bdv,
            &block,
            &block,
        )
        .unwrap();
        assert_eq!(p.permutation, vec![0, 1, 2, 3, 4]);
        assert_eq!(p.level_axes, vec![0, 1, 3]);
        assert_eq!(p.levels[0].shape, vec![100, 90, 30]);
        assert_eq!((p.bdv_setups(), p.bdv_timepoints()), (2, 4));
    }

    #[test]
    fn one_list_many_lists_levels_and_min_size() {
        let s = src(&[1000, 1000, 100], None, None, None);
        let b = [64; 3];
        let one = PyramidOptions {
            factors: Factors::One(vec![2, 2, 2]),
            ..Default::default()
        };
        let p = Plan::new(&s, &one, OutFormat::N5, &b, &b).unwrap();
        // z stops at 64 after one level; x, y at 63.
        assert_eq!(
            shapes(&p),
            vec![
                vec![1000, 1000, 100],
                vec![500, 500, 50],
                vec![250, 250, 50],
                vec![125, 125, 50],
                vec![63, 63, 50],
            ]
        );
        let capped = PyramidOptions {
            levels: Some(2),
            ..one.clone()
        };
        assert_eq!(
            Plan::new(&s, &capped, OutFormat::N5, &b, &b)
                .unwrap()
                .levels
                .len(),
            2
        );
        let min = PyramidOptions {
            min_size: Some(MinSize::PerAxis(vec![300, 300, 10])),
            ..Default::default()
        };
        let p = Plan::new(&s, &min, OutFormat::N5, &b, &b).unwrap();
        assert_eq!(p.levels.last().unwrap().shape, vec![250, 250, 7]);
        let many = PyramidOptions {
            factors: Factors::Many(vec![vec![3, 3, 1], vec![1, 1, 2], vec![2, 2, 2]]),
            ..Default::default()
        };
        let p = Plan::new(&s, &many, OutFormat::N5, &b, &b).unwrap();
        assert_eq!(
            shapes(&p),
            vec![
                vec![1000, 1000, 100],
                vec![334, 334, 100],
                vec![334, 334, 50],
                vec![167, 167, 25],
            ]
        );
        assert_eq!(p.levels[3].factors, vec![6, 6, 4]);
        assert_eq!(
            p.warnings,
            vec!["--factors: factor 3 is not a power of two (webKnossos and BigDataViewer expect powers of two)"]
        );
        // --levels 1: s0 only.
        let only = PyramidOptions {
            levels: Some(1),
            ..Default::default()
        };
        assert_eq!(
            Plan::new(&s, &only, OutFormat::N5, &b, &b)
                .unwrap()
                .levels
                .len(),
            1
        );
        // Nothing longer than its block: s0 only.
        let small = src(&[64, 10, 3], None, None, None);
        assert_eq!(
            Plan::new(&small, &PyramidOptions::default(), OutFormat::N5, &b, &b)
                .unwrap()
                .levels
                .len(),
            1
        );
    }

    #[test]
    fn auto_rule_exact_ratio_two_becomes_isotropic() {
        // z is exactly twice x and y: it is not "less than 2m", so x and y go
        // first, then all three together.
        let s = src(&[512, 512, 512], None, Some(&[1.0, 1.0, 2.0]), None);
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        assert_eq!(p.levels[1].relative, vec![2, 2, 1]);
        assert_eq!(p.levels[2].relative, vec![2, 2, 2]);
        // Within 1e-9 of 2 counts as 2.
        let s = src(&[512, 512, 512], None, Some(&[1.0, 1.0, 2.0 - 1e-12]), None);
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        assert_eq!(p.levels[1].relative, vec![2, 2, 1]);
        // The time axis is never downsampled by the auto rule.
        let s = src(&[512, 512, 100], Some(&["x", "y", "t"]), None, None);
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        assert!(p.levels.iter().all(|l| l.shape[2] == 100));
    }

    #[test]
    fn geometry_pooling_and_stride() {
        let s = src(&[256, 256, 60], None, Some(&[4.0, 4.0, 40.0]), Some("nm"));
        let mut o = PyramidOptions {
            translation: Some(vec![10.0, 20.0, 30.0]),
            ..Default::default()
        };
        let p = Plan::new(&s, &o, OutFormat::N5, &[64; 3], &[64; 3]).unwrap();
        assert_eq!(p.levels.len(), 3);
        assert_eq!(p.scale(2), vec![16.0, 16.0, 40.0]);
        assert_eq!(p.translation(0), vec![10.0, 20.0, 30.0]);
        assert_eq!(p.translation(1), vec![12.0, 22.0, 30.0]);
        assert_eq!(p.translation(2), vec![16.0, 26.0, 30.0]);
        o.method = Method::Stride;
        let p = Plan::new(&s, &o, OutFormat::N5, &[64; 3], &[64; 3]).unwrap();
        assert_eq!(p.translation(2), vec![10.0, 20.0, 30.0]);
        assert_eq!(p.scale(2), vec![16.0, 16.0, 40.0]);
    }

    #[test]
    fn units_table() {
        for (text, ngff, symbol, factor, kind) in [
            ("nm", "nanometer", "nm", 1.0, UnitKind::Space),
            ("Nanometre", "nanometer", "nm", 1.0, UnitKind::Space),
            ("µm", "micrometer", "um", 1.0, UnitKind::Space),
            ("μm", "micrometer", "um", 1.0, UnitKind::Space),
            ("MICRON", "micrometer", "um", 1.0, UnitKind::Space),
            ("micrometre", "micrometer", "um", 1.0, UnitKind::Space),
            ("mm", "millimeter", "mm", 1.0, UnitKind::Space),
            ("centimeter", "centimeter", "cm", 1.0, UnitKind::Space),
            ("M", "meter", "m", 1.0, UnitKind::Space),
            ("Å", "angstrom", "nm", 0.1, UnitKind::Space),
            ("\u{212B}", "angstrom", "nm", 0.1, UnitKind::Space),
            ("A", "angstrom", "nm", 0.1, UnitKind::Space),
            ("angstrom", "angstrom", "nm", 0.1, UnitKind::Space),
            ("sec", "second", "s", 1.0, UnitKind::Time),
            ("ms", "millisecond", "ms", 1.0, UnitKind::Time),
            ("µs", "microsecond", "us", 1.0, UnitKind::Time),
            ("nanosecond", "nanosecond", "ns", 1.0, UnitKind::Time),
            ("min", "minute", "s", 60.0, UnitKind::Time),
            ("Hour", "hour", "s", 3600.0, UnitKind::Time),
        ] {
            let u = Unit::parse(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(
                (u.ngff(), u.symbol(), u.factor(), u.kind()),
                (ngff, symbol, factor, kind),
                "{text}"
            );
        }
        assert_eq!(Unit::parse("Å").unwrap().to_symbol(3.0), 0.3);
        assert_eq!(Unit::parse("min").unwrap().to_symbol(2.5), 150.0);
        let e = Unit::from_option("parsec").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            e.message(),
            "--units: unknown unit 'parsec' (nm, um, mm, cm, m, angstrom, s, ms, us, ns, min, h)"
        );
    }

    #[test]
    fn options_from_json() {
        assert_eq!(
            PyramidOptions::from_json(None).unwrap(),
            PyramidOptions::default()
        );
        let o = PyramidOptions::from_json(Some(
            r#"{"method": "median", "factors": [[2,2,1],[2,2,2]], "levels": 0, "min_size": 32,
                "format": "zarr3", "axes": ["x","y","z"], "units": ["nm", null, ""],
                "resolution": [4, 4, 40.5], "translation": [0, -1.5, 2],
                "compression": {"type": "zstd", "level": 3}, "block_size": [64,64,64],
                "shard_shape": [128,128,128], "threads": 2, "part": [1, 3], "finalize": false}"#,
        ))
        .unwrap();
        assert_eq!(o.method, Method::Median);
        assert_eq!(o.factors, Factors::Many(vec![vec![2, 2, 1], vec![2, 2, 2]]));
        assert_eq!(o.levels, None);
        assert_eq!(o.min_size, Some(MinSize::All(32)));
        assert_eq!(o.format, Some(OutFormat::Zarr3));
        assert_eq!(o.units, Some(vec![Some("nm".to_string()), None, None]));
        assert_eq!(o.resolution, Some(vec![4.0, 4.0, 40.5]));
        assert_eq!(o.translation, Some(vec![0.0, -1.5, 2.0]));
        assert_eq!(
            o.compression,
            Some(serde_json::json!({"type": "zstd", "level": 3}))
        );
        assert_eq!(o.shard_shape, Some(vec![128; 3]));
        assert_eq!((o.threads, o.part, o.finalize), (2, Some((1, 3)), false));
        let o = PyramidOptions::from_json(Some(
            r#"{"factors": "2,2,1", "levels": 3, "min_size": [8, 8, 1], "method": null}"#,
        ))
        .unwrap();
        assert_eq!(o.factors, Factors::One(vec![2, 2, 1]));
        assert_eq!(o.levels, Some(3));
        assert_eq!(o.min_size, Some(MinSize::PerAxis(vec![8, 8, 1])));
        assert_eq!(o.method, Method::Mean);
        let o = PyramidOptions::from_json(Some(r#"{"factors": "auto"}"#)).unwrap();
        assert_eq!(o.factors, Factors::Auto);

        // Malformed JSON.
        for text in ["{", "[1]", "nul"] {
            assert_eq!(
                err(PyramidOptions::from_json(Some(text))).kind(),
                ErrorKind::Json,
                "{text}"
            );
        }
        // Refusals, with the command line's messages.
        for (text, message) in [
            (
                r#"{"method": "avg"}"#,
                "--method: unknown method 'avg' (stride, mean, median, mode, min, max)",
            ),
            (
                r#"{"method": 3}"#,
                "--method: expected a method name, not 3",
            ),
            (
                r#"{"metod": "mean"}"#,
                "pyramid options: unknown key 'metod'",
            ),
            (
                r#"{"factors": [2, 0, 1]}"#,
                "--factors: a factor must be at least 1, not 0",
            ),
            (
                r#"{"factors": [1, 1, 1]}"#,
                "--factors: the list 1,1,1 downsamples nothing",
            ),
            (
                r#"{"factors": "2,,x/"}"#,
                "--factors: malformed factor list '2,,x/'",
            ),
            (
                r#"{"factors": [2, 2.5]}"#,
                "--factors: expected a list of non-negative integers",
            ),
            (
                r#"{"factors": [[2,2],[2,2,2]]}"#,
                "--factors: the factor lists have different lengths",
            ),
            (
                r#"{"factors": [[2,2],[2,2]], "levels": 2}"#,
                "--levels: not with several factor lists",
            ),
            (r#"{"levels": -1}"#, "--levels: expected a number of levels"),
            (r#"{"min_size": 0}"#, "--min-size: must be at least 1"),
            (
                r#"{"min_size": [4, 0]}"#,
                "--min-size: every size must be at least 1",
            ),
            (
                r#"{"format": "tiff"}"#,
                "--format: unknown format \"tiff\" (n5, zarr2, zarr3, bdv)",
            ),
            (r#"{"axes": ["x", "x"]}"#, "--axes: axis 'x' is named twice"),
            (r#"{"axes": ["x", ""]}"#, "--axes: an empty axis name"),
            (r#"{"units": ["parsec"]}"#, "--units: unknown unit 'parsec'"),
            (r#"{"units": [3]}"#, "--units: expected a list of units"),
            (
                r#"{"resolution": [4, 0]}"#,
                "--resolution: a voxel size must be finite and greater than 0, not 0",
            ),
            (
                r#"{"resolution": [4, -1]}"#,
                "--resolution: a voxel size must be finite and greater than 0, not -1",
            ),
            (
                r#"{"resolution": [1e400]}"#,
                "--resolution: a voxel size must be finite and greater than 0, not inf",
            ),
            (
                r#"{"translation": [-1e999]}"#,
                "--translation: a translation must be finite, not -inf",
            ),
            (
                r#"{"compression": "gzip"}"#,
                "-c: expected N5 compression JSON",
            ),
            (
                r#"{"block_size": [64, 0]}"#,
                "-b: a block size must be at least 1",
            ),
            (
                r#"{"shard_shape": [128], "format": "n5"}"#,
                "--shard: only zarr3 output has shards, not n5",
            ),
            (r#"{"threads": 5000}"#, "--threads: expected an integer"),
            (
                r#"{"part": [3, 3]}"#,
                "--part: part 3/3 does not exist (0 <= I < N)",
            ),
            (r#"{"part": [0, 0]}"#, "--part: N must be at least 1 in I/N"),
            (r#"{"part": [0]}"#, "--part: expected [I, N]"),
            (
                r#"{"part": [0, 2], "finalize": true}"#,
                "--part: not with --finalize",
            ),
            (
                r#"{"finalize": 1}"#,
                "--finalize: expected true or false, not 1",
            ),
        ] {
            let e = err(PyramidOptions::from_json(Some(text)));
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{text}");
            assert!(e.message().starts_with(message), "{text}: {}", e.message());
        }
        // The command line fills the struct itself: --levels 0 is refused there.
        let o = PyramidOptions {
            levels: Some(0),
            ..Default::default()
        };
        assert_eq!(
            o.validate_syntax().unwrap_err().message(),
            "--levels: must be at least 1 (s0 counts)"
        );
    }

    #[test]
    fn factors_parse() {
        assert_eq!(Factors::parse("auto").unwrap(), Factors::Auto);
        assert_eq!(
            Factors::parse("2,2,1").unwrap(),
            Factors::One(vec![2, 2, 1])
        );
        assert_eq!(
            Factors::parse("2x2x1").unwrap(),
            Factors::One(vec![2, 2, 1])
        );
        assert_eq!(
            Factors::parse("2,2,1/2,2,2").unwrap(),
            Factors::Many(vec![vec![2, 2, 1], vec![2, 2, 2]])
        );
        for bad in ["", "2,a", "2,2/", "-1,2"] {
            assert_eq!(
                Factors::parse(bad).unwrap_err().kind(),
                ErrorKind::InvalidArgument,
                "{bad}"
            );
        }
    }

    #[test]
    fn refusals_that_depend_on_the_source() {
        let s3 = src(&[100, 100, 50], None, None, None);
        let plan = |s: &SourceInfo, o: PyramidOptions, f: OutFormat| {
            let b = vec![32; s.shape.len()];
            Plan::new(s, &o, f, &b, &b)
        };
        let axes = |a: &[&str]| PyramidOptions {
            axes: Some(a.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        };
        for (s, o, f, message) in [
            (
                &s3,
                axes(&["x", "y"]),
                OutFormat::N5,
                "--axes: 2 names for a dataset of rank 3",
            ),
            (
                &s3,
                axes(&["a", "b", "x"]),
                OutFormat::Zarr3,
                "--axes: axes a,b,x: zarr3 output takes the names x, y, z, c, t",
            ),
            (
                &s3,
                axes(&["x", "c", "t"]),
                OutFormat::Zarr2,
                "--axes: axes x,c,t: OME-NGFF needs 2 or 3 space axes (x, y, z), not 1",
            ),
            (
                &s3,
                axes(&["x", "y", "t"]),
                OutFormat::Bdv,
                "--axes: axes x,y,t: bdv output takes x, y, z with optional c and t",
            ),
            (
                &s3,
                axes(&["x", "y", "foo"]),
                OutFormat::Bdv,
                "--axes: axes x,y,foo: bdv output takes the names x, y, z, c, t",
            ),
            (
                &s3,
                PyramidOptions {
                    factors: Factors::One(vec![2, 2]),
                    ..Default::default()
                },
                OutFormat::N5,
                "--factors: 2 factors for a dataset of rank 3",
            ),
            (
                &s3,
                PyramidOptions {
                    factors: Factors::One(vec![2, 2, 2]),
                    ..axes(&["x", "y", "c"])
                },
                OutFormat::N5,
                "--factors: axis 'c' is a channel axis: its factor must be 1, not 2",
            ),
            (
                &s3,
                PyramidOptions {
                    factors: Factors::Many(vec![vec![2, 2, 1], vec![1, 1, 2]]),
                    ..axes(&["x", "y", "t"])
                },
                OutFormat::N5,
                "",
            ),
            (
                &s3,
                PyramidOptions {
                    units: Some(vec![Some("nm".into()), Some("s".into()), None]),
                    ..Default::default()
                },
                OutFormat::N5,
                "--units: 's' is a time unit and axis 'y' a space axis",
            ),
            (
                &s3,
                PyramidOptions {
                    units: Some(vec![None, None, Some("nm".into())]),
                    ..axes(&["x", "y", "t"])
                },
                OutFormat::N5,
                "--units: 'nm' is a space unit and axis 't' a time axis",
            ),
            (
                &s3,
                PyramidOptions {
                    units: Some(vec![None]),
                    ..Default::default()
                },
                OutFormat::N5,
                "--units: 1 units for a dataset of rank 3",
            ),
            (
                &s3,
                PyramidOptions {
                    resolution: Some(vec![1.0]),
                    ..Default::default()
                },
                OutFormat::N5,
                "--resolution: 1 voxel sizes",
            ),
            (
                &s3,
                PyramidOptions {
                    translation: Some(vec![1.0]),
                    ..Default::default()
                },
                OutFormat::N5,
                "--translation: 1 values",
            ),
            (
                &s3,
                PyramidOptions {
                    min_size: Some(MinSize::PerAxis(vec![1])),
                    ..Default::default()
                },
                OutFormat::N5,
                "--min-size: 1 sizes",
            ),
            (
                &s3,
                PyramidOptions {
                    shard_shape: Some(vec![64; 3]),
                    ..Default::default()
                },
                OutFormat::Zarr2,
                "--shard: only zarr3 output has shards, not zarr2",
            ),
            (
                &src(&[2; 6], None, None, None),
                PyramidOptions::default(),
                OutFormat::N5,
                "--axes: a dataset of rank 6 without axis names needs --axes",
            ),
        ] {
            let r = plan(s, o, f);
            if message.is_empty() {
                r.unwrap();
                continue;
            }
            let e = err(r);
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{message}");
            assert!(
                e.message().starts_with(message),
                "{message}: {}",
                e.message()
            );
        }
        // bdv downsamples x, y, z only.
        let st = src(&[100, 100, 50, 8], Some(&["x", "y", "z", "t"]), None, None);
        let o = PyramidOptions {
            factors: Factors::One(vec![2, 2, 2, 2]),
            ..Default::default()
        };
        let e = err(Plan::new(&st, &o, OutFormat::Bdv, &[32; 4], &[32; 4]));
        assert!(e
            .message()
            .starts_with("--factors: bdv output downsamples x, y and z only"));
        assert!(Plan::new(&st, &o, OutFormat::N5, &[32; 4], &[32; 4]).is_ok());
        // Names other than x y z c t are space axes in N5.
        let p = plan(&s3, axes(&["u", "v", "w"]), OutFormat::N5).unwrap();
        assert!(p.axes.iter().all(|a| a.kind == AxisKind::Space));
        assert_eq!(p.levels.len(), 3);
    }

    #[test]
    fn options_win_over_the_source_and_source_units_are_checked() {
        let s = SourceInfo {
            shape: vec![64, 64, 64],
            axes: Some(["z", "y", "x"].map(String::from).to_vec()),
            resolution: Some(vec![2.0, 3.0, 4.0]),
            units: Some(vec![
                Some("parsec".into()),
                Some("s".into()),
                Some("um".into()),
            ]),
            name: "vol".into(),
        };
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::Zarr3,
            &[32; 3],
            &[32; 3],
        )
        .unwrap();
        assert_eq!(p.permutation, vec![2, 1, 0]);
        assert_eq!(
            p.axes
                .iter()
                .map(|a| (a.name.as_str(), a.resolution, a.unit.map(|u| u.symbol())))
                .collect::<Vec<_>>(),
            [("x", 4.0, Some("um")), ("y", 3.0, None), ("z", 2.0, None)]
        );
        assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
        let o = PyramidOptions {
            axes: Some(["x", "y", "z"].map(String::from).to_vec()),
            resolution: Some(vec![1.0, 1.0, 5.0]),
            units: Some(vec![Some("nm".into()); 3]),
            ..Default::default()
        };
        let p = Plan::new(&s, &o, OutFormat::Zarr3, &[32; 3], &[32; 3]).unwrap();
        assert_eq!(p.permutation, vec![0, 1, 2]);
        assert_eq!(p.axes[2].resolution, 5.0);
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn source_attributes() {
        let attrs = |v: Value| v.as_object().unwrap().clone();
        let s = SourceInfo::from_attributes(
            &[10, 20, 30],
            &attrs(
                serde_json::json!({"axes": ["x","y","z"], "resolution": [4, 4, 40], "units": ["nm", "nm", "nm"],
                "pixelResolution": {"unit": "um", "dimensions": [1, 1, 1]}}),
            ),
            None,
        );
        assert_eq!(s.axes, Some(vec!["x".to_string(), "y".into(), "z".into()]));
        assert_eq!(s.resolution, Some(vec![4.0, 4.0, 40.0]));
        assert_eq!(s.units, Some(vec![Some("nm".to_string()); 3]));
        let s = SourceInfo::from_attributes(
            &[10, 20, 30],
            &attrs(
                serde_json::json!({"pixelResolution": {"unit": "um", "dimensions": [0.5, 0.5, 2]}, "axes": ["x", "y"]}),
            ),
            Some(vec!["z".into(), "y".into(), "x".into()]),
        );
        assert_eq!(s.axes, Some(vec!["z".to_string(), "y".into(), "x".into()]));
        assert_eq!(s.resolution, Some(vec![0.5, 0.5, 2.0]));
        assert_eq!(s.units, Some(vec![Some("um".to_string()); 3]));
        let s = SourceInfo::from_attributes(
            &[10, 20],
            &attrs(
                serde_json::json!({"_ARRAY_DIMENSIONS": ["y", "x"], "dimension_units": ["4 nm", "0.5 µm"], "pixelResolution": [1, 2, 3]}),
            ),
            None,
        );
        assert_eq!(s.axes, Some(vec!["y".to_string(), "x".into()]));
        assert_eq!(s.resolution, Some(vec![4.0, 0.5]));
        assert_eq!(
            s.units,
            Some(vec![Some("nm".to_string()), Some("µm".into())])
        );
        let s = SourceInfo::from_attributes(
            &[10, 20],
            &attrs(serde_json::json!({"resolution": [1, 0], "axes": ["x", ""]})),
            None,
        );
        assert_eq!((s.axes, s.resolution, s.units), (None, None, None));
        // A channel axis without a size or unit (`null`, as `n5 import`
        // writes it): size 1, no unit; the others keep theirs.
        let s = SourceInfo::from_attributes(
            &[10, 20, 2, 5, 3],
            &attrs(
                serde_json::json!({"dimension_units": ["250 nm", "500 nm", null, "2 um", "1.5 s"]}),
            ),
            None,
        );
        assert_eq!(s.resolution, Some(vec![250.0, 500.0, 1.0, 2.0, 1.5]));
        let unit = |u: &str| Some(u.to_string());
        assert_eq!(
            s.units,
            Some(vec![unit("nm"), unit("nm"), None, unit("um"), unit("s")])
        );
        // Units only: no sizes.
        let s = SourceInfo::from_attributes(
            &[10, 20],
            &attrs(serde_json::json!({"dimension_units": ["nm", null]})),
            None,
        );
        assert_eq!(
            (s.resolution, s.units),
            (None, Some(vec![unit("nm"), None]))
        );
    }

    #[test]
    fn plan_json() {
        let s = src(&[256, 256, 60], None, Some(&[4.0, 4.0, 40.0]), Some("nm"));
        let p = Plan::new(
            &s,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[64; 3],
            &[128, 128, 64],
        )
        .unwrap();
        let j = p.to_json();
        assert_eq!(j["format"], "n5");
        assert_eq!(j["method"], "mean");
        assert_eq!(j["levels"].as_array().unwrap().len(), 3);
        assert_eq!(
            serde_json::to_string(&j["levels"][2]).unwrap(),
            r#"{"path":"s2","shape":[64,64,60],"factors":[4,4,1],"relative":[2,2,1],"shards":[[0,0,0]]}"#
        );
        assert_eq!(
            serde_json::to_string(&j["levels"][0]["shards"]).unwrap(),
            "[[0,0,0],[1,0,0],[0,1,0],[1,1,0]]"
        );
        assert_eq!(j["levels"][1]["shards"].as_array().unwrap().len(), 1);
    }

    /// Every level-k shard of levels 0..=c is in exactly one column, and a
    /// level-(k+1) shard reads only level-k shards of its own column.
    fn check_columns(p: &Plan, n_parts: u64) {
        let c = p.column_level(n_parts);
        let count = p.shard_count(c) * p.stacks();
        assert!(
            count >= n_parts || c == 0,
            "level {c} has {count} < {n_parts} shards"
        );
        if c + 1 < p.levels.len() {
            assert!(p.shard_count(c + 1) * p.stacks() < n_parts);
        }
        let n_columns = p.shard_count(c);
        for k in 0..=c {
            let mut per_column = vec![0u64; n_columns as usize];
            for g in p.shard_positions(k) {
                let col = p.column_of(k, &g, c);
                let idx = p.column_index(c, Stack::default(), &col);
                assert!(idx < n_columns);
                per_column[idx as usize] += 1;
                if k < c {
                    continue;
                }
                assert_eq!(col, g, "a level-c shard is its own column");
            }
            assert_eq!(per_column.iter().sum::<u64>(), p.shard_count(k));
            if k == 0 {
                continue;
            }
            // The window of each level-k shard, in level-(k-1) voxels, lies in
            // level-(k-1) shards of the same column.
            let rel = &p.levels[k].relative;
            let prev_shape = &p.levels[k - 1].shape;
            for g in p.shard_positions(k) {
                let col = p.column_of(k, &g, c);
                let lo: Vec<u64> = (0..g.len()).map(|a| g[a] * p.shard[a] * rel[a]).collect();
                let hi: Vec<u64> = (0..g.len())
                    .map(|a| ((g[a] + 1) * p.shard[a] * rel[a]).min(prev_shape[a]) - 1)
                    .collect();
                for corner in [lo, hi] {
                    let gp: Vec<u64> = corner.iter().zip(&p.shard).map(|(v, s)| v / s).collect();
                    assert_eq!(p.column_of(k - 1, &gp, c), col, "level {k} shard {g:?}");
                }
            }
        }
        // Parts: every column to exactly one part, all parts used when possible.
        let mut used = std::collections::BTreeSet::new();
        for st in 0..p.stacks() {
            let stack = Stack {
                setup: st / p.bdv_timepoints(),
                timepoint: st % p.bdv_timepoints(),
            };
            for g in p.shard_positions(c) {
                used.insert(p.part_of(c, stack, &g, c, n_parts));
            }
        }
        if count >= n_parts {
            assert_eq!(used.len() as u64, n_parts);
        }
    }

    #[test]
    fn columns() {
        let s = src(&[1000, 700, 90], None, Some(&[1.0, 1.0, 3.0]), None);
        for (block, shard) in [([64u64; 3], [64u64; 3]), ([32; 3], [128, 64, 32])] {
            let p = Plan::new(
                &s,
                &PyramidOptions::default(),
                OutFormat::Zarr3,
                &block,
                &shard,
            )
            .unwrap();
            for n in [1, 2, 3, 7, 16, 50, 1000, 100_000] {
                check_columns(&p, n);
            }
        }
        let o = PyramidOptions {
            factors: Factors::Many(vec![vec![3, 2, 1], vec![2, 3, 3], vec![5, 1, 2]]),
            ..Default::default()
        };
        let p = Plan::new(&s, &o, OutFormat::N5, &[40, 30, 20], &[40, 30, 20]).unwrap();
        for n in [1, 2, 5, 9, 33, 500] {
            check_columns(&p, n);
        }
        assert_eq!(p.column_level(1), 3);
        assert_eq!(p.column_level(1_000_000), 0);
        // bdv: the stacks count towards N, and are numbered setup first.
        let s = src(
            &[256, 256, 64, 2, 3],
            Some(&["x", "y", "z", "c", "t"]),
            None,
            None,
        );
        let b = [64, 64, 64, 1, 1];
        let p = Plan::new(&s, &PyramidOptions::default(), OutFormat::Bdv, &b, &b).unwrap();
        assert_eq!(p.shard_count(2), 1);
        assert_eq!(p.column_level(6), 2);
        assert_eq!(p.column_level(7), 1);
        check_columns(&p, 6);
        check_columns(&p, 7);
        assert_eq!(
            p.column_index(
                2,
                Stack {
                    setup: 1,
                    timepoint: 2
                },
                &[0, 0, 0]
            ),
            5
        );
        assert_eq!(
            p.column_index(
                1,
                Stack {
                    setup: 0,
                    timepoint: 1
                },
                &[1, 1, 0]
            ),
            4 + 3
        );
    }
}
