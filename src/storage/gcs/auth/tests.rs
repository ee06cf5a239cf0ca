//! Tests of the GCS credentials: which source applies, credential files,
//! and the token flows against a token endpoint started here (a std
//! `TcpListener` on 127.0.0.1 that checks the JWT's RS256 signature with
//! the public key and answers with a token).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use ring::signature::{KeyPair, UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA256};

use super::*;
use crate::storage::options::RetryOptions;

/// A throwaway RSA key made for these tests (`openssl genpkey`); it signs
/// nothing else.
const TEST_KEY: &str = include_str!("test_key.pem");

/// What a token endpoint answers: status and JSON body, from the request's
/// form body.
type Answer = dyn Fn(&str) -> (u16, String) + Send + Sync;

struct TokenServer {
    url: String,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TokenServer {
    fn start(answer: Arc<Answer>) -> TokenServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, stopping) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                let answer = answer.clone();
                std::thread::spawn(move || serve(stream, &*answer));
            }
        });
        TokenServer {
            url,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(
            self.url
                .trim_start_matches("http://")
                .trim_end_matches("/token"),
        );
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answer one request: `POST /token` with a form body.
fn serve(stream: TcpStream, answer: &Answer) {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let (status, body) = if line.starts_with("POST /token ") {
        let mut length = 0usize;
        let mut form_encoded = false;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let lower = header.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            form_encoded |= lower == "content-type: application/x-www-form-urlencoded";
        }
        let mut body = vec![0; length.min(1 << 20)];
        reader.read_exact(&mut body).unwrap();
        if form_encoded {
            answer(&String::from_utf8(body).unwrap())
        } else {
            (400, r#"{"error": "not_a_form"}"#.to_string())
        }
    } else {
        (404, r#"{"error": "not_found"}"#.to_string())
    };
    let mut out = stream;
    let _ = write!(
        out,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn form(body: &str) -> std::collections::HashMap<String, String> {
    body.split('&')
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            (
                k.to_string(),
                crate::storage::http::percent_decode(v, "form").unwrap(),
            )
        })
        .collect()
}

/// Check a service-account JWT assertion: the RS256 signature with the
/// test key's public key, the header and the claims.
fn check_assertion(assertion: &str, token_uri: &str) -> std::result::Result<(), String> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err(format!("{} parts", parts.len()));
    };
    let der = PrivatePkcs8KeyDer::from_pem_slice(TEST_KEY.as_bytes()).unwrap();
    let key = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).unwrap();
    let signature = b64.decode(signature).map_err(|e| e.to_string())?;
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, key.public_key().as_ref())
        .verify(format!("{header}.{claims}").as_bytes(), &signature)
        .map_err(|_| "bad signature".to_string())?;
    let header: Value = serde_json::from_slice(&b64.decode(header).unwrap()).unwrap();
    let claims: Value = serde_json::from_slice(&b64.decode(claims).unwrap()).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let iat = claims["iat"].as_u64().unwrap();
    let ok = header["alg"] == "RS256"
        && header["typ"] == "JWT"
        && header["kid"] == "key-1"
        && claims["iss"] == "robot@project.iam.gserviceaccount.com"
        && claims["scope"] == SCOPE
        && claims["aud"] == token_uri
        && iat.abs_diff(now) < 60
        && claims["exp"].as_u64() == Some(iat + 3600);
    if ok {
        Ok(())
    } else {
        Err(format!("header {header}, claims {claims}"))
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("n5-gcs-auth-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn service_account_file(dir: &Path, token_uri: &str) -> PathBuf {
    let path = dir.join("service-account.json");
    let json = serde_json::json!({
        "type": "service_account",
        "project_id": "project",
        "private_key_id": "key-1",
        "private_key": TEST_KEY,
        "client_email": "robot@project.iam.gserviceaccount.com",
        "token_uri": token_uri,
    });
    std::fs::write(&path, json.to_string()).unwrap();
    path
}

fn client() -> Client {
    let retry = RetryOptions {
        max_attempts: 2,
        ..RetryOptions::default()
    };
    Client::new(retry, 8).unwrap()
}

fn with_file(path: &Path) -> GcsOptions {
    GcsOptions {
        credentials_file: Some(path.to_path_buf()),
        ..GcsOptions::default()
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// A token endpoint for the test key: checks the assertion, answers
/// `token-N` valid for `lifetime` seconds.
fn jwt_endpoint(lifetime: u64) -> TokenServer {
    let uri = Arc::new(std::sync::OnceLock::<String>::new());
    let issued = Arc::new(AtomicUsize::new(0));
    let seen = uri.clone();
    let server = TokenServer::start(Arc::new(move |body: &str| {
        let form = form(body);
        if form["grant_type"] != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
            return (400, r#"{"error": "unsupported_grant_type"}"#.into());
        }
        if let Err(why) = check_assertion(&form["assertion"], seen.get().unwrap()) {
            return (
                400,
                format!(r#"{{"error": "invalid_grant", "error_description": "{why}"}}"#),
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
        (
            200,
            format!(
                r#"{{"access_token": "token-{n}", "expires_in": {lifetime}, "token_type": "Bearer"}}"#
            ),
        )
    }));
    uri.set(server.url.clone()).unwrap();
    server
}

#[test]
fn service_account_signs_a_jwt_and_caches_the_token() {
    let server = jwt_endpoint(3600);
    let dir = temp_dir("sa");
    let path = service_account_file(&dir, &server.url);
    let auth = Auth::resolve(&with_file(&path), false, &no_env).unwrap();
    assert!(
        auth.source().contains("gcs.credentials_file")
            && auth.source().contains(&*path.to_string_lossy())
    );
    assert!(!format!("{auth:?}").contains("PRIVATE"));
    let client = client();
    // Threads asking at once share one exchange.
    let headers: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    auth.authorization(&client)
                        .unwrap()
                        .unwrap()
                        .expose()
                        .to_string()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(headers.iter().all(|h| h == "Bearer token-1"), "{headers:?}");
    assert_eq!(server.requests(), 1);
    auth.invalidate();
    assert_eq!(
        auth.authorization(&client).unwrap().unwrap().expose(),
        "Bearer token-2"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tokens_are_renewed_before_they_expire() {
    // A lifetime of 0 is due at once: every use fetches a new one.
    let server = jwt_endpoint(0);
    let dir = temp_dir("expiry");
    let auth = Auth::resolve(
        &with_file(&service_account_file(&dir, &server.url)),
        false,
        &no_env,
    )
    .unwrap();
    let client = client();
    assert_eq!(
        auth.authorization(&client).unwrap().unwrap().expose(),
        "Bearer token-1"
    );
    assert_eq!(
        auth.authorization(&client).unwrap().unwrap().expose(),
        "Bearer token-2"
    );
    assert_eq!(server.requests(), 2);
    // Ten minutes: renewed five minutes before the end, so kept now.
    let server = jwt_endpoint(600);
    let auth = Auth::resolve(
        &with_file(&service_account_file(&dir, &server.url)),
        false,
        &no_env,
    )
    .unwrap();
    for _ in 0..3 {
        assert_eq!(
            auth.authorization(&client).unwrap().unwrap().expose(),
            "Bearer token-1"
        );
    }
    assert_eq!(server.requests(), 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_refused_exchange_names_the_source_and_no_secret() {
    let server = TokenServer::start(Arc::new(|_: &str| {
        (
            400,
            r#"{"error": "invalid_grant", "error_description": "Invalid JWT Signature."}"#.into(),
        )
    }));
    let dir = temp_dir("refused");
    let path = service_account_file(&dir, &server.url);
    let env = |name: &str| {
        (name == "GOOGLE_APPLICATION_CREDENTIALS").then(|| path.to_string_lossy().into_owned())
    };
    let auth = Auth::resolve(&GcsOptions::default(), false, &env).unwrap();
    let e = auth.authorization(&client()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e}");
    for needle in [
        "GOOGLE_APPLICATION_CREDENTIALS",
        &*path.to_string_lossy(),
        "invalid_grant",
        &server.url,
    ] {
        assert!(e.message().contains(needle), "{needle} missing in {e}");
    }
    let key_line = TEST_KEY.lines().nth(1).unwrap();
    assert!(
        !e.message().contains(key_line) && !e.message().contains("eyJ"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn authorized_user_exchanges_its_refresh_token() {
    let server = TokenServer::start(Arc::new(|body: &str| {
        let form = form(body);
        let ok = form["grant_type"] == "refresh_token"
            && form["client_id"] == "client.apps.googleusercontent.com"
            && form["client_secret"] == "s3cr3t/+="
            && form["refresh_token"] == "1//refresh";
        if ok {
            (
                200,
                r#"{"access_token": "ya29.user", "expires_in": 3599}"#.into(),
            )
        } else {
            (401, r#"{"error": "unauthorized_client"}"#.into())
        }
    }));
    let dir = temp_dir("user");
    let path = dir.join("adc.json");
    let file = |secret: &str| {
        serde_json::json!({
            "type": "authorized_user",
            "client_id": "client.apps.googleusercontent.com",
            "client_secret": secret,
            "refresh_token": "1//refresh",
            "token_uri": server.url,
        })
        .to_string()
    };
    std::fs::write(&path, file("s3cr3t/+=")).unwrap();
    let auth = Auth::resolve(&with_file(&path), false, &no_env).unwrap();
    assert!(auth.refreshable() && !auth.is_anonymous());
    assert_eq!(
        auth.authorization(&client()).unwrap().unwrap().expose(),
        "Bearer ya29.user"
    );
    std::fs::write(&path, file("wrong-secret")).unwrap();
    let auth = Auth::resolve(&with_file(&path), false, &no_env).unwrap();
    let e = auth.authorization(&client()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied);
    assert!(e.message().contains("unauthorized_client"), "{e}");
    for secret in ["wrong-secret", "1//refresh", "refresh_token="] {
        assert!(!e.message().contains(secret), "{e}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn explicit_options_win_then_the_environment_then_anonymous() {
    let dir = temp_dir("precedence");
    let path = service_account_file(&dir, "https://oauth2.googleapis.com/token");
    let env = |name: &str| {
        (name == "GOOGLE_APPLICATION_CREDENTIALS").then(|| path.to_string_lossy().into_owned())
    };
    let token = GcsOptions {
        token: Some(Secret::new("ya29.explicit")),
        ..GcsOptions::default()
    };
    let auth = Auth::resolve(&token, true, &env).unwrap();
    assert_eq!(auth.source(), "options gcs.token");
    assert_eq!(
        auth.authorization(&client()).unwrap().unwrap().expose(),
        "Bearer ya29.explicit"
    );
    let from_env = Auth::resolve(&GcsOptions::default(), false, &env).unwrap();
    assert!(
        from_env
            .source()
            .starts_with("GOOGLE_APPLICATION_CREDENTIALS"),
        "{}",
        from_env.source()
    );
    assert!(from_env.refreshable());
    // The emulator gets no credentials from the environment.
    let emulator = Auth::resolve(&GcsOptions::default(), true, &env).unwrap();
    assert!(emulator.is_anonymous() && emulator.source().contains("STORAGE_EMULATOR_HOST"));
    assert!(emulator.authorization(&client()).unwrap().is_none());
    let anonymous = GcsOptions {
        anonymous: true,
        ..GcsOptions::default()
    };
    assert!(Auth::resolve(&anonymous, false, &env)
        .unwrap()
        .is_anonymous());
    assert!(Auth::resolve(&GcsOptions::default(), false, &no_env)
        .unwrap()
        .is_anonymous());
    let both = GcsOptions {
        anonymous: true,
        token: Some(Secret::new("t")),
        ..GcsOptions::default()
    };
    assert_eq!(
        Auth::resolve(&both, false, &no_env).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let bad_token = GcsOptions {
        token: Some(Secret::new("ya29\r\nX-Evil: 1")),
        ..GcsOptions::default()
    };
    let e = Auth::resolve(&bad_token, false, &no_env).unwrap_err();
    assert!(!e.message().contains("ya29"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_credential_files_are_named_without_their_contents() {
    let dir = temp_dir("bad");
    let check = |text: &str, needle: &str| {
        let path = dir.join("creds.json");
        std::fs::write(&path, text).unwrap();
        let e = Auth::resolve(&with_file(&path), false, &no_env).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.message().contains(&*path.to_string_lossy()), "{e}");
        assert!(e.message().contains(needle), "{needle} missing in {e}");
        assert!(
            !e.message().contains("MIIE") && !e.message().contains("hunter2"),
            "{e}"
        );
    };
    check("{not json hunter2", "not valid JSON");
    check(
        r#"{"type": "external_account", "secret": "hunter2"}"#,
        "external_account",
    );
    check(r#"{"client_secret": "hunter2"}"#, "\"type\"");
    check(
        r#"{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEhunter2\n-----END PRIVATE KEY-----\n", "client_email": "a@b", "token_uri": "https://x/token"}"#,
        "private_key",
    );
    let no_email = serde_json::json!({"type": "service_account", "private_key": TEST_KEY, "token_uri": "https://x/token"});
    check(&no_email.to_string(), "client_email");
    let bad_uri = serde_json::json!({"type": "service_account", "private_key": TEST_KEY, "client_email": "a@b", "token_uri": "file:///etc/passwd"});
    check(&bad_uri.to_string(), "token_uri");
    check(
        r#"{"type": "authorized_user", "client_id": "c", "client_secret": "hunter2"}"#,
        "refresh_token",
    );
    let missing = dir.join("nope.json");
    let e = Auth::resolve(&with_file(&missing), false, &no_env).unwrap_err();
    assert!(e.message().contains("nope.json"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn token_answers_are_checked() {
    let response = |status: u16, body: &str| Response {
        status,
        headers: Vec::new(),
        body: body.as_bytes().to_vec(),
    };
    let (token, lifetime) = parse_token_response(
        &response(200, r#"{"access_token": "abc", "expires_in": 10}"#),
        "t",
    )
    .unwrap();
    assert_eq!((token.expose(), lifetime), ("abc", Duration::from_secs(10)));
    let (_, lifetime) =
        parse_token_response(&response(200, r#"{"access_token": "abc"}"#), "t").unwrap();
    assert_eq!(lifetime, Duration::from_secs(3600));
    for bad in [
        "[",
        "{}",
        r#"{"access_token": ""}"#,
        r#"{"access_token": "a\r\nb"}"#,
        r#"{"access_token": "abc", "expires_in": -5}"#,
        r#"{"access_token": "abc", "expires_in": "soon"}"#,
    ] {
        let e = parse_token_response(&response(200, bad), "t").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{bad}");
    }
    let e = parse_token_response(&response(503, "busy"), "t").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    let e = parse_token_response(
        &response(403, r#"{"error": {"errors": [{"reason": "forbidden"}]}}"#),
        "t",
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied);
    assert!(e.message().contains("forbidden"), "{e}");
}
