//! The XML of S3 answers: ListObjectsV2 pages (keys, common prefixes,
//! continuation) and the `<Region>` of a region error. Parsing is streaming
//! (quick-xml: no DTD, no external entities) and bounded: a page holds at
//! most [`MAX_PAGE_ENTRIES`] entries, a name at most [`MAX_TEXT`] bytes,
//! elements nest at most [`MAX_DEPTH`] deep, and nothing is allocated by a
//! number found in the answer.

use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::Event;
use quick_xml::Reader;

use crate::storage::bucket::Page;
use crate::storage::http::percent_decode;

/// The most entries (keys and common prefixes) one listing page may hold;
/// S3 sends at most 1,000.
pub const MAX_PAGE_ENTRIES: usize = 10_000;

/// The longest text of one element kept (S3 keys have at most 1,024
/// bytes, three times that when URL-encoded).
pub const MAX_TEXT: usize = 16 << 10;

/// The deepest nesting of elements accepted.
pub const MAX_DEPTH: usize = 16;

/// What a leaf element's text is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Key,
    Prefix,
    IsTruncated,
    NextToken,
    EncodingType,
}

/// The field the element path `path` (below the document element) holds.
fn field(path: &[String]) -> Option<Field> {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    match path[..] {
        ["Contents", "Key"] => Some(Field::Key),
        ["CommonPrefixes", "Prefix"] => Some(Field::Prefix),
        ["IsTruncated"] => Some(Field::IsTruncated),
        ["NextContinuationToken"] => Some(Field::NextToken),
        ["EncodingType"] => Some(Field::EncodingType),
        _ => None,
    }
}

/// Parse a ListObjectsV2 answer: the object keys (`Contents/Key`) and
/// common prefixes (`CommonPrefixes/Prefix`), decoded, and the
/// continuation token; the error says what is wrong with it.
pub fn parse_page(body: &[u8]) -> Result<Page, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("not UTF-8 ({e})"))?;
    let mut reader = Reader::from_str(text);
    let mut path: Vec<String> = Vec::new();
    let mut root_seen = false;
    let mut current: Option<(Field, String)> = None;
    let (mut keys, mut prefixes) = (Vec::new(), Vec::new());
    let (mut truncated, mut token, mut url_encoded) = (None, None, false);
    loop {
        let event = reader.read_event().map_err(|e| {
            format!(
                "not well-formed XML at byte {} ({e})",
                reader.buffer_position()
            )
        })?;
        match event {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_string();
                if !root_seen {
                    if name != "ListBucketResult" {
                        return Err(format!(
                            "the document element is <{}>, not <ListBucketResult>",
                            short(&name)
                        ));
                    }
                    root_seen = true;
                    continue;
                }
                if path.len() + 1 >= MAX_DEPTH {
                    return Err(format!("elements nest deeper than {MAX_DEPTH}"));
                }
                path.push(name);
                current = field(&path).map(|f| (f, String::new()));
            }
            // An empty leaf (`<Key/>`) names nothing useful.
            Event::Empty(_) if root_seen => {}
            Event::Empty(_) => return Err("the document element is empty".into()),
            Event::Text(t) => append(&mut current, &t.xml10_content())?,
            Event::CData(t) => append(&mut current, &t.xml10_content())?,
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => resolve_predefined_entity(&r)
                        .ok_or_else(|| {
                            // At most 32 characters of it, cut at a
                            // character boundary, escaped.
                            let name: String = r.chars().take(32).collect();
                            format!("unknown entity &{};", name.escape_debug())
                        })?
                        .to_string(),
                    Err(e) => return Err(format!("bad character reference ({e})")),
                };
                append(&mut current, &resolved)?;
            }
            Event::End(_) => {
                if path.is_empty() {
                    // The end of the document element.
                    root_seen = true;
                    break;
                }
                if let Some((f, value)) = current.take() {
                    match f {
                        Field::Key | Field::Prefix => {
                            count(&keys, &prefixes)?;
                            if f == Field::Key {
                                keys.push(value);
                            } else {
                                prefixes.push(value);
                            }
                        }
                        Field::IsTruncated => {
                            truncated = Some(match value.trim() {
                                "true" => true,
                                "false" => false,
                                other => return Err(format!("IsTruncated is '{}'", short(other))),
                            })
                        }
                        Field::NextToken => token = Some(value),
                        Field::EncodingType => url_encoded = value.trim() == "url",
                    }
                }
                path.pop();
            }
            Event::Eof => break,
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_) => {}
        }
    }
    if !root_seen {
        return Err("no <ListBucketResult> element".into());
    }
    if !path.is_empty() {
        return Err("the document ends inside an element".into());
    }
    let next = match (truncated, token) {
        (Some(true), Some(t)) if !t.is_empty() => Some(t),
        (Some(true), _) => {
            return Err("IsTruncated is true but there is no NextContinuationToken".into())
        }
        _ => None,
    };
    if url_encoded {
        keys = keys
            .iter()
            .map(|k| url_decode(k))
            .collect::<Result<_, _>>()?;
        prefixes = prefixes
            .iter()
            .map(|p| url_decode(p))
            .collect::<Result<_, _>>()?;
    }
    Ok(Page {
        names: keys,
        prefixes,
        next,
    })
}

fn count(keys: &[String], prefixes: &[String]) -> Result<(), String> {
    if keys.len() + prefixes.len() >= MAX_PAGE_ENTRIES {
        return Err(format!(
            "more than {MAX_PAGE_ENTRIES} keys and prefixes in one page"
        ));
    }
    Ok(())
}

fn append(current: &mut Option<(Field, String)>, text: &str) -> Result<(), String> {
    if let Some((_, value)) = current {
        if value.len() + text.len() > MAX_TEXT {
            return Err(format!("a name longer than {MAX_TEXT} bytes"));
        }
        value.push_str(text);
    }
    Ok(())
}

/// A name of a listing asked for with `encoding-type=url`: `+` is a space
/// (as S3 encodes it, and as the AWS SDKs decode it), `%XX` a byte.
fn url_decode(s: &str) -> Result<String, String> {
    percent_decode(&s.replace('+', " "), "listing")
        .map_err(|_| format!("the key '{}' is not URL-encoded UTF-8", short(s)))
}

fn short(s: &str) -> &str {
    match s.char_indices().nth(64) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The region an S3 error body names (`<Region>eu-west-1</Region>`), when
/// it is a plausible region name.
pub fn error_region(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(&body[..body.len().min(64 << 10)]).ok()?;
    let start = text.find("<Region>")? + "<Region>".len();
    let end = text[start..].find("</Region>")? + start;
    let region = text[start..end].trim();
    super::valid_region(region).then(|| region.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = r#"xmlns="http://s3.amazonaws.com/doc/2006-03-01/""#;

    #[test]
    fn pages_of_aws_and_seaweedfs() {
        let body = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult {NS}><Name>b</Name><Prefix>x.n5/</Prefix><KeyCount>3</KeyCount>
<MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>
<Contents><Key>x.n5/</Key><Size>0</Size><ETag>"d41d"</ETag></Contents>
<Contents><Key>x.n5/attributes.json</Key><Size>99999999999999999999</Size></Contents>
<CommonPrefixes><Prefix>x.n5/a/</Prefix></CommonPrefixes>
<CommonPrefixes><Prefix>x.n5/b&amp;c/</Prefix></CommonPrefixes>
<NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>"#
        );
        let page = parse_page(body.as_bytes()).unwrap();
        assert_eq!(page.names, ["x.n5/", "x.n5/attributes.json"]);
        assert_eq!(page.prefixes, ["x.n5/a/", "x.n5/b&c/"]);
        assert_eq!(page.next.as_deref(), Some("tok/+="));

        let last = "<ListBucketResult><IsTruncated>false</IsTruncated><NextContinuationToken>x</NextContinuationToken></ListBucketResult>";
        assert_eq!(parse_page(last.as_bytes()).unwrap(), Page::default());
        let bare = "<ListBucketResult/>";
        assert!(parse_page(bare.as_bytes()).is_err());
        assert_eq!(
            parse_page(b"<ListBucketResult></ListBucketResult>").unwrap(),
            Page::default()
        );
    }

    #[test]
    fn url_encoded_names_are_decoded() {
        let body = "<ListBucketResult><EncodingType>url</EncodingType>\
            <Contents><Key>a+b/%C3%BC%2Bx</Key></Contents>\
            <CommonPrefixes><Prefix>d%20e/</Prefix></CommonPrefixes></ListBucketResult>";
        let page = parse_page(body.as_bytes()).unwrap();
        assert_eq!(page.names, ["a b/ü+x"]);
        assert_eq!(page.prefixes, ["d e/"]);
        // Without EncodingType, names are taken as they are.
        let raw = "<ListBucketResult><Contents><Key>a+b%20</Key></Contents></ListBucketResult>";
        assert_eq!(parse_page(raw.as_bytes()).unwrap().names, ["a+b%20"]);
        let bad = "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%zz</Key></Contents></ListBucketResult>";
        assert!(parse_page(bad.as_bytes())
            .unwrap_err()
            .contains("URL-encoded"));
        let not_utf8 = "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%ff</Key></Contents></ListBucketResult>";
        assert!(parse_page(not_utf8.as_bytes()).is_err());
    }

    #[test]
    fn entities_cdata_and_character_references() {
        let body = "<ListBucketResult><Contents><Key>a&lt;&#x41;&#66;<![CDATA[<c>]]></Key></Contents></ListBucketResult>";
        assert_eq!(parse_page(body.as_bytes()).unwrap().names, ["a<AB<c>"]);
        for bad in [
            "<ListBucketResult><Contents><Key>&custom;</Key></Contents></ListBucketResult>",
            "<ListBucketResult><Contents><Key>&#0;</Key></Contents></ListBucketResult>",
        ] {
            assert!(parse_page(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn hostile_and_broken_answers_are_errors() {
        // An unknown entity whose 32nd byte is inside a character.
        let entity = format!(
            "<ListBucketResult><Key>&{}\u{feff}x;</Key></ListBucketResult>",
            "a".repeat(30)
        );
        let e = parse_page(entity.as_bytes()).unwrap_err();
        assert!(e.contains("unknown entity"), "{e}");
        let truncated_without_token =
            "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>";
        assert!(parse_page(truncated_without_token.as_bytes())
            .unwrap_err()
            .contains("NextContinuationToken"));
        let empty_token = "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken></NextContinuationToken></ListBucketResult>";
        assert!(parse_page(empty_token.as_bytes()).is_err());
        for (body, needle) in [
            (
                "<Error><Code>AccessDenied</Code></Error>",
                "document element",
            ),
            ("<ListBucketResult><Contents><Key>a</Key>", "ends inside"),
            (
                "<ListBucketResult><Contents><Key>a</Contents></ListBucketResult>",
                "well-formed",
            ),
            ("not xml at all", "ListBucketResult"),
            ("", "ListBucketResult"),
            (
                "<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
                "IsTruncated",
            ),
        ] {
            let e = parse_page(body.as_bytes()).unwrap_err();
            assert!(e.contains(needle), "{body}: {e}");
        }
        assert!(parse_page(&[0xff, 0xfe, b'<'])
            .unwrap_err()
            .contains("UTF-8"));

        let deep = format!("<ListBucketResult>{}", "<a>".repeat(100_000));
        assert!(parse_page(deep.as_bytes()).unwrap_err().contains("deeper"));

        let many = format!(
            "<ListBucketResult>{}</ListBucketResult>",
            "<Contents><Key>k</Key></Contents>".repeat(MAX_PAGE_ENTRIES + 1)
        );
        assert!(parse_page(many.as_bytes())
            .unwrap_err()
            .contains("more than"));
        let long = format!(
            "<ListBucketResult><Contents><Key>{}</Key></Contents></ListBucketResult>",
            "&amp;".repeat(MAX_TEXT + 1)
        );
        assert!(parse_page(long.as_bytes()).unwrap_err().contains("longer"));
        // Unknown elements and text outside the fields are ignored.
        let other = "<ListBucketResult><Owner><ID>x</ID></Owner>text<Contents><Size>1</Size><Key>k</Key></Contents></ListBucketResult>";
        assert_eq!(parse_page(other.as_bytes()).unwrap().names, ["k"]);
    }

    #[test]
    fn regions_of_error_bodies() {
        let body = b"<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>";
        assert_eq!(error_region(body).as_deref(), Some("eu-west-1"));
        assert_eq!(
            error_region(b"<Error><Region>../evil</Region></Error>"),
            None
        );
        assert_eq!(error_region(b"<Error><Region>x"), None);
        assert_eq!(error_region(b"no region"), None);
    }
}
