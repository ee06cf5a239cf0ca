//! JSON text as Python writes it: the bare tokens `NaN`, `Infinity` and
//! `-Infinity` that `json.dumps` (and so zarr-python) puts in attribute
//! documents for non-finite floats. A [`Value`] cannot hold them, so
//! [`parse`] turns each into a reserved marker string ([`NAN`], [`INFINITY`],
//! [`NEG_INFINITY`]) and [`to_vec`]/[`to_vec_pretty`]/[`to_string`] write
//! the markers back as the bare tokens: a document keeps them through a read,
//! an attribute merge and a write. Standard JSON text costs one parse, as
//! before; only text that fails to parse is scanned for the tokens.

use serde_json::Value;

/// The value [`parse`] gives for a bare `NaN`.
pub const NAN: &str = "\u{0}libn5:NaN";
/// The value [`parse`] gives for a bare `Infinity`.
pub const INFINITY: &str = "\u{0}libn5:Infinity";
/// The value [`parse`] gives for a bare `-Infinity`.
pub const NEG_INFINITY: &str = "\u{0}libn5:-Infinity";

/// The bare tokens and their markers, the longest token that shares a
/// prefix first.
const TOKENS: [(&str, &str); 3] = [
    ("-Infinity", NEG_INFINITY),
    ("Infinity", INFINITY),
    ("NaN", NAN),
];

/// The markers as serde_json writes them inside a string (NUL escaped).
const ENCODED: [(&str, &str); 3] = [
    ("\\u0000libn5:-Infinity", "-Infinity"),
    ("\\u0000libn5:Infinity", "Infinity"),
    ("\\u0000libn5:NaN", "NaN"),
];

/// The float a marker stands for, `None` for any other value.
pub fn non_finite(value: &Value) -> Option<f64> {
    match value.as_str()? {
        NAN => Some(f64::NAN),
        INFINITY => Some(f64::INFINITY),
        NEG_INFINITY => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Parses JSON text that may hold the bare tokens `NaN`, `Infinity` and
/// `-Infinity` outside strings (each becomes its marker). An error names
/// what is wrong besides the tokens (its column counts each token as its
/// marker string).
pub fn parse(bytes: &[u8]) -> serde_json::Result<Value> {
    parse_with(bytes, |marker, _| marker)
}

/// Parses JSON text as [`parse`] does, but each bare token becomes the
/// string of its own name (`"NaN"`, `"Infinity"`, `"-Infinity"`), as the
/// element JSON of data types spells non-finite floats.
pub fn parse_as_names(bytes: &[u8]) -> serde_json::Result<Value> {
    parse_with(bytes, |_, token| token)
}

/// Parses `bytes`, replacing each bare token outside strings by the string
/// `string(marker, token)` when the text does not parse as it is.
fn parse_with(
    bytes: &[u8],
    string: fn(&'static str, &'static str) -> &'static str,
) -> serde_json::Result<Value> {
    match serde_json::from_slice(bytes) {
        Ok(v) => Ok(v),
        Err(e) => match replace_tokens(bytes, string) {
            Some(marked) => serde_json::from_slice(&marked),
            None => Err(e),
        },
    }
}

/// `value` as compact JSON text, markers written as the bare tokens.
pub fn to_vec(value: &Value) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(value).map(restore_tokens)
}

/// `value` as indented JSON text, markers written as the bare tokens.
pub fn to_vec_pretty(value: &Value) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec_pretty(value).map(restore_tokens)
}

/// `value` as compact JSON text, markers written as the bare tokens.
pub fn to_string(value: &Value) -> serde_json::Result<String> {
    to_vec(value).map(|b| String::from_utf8(b).expect("serde_json writes UTF-8"))
}

/// `value` as indented JSON text, markers written as the bare tokens.
pub fn to_string_pretty(value: &Value) -> serde_json::Result<String> {
    to_vec_pretty(value).map(|b| String::from_utf8(b).expect("serde_json writes UTF-8"))
}

/// The end (one past the closing quote) of the string token starting at
/// `start` (its opening quote), or the text's end when it is unterminated.
fn string_end(text: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

/// `text` with each bare token outside strings replaced by the JSON string
/// `string(marker, token)`; `None` when it holds none.
fn replace_tokens(
    text: &[u8],
    string: fn(&'static str, &'static str) -> &'static str,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() + 64);
    let mut found = false;
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'"' {
            let end = string_end(text, i);
            out.extend_from_slice(&text[i..end]);
            i = end;
            continue;
        }
        let token = TOKENS
            .iter()
            .find(|(token, _)| text[i..].starts_with(token.as_bytes()));
        match token {
            Some((token, marker)) => {
                out.extend_from_slice(
                    serde_json::to_string(string(marker, token))
                        .expect("a string serialises")
                        .as_bytes(),
                );
                i += token.len();
                found = true;
            }
            None => {
                out.push(text[i]);
                i += 1;
            }
        }
    }
    found.then_some(out)
}

/// Serialised `text` with every string token that is exactly a marker
/// replaced by its bare token.
fn restore_tokens(text: Vec<u8>) -> Vec<u8> {
    const PREFIX: &[u8] = b"\\u0000libn5:";
    if !text.windows(PREFIX.len()).any(|w| w == PREFIX) {
        return text;
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'"' {
            out.push(text[i]);
            i += 1;
            continue;
        }
        let end = string_end(&text, i);
        let inner = &text[i + 1..end.saturating_sub(1).max(i + 1)];
        match ENCODED.iter().find(|(enc, _)| inner == enc.as_bytes()) {
            Some((_, token)) => out.extend_from_slice(token.as_bytes()),
            None => out.extend_from_slice(&text[i..end]),
        }
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bare_tokens_are_kept_through_a_round_trip() {
        let text =
            br#"{"a": NaN, "b": [Infinity, -Infinity, 1.5], "c": "NaN", "d": "x NaN -Infinity"}"#;
        let v = parse(text).unwrap();
        assert_eq!(v["a"], json!(NAN));
        assert_eq!(v["b"], json!([INFINITY, NEG_INFINITY, 1.5]));
        assert_eq!(v["c"], json!("NaN"));
        assert_eq!(v["d"], json!("x NaN -Infinity"));
        assert!(non_finite(&v["a"]).unwrap().is_nan());
        assert_eq!(non_finite(&v["b"][1]), Some(f64::NEG_INFINITY));
        assert_eq!(non_finite(&v["c"]), None);
        assert_eq!(
            to_string(&v).unwrap(),
            r#"{"a":NaN,"b":[Infinity,-Infinity,1.5],"c":"NaN","d":"x NaN -Infinity"}"#
        );
        let pretty = to_string_pretty(&v).unwrap();
        assert!(pretty.contains("\"a\": NaN"), "{pretty}");
        assert_eq!(parse(pretty.as_bytes()).unwrap(), v);
    }

    #[test]
    fn strings_with_quotes_and_escapes_are_left_alone() {
        let text = br#"{"q\"NaN": "\\", "k": "\"Infinity\"", "n": NaN}"#;
        let v = parse(text).unwrap();
        assert_eq!(v["q\"NaN"], json!("\\"));
        assert_eq!(v["k"], json!("\"Infinity\""));
        assert_eq!(
            to_string(&v).unwrap(),
            r#"{"q\"NaN":"\\","k":"\"Infinity\"","n":NaN}"#
        );
        // A marker inside a longer string is just text.
        let inner = json!({"s": format!("x{NAN}")});
        assert_eq!(to_string(&inner).unwrap(), r#"{"s":"x\u0000libn5:NaN"}"#);
    }

    #[test]
    fn invalid_text_is_an_error() {
        for bad in [
            &b"{\"a\": nan}"[..],
            b"{\"a\": NaN",
            b"[Inf]",
            b"NaNa",
            b"\"NaN",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let e = parse(b"{\"a\": NaN,}").unwrap_err();
        assert!(e.to_string().contains("trailing comma"), "{e}");
        assert_eq!(parse(b"[NaN]").unwrap(), json!([NAN]));
        assert_eq!(
            parse_as_names(b"[NaN, \"NaN\", -Infinity]").unwrap(),
            json!(["NaN", "NaN", "-Infinity"])
        );
    }
}
