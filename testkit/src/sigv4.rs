//! Owns AWS Signature Version 4 for testkit's own S3 requests (header
//! signing, signed payload): the canonical request, the string to sign, the
//! signing key and the Authorization header. Enough for the requests testkit
//! and the tests send by hand; not a general implementation (no presigned
//! URLs, no streaming payloads).

use std::time::{SystemTime, UNIX_EPOCH};

use ring::{digest, hmac};

use crate::client::Request;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(data: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, data).as_ref())
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
        .as_ref()
        .to_vec()
}

/// Percent-decodes `s` (invalid escapes stay as they are).
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let digit = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (digit(b[i + 1]), digit(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// SigV4's URI encoding: everything but unreserved characters, and `/`
/// too unless `keep_slash`.
fn uri_encode(bytes: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &c in bytes {
        if c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && c == b'/')
        {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// `YYYYMMDDTHHMMSSZ` for `t`.
fn amz_date(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Signs `req` in place: adds `x-amz-date`, `x-amz-content-sha256` (the
/// body's SHA-256) and `Authorization`, signing every header present (so
/// `Host` must be set already).
pub(crate) fn sign(
    req: &mut Request,
    access_key: &str,
    secret_key: &str,
    region: &str,
    now: SystemTime,
) {
    let date_time = amz_date(now);
    let date = &date_time[..8];
    let payload = sha256_hex(&req.body);
    req.headers.retain(|(n, _)| {
        !n.eq_ignore_ascii_case("authorization")
            && !n.eq_ignore_ascii_case("x-amz-date")
            && !n.eq_ignore_ascii_case("x-amz-content-sha256")
    });
    req.headers.push(("x-amz-date".into(), date_time.clone()));
    req.headers
        .push(("x-amz-content-sha256".into(), payload.clone()));

    let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
    let canonical_uri = uri_encode(
        &percent_decode(if path.is_empty() { "/" } else { path }),
        true,
    );
    let mut params: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .collect();
    params.sort();
    let canonical_query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();

    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_ascii_lowercase(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    headers.sort();
    let mut canonical_headers = String::new();
    let mut names: Vec<&str> = Vec::new();
    for (n, v) in &headers {
        if names.last() == Some(&n.as_str()) {
            // Repeated header: values joined with commas.
            canonical_headers.pop();
            canonical_headers.push_str(&format!(",{v}\n"));
        } else {
            canonical_headers.push_str(&format!("{n}:{v}\n"));
            names.push(n);
        }
    }
    let signed_headers = names.join(";");
    let canonical_request = format!(
        "{}\n{canonical_uri}\n{}\n{canonical_headers}\n{signed_headers}\n{payload}",
        req.method,
        canonical_query.join("&")
    );
    let scope = format!("{date}/{region}/s3/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{date_time}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let mut key = hmac_sha256(format!("AWS4{secret_key}").as_bytes(), date.as_bytes());
    for part in [region, "s3", "aws4_request"] {
        key = hmac_sha256(&key, part.as_bytes());
    }
    let signature = hex(&hmac_sha256(&key, string_to_sign.as_bytes()));
    req.headers.push((
        "Authorization".into(),
        format!("AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed_headers}, Signature={signature}"),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates() {
        assert_eq!(amz_date(UNIX_EPOCH), "19700101T000000Z");
        // 2013-05-24T00:00:00Z, the date of AWS's published examples.
        assert_eq!(
            amz_date(UNIX_EPOCH + Duration::from_secs(1_369_353_600)),
            "20130524T000000Z"
        );
        assert_eq!(
            amz_date(UNIX_EPOCH + Duration::from_secs(951_782_400 + 3661)),
            "20000229T010101Z"
        );
    }

    #[test]
    fn aws_example_get_object() {
        // AWS's documented example: GET /test.txt with a range, from the
        // "Signature Calculations for the Authorization Header" page.
        let mut req = Request::new("GET", "/test.txt")
            .header("Host", "examplebucket.s3.amazonaws.com")
            .header("Range", "bytes=0-9");
        sign(
            &mut req,
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "us-east-1",
            UNIX_EPOCH + Duration::from_secs(1_369_353_600),
        );
        assert_eq!(
            req.get_header("authorization").unwrap(),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn encoding() {
        assert_eq!(
            uri_encode(&percent_decode("/a%20b/c+d"), true),
            "/a%20b/c%2Bd"
        );
        assert_eq!(uri_encode(b"a/b", false), "a%2Fb");
        assert_eq!(percent_decode("%zz%4"), b"%zz%4");
    }
}
