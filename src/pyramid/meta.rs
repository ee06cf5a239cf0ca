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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyramid::downsample::Method;
    use crate::pyramid::plan::{OutFormat, PyramidOptions, SourceInfo};

    /// The example of pyramid.md: `[256,256,60]` (x,y,z), 4,4,40 nm, blocks 64.
    fn example(format: OutFormat, method: Method) -> Plan {
        let src = SourceInfo {
            shape: vec![256, 256, 60],
            axes: None,
            resolution: Some(vec![4.0, 4.0, 40.0]),
            units: Some(vec![Some("nm".into()); 3]),
            name: "raw".into(),
        };
        let opts = PyramidOptions {
            method,
            ..Default::default()
        };
        let p = Plan::new(&src, &opts, format, &[64; 3], &[64; 3]).unwrap();
        let factors: Vec<_> = p.levels.iter().map(|l| l.factors.clone()).collect();
        assert_eq!(factors, [[1, 1, 1], [2, 2, 1], [4, 4, 1]]);
        p
    }

    /// The same text as `expected` once both are parsed: key order and
    /// number spelling (`4.0` against `4`) included.
    fn assert_doc(ours: &Map<String, Value>, expected: &str) {
        let expected: Value = serde_json::from_str(expected).unwrap();
        assert_eq!(
            serde_json::to_string_pretty(&Value::Object(ours.clone())).unwrap(),
            serde_json::to_string_pretty(&expected).unwrap()
        );
    }

    const N5_GROUP: &str = r#"{"axes": ["x","y","z"], "units": ["nm","nm","nm"], "resolution": [4.0,4.0,40.0],
 "scales": [[1,1,1],[2,2,1],[4,4,1]], "multiScale": true,
 "pixelResolution": {"unit": "nm", "dimensions": [4.0,4.0,40.0]},
 "multiscales": [{"name": "raw", "datasets": [
  {"path": "s0", "transform": {"axes": ["z","y","x"], "units": ["nm","nm","nm"], "scale": [40.0,4.0,4.0], "translate": [0.0,0.0,0.0]}},
  {"path": "s1", "transform": {"axes": ["z","y","x"], "units": ["nm","nm","nm"], "scale": [40.0,8.0,8.0], "translate": [0.0,2.0,2.0]}},
  {"path": "s2", "transform": {"axes": ["z","y","x"], "units": ["nm","nm","nm"], "scale": [40.0,16.0,16.0], "translate": [0.0,6.0,6.0]}}]}]}"#;

    const NGFF_05: &str = r#"{"ome": {"version": "0.5",
 "multiscales": [{"name": "raw", "type": "mean",
  "metadata": {"method": "libn5 n5_pyramid_build", "version": "<libn5 version>", "kwargs": {"method": "mean"}},
  "axes": [{"name": "z", "type": "space", "unit": "nanometer"},
           {"name": "y", "type": "space", "unit": "nanometer"},
           {"name": "x", "type": "space", "unit": "nanometer"}],
  "datasets": [
   {"path": "s0", "coordinateTransformations": [{"type": "scale", "scale": [40.0,4.0,4.0]}, {"type": "translation", "translation": [0.0,0.0,0.0]}]},
   {"path": "s1", "coordinateTransformations": [{"type": "scale", "scale": [40.0,8.0,8.0]}, {"type": "translation", "translation": [0.0,2.0,2.0]}]},
   {"path": "s2", "coordinateTransformations": [{"type": "scale", "scale": [40.0,16.0,16.0]}, {"type": "translation", "translation": [0.0,6.0,6.0]}]}]}]}}"#;

    const BDV_XML: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<SpimData version="0.2">
  <BasePath type="relative">.</BasePath>
  <SequenceDescription>
    <ImageLoader format="bdv.n5" version="1.0"><n5 type="relative">.</n5></ImageLoader>
    <ViewSetups>
      <ViewSetup><id>0</id><name>0</name><size>256 256 60</size>
        <voxelSize><unit>nm</unit><size>4.0 4.0 40.0</size></voxelSize>
        <attributes><illumination>0</illumination><channel>0</channel><tile>0</tile><angle>0</angle></attributes>
      </ViewSetup>
      <Attributes name="illumination"><Illumination><id>0</id><name>0</name></Illumination></Attributes>
      <Attributes name="channel"><Channel><id>0</id><name>0</name></Channel></Attributes>
      <Attributes name="tile"><Tile><id>0</id><name>0</name></Tile></Attributes>
      <Attributes name="angle"><Angle><id>0</id><name>0</name></Angle></Attributes>
    </ViewSetups>
    <Timepoints type="range"><first>0</first><last>0</last></Timepoints>
  </SequenceDescription>
  <ViewRegistrations>
    <ViewRegistration timepoint="0" setup="0"><ViewTransform type="affine">
      <affine>4.0 0.0 0.0 0.0 0.0 4.0 0.0 0.0 0.0 0.0 40.0 0.0</affine></ViewTransform></ViewRegistration>
  </ViewRegistrations>
</SpimData>
"#;

    #[test]
    fn n5_example() {
        let p = example(OutFormat::N5, Method::Mean);
        assert_doc(&n5_group_attributes(&p), N5_GROUP);
        assert_doc(
            &n5_level_attributes(&p, 1),
            r#"{"downsamplingFactors": [2,2,1], "pixelResolution": {"unit": "nm", "dimensions": [4.0,4.0,40.0]},
                "transform": {"axes": ["z","y","x"], "units": ["nm","nm","nm"], "scale": [40.0,8.0,8.0], "translate": [0.0,2.0,2.0]}}"#,
        );
    }

    #[test]
    fn ngff_example() {
        let p = example(OutFormat::Zarr3, Method::Mean);
        let v05 = NGFF_05.replace("<libn5 version>", env!("CARGO_PKG_VERSION"));
        assert_doc(&ngff_group_attributes_v05(&p), &v05);
        assert_eq!(dimension_names(&p), ["z", "y", "x"]);
        // 0.4: the same multiscale with the version inside it.
        let p = example(OutFormat::Zarr2, Method::Mean);
        let v05: Value = serde_json::from_str(&v05).unwrap();
        let mut ms = Map::new();
        ms.insert("version".into(), json!("0.4"));
        ms.extend(v05["ome"]["multiscales"][0].as_object().unwrap().clone());
        let mut expected = Map::new();
        expected.insert("multiscales".into(), json!([ms]));
        assert_doc(
            &ngff_group_attributes_v04(&p),
            &serde_json::to_string(&expected).unwrap(),
        );
    }

    #[test]
    fn bdv_example() {
        let p = example(OutFormat::Bdv, Method::Mean);
        assert_eq!(
            bdv_dataset_xml(&p, p.bdv_setups(), p.bdv_timepoints()),
            BDV_XML
        );
        assert_doc(
            &bdv_setup_attributes(&p),
            r#"{"downsamplingFactors": [[1,1,1],[2,2,1],[4,4,1]]}"#,
        );
        assert_doc(
            &bdv_timepoint_attributes(&p),
            r#"{"multiScale": true, "resolution": [4.0,4.0,40.0]}"#,
        );
        assert_doc(
            &bdv_level_attributes(&p, 1),
            r#"{"downsamplingFactors": [2,2,1]}"#,
        );
    }

    /// `[512,512,64,3,10]` x,y,z,c,t at 0.1625,0.1625,1 µm and 2 minutes.
    fn five_d(format: OutFormat, method: Method) -> Plan {
        let src = SourceInfo {
            shape: vec![512, 512, 64, 3, 10],
            axes: Some(["x", "y", "z", "c", "t"].map(String::from).to_vec()),
            resolution: Some(vec![0.1625, 0.1625, 1.0, 1.0, 2.0]),
            units: Some(vec![
                Some("µm".into()),
                Some("um".into()),
                Some("micron".into()),
                None,
                Some("min".into()),
            ]),
            name: "cells".into(),
        };
        let opts = PyramidOptions {
            method,
            translation: Some(vec![1.0, 2.0, 3.0, 0.0, 0.5]),
            ..Default::default()
        };
        let b = [128, 128, 16, 1, 1];
        Plan::new(&src, &opts, format, &b, &b).unwrap()
    }

    #[test]
    fn five_d_n5_and_ngff() {
        let p = five_d(OutFormat::N5, Method::Mean);
        assert_eq!(p.levels.len(), 5);
        let g = n5_group_attributes(&p);
        assert_eq!(g["units"], json!(["um", "um", "um", "", "s"]));
        assert_eq!(
            serde_json::to_string(&g["resolution"]).unwrap(),
            "[0.1625,0.1625,1.0,1.0,120.0]"
        );
        assert!(!g.contains_key("pixelResolution"));
        assert_eq!(
            serde_json::to_string(&g["scales"][4]).unwrap(),
            "[4,4,4,1,1]"
        );
        assert_eq!(
            serde_json::to_string(&g["multiscales"][0]["datasets"][4]["transform"]).unwrap(),
            r#"{"axes":["t","c","z","y","x"],"units":["s","","um","um","um"],"scale":[120.0,1.0,4.0,0.65,0.65],"translate":[30.0,0.0,4.5,2.24375,1.24375]}"#
        );
        let l = n5_level_attributes(&p, 2);
        assert_eq!(
            l.keys().collect::<Vec<_>>(),
            ["downsamplingFactors", "transform"]
        );

        let p = five_d(OutFormat::Zarr3, Method::Mean);
        let ms = ngff_multiscale(&p, "0.5");
        assert_eq!(
            serde_json::to_string(&ms["axes"]).unwrap(),
            r#"[{"name":"t","type":"time","unit":"minute"},{"name":"c","type":"channel"},{"name":"z","type":"space","unit":"micrometer"},{"name":"y","type":"space","unit":"micrometer"},{"name":"x","type":"space","unit":"micrometer"}]"#
        );
        assert_eq!(
            serde_json::to_string(&ms["datasets"][4]).unwrap(),
            r#"{"path":"s4","coordinateTransformations":[{"type":"scale","scale":[2.0,1.0,4.0,0.65,0.65]},{"type":"translation","translation":[0.5,0.0,4.5,2.24375,1.24375]}]}"#
        );
        assert_eq!(ms["name"], "cells");
        assert!(ms.get("version").is_none());
        assert_eq!(dimension_names(&p), ["t", "c", "z", "y", "x"]);
    }

    #[test]
    fn five_d_bdv() {
        let p = five_d(OutFormat::Bdv, Method::Mean);
        let xml = bdv_dataset_xml(&p, p.bdv_setups(), p.bdv_timepoints());
        assert_eq!(xml.matches("<ViewSetup>").count(), 3);
        assert_eq!(xml.matches("<ViewRegistration ").count(), 30);
        assert!(xml.contains(
            r#"<Attributes name="channel"><Channel><id>0</id><name>0</name></Channel><Channel><id>1</id><name>1</name></Channel><Channel><id>2</id><name>2</name></Channel></Attributes>"#
        ));
        assert!(xml.contains("<attributes><illumination>0</illumination><channel>2</channel><tile>0</tile><angle>0</angle></attributes>"));
        assert!(xml.contains("<size>512 512 64</size>"));
        assert!(
            xml.contains("<voxelSize><unit>um</unit><size>0.1625 0.1625 1.0</size></voxelSize>")
        );
        assert!(
            xml.contains(r#"<Timepoints type="range"><first>0</first><last>9</last></Timepoints>"#)
        );
        assert!(xml.contains(r#"<ViewRegistration timepoint="9" setup="2">"#));
        assert!(
            xml.contains("<affine>0.1625 0.0 0.0 1.0 0.0 0.1625 0.0 2.0 0.0 0.0 1.0 3.0</affine>")
        );
        // Registrations: time point outer, setup inner.
        let a = xml.find(r#"timepoint="0" setup="2""#).unwrap();
        let b = xml.find(r#"timepoint="1" setup="0""#).unwrap();
        assert!(a < b);
        assert_eq!(
            serde_json::to_string(&bdv_setup_attributes(&p)).unwrap(),
            r#"{"downsamplingFactors":[[1,1,1],[2,2,1],[4,4,1],[4,4,2],[4,4,4]]}"#
        );
    }

    #[test]
    fn stride_places_levels_at_t0() {
        let p = example(OutFormat::N5, Method::Stride);
        assert_eq!(
            serde_json::to_string(
                &n5_group_attributes(&p)["multiscales"][0]["datasets"][2]["transform"]
            )
            .unwrap(),
            r#"{"axes":["z","y","x"],"units":["nm","nm","nm"],"scale":[40.0,16.0,16.0],"translate":[0.0,0.0,0.0]}"#
        );
        let p = example(OutFormat::Zarr3, Method::Stride);
        let ms = ngff_multiscale(&p, "0.5");
        assert_eq!(ms["type"], "stride");
        assert_eq!(ms["metadata"]["kwargs"]["method"], "stride");
        assert_eq!(
            serde_json::to_string(&ms["datasets"][2]["coordinateTransformations"]).unwrap(),
            r#"[{"type":"scale","scale":[40.0,16.0,16.0]},{"type":"translation","translation":[0.0,0.0,0.0]}]"#
        );
        let p = five_d(OutFormat::Zarr2, Method::Stride);
        let ms = ngff_multiscale(&p, "0.4");
        assert_eq!(ms["version"], "0.4");
        assert_eq!(
            serde_json::to_string(&ms["datasets"][4]["coordinateTransformations"][1]).unwrap(),
            r#"{"type":"translation","translation":[0.5,0.0,3.0,2.0,1.0]}"#
        );
    }

    #[test]
    fn angstrom_and_minutes() {
        let src = SourceInfo {
            shape: vec![200, 200, 200, 5],
            axes: Some(["x", "y", "z", "t"].map(String::from).to_vec()),
            resolution: Some(vec![3.0, 3.0, 7.0, 1.5]),
            units: Some(vec![
                Some("Å".into()),
                Some("angstrom".into()),
                Some("A".into()),
                Some("minute".into()),
            ]),
            name: "cryo".into(),
        };
        let b = [64, 64, 64, 1];
        let p = Plan::new(&src, &PyramidOptions::default(), OutFormat::N5, &b, &b).unwrap();
        let g = n5_group_attributes(&p);
        assert_eq!(g["units"], json!(["nm", "nm", "nm", "s"]));
        assert_eq!(
            serde_json::to_string(&g["resolution"]).unwrap(),
            "[0.3,0.3,0.7,90.0]"
        );
        assert!(!g.contains_key("pixelResolution"));
        assert_eq!(
            serde_json::to_string(&g["multiscales"][0]["datasets"][1]["transform"]).unwrap(),
            r#"{"axes":["t","z","y","x"],"units":["s","nm","nm","nm"],"scale":[90.0,0.7,0.6,0.6],"translate":[0.0,0.0,0.15,0.15]}"#
        );
        let p = Plan::new(&src, &PyramidOptions::default(), OutFormat::Zarr3, &b, &b).unwrap();
        let ms = ngff_multiscale(&p, "0.5");
        assert_eq!(
            serde_json::to_string(&ms["axes"]).unwrap(),
            r#"[{"name":"t","type":"time","unit":"minute"},{"name":"z","type":"space","unit":"angstrom"},{"name":"y","type":"space","unit":"angstrom"},{"name":"x","type":"space","unit":"angstrom"}]"#
        );
        assert_eq!(
            serde_json::to_string(&ms["datasets"][1]["coordinateTransformations"]).unwrap(),
            r#"[{"type":"scale","scale":[1.5,7.0,6.0,6.0]},{"type":"translation","translation":[0.0,0.0,1.5,1.5]}]"#
        );
        // A space-only Å volume: pixelResolution in nm.
        let src = SourceInfo {
            shape: vec![100, 100, 100],
            axes: None,
            resolution: Some(vec![10.0, 10.0, 20.0]),
            units: Some(vec![Some("Å".into()); 3]),
            name: "cryo".into(),
        };
        let p = Plan::new(
            &src,
            &PyramidOptions::default(),
            OutFormat::Bdv,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        let xml = bdv_dataset_xml(&p, 1, 1);
        assert!(xml.contains("<voxelSize><unit>nm</unit><size>1.0 1.0 2.0</size></voxelSize>"));
        let p = Plan::new(
            &src,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&n5_group_attributes(&p)["pixelResolution"]).unwrap(),
            r#"{"unit":"nm","dimensions":[1.0,1.0,2.0]}"#
        );
    }

    #[test]
    fn bdv_mixed_and_missing_units() {
        let mut src = SourceInfo {
            shape: vec![100, 100, 100],
            axes: None,
            resolution: Some(vec![500.0, 500.0, 2.0]),
            units: Some(vec![
                Some("nm".into()),
                Some("nm".into()),
                Some("um".into()),
            ]),
            name: "v".into(),
        };
        let p = Plan::new(
            &src,
            &PyramidOptions::default(),
            OutFormat::Bdv,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        assert!(bdv_dataset_xml(&p, 1, 1)
            .contains("<voxelSize><unit>nm</unit><size>500.0 500.0 2000.0</size></voxelSize>"));
        src.units = None;
        let p = Plan::new(
            &src,
            &PyramidOptions::default(),
            OutFormat::Bdv,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        assert!(bdv_dataset_xml(&p, 1, 1).contains("<unit>pixel</unit>"));
        assert_eq!(xml_escape("a<b&\"c'>"), "a&lt;b&amp;&quot;c&apos;&gt;");
        // N5 without units: "" and no pixelResolution.
        let p = Plan::new(
            &src,
            &PyramidOptions::default(),
            OutFormat::N5,
            &[64; 3],
            &[64; 3],
        )
        .unwrap();
        let g = n5_group_attributes(&p);
        assert_eq!(g["units"], json!(["", "", ""]));
        assert!(!g.contains_key("pixelResolution"));
    }
}
