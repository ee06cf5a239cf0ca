//! The metadata documents of a pyramid: N5 (neuroglancer, n5-viewer, COSEM), OME-NGFF 0.4 and 0.5, BigDataViewer.
//!
//! Pure functions of a [`Plan`] giving exactly the documents of pyramid.md,
//! "Metadata by format". Sizes go out as JSON floats (`4.0`); N5, COSEM and
//! BigDataViewer get unit symbols with sizes converted to them (ångström →
//! nm, minute and hour → s), OME-NGFF the UDUNITS-2 names with sizes as given.
//! The engine merges the maps returned here with the dataset keys it writes.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use super::plan::{AxisKind, Plan, Unit};

/// The `version` of libn5 written in OME-NGFF `metadata`.
const LIBN5_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A size as a JSON float (`4.0`), `-0.0` written as `0.0`.
fn float(x: f64) -> Value {
    Value::from(x + 0.0)
}

/// Sizes as a JSON array of floats.
fn floats(v: impl IntoIterator<Item = f64>) -> Value {
    Value::Array(v.into_iter().map(float).collect())
}

/// A size as BigDataViewer's XML prints it (`4.0`, `0.1625`).
fn xml_float(x: f64) -> String {
    format!("{:?}", x + 0.0)
}

/// `text` with the XML special characters escaped.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// N5

/// The N5 unit of every axis, N5 order: the symbol, `""` without a unit.
fn n5_units(plan: &Plan) -> Vec<String> {
    plan.axes
        .iter()
        .map(|a| a.unit.map_or(String::new(), |u| u.symbol().to_string()))
        .collect()
}

/// `values` (one per output axis, in each axis's unit as given) in the N5 symbols.
fn n5_sizes(plan: &Plan, values: &[f64]) -> Vec<f64> {
    values
        .iter()
        .enumerate()
        .map(|(a, &v)| plan.to_symbol(a, v))
        .collect()
}

/// `{"unit", "dimensions"}` of `s0` when every axis is a space axis and all
/// share one (known) unit symbol.
fn pixel_resolution(plan: &Plan) -> Option<Value> {
    let first = plan.axes.first()?.unit?.symbol();
    let shared = plan
        .axes
        .iter()
        .all(|a| a.kind == AxisKind::Space && a.unit.is_some_and(|u| u.symbol() == first));
    if !shared {
        return None;
    }
    let res: Vec<f64> = plan.axes.iter().map(|a| a.resolution).collect();
    Some(json!({"unit": first, "dimensions": floats(n5_sizes(plan, &res))}))
}

/// The COSEM `transform` of level `k`, in C order.
fn n5_transform(plan: &Plan, k: usize) -> Value {
    let rev = |v: Vec<f64>| floats(v.into_iter().rev());
    let mut units = n5_units(plan);
    units.reverse();
    json!({
        "axes": plan.axes.iter().rev().map(|a| a.name.as_str()).collect::<Vec<_>>(),
        "units": units,
        "scale": rev(n5_sizes(plan, &plan.scale(k))),
        "translate": rev(n5_sizes(plan, &plan.translation(k))),
    })
}

/// The N5 group's pyramid attributes: `axes`, `units`, `resolution`,
/// `scales`, `multiScale`, `pixelResolution` (only when every axis is a
/// space axis and all share one unit) and COSEM `multiscales` with a
/// `transform` per level in C order.
pub fn n5_group_attributes(plan: &Plan) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "axes".into(),
        json!(plan
            .axes
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()),
    );
    m.insert("units".into(), json!(n5_units(plan)));
    let res: Vec<f64> = plan.axes.iter().map(|a| a.resolution).collect();
    m.insert("resolution".into(), floats(n5_sizes(plan, &res)));
    m.insert(
        "scales".into(),
        json!((0..plan.levels.len())
            .map(|k| plan.full_factors(k))
            .collect::<Vec<_>>()),
    );
    m.insert("multiScale".into(), Value::Bool(true));
    if let Some(p) = pixel_resolution(plan) {
        m.insert("pixelResolution".into(), p);
    }
    let datasets: Vec<Value> = plan
        .levels
        .iter()
        .enumerate()
        .map(|(k, l)| json!({"path": l.path, "transform": n5_transform(plan, k)}))
        .collect();
    m.insert(
        "multiscales".into(),
        json!([{"name": plan.name, "datasets": datasets}]),
    );
    m
}

/// The pyramid attributes of N5 level `k` (added to its dataset keys):
/// `downsamplingFactors`, the **base** `pixelResolution` (under the same
/// condition as the group's) and its `transform`; no `resolution` or `units`.
pub fn n5_level_attributes(plan: &Plan, k: usize) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("downsamplingFactors".into(), json!(plan.full_factors(k)));
    if let Some(p) = pixel_resolution(plan) {
        m.insert("pixelResolution".into(), p);
    }
    m.insert("transform".into(), n5_transform(plan, k));
    m
}

// ---------------------------------------------------------------------------
// OME-NGFF

/// The OME-NGFF multiscale object: `name`, `type` (the method),
/// `metadata`, `axes` and `datasets` (a scale then a translation on every
/// level), all in C order. `version` `"0.4"` adds `"version": "0.4"` inside
/// it (0.4 keeps the version there); any other value gives the 0.5 object,
/// whose version sits in the `ome` wrapper.
pub fn ngff_multiscale(plan: &Plan, version: &str) -> Value {
    let mut m = Map::new();
    if version == "0.4" {
        m.insert("version".into(), json!("0.4"));
    }
    m.insert("name".into(), json!(plan.name));
    m.insert("type".into(), json!(plan.method.name()));
    m.insert(
        "metadata".into(),
        json!({
            "method": "libn5 n5_pyramid_build",
            "version": LIBN5_VERSION,
            "kwargs": {"method": plan.method.name()},
        }),
    );
    let axes: Vec<Value> = plan
        .axes
        .iter()
        .rev()
        .map(|a| {
            let mut o = Map::new();
            o.insert("name".into(), json!(a.name));
            o.insert("type".into(), json!(a.kind.ngff_type()));
            if let Some(u) = a.unit.filter(|_| a.kind != AxisKind::Channel) {
                o.insert("unit".into(), json!(u.ngff()));
            }
            Value::Object(o)
        })
        .collect();
    m.insert("axes".into(), Value::Array(axes));
    let datasets: Vec<Value> = plan
        .levels
        .iter()
        .enumerate()
        .map(|(k, l)| {
            json!({
                "path": l.path,
                "coordinateTransformations": [
                    {"type": "scale", "scale": floats(plan.scale(k).into_iter().rev())},
                    {"type": "translation", "translation": floats(plan.translation(k).into_iter().rev())},
                ],
            })
        })
        .collect();
    m.insert("datasets".into(), Value::Array(datasets));
    Value::Object(m)
}

/// The `attributes` of an OME-NGFF 0.5 group's `zarr.json`:
/// `{"ome": {"version": "0.5", "multiscales": [...]}}`.
pub fn ngff_group_attributes_v05(plan: &Plan) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "ome".into(),
        json!({"version": "0.5", "multiscales": [ngff_multiscale(plan, "0.5")]}),
    );
    m
}

/// The `.zattrs` of an OME-NGFF 0.4 group: `{"multiscales": [{"version": "0.4", ...}]}`.
pub fn ngff_group_attributes_v04(plan: &Plan) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("multiscales".into(), json!([ngff_multiscale(plan, "0.4")]));
    m
}

/// The axis names in C order: every level's `dimension_names` (Zarr v3) or
/// `_ARRAY_DIMENSIONS` (Zarr v2).
pub fn dimension_names(plan: &Plan) -> Vec<String> {
    plan.axes.iter().rev().map(|a| a.name.clone()).collect()
}

// ---------------------------------------------------------------------------
// BigDataViewer

/// The stack axes' voxel size and translation of `s0` (x, y, z) in one
/// unit symbol (the first known one, sizes of other space units converted
/// to it), and that symbol (`"pixel"` when no axis has a unit).
fn bdv_geometry(plan: &Plan) -> (String, Vec<f64>, Vec<f64>) {
    let target: Option<Unit> = plan.level_axes.iter().find_map(|&a| plan.axes[a].unit);
    let conv = |a: usize, v: f64| plan.symbol_in(a, target, plan.to_symbol(a, v));
    let res = plan
        .level_axes
        .iter()
        .map(|&a| conv(a, plan.axes[a].resolution))
        .collect();
    let t0 = plan
        .level_axes
        .iter()
        .map(|&a| conv(a, plan.axes[a].translation))
        .collect();
    let unit = target.map_or("pixel".to_string(), |u| u.symbol().to_string());
    (unit, res, t0)
}

/// `setup{S}/attributes.json` without `dataType`, which the engine adds:
/// `{"downsamplingFactors": [[1,1,1], [2,2,1], ...]}`.
pub fn bdv_setup_attributes(plan: &Plan) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "downsamplingFactors".into(),
        json!(plan.levels.iter().map(|l| &l.factors).collect::<Vec<_>>()),
    );
    m
}

/// `setup{S}/timepoint{T}/attributes.json`: `{"multiScale": true,
/// "resolution": [x, y, z]}` (the voxel size of `s0`).
pub fn bdv_timepoint_attributes(plan: &Plan) -> Map<String, Value> {
    let (_, res, _) = bdv_geometry(plan);
    let mut m = Map::new();
    m.insert("multiScale".into(), Value::Bool(true));
    m.insert("resolution".into(), floats(res));
    m
}

/// The pyramid attributes of level `k` of a stack (added to its dataset
/// keys): `{"downsamplingFactors": [...]}`, from `s0`.
pub fn bdv_level_attributes(plan: &Plan, k: usize) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("downsamplingFactors".into(), json!(plan.levels[k].factors));
    m
}

/// BigDataViewer's `dataset.xml` for `n_setups` setups (channels) and
/// `n_timepoints` time points: one `ViewSetup` per setup, one
/// `ViewRegistration` per (time point, setup) with the row-major 3×4 affine
/// `diag(res) + t0` of `s0`.
pub fn bdv_dataset_xml(plan: &Plan, n_setups: u64, n_timepoints: u64) -> String {
    let (unit, res, t0) = bdv_geometry(plan);
    let size = &plan.levels[0].shape;
    let join_f = |v: &[f64]| {
        v.iter()
            .map(|x| xml_float(*x))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let unit = xml_escape(&unit);
    let mut x = String::new();
    x.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str("<SpimData version=\"0.2\">\n");
    x.push_str("  <BasePath type=\"relative\">.</BasePath>\n");
    x.push_str("  <SequenceDescription>\n");
    x.push_str("    <ImageLoader format=\"bdv.n5\" version=\"1.0\"><n5 type=\"relative\">.</n5></ImageLoader>\n");
    x.push_str("    <ViewSetups>\n");
    for s in 0..n_setups {
        let _ = writeln!(
            x,
            "      <ViewSetup><id>{s}</id><name>{s}</name><size>{} {} {}</size>",
            size[0], size[1], size[2]
        );
        let _ = writeln!(
            x,
            "        <voxelSize><unit>{unit}</unit><size>{}</size></voxelSize>",
            join_f(&res)
        );
        let _ = writeln!(
            x,
            "        <attributes><illumination>0</illumination><channel>{s}</channel><tile>0</tile><angle>0</angle></attributes>"
        );
        x.push_str("      </ViewSetup>\n");
    }
    x.push_str("      <Attributes name=\"illumination\"><Illumination><id>0</id><name>0</name></Illumination></Attributes>\n");
    x.push_str("      <Attributes name=\"channel\">");
    for s in 0..n_setups {
        let _ = write!(x, "<Channel><id>{s}</id><name>{s}</name></Channel>");
    }
    x.push_str("</Attributes>\n");
    x.push_str(
        "      <Attributes name=\"tile\"><Tile><id>0</id><name>0</name></Tile></Attributes>\n",
    );
    x.push_str(
        "      <Attributes name=\"angle\"><Angle><id>0</id><name>0</name></Angle></Attributes>\n",
    );
    x.push_str("    </ViewSetups>\n");
    let _ = writeln!(
        x,
        "    <Timepoints type=\"range\"><first>0</first><last>{}</last></Timepoints>",
        n_timepoints.saturating_sub(1)
    );
    x.push_str("  </SequenceDescription>\n");
    x.push_str("  <ViewRegistrations>\n");
    let affine = [
        res[0], 0.0, 0.0, t0[0], 0.0, res[1], 0.0, t0[1], 0.0, 0.0, res[2], t0[2],
    ];
    for t in 0..n_timepoints {
        for s in 0..n_setups {
            let _ = writeln!(
                x,
                "    <ViewRegistration timepoint=\"{t}\" setup=\"{s}\"><ViewTransform type=\"affine\">"
            );
            let _ = writeln!(
                x,
                "      <affine>{}</affine></ViewTransform></ViewRegistration>",
                join_f(&affine)
            );
        }
    }
    x.push_str("  </ViewRegistrations>\n");
    x.push_str("</SpimData>\n");
    x
}
