//! N5 attribute paths: parsing `a/b[2]`-style paths and reading, writing and
//! removing the value they address inside an attributes document
//! (`attributes.json` as a [`serde_json::Value`]).
//!
//! The semantics follow the Java reference implementation (saalfeldlab/n5:
//! `N5URI.normalizeAttributePath`, `N5URI.getAttributePathTokens`,
//! `LinkedAttributePathToken` and `GsonUtils.{getAttribute, insertAttribute,
//! removeAttribute}`), so that a path means the same thing here as in Java.
//!
//! # Syntax
//!
//! * `/` separates object keys: `a/b/c`. A leading `/`, a trailing `/` and
//!   repeated `/` are ignored, so `/a//b/` is `a/b`.
//! * `[N]`, with `N` one or more ASCII digits, is an array index. It is a
//!   separator of its own: `a[1][2]/[3]key` is `a/[1]/[2]/[3]/key`. Leading
//!   zeros are allowed (`[007]` is 7); an index above 2147483647 (Java's
//!   `int`) is an error.
//! * Brackets that do not enclose only digits are ordinary key characters, as
//!   in Java: `[b]`, `a[bc`, `ab]c`, `[ ]` and `]] [] [[` are keys.
//! * `\/` is a literal `/` and `\[` a literal `[` (so `\[0]` is the key
//!   `[0]`). Every other backslash is kept as it is: `\\` is the two-character
//!   key `\\`, and `escaped\[0\]` is the key `escaped[0\]` (Java keeps the
//!   backslash before `]` too).
//! * A segment `.` is dropped and `..` drops the step before it; `..` above
//!   the root stays at the root.
//! * `""`, `"/"` and any path that resolves to nothing (`a/..`) address the
//!   whole document, which may be any JSON value, not only an object.
//!
//! # Deliberate differences from Java
//!
//! Java normalises paths with regular expressions that have a few edge-case
//! bugs; this module parses one character at a time instead. Compared with
//! Java's `normalizeAttributePath` + `getAttributePathTokens` on 25,000
//! random paths, the tokens differ only in these cases:
//!
//! * A path that is exactly `.` or `..` is the root here. Java skips
//!   normalisation for paths without `/` or an index and treats them as keys
//!   named `.` and `..` (while `./.` or `a/..` are the root). So
//!   `set(doc, ".", v)` replaces the whole document here.
//! * `.` and `..` are recognised only as whole segments. Java's regex also
//!   treats a segment that merely starts with `..` as `..` plus the rest
//!   (`..x/y` → `x/y`, `a/..b` → `b`, `a/...` → `.`).
//! * An escaped slash is never a separator. Java's regex treats it as one
//!   when resolving `.`, `..` and repeated separators, and before an index:
//!   `a\/b/..` is the root here (Java: key `a/`), `a\//b` is the key `a/`
//!   then `b` (Java: key `a/b`), and `\/[0]` is the key `/` then index 0
//!   (Java: key `/[0]`).
//! * A path containing a line break (`\n`, `\r`, U+0085, U+2028, U+2029) is
//!   parsed like any other. Java's "does this path need normalising" regex
//!   does not match across line breaks, so there such a path is only split at
//!   `/`: indices stay key text (`a[0]\n` is one key), `.`, `..` and empty
//!   segments become keys.
//!
//! Beyond parsing:
//!
//! * [`get`] and [`remove`] read paths exactly as [`set`] does. Java's
//!   readers first try a segment such as `[0]` as a key of an object; here
//!   `[0]` is always an index, and a key named `[0]` is addressed as `\[0]`.
//! * When the document's root is an array, a path starting with an index
//!   writes into it. Java's `N5Writer.setAttribute` replaces any non-object
//!   root by `{}` before applying the path, so there `[1]` on `[7,8,9]` gives
//!   `[null,v]`; here it gives `[7,v,9]`, as Java's `GsonUtils.insertAttribute`
//!   itself would.
//! * [`set`] with a JSON `null` stores `null`, as Java does with
//!   `GsonBuilder.serializeNulls()`. Java's default Gson drops `null` object
//!   members when it writes the file (nulls inside arrays are kept).
//! * [`remove`] on `""` replaces the document by `null` like `"/"`. Java does
//!   that only for the exact string `"/"` and reports `""` as removed while
//!   leaving the document unchanged.
//! * Growing an array past [`MAX_ARRAY_LEN`] elements is an error instead of an
//!   allocation of gigabytes.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The largest array length [`set`] creates by padding: writing at an index
/// `>= MAX_ARRAY_LEN` past the end of an array is
/// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument).
/// Arrays already longer than this (read from a file) can still be written
/// inside their bounds.
///
/// 2^16 elements: a `serde_json::Value` takes 72 bytes here, so the largest
/// padded array is under 5 MB, while a path such as `a[1000000]` cannot
/// make the library allocate 72 MB, nor `a[2000000000]` gigabytes. Java has
/// no such limit (it pads up to any `int` index or runs out of memory).
pub const MAX_ARRAY_LEN: usize = 1 << 16;

/// The largest index the syntax accepts, Java's `Integer.MAX_VALUE`.
const MAX_INDEX: usize = i32::MAX as usize;

/// One step of a parsed attribute path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// A key of a JSON object, with escapes already removed.
    Key(String),
    /// An element of a JSON array.
    Index(usize),
}

/// Parse an N5 attribute path (`a/b[2]`, `[0][1]`, `\/` and `\[` escapes,
/// `.`/`..` resolved, `..` above the root stays at the root, leading `/`
/// optional, `""` and `"/"` = the whole document) into its steps. See the
/// module documentation for the full syntax.
///
/// An empty result addresses the whole document. Empty segments are skipped,
/// so an empty key cannot be addressed (as in Java).
///
/// Errors: [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument),
/// naming the path, when an index is above 2147483647 (Java's
/// `Integer.parseInt` rejects it too). Brackets around anything but digits
/// are key text, not an invalid index.
pub fn parse(path: &str) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut segment = String::new();
    let mut chars = path.char_indices().peekable();
    while let Some((pos, c)) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some(&(_, next @ ('/' | '['))) => {
                    segment.push(next);
                    chars.next();
                }
                _ => segment.push('\\'),
            },
            '/' => end_segment(&mut tokens, &mut segment),
            '[' => match index_at(path, pos)? {
                Some((index, len)) => {
                    end_segment(&mut tokens, &mut segment);
                    tokens.push(Token::Index(index));
                    // Skip the digits and the closing bracket (all ASCII).
                    for _ in 1..len {
                        chars.next();
                    }
                }
                None => segment.push('['),
            },
            _ => segment.push(c),
        }
    }
    end_segment(&mut tokens, &mut segment);
    Ok(tokens)
}

/// Finish the segment collected so far: skip it when empty or `.`, step back
/// for `..`, otherwise add it as a key.
fn end_segment(tokens: &mut Vec<Token>, segment: &mut String) {
    match segment.as_str() {
        "" | "." => {}
        ".." => {
            tokens.pop();
        }
        _ => tokens.push(Token::Key(segment.clone())),
    }
    segment.clear();
}

/// If `path[open..]` starts with `[digits]`, its index and its length in bytes.
fn index_at(path: &str, open: usize) -> Result<Option<(usize, usize)>> {
    let rest = &path.as_bytes()[open + 1..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits) != Some(&b']') {
        return Ok(None);
    }
    let text = &path[open + 1..open + 1 + digits];
    match text.parse::<usize>() {
        Ok(index) if index <= MAX_INDEX => Ok(Some((index, digits + 2))),
        _ => Err(Error::invalid_argument(format!(
            "attribute path '{path}': array index {text} is too large (the limit is {MAX_INDEX})"
        ))),
    }
}

/// The value at `path`, or `None` when absent (or when the path goes through
/// a value of the wrong kind, such as a key of an array or an index of a
/// string). A stored JSON `null` is `Some(&Value::Null)`; `""` and `"/"`
/// return the whole document.
///
/// Errors: those of [`parse`].
pub fn get<'a>(doc: &'a Value, path: &str) -> Result<Option<&'a Value>> {
    let mut current = doc;
    for token in parse(path)? {
        let next = match (&token, current) {
            (Token::Key(key), Value::Object(map)) => map.get(key.as_str()),
            (Token::Index(index), Value::Array(array)) => array.get(*index),
            _ => None,
        };
        match next {
            Some(value) => current = value,
            None => return Ok(None),
        }
    }
    Ok(Some(current))
}

/// Set `value` at `path`, creating what is missing on the way, as Java's
/// `GsonUtils.insertAttribute` does:
///
/// * A missing or wrong-kind step is replaced by an empty object (before a
///   key) or array (before an index); writing through a primitive, `null` or
///   a container of the other kind replaces it with a structure. This also
///   applies to the document itself: a key path on an array or primitive root
///   makes the root `{}` first.
/// * An array too short for an index is grown. When the index is the last
///   step and `value` is a number, the new elements are `0`; otherwise
///   (a non-number value, or an array on the way to a deeper step) they are
///   `null`. So `arr[3] = 7` gives `[0,0,0,7]` and `matrix[1][2] = 5` gives
///   `[null,[0,0,5]]`.
/// * A new key is appended; an existing key keeps its position.
/// * `""` and `"/"` replace the whole document by `value`.
/// * A JSON `null` value is stored as `null` (Java's `serializeNulls`
///   behaviour), not treated as removal.
///
/// Errors: those of [`parse`], and
/// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) when an
/// array would have to grow beyond [`MAX_ARRAY_LEN`] elements. On error the
/// document is unchanged.
pub fn set(doc: &mut Value, path: &str, value: Value) -> Result<()> {
    let tokens = parse(path)?;
    check_growth(doc, &tokens, path)?;
    let Some((last, steps)) = tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    let mut current = doc;
    for (i, token) in steps.iter().enumerate() {
        let next = &tokens[i + 1];
        let child = match token {
            Token::Key(key) => object_mut(current)
                .entry(key.clone())
                .or_insert(Value::Null),
            Token::Index(index) => {
                let array = array_mut(current);
                if *index >= array.len() {
                    array.resize(index + 1, Value::Null);
                }
                &mut array[*index]
            }
        };
        if !fits(child, next) {
            *child = empty_for(next);
        }
        current = child;
    }
    match last {
        Token::Key(key) => {
            object_mut(current).insert(key.clone(), value);
        }
        Token::Index(index) => {
            let array = array_mut(current);
            if *index >= array.len() {
                let fill = if value.is_number() {
                    Value::from(0)
                } else {
                    Value::Null
                };
                array.resize(index + 1, fill);
            }
            array[*index] = value;
        }
    }
    Ok(())
}

/// Fail before changing anything if [`set`] would grow an array past
/// [`MAX_ARRAY_LEN`]. Steps below a replaced or created value start empty.
fn check_growth(doc: &Value, tokens: &[Token], path: &str) -> Result<()> {
    let mut current = Some(doc);
    for token in tokens {
        current = match (token, current) {
            (Token::Key(key), Some(Value::Object(map))) => map.get(key.as_str()),
            (Token::Index(index), Some(Value::Array(array))) if *index < array.len() => {
                array.get(*index)
            }
            (Token::Index(index), _) if *index >= MAX_ARRAY_LEN => {
                return Err(Error::invalid_argument(format!(
                    "attribute path '{path}': writing index {index} would grow an array \
                     beyond {MAX_ARRAY_LEN} elements"
                )));
            }
            _ => None,
        };
    }
    Ok(())
}

/// Whether `value` can hold the step `next` without being replaced.
fn fits(value: &Value, next: &Token) -> bool {
    matches!(
        (next, value),
        (Token::Key(_), Value::Object(_)) | (Token::Index(_), Value::Array(_))
    )
}

/// An empty container for the step `next`.
fn empty_for(next: &Token) -> Value {
    match next {
        Token::Key(_) => Value::Object(Map::new()),
        Token::Index(_) => Value::Array(Vec::new()),
    }
}

/// `value` as an object, replacing it by `{}` first if it is anything else.
fn object_mut(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("the value was just made an object"),
    }
}

/// `value` as an array, replacing it by `[]` first if it is anything else.
fn array_mut(value: &mut Value) -> &mut Vec<Value> {
    if !value.is_array() {
        *value = Value::Array(Vec::new());
    }
    match value {
        Value::Array(array) => array,
        _ => unreachable!("the value was just made an array"),
    }
}

/// Remove the value at `path` and return it.
///
/// * Removing a key keeps the order of the other keys.
/// * Removing an array element shifts the later elements down (`a/b[5]` of a
///   10-element array leaves 9).
/// * `""` and `"/"` replace the whole document by `null` and return the old
///   document (Java's `removeAttribute(group, "/")`).
/// * Absent, or through a value of the wrong kind: `Ok(None)` and the
///   document is unchanged.
///
/// Errors: those of [`parse`].
pub fn remove(doc: &mut Value, path: &str) -> Result<Option<Value>> {
    let tokens = parse(path)?;
    let Some((last, steps)) = tokens.split_last() else {
        return Ok(Some(std::mem::replace(doc, Value::Null)));
    };
    let mut current = doc;
    for token in steps {
        let next = match (token, current) {
            (Token::Key(key), Value::Object(map)) => map.get_mut(key.as_str()),
            (Token::Index(index), Value::Array(array)) => array.get_mut(*index),
            _ => None,
        };
        match next {
            Some(value) => current = value,
            None => return Ok(None),
        }
    }
    Ok(match (last, current) {
        (Token::Key(key), Value::Object(map)) => map.shift_remove(key.as_str()),
        (Token::Index(index), Value::Array(array)) if *index < array.len() => {
            Some(array.remove(*index))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    fn key(k: &str) -> Token {
        Token::Key(k.to_string())
    }

    fn idx(i: usize) -> Token {
        Token::Index(i)
    }

    fn parsed(path: &str) -> Vec<Token> {
        parse(path).unwrap_or_else(|e| panic!("parse({path:?}): {e:?}"))
    }

    fn get_ok<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
        get(doc, path).unwrap_or_else(|e| panic!("get({path:?}): {e:?}"))
    }

    fn set_ok(doc: &mut Value, path: &str, value: Value) {
        set(doc, path, value).unwrap_or_else(|e| panic!("set({path:?}): {e:?}"));
    }

    fn remove_ok(doc: &mut Value, path: &str) -> Option<Value> {
        remove(doc, path).unwrap_or_else(|e| panic!("remove({path:?}): {e:?}"))
    }

    /// Set, then read back through the same path (Java's `addAndTest`), and
    /// check that every earlier (path, value) pair at another location still
    /// reads back.
    fn add_and_test(doc: &mut Value, existing: &mut Vec<(String, Value)>, path: &str, v: Value) {
        set_ok(doc, path, v.clone());
        assert_eq!(get_ok(doc, path), Some(&v), "{path}");
        // Forget earlier entries for the same location (Java compares
        // normalised paths).
        existing.retain(|(p, _)| parsed(p) != parsed(path));
        existing.push((path.to_string(), v));
        for (p, v) in existing.iter() {
            assert_eq!(get_ok(doc, p), Some(v), "earlier {p} in {doc}");
        }
    }

    // ---- parse ----

    #[test]
    fn parse_separators_and_root() {
        for root in [
            "",
            "/",
            "//",
            "/./",
            ".",
            "..",
            "a/..",
            "/a/../b/../c/d/../..",
        ] {
            assert_eq!(parsed(root), vec![], "{root:?}");
        }
        assert_eq!(
            parsed("/a/b/c/d/e/"),
            vec![key("a"), key("b"), key("c"), key("d"), key("e")]
        );
        assert_eq!(parsed("a///b"), vec![key("a"), key("b")]);
        assert_eq!(parsed("./a././././"), vec![key("a.")]);
        assert_eq!(parsed("/./a./\\\\././."), vec![key("a."), key("\\\\.")]);
        assert_eq!(parsed("./a./../\\\\././."), vec![key("\\\\.")]);
        assert_eq!(
            parsed("let's/try/a/real/////case////with spaces/"),
            ["let's", "try", "a", "real", "case", "with spaces"]
                .map(key)
                .to_vec()
        );
        assert_eq!(
            parsed("let's/try/a/some/////with/ /\t//white spaces/"),
            [
                "let's",
                "try",
                "a",
                "some",
                "with",
                " ",
                "\t",
                "white spaces"
            ]
            .map(key)
            .to_vec()
        );
    }

    #[test]
    fn parse_dot_dot() {
        let expected = ["first", "relative", "a", "wd", ".w", "asd"]
            .map(key)
            .to_vec();
        assert_eq!(
            parsed("/../first/relative/test/../a/b/.././wd///.w/asd"),
            expected
        );
        assert_eq!(
            parsed("../first/relative/test/../a/b/.././wd///.w/asd"),
            expected
        );
        assert_eq!(parsed("../result/../only/../single/.."), vec![]);
        assert_eq!(parsed("/../result/../multiple/../.."), vec![]);
        for path in [
            "a/../b",
            "/a/../b",
            "../a/../b",
            "/../a/../b",
            "/../a/../../b",
        ] {
            assert_eq!(parsed(path), vec![key("b")], "{path}");
        }
        // `..` also steps back over an index.
        assert_eq!(parsed("a[0]/.."), vec![key("a")]);
        assert_eq!(parsed("a[0].."), vec![key("a")]);
        assert_eq!(parsed("..[0]"), vec![idx(0)]);
        // Only whole segments are `.`/`..` (Java's regex differs here).
        assert_eq!(parsed("a/..b"), vec![key("a"), key("..b")]);
        assert_eq!(parsed("..x/y"), vec![key("..x"), key("y")]);
        assert_eq!(parsed("a.."), vec![key("a..")]);
        assert_eq!(parsed("a/\\../b"), vec![key("a"), key("\\.."), key("b")]);
    }

    #[test]
    fn parse_indices() {
        assert_eq!(
            parsed("/a/[0]/b[0]/"),
            vec![key("a"), idx(0), key("b"), idx(0)]
        );
        assert_eq!(parsed("[0]"), vec![idx(0)]);
        assert_eq!(parsed("/[0]/"), vec![idx(0)]);
        assert_eq!(parsed("/a[0]/"), vec![key("a"), idx(0)]);
        assert_eq!(parsed("/[0]b/"), vec![idx(0), key("b")]);
        assert_eq!(parsed("a[10]b"), vec![key("a"), idx(10), key("b")]);
        assert_eq!(parsed("[007]"), vec![idx(7)]);
        assert_eq!(parsed("[2147483647]"), vec![idx(2147483647)]);
        let nested = vec![key("array"), idx(1), idx(2), idx(3), key("key2")];
        for path in [
            "/array[1][2]/[3]key2",
            "array[1]/[2][3]/key2",
            "/array/[1]/[2]/[3]/key2",
        ] {
            assert_eq!(parsed(path), nested, "{path}");
        }
        // `[` after an escaped `[` still opens an index; `]` never escapes.
        assert_eq!(parsed("\\[[0]"), vec![key("["), idx(0)]);
        assert_eq!(parsed("a[[0]]"), vec![key("a["), idx(0), key("]")]);
    }

    #[test]
    fn parse_brackets_without_digits_are_key_text() {
        for k in [
            "[b]",
            "a[b]c",
            "a[bc",
            "ab]c",
            "a[b00]c",
            "[]",
            "[-1]",
            "[1x]",
            "[ ]",
            "[\n]",
            "[\t]",
            "[\r\n]",
            "[ ][\n][\t][ \t \n \r\n][\r\n]",
            "]] [] [[",
            "[\\]",
        ] {
            assert_eq!(parsed(k), vec![key(k)], "{k:?}");
        }
        assert_eq!(parsed("[\\n][\\t]"), vec![key("[\\n][\\t]")]);
    }

    #[test]
    fn parse_escapes() {
        assert_eq!(parsed("\\/"), vec![key("/")]);
        assert_eq!(parsed("abc\\/def"), vec![key("abc/def")]);
        assert_eq!(parsed("\\[0]"), vec![key("[0]")]);
        assert_eq!(parsed("[\\[2]\\[33]]"), vec![key("[[2][33]]")]);
        assert_eq!(parsed("\\\\"), vec![key("\\\\")]);
        assert_eq!(parsed("escaped\\[0\\]"), vec![key("escaped[0\\]")]);
        assert_eq!(parsed("escaped\\/slash"), vec![key("escaped/slash")]);
        assert_eq!(parsed("\\/z\\/y\\/x"), vec![key("/z/y/x")]);
        assert_eq!(parsed("\\/l\\/m\\[10]\\/n"), vec![key("/l/m[10]/n")]);
        assert_eq!(parsed("\\/a\\/b/key2"), vec![key("/a/b"), key("key2")]);
        assert_eq!(
            parsed("a\\b\\c/b\\[10]\\c/c"),
            vec![key("a\\b\\c"), key("b[10]\\c"), key("c")]
        );
        // A backslash escapes only the character right after it.
        assert_eq!(parsed("a\\\\/b"), vec![key("a\\/b")]);
        assert_eq!(parsed("a\\\\[0]"), vec![key("a\\[0]")]);
        assert_eq!(parsed("a\\"), vec![key("a\\")]);
        assert_eq!(parsed("a\\//b"), vec![key("a/"), key("b")]);
        assert_eq!(parsed("\\/[0]"), vec![key("/"), idx(0)]);
        assert_eq!(parsed("a\\/b/.."), vec![]);
        // Whitespace and non-ASCII are plain key text.
        for k in [
            " ",
            "\n",
            "\t",
            "\r\n",
            " \n\t \t \n \r\n\r\n",
            "日本語",
            "Grüße 🧪",
        ] {
            assert_eq!(parsed(k), vec![key(k)], "{k:?}");
        }
        assert_eq!(
            parsed("unicode/日本語[1]"),
            vec![key("unicode"), key("日本語"), idx(1)]
        );
    }

    // ---- errors and limits ----

    #[test]
    fn index_overflow_is_invalid_argument() {
        for path in [
            "a[99999999999]",
            "[2147483648]",
            "a/[18446744073709551616]/b",
            "x[999999999999999999999999999999]",
        ] {
            let err = parse(path).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{path}");
            assert!(err.message().contains(path), "{}", err.message());
            let mut doc = json!({"a": [1]});
            assert_eq!(
                get(&doc, path).unwrap_err().kind(),
                ErrorKind::InvalidArgument
            );
            assert_eq!(
                set(&mut doc, path, json!(1)).unwrap_err().kind(),
                ErrorKind::InvalidArgument
            );
            assert_eq!(
                remove(&mut doc, path).unwrap_err().kind(),
                ErrorKind::InvalidArgument
            );
            assert_eq!(doc, json!({"a": [1]}));
        }
    }

    #[test]
    fn array_growth_is_capped() {
        let original = json!({"a": [1, 2], "s": "x"});
        let max = MAX_ARRAY_LEN;
        for path in [
            format!("a[{max}]"),
            // A 20-byte path must not pad an array with a million nulls
            // (72 MB): fuzz/regressions/attributes/.
            "pixelResons[1000000]".to_string(),
            "a[2147483647]".to_string(),
            "b[20000000]".to_string(),
            format!("s[{max}]"),
            format!("a[1]/x[{max}]/y"),
            format!("[{max}]"),
            format!("c[0][{max}]"),
        ] {
            let mut doc = original.clone();
            let err = set(&mut doc, &path, json!(1)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{path}");
            assert!(err.message().contains(&path), "{}", err.message());
            assert_eq!(doc, original, "{path} must leave the document unchanged");
            // Reading and removing far indices is harmless.
            assert_eq!(get_ok(&doc, &path), None);
            assert_eq!(remove_ok(&mut doc, &path), None);
        }
        // An index below a replaced value does not count existing elements.
        let mut doc = json!({"a": "not an array"});
        assert!(set(&mut doc, &format!("a[{max}]"), json!(1)).is_err());
        // The largest allowed index works.
        let mut doc = json!({});
        set_ok(&mut doc, &format!("big[{}]", max - 1), json!(true));
        assert_eq!(doc["big"].as_array().map(Vec::len), Some(max));
        assert_eq!(doc["big"][max - 2], Value::Null);
        // An existing array longer than the limit can be written in bounds.
        let mut doc = json!({"long": vec![0u8; max + 2]});
        set_ok(&mut doc, &format!("long[{}]", max + 1), json!(5));
        assert!(set(&mut doc, &format!("long[{}]", max + 2), json!(5)).is_err());
        assert_eq!(remove_ok(&mut doc, &format!("long[{max}]")), Some(json!(0)));
    }

    // ---- get ----

    #[test]
    fn get_absent_and_wrong_kind() {
        let doc = json!({"a": {"b": [1, null, {"c": "x"}]}, "s": "str", "n": null});
        assert_eq!(get_ok(&doc, "a/b[2]/c"), Some(&json!("x")));
        assert_eq!(get_ok(&doc, "a/b[1]"), Some(&Value::Null));
        assert_eq!(get_ok(&doc, "n"), Some(&Value::Null));
        assert_eq!(get_ok(&doc, "a/b[3]"), None);
        assert_eq!(get_ok(&doc, "a/x"), None);
        assert_eq!(get_ok(&doc, "a[0]"), None);
        assert_eq!(get_ok(&doc, "a/b/c"), None);
        assert_eq!(get_ok(&doc, "s/x"), None);
        assert_eq!(get_ok(&doc, "s[0]"), None);
        assert_eq!(get_ok(&doc, "n/x"), None);
        assert_eq!(get_ok(&doc, "/this/key/does/not/exist"), None);
        assert_eq!(get_ok(&doc, ""), Some(&doc));
        assert_eq!(get_ok(&doc, "/"), Some(&doc));
        assert_eq!(get_ok(&json!(3), "[0]"), None);
        assert_eq!(get_ok(&json!([5, 6]), "[1]"), Some(&json!(6)));
    }

    // ---- Java testAttributes ----

    #[test]
    fn attributes_set_overwrite_and_null() {
        let mut doc = json!({});
        assert_eq!(get_ok(&doc, "test"), None);
        set_ok(&mut doc, "key1", json!("value1"));
        assert_eq!(doc, json!({"key1": "value1"}));
        set_ok(&mut doc, "key2", json!("value2"));
        set_ok(&mut doc, "key3", json!("value3"));
        assert_eq!(doc.as_object().map(Map::len), Some(3));
        // Overwriting keeps each key's position.
        set_ok(&mut doc, "key1", json!(1));
        set_ok(&mut doc, "key2", json!(2));
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"key1":1,"key2":2,"key3":"value3"}"#
        );
        // A null is stored (serializeNulls), and reads back as a present null.
        set_ok(&mut doc, "key1", Value::Null);
        assert_eq!(get_ok(&doc, "key1"), Some(&Value::Null));
        assert_eq!(doc, json!({"key1": null, "key2": 2, "key3": "value3"}));
    }

    // ---- Java testNullAttributes (serializeNulls) ----

    #[test]
    fn null_attributes() {
        let mut doc = json!({});
        set_ok(&mut doc, "nullValue", Value::Null);
        assert_eq!(get_ok(&doc, "nullValue"), Some(&Value::Null));
        set_ok(&mut doc, "anotherNullValue", Value::Null);
        set_ok(&mut doc, "structured/nullValue", Value::Null);
        set_ok(&mut doc, "implicitNulls[3]", Value::Null);
        assert_eq!(get_ok(&doc, "anotherNullValue"), Some(&Value::Null));
        assert_eq!(get_ok(&doc, "structured/nullValue"), Some(&Value::Null));
        assert_eq!(get_ok(&doc, "implicitNulls[3]"), Some(&Value::Null));
        // Padding before a null value is null.
        assert_eq!(get_ok(&doc, "implicitNulls[1]"), Some(&Value::Null));
        assert_eq!(doc["implicitNulls"], json!([null, null, null, null]));
        // Truly absent values are None, not null.
        assert_eq!(get_ok(&doc, "implicitNulls[10]"), None);
        assert_eq!(get_ok(&doc, "keyDoesn'tExist"), None);
        // An existing value is overwritten by null.
        set_ok(&mut doc, "existingValue", json!(1));
        set_ok(&mut doc, "existingValue", Value::Null);
        assert_eq!(get_ok(&doc, "existingValue"), Some(&Value::Null));
        // A path through a null replaces it with a structure.
        set_ok(&mut doc, "nullValue/inner", json!(2));
        assert_eq!(doc["nullValue"], json!({"inner": 2}));
        set_ok(&mut doc, "anotherNullValue[1]", json!(2));
        assert_eq!(doc["anotherNullValue"], json!([0, 2]));
    }

    // ---- Java testAttributePaths ----

    #[test]
    fn attribute_paths() {
        let mut doc = json!({});
        let mut existing = Vec::new();
        let t = &mut existing;

        add_and_test(&mut doc, t, "/a/b/c/key1", json!("value1"));
        add_and_test(&mut doc, t, "/a/b/key2", json!("value2"));
        add_and_test(&mut doc, t, "/a/b/c/key1", json!("new_value1"));

        add_and_test(&mut doc, t, "/array[0]/b/c/key1", json!("array_value1"));
        add_and_test(&mut doc, t, "/array[0]/b/c/key1", json!("new_array_value1"));
        add_and_test(&mut doc, t, "/array[0]/d[3]/key2", json!("array_value2"));
        add_and_test(&mut doc, t, "/array[1][2]/[3]key2", json!("array2_value2"));
        // Syntax variants of one path.
        add_and_test(&mut doc, t, "/array[1][2]/[3]key2", json!("array3_value3"));
        add_and_test(&mut doc, t, "array[1]/[2][3]/key2", json!("array3_value4"));
        add_and_test(
            &mut doc,
            t,
            "/array/[1]/[2]/[3]/key2",
            json!("array3_value5"),
        );
        assert_eq!(
            get_ok(&doc, "/array[1][2]/[3]key2"),
            Some(&json!("array3_value5"))
        );
        // Intermediate arrays are padded with null, whatever the value.
        assert_eq!(
            doc["array"][0]["d"],
            json!([null, null, null, {"key2": "array_value2"}])
        );
        assert_eq!(
            doc["array"][1],
            json!([null, null, [null, null, null, {"key2": "array3_value5"}]])
        );

        // Whitespace keys.
        add_and_test(&mut doc, t, " ", json!("space"));
        add_and_test(&mut doc, t, "\n", json!("newline"));
        add_and_test(&mut doc, t, "\t", json!("tab"));
        add_and_test(&mut doc, t, "\r\n", json!("windows_newline"));
        add_and_test(&mut doc, t, " \n\t \t \n \r\n\r\n", json!("mixed"));
        // Brackets around non-digits are keys.
        add_and_test(&mut doc, t, "[ ]", json!("space"));
        add_and_test(&mut doc, t, "[\n]", json!("newline"));
        add_and_test(&mut doc, t, "[\t]", json!("tab"));
        add_and_test(&mut doc, t, "[\r\n]", json!("windows_newline"));
        add_and_test(
            &mut doc,
            t,
            "[ ][\n][\t][ \t \n \r\n][\r\n]",
            json!("mixed"),
        );
        add_and_test(
            &mut doc,
            t,
            "[ ][\\n][\\t][ \\t \\n \\r\\n][\\r\\n]",
            json!("mixed"),
        );
        add_and_test(&mut doc, t, "[\\]", json!("backslash"));
        assert_eq!(doc[" "], json!("space"));
        assert_eq!(doc["[\\]"], json!("backslash"));

        // Non-string values.
        add_and_test(&mut doc, t, "/an/integer/test", json!(1));
        add_and_test(&mut doc, t, "/a/double/test", json!(1.0));
        add_and_test(&mut doc, t, "/a/float/test", json!(1.0f32));
        add_and_test(&mut doc, t, "/a/boolean/test", json!(true));
        // Overwrite a structure: `boolean` becomes an array.
        t.retain(|(p, _)| p != "/a/boolean/test");
        add_and_test(&mut doc, t, "/a/boolean[2]/test", json!(true));
        assert_eq!(doc["a"]["boolean"], json!([null, null, {"test": true}]));
        assert_eq!(get_ok(&doc, "/a/boolean/test"), None);

        // Fill an array with numbers: padding is 0.
        add_and_test(&mut doc, t, "/filled/double_array[5]", json!(5.0));
        add_and_test(&mut doc, t, "/filled/double_array[1]", json!(1.0));
        add_and_test(&mut doc, t, "/filled/double_array[2]", json!(2.0));
        add_and_test(&mut doc, t, "/filled/double_array[4]", json!(4.0));
        add_and_test(&mut doc, t, "/filled/double_array[0]", json!(0.0));
        assert_eq!(get_ok(&doc, "/filled/double_array[3]"), Some(&json!(0)));
        assert_eq!(
            serde_json::to_string(&doc["filled"]["double_array"]).unwrap(),
            "[0.0,1.0,2.0,0,4.0,5.0]"
        );

        // Fill an array with objects: padding is null.
        add_and_test(&mut doc, t, "/filled/string_array[5]", json!("f"));
        add_and_test(&mut doc, t, "/filled/string_array[1]", json!("b"));
        add_and_test(&mut doc, t, "/filled/string_array[2]", json!("c"));
        add_and_test(&mut doc, t, "/filled/string_array[4]", json!("e"));
        add_and_test(&mut doc, t, "/filled/string_array[0]", json!("a"));
        assert_eq!(get_ok(&doc, "/filled/string_array[3]"), Some(&Value::Null));

        // Paths are relative to the root, whose parent is the root.
        let equivalent = [
            "/keyAtRoot",
            "keyAtRoot",
            "./keyAtRoot",
            "././keyAtRoot",
            "../keyAtRoot",
            "/../keyAtRoot",
            "/../../keyAtRoot",
            "/../bye/../keyAtRoot",
        ];
        set_ok(&mut doc, equivalent[0], json!(0));
        for (i, path) in equivalent.iter().enumerate().skip(1) {
            assert_eq!(get_ok(&doc, path), Some(&json!(i - 1)), "{path}");
            set_ok(&mut doc, path, json!(i));
            assert_eq!(get_ok(&doc, equivalent[0]), Some(&json!(i)), "{path}");
        }
        assert_eq!(doc["keyAtRoot"], json!(7));
        assert_eq!(get_ok(&doc, "bye"), None);

        // Escaped separators make opaque keys.
        set_ok(&mut doc, "\\/z\\/y\\/x", json!(10));
        set_ok(&mut doc, "q\\/r\\/t", json!(11));
        set_ok(&mut doc, "\\/l\\/m\\[10]\\/n", json!(12));
        set_ok(&mut doc, "\\/", json!(13));
        set_ok(&mut doc, "\\/a\\/b/key2", json!("value2"));
        assert_eq!(get_ok(&doc, "\\/z\\/y\\/x"), Some(&json!(10)));
        assert_eq!(get_ok(&doc, "q\\/r\\/t"), Some(&json!(11)));
        assert_eq!(get_ok(&doc, "\\/l\\/m\\[10]\\/n"), Some(&json!(12)));
        assert_eq!(get_ok(&doc, "\\/"), Some(&json!(13)));
        assert_eq!(doc["/z/y/x"], json!(10));
        assert_eq!(doc["/l/m[10]/n"], json!(12));
        assert_eq!(doc["/a/b"], json!({"key2": "value2"}));
        assert_eq!(get_ok(&doc, ""), get_ok(&doc, "/"));
        assert_eq!(get_ok(&doc, "/this/key/does/not/exist"), None);
    }

    // ---- Java testAttributePathEscaping ----

    #[test]
    fn attribute_path_escaping() {
        // (path, resulting key)
        let cases = [
            ("\\/", "/"),
            ("abc\\/def", "abc/def"),
            ("\\[0]", "[0]"),
            ("]] [] [[", "]] [] [["),
            ("]] \\[] \\[\\[", "]] [] [["),
            ("[\\[2]\\[33]]", "[[2][33]]"),
            ("\\\\", "\\\\"),
        ];
        for (path, k) in cases {
            let mut doc = json!({});
            set_ok(&mut doc, path, json!("dataString"));
            assert_eq!(get_ok(&doc, path), Some(&json!("dataString")), "{path}");
            let mut expected = Map::new();
            expected.insert(k.to_string(), json!("dataString"));
            assert_eq!(doc, Value::Object(expected), "{path}");
            // The key shows up in the serialised document as Java expects.
            let text = serde_json::to_string(&doc).unwrap();
            let pair = format!("{}:\"dataString\"", serde_json::to_string(k).unwrap());
            assert!(text.contains(&pair), "{text} lacks {pair}");
            // Clearing the root.
            set_ok(&mut doc, "/", json!({}));
            assert_eq!(doc, json!({}));
        }
        // The two-backslash key is written as four backslashes in JSON text.
        let mut doc = json!({});
        set_ok(&mut doc, "\\\\", json!("dataString"));
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"\\\\":"dataString"}"#
        );
    }

    // ---- Java testRemoveAttributes ----

    #[test]
    fn remove_attributes() {
        let mut doc = json!({});
        set_ok(&mut doc, "a/b/c", json!(100));
        assert_eq!(get_ok(&doc, "a/b/c"), Some(&json!(100)));
        assert_eq!(remove_ok(&mut doc, "a/b/c"), Some(json!(100)));
        assert_eq!(get_ok(&doc, "a/b/c"), None);
        assert_eq!(doc, json!({"a": {"b": {}}}));
        assert_eq!(remove_ok(&mut doc, "a/b/c"), None);

        // Non-leaf.
        set_ok(&mut doc, "a/b/c", json!(100));
        assert_eq!(remove_ok(&mut doc, "a/b"), Some(json!({"c": 100})));
        assert_eq!(get_ok(&doc, "a/b/c"), None);
        assert_eq!(get_ok(&doc, "a/b"), None);

        // Keys that need escapes.
        let escaped = "a\\b\\c/b\\[10]\\c/c";
        set_ok(&mut doc, escaped, json!(100));
        assert_eq!(get_ok(&doc, escaped), Some(&json!(100)));
        assert_eq!(doc["a\\b\\c"]["b[10]\\c"]["c"], json!(100));
        assert_eq!(remove_ok(&mut doc, escaped), Some(json!(100)));
        assert_eq!(get_ok(&doc, escaped), None);

        // Array elements shift.
        set_ok(&mut doc, "a/b[9]", json!(10));
        assert_eq!(get_ok(&doc, "a/b[9]"), Some(&json!(10)));
        assert_eq!(get_ok(&doc, "a/b[8]"), Some(&json!(0)));
        assert_eq!(remove_ok(&mut doc, "a/b[5]"), Some(json!(0)));
        assert_eq!(doc["a"]["b"].as_array().map(Vec::len), Some(9));
        assert_eq!(get_ok(&doc, "a/b[5]"), Some(&json!(0)));
        assert_eq!(get_ok(&doc, "a/b[8]"), Some(&json!(10)));
        assert_eq!(remove_ok(&mut doc, "a/b[8]"), Some(json!(10)));
        assert_eq!(doc["a"]["b"].as_array().map(Vec::len), Some(8));
        assert_eq!(get_ok(&doc, "a/b[8]"), None);
        assert_eq!(remove_ok(&mut doc, "a/b[8]"), None);
        assert!(remove_ok(&mut doc, "a/b").is_some());
        assert_eq!(get_ok(&doc, "a/b[9]"), None);
        assert_eq!(get_ok(&doc, "a/b"), None);

        // Setting null stores null; removing takes it away.
        set_ok(&mut doc, "a/b/c", json!(100));
        set_ok(&mut doc, "a/b/c", Value::Null);
        assert_eq!(get_ok(&doc, "a/b/c"), Some(&Value::Null));
        assert_eq!(remove_ok(&mut doc, "a/b/c"), Some(Value::Null));
        assert_eq!(get_ok(&doc, "a/b/c"), None);

        // Several removals, some absent.
        set_ok(&mut doc, "a/b/c", json!(100));
        set_ok(&mut doc, "a/b/d", json!("test"));
        set_ok(&mut doc, "a/c[9]", json!(10));
        set_ok(&mut doc, "a/c[5]", json!(5));
        let removed: Vec<bool> = ["a/b/c", "a/b/d", "a/x[5]", "X/b/c", "a/c[5]"]
            .iter()
            .map(|p| remove_ok(&mut doc, p).is_some())
            .collect();
        assert_eq!(removed, [true, true, false, false, true]);
        assert_eq!(doc["a"]["c"].as_array().map(Vec::len), Some(9));
        assert_eq!(get_ok(&doc, "a/c[8]"), Some(&json!(10)));
        assert_eq!(get_ok(&doc, "a/c[5]"), Some(&json!(0)));

        // Removal through the wrong kind is absent and changes nothing.
        let before = doc.clone();
        assert_eq!(remove_ok(&mut doc, "a/c/x"), None);
        assert_eq!(remove_ok(&mut doc, "a[0]"), None);
        assert_eq!(remove_ok(&mut doc, "a/c[1]/x"), None);
        assert_eq!(remove_ok(&mut doc, "a/c[100]/x"), None);
        assert_eq!(doc, before);

        // Path normalisation.
        set_ok(&mut doc, "a/b/c", json!(100));
        assert_eq!(remove_ok(&mut doc, "a////b/x/../c"), Some(json!(100)));
        assert_eq!(get_ok(&doc, "a/b/c"), None);
    }

    #[test]
    fn remove_keeps_key_order() {
        let mut doc: Value = serde_json::from_str(r#"{"z":1,"y":2,"x":3,"w":4}"#).unwrap();
        assert_eq!(remove_ok(&mut doc, "y"), Some(json!(2)));
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"z":1,"x":3,"w":4}"#
        );
    }

    #[test]
    fn remove_root() {
        for path in ["", "/", ".", "a/.."] {
            let mut doc = json!({"a": 1});
            assert_eq!(remove_ok(&mut doc, path), Some(json!({"a": 1})), "{path:?}");
            assert_eq!(doc, Value::Null);
        }
        let mut doc = json!([1, 2, 3]);
        assert_eq!(remove_ok(&mut doc, "[0]"), Some(json!(1)));
        assert_eq!(doc, json!([2, 3]));
        let mut doc = json!("s");
        assert_eq!(remove_ok(&mut doc, "a"), None);
        assert_eq!(doc, json!("s"));
    }

    // ---- Java testRootLeaves ----

    #[test]
    fn root_leaves() {
        let mut doc = json!({});
        set_ok(&mut doc, "/", json!("String"));
        assert_eq!(get_ok(&doc, "/"), Some(&json!("String")));
        set_ok(&mut doc, "/", json!(0));
        assert_eq!(get_ok(&doc, "/"), Some(&json!(0)));
        set_ok(&mut doc, "/", json!(true));
        assert_eq!(get_ok(&doc, "/"), Some(&json!(true)));
        set_ok(&mut doc, "/", Value::Null);
        assert_eq!(get_ok(&doc, "/"), Some(&Value::Null));
        assert_eq!(doc, Value::Null);
        // An index path on a null root makes the root an array.
        set_ok(&mut doc, "[5]", json!("array"));
        assert_eq!(doc, json!([null, null, null, null, null, "array"]));
        assert_eq!(get_ok(&doc, "[5]"), Some(&json!("array")));
        assert_eq!(get_ok(&doc, "[3]"), Some(&Value::Null));
        assert_eq!(get_ok(&doc, "[10]"), None);

        // Each root form on a fresh document, then all on one document.
        let tests = [
            ("", "empty_root"),
            ("/", "replace_empty_root"),
            ("[0]", "array_root"),
        ];
        for (path, v) in tests {
            let mut doc = json!({});
            set_ok(&mut doc, path, json!(v));
            assert_eq!(get_ok(&doc, path), Some(&json!(v)), "{path:?}");
        }
        let mut doc = json!({});
        for (path, v) in tests {
            set_ok(&mut doc, path, json!(v));
            assert_eq!(get_ok(&doc, path), Some(&json!(v)), "{path:?}");
        }
        assert_eq!(doc, json!(["array_root"]));

        // Replacing a structured root by a leaf, and a leaf by a structure.
        for (path, v) in [("", 200), ("/", 300)] {
            let mut doc = json!({});
            set_ok(&mut doc, "/some/non/leaf[3]/structure", json!(100));
            assert_eq!(
                get_ok(&doc, "/some/non/leaf[3]/structure"),
                Some(&json!(100))
            );
            set_ok(&mut doc, path, json!(v));
            assert_eq!(get_ok(&doc, "/some/non/leaf[3]/structure"), None);
            assert_eq!(get_ok(&doc, path), Some(&json!(v)));
            assert_eq!(doc, json!(v));
            set_ok(&mut doc, "k", json!(1));
            assert_eq!(doc, json!({"k": 1}));
        }

        // An array root is written into, not replaced, by an index path.
        let mut doc = json!([7, 8, 9]);
        set_ok(&mut doc, "[1]", json!("v"));
        assert_eq!(doc, json!([7, "v", 9]));
        // A key path replaces an array root.
        set_ok(&mut doc, "k", json!(1));
        assert_eq!(doc, json!({"k": 1}));
    }

    // ---- Java customObjectTest ----

    #[test]
    fn custom_objects_in_arrays() {
        let object = |name: &str, data: [f64; 3]| json!({"name": name, "data": data});
        let d1 = object("doubles1", [5.7, 4.5, 3.4]);
        let d2 = object("doubles2", [5.8, 4.6, 3.5]);
        let d3 = object("doubles3", [5.9, 4.7, 3.6]);
        let d4 = object("doubles4", [5.10, 4.8, 3.7]);
        let mut doc = json!({});
        let mut existing = Vec::new();
        add_and_test(&mut doc, &mut existing, "/doubles[1]", d1);
        add_and_test(&mut doc, &mut existing, "/doubles[2]", d2.clone());
        add_and_test(&mut doc, &mut existing, "/doubles[3]", d3.clone());
        add_and_test(&mut doc, &mut existing, "/doubles[4]", d4.clone());
        add_and_test(&mut doc, &mut existing, "/doubles[1]", d4.clone());
        assert_eq!(doc, json!({"doubles": [null, d4, d2, d3, d4]}));
    }

    // ---- set details ----

    #[test]
    fn set_through_primitives_and_mismatched_containers() {
        let mut doc = json!({"p": 1, "arr": [1, 2], "obj": {"k": 1}});
        set_ok(&mut doc, "p/x", json!(2));
        assert_eq!(doc["p"], json!({"x": 2}));
        set_ok(&mut doc, "arr/x", json!(3));
        assert_eq!(doc["arr"], json!({"x": 3}));
        set_ok(&mut doc, "obj[1]", json!(4));
        assert_eq!(doc["obj"], json!([0, 4]));
        // A compatible existing container is kept and extended.
        set_ok(&mut doc, "obj[3]", json!("s"));
        assert_eq!(doc["obj"], json!([0, 4, null, "s"]));
        // Setting inside an existing array element does not pad.
        set_ok(&mut doc, "obj[0]", json!(9));
        assert_eq!(doc["obj"], json!([9, 4, null, "s"]));
        // Key order: replaced keys keep their place.
        assert_eq!(
            doc.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["p", "arr", "obj"]
        );
        // Big numbers stay exact (arbitrary_precision).
        let big: Value = serde_json::from_str("18446744073709551615").unwrap();
        set_ok(&mut doc, "u[2]", big);
        assert_eq!(
            serde_json::to_string(&doc["u"]).unwrap(),
            "[0,0,18446744073709551615]"
        );
    }

    // ---- replay of what Java wrote into the corpus ----

    /// Drop object members whose value is null, at any depth, keeping nulls
    /// inside arrays: what Java's default Gson (no `serializeNulls`) does
    /// when it writes attributes.json.
    fn drop_null_members(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.retain(|_, v| !v.is_null());
                map.values_mut().for_each(drop_null_members);
            }
            Value::Array(array) => array.iter_mut().for_each(drop_null_members),
            _ => {}
        }
    }

    fn contains_null(value: &Value) -> bool {
        match value {
            Value::Null => true,
            Value::Object(map) => map.values().any(contains_null),
            Value::Array(array) => array.iter().any(contains_null),
            _ => false,
        }
    }

    #[test]
    fn java_attribute_path_ops_replay() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/corpus/manifest.json"
        );
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let manifest: Value = serde_json::from_str(&text).unwrap();
        let ops = manifest["java_attribute_path_ops"]["ops"]
            .as_array()
            .expect("ops");

        let mut doc = json!({});
        let mut any_null = false;
        let mut replayed = 0;
        for op in ops {
            let [group, attr_path, value] = op.as_array().expect("op").as_slice() else {
                panic!("op {op} is not [group, path, value]");
            };
            if group != "attrpaths" {
                continue;
            }
            let attr_path = attr_path.as_str().expect("path");
            any_null |= contains_null(value);
            set_ok(&mut doc, attr_path, value.clone());
            replayed += 1;
        }
        assert!(replayed >= 15, "only {replayed} ops for group attrpaths");

        // Java's Gson writes without serializeNulls, so null object members
        // vanish from its file. The current ops hold no null values (the only
        // null in the result is array padding, which Java keeps), so this is
        // a no-op unless the corpus gains null-valued ops.
        if any_null {
            drop_null_members(&mut doc);
        }

        let java = manifest["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .find(|g| g["container"] == "java-n5.n5" && g["path"] == "attrpaths")
            .expect("group attrpaths of java-n5.n5")["attributes"]
            .clone();
        assert_eq!(doc, java);
        // Same key order too, and the same as the file Java wrote.
        let on_disk = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/corpus/java-n5.n5/attrpaths/attributes.json"
        );
        let file: Value = serde_json::from_str(&std::fs::read_to_string(on_disk).unwrap()).unwrap();
        assert_eq!(doc, file);
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            serde_json::to_string(&file).unwrap()
        );
        assert_eq!(doc["arr"], json!([0, 0, 0, 7]));
        assert_eq!(doc["matrix"], json!([null, [0, 0, 5]]));
        assert_eq!(doc["escaped[0\\]"], json!("key contains brackets"));
    }
}
