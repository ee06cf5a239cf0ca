//! The C functions of nwb.md §1 on Zarr v2 and v3 containers:
//! `n5_dataset_create` of the plain new types and of strings and bytes,
//! `n5_dataset_create_json` of the others and of 0-d arrays,
//! `n5_dataset_element_size`, `n5_dataset_dtype_json`,
//! `n5_region_read_json`, the string and bytes region functions with their
//! size queries and every error the contract names.

mod common;

use std::ffi::CString;

use common::capi::{json, message, ok, text, C, D};
use common::Scratch;
use n5::ffi::dataset::*;
use n5::ffi::region::*;
use n5::ffi::*;
use serde_json::{json, Value};

fn create(c: &C, path: &str, dims: &[u64], dtype: n5_dtype) -> Result<D, (n5_status, String)> {
    let p = CString::new(path).unwrap();
    let d = n5_dataset_create(
        c.0,
        p.as_ptr(),
        dims.len(),
        dims.as_ptr(),
        dims.as_ptr(),
        dtype,
        std::ptr::null(),
    );
    if d.is_null() {
        Err((n5::ffi::status::n5_last_error_code(), message()))
    } else {
        Ok(D(d))
    }
}

fn create_json(c: &C, path: &str, doc: &Value) -> D {
    let (p, j) = (
        CString::new(path).unwrap(),
        CString::new(doc.to_string()).unwrap(),
    );
    let d = n5_dataset_create_json(c.0, p.as_ptr(), j.as_ptr());
    assert!(!d.is_null(), "{path}: {}", message());
    D(d)
}

fn region_json(d: &D, offset: &[u64], shape: &[u64]) -> Value {
    json(|b, n, l| n5_region_read_json(d.0, shape.len(), offset.as_ptr(), shape.as_ptr(), b, n, l))
        .unwrap()
}

fn write_strings(
    d: &D,
    offset: &[u64],
    shape: &[u64],
    strings: &[&str],
) -> Result<(), (n5_status, String)> {
    let mut packed = Vec::new();
    for s in strings {
        packed.extend_from_slice(s.as_bytes());
        packed.push(0);
    }
    ok(n5_region_write_strings(
        d.0,
        shape.len(),
        offset.as_ptr(),
        shape.as_ptr(),
        packed.as_ptr().cast(),
        packed.len(),
    ))
}

fn read_strings(d: &D, offset: &[u64], shape: &[u64]) -> Result<Vec<String>, (n5_status, String)> {
    let mut len = 0usize;
    ok(n5_region_read_strings(
        d.0,
        shape.len(),
        offset.as_ptr(),
        shape.as_ptr(),
        std::ptr::null_mut(),
        0,
        &mut len,
    ))?;
    let mut buf = vec![0u8; len];
    let mut got = 0usize;
    ok(n5_region_read_strings(
        d.0,
        shape.len(),
        offset.as_ptr(),
        shape.as_ptr(),
        buf.as_mut_ptr().cast(),
        len,
        &mut got,
    ))?;
    assert_eq!(got, len);
    Ok(buf
        .split(|&b| b == 0)
        .take(buf.iter().filter(|&&b| b == 0).count())
        .map(|s| String::from_utf8(s.to_vec()).unwrap())
        .collect())
}

fn element_size(d: &D) -> usize {
    let mut n = usize::MAX;
    ok(n5_dataset_element_size(d.0, &mut n)).unwrap();
    n
}

#[test]
fn new_types_through_the_c_api() {
    let s = Scratch::new("zarr-types-capi");
    for format in ["zarr2", "zarr3"] {
        let root = s.join(&format!("{format}.zarr"));
        let c = C::open(
            root.to_str().unwrap(),
            N5_MODE_CREATE,
            &format!(r#"{{"format":"{format}"}}"#),
        )
        .unwrap();
        // The plain new types by code, values through the binary layout.
        let b = create(&c, "b", &[3], N5_DTYPE_BOOL).unwrap();
        assert_eq!(element_size(&b), 1);
        let v = [1u8, 0, 1];
        ok(n5_region_write(
            b.0,
            1,
            [0u64].as_ptr(),
            [3u64].as_ptr(),
            N5_DTYPE_BOOL,
            v.as_ptr().cast(),
            3,
        ))
        .unwrap();
        assert_eq!(region_json(&b, &[0], &[3]), json!([true, false, true]));
        let e = n5_region_write(
            b.0,
            1,
            [0u64].as_ptr(),
            [3u64].as_ptr(),
            N5_DTYPE_UINT8,
            v.as_ptr().cast(),
            3,
        );
        assert_eq!(e, N5_ERR_DTYPE_MISMATCH, "{}", message());
        let z = create(&c, "z", &[2, 2], N5_DTYPE_COMPLEX64).unwrap();
        assert_eq!(element_size(&z), 8);
        let data: Vec<u8> = [1.5f32, -2.0, 0.0, f32::NAN, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|f| f.to_ne_bytes())
            .collect();
        ok(n5_region_write(
            z.0,
            2,
            [0u64, 0].as_ptr(),
            [2u64, 2].as_ptr(),
            N5_DTYPE_COMPLEX64,
            data.as_ptr().cast(),
            data.len(),
        ))
        .unwrap();
        assert_eq!(
            region_json(&z, &[0, 0], &[2, 1]),
            json!([[1.5, -2.0], [0.0, "NaN"]])
        );
        let dtype = json(|bf, n, l| n5_dataset_dtype_json(z.0, bf, n, l)).unwrap();
        assert_eq!(dtype["name"], "complex64");
        assert_eq!(dtype["byte_order"], "little");
        // A 0-d array by code: ndim 0, NULL per-dimension arrays.
        let p = CString::new("scalar").unwrap();
        let zero = n5_dataset_create(
            c.0,
            p.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
            N5_DTYPE_FLOAT16,
            std::ptr::null(),
        );
        assert!(!zero.is_null(), "{}", message());
        let zero = D(zero);
        let half = 0x3c00u16.to_ne_bytes();
        ok(n5_region_write(
            zero.0,
            0,
            std::ptr::null(),
            std::ptr::null(),
            N5_DTYPE_FLOAT16,
            half.as_ptr().cast(),
            2,
        ))
        .unwrap();
        assert_eq!(
            json(|bf, n, l| n5_region_read_json(
                zero.0,
                0,
                std::ptr::null(),
                std::ptr::null(),
                bf,
                n,
                l
            ))
            .unwrap(),
            json!([1.0])
        );
        let mut grid = [0u64; 1];
        ok(n5_dataset_grid_shape(zero.0, 0, grid.as_mut_ptr())).unwrap();
        // Its one chunk is listed (the empty grid position).
        let mut len = 0usize;
        ok(n5::ffi::block::n5_block_list(
            zero.0,
            std::ptr::null_mut(),
            0,
            &mut len,
        ))
        .unwrap();
        let listed = text(|bf, n, l| n5::ffi::block::n5_block_list(zero.0, bf, n, l)).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&listed).unwrap(),
            json!([[]]),
            "{listed}"
        );
        // Codes that need parameters are refused by n5_dataset_create.
        let (code, msg) = create(&c, "u", &[3], N5_DTYPE_FIXED_UTF32).unwrap_err();
        assert_eq!(code, N5_ERR_INVALID_ARGUMENT);
        assert!(msg.contains("n5_dataset_create_json"), "{msg}");
        // Variable-length strings: created by code, written and read packed.
        let st = create(&c, "s", &[4, 3], N5_DTYPE_STRING).unwrap();
        assert_eq!(element_size(&st), 0);
        let dtype = json(|bf, n, l| n5_dataset_dtype_json(st.0, bf, n, l)).unwrap();
        assert_eq!(dtype["object_codec"], "vlen-utf8", "{dtype}");
        let words = ["a", "été", "", "x\"y", "😀", "z"];
        write_strings(&st, &[1, 1], &[3, 2], &words).unwrap();
        assert_eq!(read_strings(&st, &[1, 1], &[3, 2]).unwrap(), words);
        let all = read_strings(&st, &[0, 0], &[4, 3]).unwrap();
        assert_eq!(all.len(), 12);
        assert_eq!(all[5], "a");
        assert_eq!(all[0], "", "unwritten elements are the fill value");
        assert_eq!(region_json(&st, &[1, 1], &[3, 1]), json!(["a", "été", ""]));
        // Errors: the count, UTF-8, the binary functions.
        let (code, _) = write_strings(&st, &[0, 0], &[2, 1], &["one"]).unwrap_err();
        assert_eq!(code, N5_ERR_BUFFER_SIZE);
        let bad = b"\xff\0";
        let code = n5_region_write_strings(
            st.0,
            2,
            [0u64, 0].as_ptr(),
            [1u64, 1].as_ptr(),
            bad.as_ptr().cast(),
            2,
        );
        assert_eq!(code, N5_ERR_INVALID_UTF8);
        let mut buf = [0u8; 4];
        let code = n5_region_read(
            st.0,
            2,
            [0u64, 0].as_ptr(),
            [1u64, 1].as_ptr(),
            N5_DTYPE_STRING,
            buf.as_mut_ptr().cast(),
            4,
        );
        assert_eq!(code, N5_ERR_UNSUPPORTED);
        assert!(
            message().contains("n5_region_read_strings"),
            "{}",
            message()
        );
        // U+0000 inside a string cannot be packed; the bytes functions can.
        let data = b"a\0b";
        let lengths = [3u64];
        ok(n5_region_write_bytes(
            st.0,
            2,
            [0u64, 0].as_ptr(),
            [1u64, 1].as_ptr(),
            data.as_ptr().cast(),
            3,
            lengths.as_ptr(),
            1,
        ))
        .unwrap();
        assert_eq!(
            read_strings(&st, &[0, 0], &[1, 1]).unwrap_err().0,
            N5_ERR_UNSUPPORTED
        );
        // Block string functions on a Zarr chunk: the nominal block in N5
        // order, the fill value's strings for a chunk not stored.
        let bs = create(&c, "bs", &[3, 2], N5_DTYPE_STRING).unwrap();
        let block_strings = |pos: &[u64]| {
            let mut len = 0usize;
            let (mut count, mut found) = (0usize, -1i32);
            let mut shape = [0u64; 2];
            ok(n5::ffi::block::n5_block_read_strings(
                bs.0,
                2,
                pos.as_ptr(),
                std::ptr::null_mut(),
                0,
                &mut len,
                &mut count,
                shape.as_mut_ptr(),
                &mut found,
            ))
            .unwrap();
            let mut buf = vec![0u8; len];
            ok(n5::ffi::block::n5_block_read_strings(
                bs.0,
                2,
                pos.as_ptr(),
                buf.as_mut_ptr().cast(),
                len,
                &mut len,
                &mut count,
                shape.as_mut_ptr(),
                &mut found,
            ))
            .unwrap();
            (buf, count, shape, found)
        };
        assert_eq!(block_strings(&[0, 0]), (vec![0u8; 6], 6, [3, 2], 0));
        let packed = b"a\0b\0c\0d\0e\0f\0";
        ok(n5::ffi::block::n5_block_write_strings(
            bs.0,
            2,
            [0u64, 0].as_ptr(),
            [3u64, 2].as_ptr(),
            packed.as_ptr().cast(),
            packed.len(),
        ))
        .unwrap();
        assert_eq!(block_strings(&[0, 0]), (packed.to_vec(), 6, [3, 2], 1));
        assert_eq!(
            read_strings(&bs, &[0, 1], &[3, 1]).unwrap(),
            ["d", "e", "f"]
        );
        let code = n5::ffi::block::n5_block_write_strings(
            bs.0,
            2,
            [0u64, 0].as_ptr(),
            [2u64, 2].as_ptr(),
            packed.as_ptr().cast(),
            8,
        );
        assert_eq!(code, N5_ERR_SHAPE_MISMATCH, "{}", message());
        // Variable-length bytes.
        let by = create(&c, "y", &[5], N5_DTYPE_OBJECT).unwrap();
        let data = b"\x00\xffabc";
        let lengths = [2u64, 0, 3, 0, 0];
        ok(n5_region_write_bytes(
            by.0,
            1,
            [0u64].as_ptr(),
            [5u64].as_ptr(),
            data.as_ptr().cast(),
            5,
            lengths.as_ptr(),
            5,
        ))
        .unwrap();
        let mut len = 0usize;
        let mut got_lengths = [9u64; 5];
        ok(n5_region_read_bytes(
            by.0,
            1,
            [0u64].as_ptr(),
            [5u64].as_ptr(),
            std::ptr::null_mut(),
            0,
            &mut len,
            got_lengths.as_mut_ptr(),
            5,
        ))
        .unwrap();
        assert_eq!((len, got_lengths), (5, lengths));
        let mut out = [0u8; 5];
        ok(n5_region_read_bytes(
            by.0,
            1,
            [0u64].as_ptr(),
            [5u64].as_ptr(),
            out.as_mut_ptr().cast(),
            5,
            &mut len,
            got_lengths.as_mut_ptr(),
            5,
        ))
        .unwrap();
        assert_eq!(&out, data);
        assert_eq!(region_json(&by, &[0], &[3]), json!(["AP8=", "", "YWJj"]));
        let code = n5_region_write_bytes(
            by.0,
            1,
            [0u64].as_ptr(),
            [5u64].as_ptr(),
            data.as_ptr().cast(),
            4,
            lengths.as_ptr(),
            5,
        );
        assert_eq!(code, N5_ERR_BUFFER_SIZE);
        let code = n5_region_read_bytes(
            by.0,
            1,
            [0u64].as_ptr(),
            [5u64].as_ptr(),
            std::ptr::null_mut(),
            0,
            &mut len,
            got_lengths.as_mut_ptr(),
            4,
        );
        assert_eq!(code, N5_ERR_BUFFER_SIZE);
        // Fixed strings, structs and a 0-d array from documents.
        let doc = if format == "zarr3" {
            json!({"shape": [2], "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}},
                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
                   "chunk_key_encoding": {"name": "default"}, "fill_value": "",
                   "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}]})
        } else {
            json!({"shape": [2], "chunks": [2], "dtype": ">U3", "compressor": null, "fill_value": "", "order": "C", "filters": null})
        };
        let u = create_json(&c, "u", &doc);
        assert_eq!(element_size(&u), 12);
        write_strings(&u, &[0], &[2], &["abc", "é"]).unwrap();
        assert_eq!(read_strings(&u, &[0], &[2]).unwrap(), ["abc", "é"]);
        let (code, msg) = write_strings(&u, &[0], &[1], &["abcd"]).unwrap_err();
        assert_eq!(code, N5_ERR_INVALID_ARGUMENT, "{msg}");
        let doc = if format == "zarr3" {
            json!({"shape": [], "data_type": {"name": "struct", "configuration": {"fields": [
                    {"name": "x", "data_type": "float32"}, {"name": "n", "data_type": "int16"}]}},
                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}},
                   "chunk_key_encoding": {"name": "default"}, "fill_value": {"x": 0.5, "n": -1},
                   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})
        } else {
            json!({"shape": [], "chunks": [], "dtype": [["x", "<f4"], ["n", "<i2"]], "compressor": null,
                   "fill_value": null, "order": "C", "filters": null})
        };
        let r = create_json(&c, "r", &doc);
        assert_eq!(element_size(&r), 6);
        let mut nd = 99usize;
        ok(n5_dataset_ndim(r.0, &mut nd)).unwrap();
        assert_eq!(nd, 0);
        let fill = if format == "zarr3" {
            json!([{"x": 0.5, "n": -1}])
        } else {
            json!([{"x": 0.0, "n": 0}])
        };
        assert_eq!(
            json(|bf, n, l| n5_region_read_json(
                r.0,
                0,
                std::ptr::null(),
                std::ptr::null(),
                bf,
                n,
                l
            ))
            .unwrap(),
            fill
        );
        let rec: Vec<u8> = 2.25f32
            .to_ne_bytes()
            .iter()
            .chain(7i16.to_ne_bytes().iter())
            .copied()
            .collect();
        ok(n5_region_write(
            r.0,
            0,
            std::ptr::null(),
            std::ptr::null(),
            N5_DTYPE_STRUCT,
            rec.as_ptr().cast(),
            6,
        ))
        .unwrap();
        assert_eq!(
            text(|bf, n, l| n5_region_read_json(
                r.0,
                0,
                std::ptr::null(),
                std::ptr::null(),
                bf,
                n,
                l
            ))
            .unwrap(),
            r#"[{"x": 2.25, "n": 7}]"#
        );
        let dtype = json(|bf, n, l| n5_dataset_dtype_json(r.0, bf, n, l)).unwrap();
        assert_eq!(
            dtype["fields"][1],
            json!({"name": "n", "offset": 4, "type": {"name": "int16", "size": 2, "byte_order": "little"}})
        );
    }
    // Legacy object codecs are read only: creating such an array is refused.
    let root = s.join("legacy.zarr");
    let c = C::open(
        root.to_str().unwrap(),
        N5_MODE_CREATE,
        r#"{"format":"zarr2"}"#,
    )
    .unwrap();
    for id in ["pickle", "json2"] {
        let doc = json!({"shape": [3], "chunks": [3], "dtype": "|O", "filters": [{"id": id}],
                         "compressor": null, "fill_value": 0, "order": "C"});
        let (p, j) = (
            CString::new(id).unwrap(),
            CString::new(doc.to_string()).unwrap(),
        );
        assert!(n5_dataset_create_json(c.0, p.as_ptr(), j.as_ptr()).is_null());
        assert_eq!(
            n5::ffi::status::n5_last_error_code(),
            N5_ERR_UNSUPPORTED,
            "{}",
            message()
        );
        assert!(message().contains(id), "{}", message());
    }
    // N5 keeps its twelve types and refuses rank 0.
    let root = s.join("n5.n5");
    let c = C::open(root.to_str().unwrap(), N5_MODE_CREATE, "{}").unwrap();
    assert_eq!(
        create(&c, "b", &[3], N5_DTYPE_BOOL).unwrap_err().0,
        N5_ERR_UNSUPPORTED
    );
    assert_eq!(
        create(&c, "r", &[], N5_DTYPE_UINT8).unwrap_err().0,
        N5_ERR_INVALID_ARGUMENT
    );
    let d = create(&c, "d", &[2], N5_DTYPE_UINT16).unwrap();
    let dtype = json(|bf, n, l| n5_dataset_dtype_json(d.0, bf, n, l)).unwrap();
    assert_eq!(
        dtype,
        json!({"name": "uint16", "size": 2, "byte_order": "big", "stored": "uint16"})
    );
    assert_eq!(region_json(&d, &[0], &[2]), json!([0, 0]));
}
