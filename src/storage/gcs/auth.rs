//! Credentials of the Google Cloud Storage backend: which source applies
//! (explicit options, then the environment, then anonymous), the OAuth 2
//! access tokens they give (a token as it is; a service-account key file
//! signs an RS256 JWT and exchanges it at its `token_uri`; an
//! authorized-user file exchanges its refresh token), and the per-store
//! token cache, refreshed a few minutes before expiry by one thread at a
//! time. Secrets live in [`Secret`] and never reach a message: errors name
//! the credentials source and the file's path.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivatePkcs8KeyDer;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::storage::http::{encode_query, error_code, Client, Method, Request, Response};
use crate::storage::options::{GcsOptions, Secret};

/// The scope requested for service-account tokens.
pub const SCOPE: &str = "https://www.googleapis.com/auth/devstorage.read_write";

/// Google's token endpoint, for authorized-user files that name none.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// The lifetime asked for a service-account JWT assertion.
const ASSERTION_LIFETIME: u64 = 3600;

/// A token is refreshed this long before it expires (or at half its
/// lifetime, when that is shorter).
const REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// The longest lifetime believed from a token endpoint.
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// The largest credentials file read.
const MAX_CREDENTIALS_FILE: u64 = 1 << 20;

/// Where an access token comes from.
enum Kind {
    /// No `Authorization` header.
    Anonymous,
    /// A token given as it is.
    Static(Secret),
    /// A service-account key: a signed JWT exchanged at `token_uri`.
    ServiceAccount {
        email: String,
        key_id: Option<String>,
        key: Box<RsaKeyPair>,
        token_uri: String,
    },
    /// A user's refresh token exchanged at `token_uri`.
    AuthorizedUser {
        client_id: String,
        client_secret: Secret,
        refresh_token: Secret,
        token_uri: String,
    },
}

/// An access token from a token endpoint and when to renew it.
#[derive(Clone)]
struct Token {
    value: Secret,
    refresh_at: Instant,
    expires: Instant,
}

/// The credentials of one store and its cached access token.
pub struct Auth {
    kind: Kind,
    source: String,
    token: Mutex<Option<Token>>,
    refreshing: Mutex<()>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("source", &self.source)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Auth {
    /// The credentials `options` and the environment (`env`, a lookup of
    /// variables) name: `gcs.anonymous`, `gcs.token`, `gcs.credentials_file`,
    /// then, unless the endpoint is an emulator's (`STORAGE_EMULATOR_HOST`,
    /// which gets none), `GOOGLE_APPLICATION_CREDENTIALS`, else anonymous.
    /// Reads and checks a credentials file, sends nothing.
    pub fn resolve(
        options: &GcsOptions,
        emulator: bool,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Auth> {
        let explicit = options.token.is_some() as u8 + options.credentials_file.is_some() as u8;
        if explicit > 1 || (explicit == 1 && options.anonymous) {
            return Err(Error::invalid_argument(
                "options: gcs.anonymous, gcs.token and gcs.credentials_file exclude each other",
            ));
        }
        if options.anonymous {
            return Ok(Auth::new(
                Kind::Anonymous,
                "anonymous (options gcs.anonymous)".into(),
            ));
        }
        if let Some(token) = &options.token {
            check_header_value(token.expose())
                .map_err(|why| Error::invalid_argument(format!("options: gcs.token {why}")))?;
            return Ok(Auth::new(
                Kind::Static(token.clone()),
                "options gcs.token".into(),
            ));
        }
        if let Some(path) = &options.credentials_file {
            let source = format!("options gcs.credentials_file '{}'", path.display());
            return Auth::from_file(path, source);
        }
        if emulator {
            return Ok(Auth::new(
                Kind::Anonymous,
                "anonymous (the STORAGE_EMULATOR_HOST emulator gets no credentials)".into(),
            ));
        }
        match env("GOOGLE_APPLICATION_CREDENTIALS").filter(|p| !p.is_empty()) {
            Some(path) => {
                let path = PathBuf::from(path);
                let source = format!(
                    "GOOGLE_APPLICATION_CREDENTIALS '{}' from the environment",
                    path.display()
                );
                Auth::from_file(&path, source)
            }
            None => Ok(Auth::new(
                Kind::Anonymous,
                "anonymous (no gcs credentials in the options, GOOGLE_APPLICATION_CREDENTIALS unset)"
                    .into(),
            )),
        }
    }

    fn new(kind: Kind, source: String) -> Auth {
        Auth {
            kind,
            source,
            token: Mutex::new(None),
            refreshing: Mutex::new(()),
        }
    }

    /// The credentials of a service-account key file or an authorized-user
    /// file; `source` says where its path came from.
    fn from_file(path: &Path, source: String) -> Result<Auth> {
        use std::io::Read;
        let bad = |why: String| Error::invalid_argument(format!("credentials of {source}: {why}"));
        let mut text = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CREDENTIALS_FILE + 1).read_to_end(&mut text))
            .map_err(|e| bad(format!("cannot read '{}': {e}", path.display())))?;
        if text.len() as u64 > MAX_CREDENTIALS_FILE {
            return Err(bad(format!(
                "the file is larger than {MAX_CREDENTIALS_FILE} bytes"
            )));
        }
        // serde_json's messages give a line and column, never the text.
        let json: Value =
            serde_json::from_slice(&text).map_err(|e| bad(format!("not valid JSON ({e})")))?;
        let field = |name: &str| -> Result<String> {
            match json.get(name).and_then(Value::as_str) {
                Some(s) if !s.is_empty() => Ok(s.to_string()),
                _ => Err(bad(format!(
                    "the field \"{name}\" is missing or not a string"
                ))),
            }
        };
        let token_uri = |default: Option<&str>| -> Result<String> {
            let uri = match (json.get("token_uri"), default) {
                (None, Some(d)) => d.to_string(),
                _ => field("token_uri")?,
            };
            if uri.starts_with("https://") || uri.starts_with("http://") {
                Ok(uri)
            } else {
                Err(bad(format!("token_uri '{uri}' is not an http(s) URL")))
            }
        };
        let kind = match json.get("type").and_then(Value::as_str) {
            Some("service_account") => {
                let pem = field("private_key")?;
                let der = PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| {
                    bad("private_key is not a PKCS#8 PEM private key (BEGIN PRIVATE KEY)".into())
                })?;
                let key = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der())
                    .map(Box::new)
                    .map_err(|e| bad(format!("private_key is not a usable RSA key ({e})")))?;
                Kind::ServiceAccount {
                    email: field("client_email")?,
                    key_id: json
                        .get("private_key_id")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    key,
                    token_uri: token_uri(None)?,
                }
            }
            Some("authorized_user") => Kind::AuthorizedUser {
                client_id: field("client_id")?,
                client_secret: Secret::new(field("client_secret")?),
                refresh_token: Secret::new(field("refresh_token")?),
                token_uri: token_uri(Some(DEFAULT_TOKEN_URI))?,
            },
            Some(other) => {
                return Err(bad(format!(
                    "credentials of type \"{other}\" are not supported (service_account, authorized_user)"
                )))
            }
            None => return Err(bad("the field \"type\" is missing".into())),
        };
        Ok(Auth::new(kind, source))
    }

    /// Which credentials are used, for messages ("options gcs.token",
    /// "GOOGLE_APPLICATION_CREDENTIALS '/k.json' from the environment",
    /// "anonymous ...").
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether requests go without credentials.
    pub fn is_anonymous(&self) -> bool {
        matches!(self.kind, Kind::Anonymous)
    }

    /// Whether a refused token may be replaced by a fresh one.
    pub fn refreshable(&self) -> bool {
        matches!(
            self.kind,
            Kind::ServiceAccount { .. } | Kind::AuthorizedUser { .. }
        )
    }

    /// Forget the cached token (the server refused it).
    pub fn invalidate(&self) {
        *lock(&self.token) = None;
    }

    /// The `Authorization` header value for a request, `None` when
    /// anonymous; fetches a token through `client` when none is cached or
    /// the cached one is due for renewal.
    pub fn authorization(&self, client: &Client) -> Result<Option<Secret>> {
        let token = match &self.kind {
            Kind::Anonymous => return Ok(None),
            Kind::Static(token) => token.clone(),
            _ => self.cached_token(client)?,
        };
        Ok(Some(Secret::new(format!("Bearer {}", token.expose()))))
    }

    fn cached_token(&self, client: &Client) -> Result<Secret> {
        let current = lock(&self.token).clone();
        if let Some(t) = &current {
            let now = Instant::now();
            if now < t.refresh_at {
                return Ok(t.value.clone());
            }
            if now < t.expires {
                // Due for renewal but still valid: one thread renews, the
                // others go on with the valid token meanwhile; a failed
                // renewal leaves the valid token in use.
                let guard = match self.refreshing.try_lock() {
                    Ok(g) => g,
                    Err(TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(TryLockError::WouldBlock) => return Ok(t.value.clone()),
                };
                let renewed = self.fetch(client).unwrap_or_else(|_| t.value.clone());
                drop(guard);
                return Ok(renewed);
            }
        }
        let _guard = lock(&self.refreshing);
        // Another thread may have fetched one while this one waited.
        if let Some(t) = lock(&self.token).as_ref() {
            if Instant::now() < t.refresh_at {
                return Ok(t.value.clone());
            }
        }
        self.fetch(client)
    }

    /// Get a new token from the token endpoint and cache it.
    fn fetch(&self, client: &Client) -> Result<Secret> {
        let (token_uri, body) = match &self.kind {
            Kind::ServiceAccount {
                email,
                key_id,
                key,
                token_uri,
            } => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs();
                let assertion = self.jwt(email, key_id.as_deref(), key, token_uri, now)?;
                let body = format!(
                    "grant_type={}&assertion={}",
                    encode_query("urn:ietf:params:oauth:grant-type:jwt-bearer"),
                    assertion.expose()
                );
                (token_uri, Secret::new(body))
            }
            Kind::AuthorizedUser {
                client_id,
                client_secret,
                refresh_token,
                token_uri,
            } => {
                let body = format!(
                    "grant_type=refresh_token&client_id={}&client_secret={}&refresh_token={}",
                    encode_query(client_id),
                    encode_query(client_secret.expose()),
                    encode_query(refresh_token.expose())
                );
                (token_uri, Secret::new(body))
            }
            Kind::Anonymous | Kind::Static(_) => {
                return Err(Error::new(ErrorKind::Internal, "no token endpoint to ask"))
            }
        };
        let started = Instant::now();
        let describe = format!("{token_uri} (token endpoint of {})", self.source);
        let response = client.send(
            &describe,
            &mut || {
                Ok(Request {
                    method: Method::Post,
                    url: token_uri.clone(),
                    headers: vec![(
                        "Content-Type".into(),
                        "application/x-www-form-urlencoded".into(),
                    )],
                    body: body.expose().as_bytes(),
                })
            },
            &|_| Ok(()),
        )?;
        let token = parse_token_response(&response, &describe)?;
        let lifetime = token.1.min(MAX_LIFETIME);
        let cached = Token {
            value: token.0.clone(),
            refresh_at: started + lifetime - REFRESH_MARGIN.min(lifetime / 2),
            expires: started + lifetime,
        };
        *lock(&self.token) = Some(cached);
        Ok(token.0)
    }

    /// The signed JWT assertion of a service account, issued at `now`
    /// (seconds since the epoch).
    fn jwt(
        &self,
        email: &str,
        key_id: Option<&str>,
        key: &RsaKeyPair,
        token_uri: &str,
        now: u64,
    ) -> Result<Secret> {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = key_id {
            header["kid"] = Value::from(kid);
        }
        let claims = serde_json::json!({
            "iss": email,
            "scope": SCOPE,
            "aud": token_uri,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME,
        });
        let signed = format!(
            "{}.{}",
            b64.encode(header.to_string()),
            b64.encode(claims.to_string())
        );
        let mut signature = vec![0; key.public().modulus_len()];
        key.sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            signed.as_bytes(),
            &mut signature,
        )
        .map_err(|_| {
            Error::new(
                ErrorKind::Internal,
                format!("credentials of {}: signing the JWT failed", self.source),
            )
        })?;
        Ok(Secret::new(format!("{signed}.{}", b64.encode(signature))))
    }
}

/// Whether `value` can travel in an HTTP header: visible ASCII only.
fn check_header_value(value: &str) -> std::result::Result<(), &'static str> {
    if value.is_empty() {
        return Err("is empty");
    }
    if value.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        Ok(())
    } else {
        Err("holds characters other than visible ASCII")
    }
}

/// The access token and its lifetime in a token endpoint's answer.
fn parse_token_response(r: &Response, describe: &str) -> Result<(Secret, Duration)> {
    if r.status != 200 {
        // OAuth errors are {"error": "invalid_grant", ...}; Google's API
        // errors {"error": {...}}.
        let code = serde_json::from_slice::<Value>(&r.body)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
            .filter(|c| c.len() <= 64 && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
            .or_else(|| error_code(&r.body));
        let status = match code {
            Some(code) => format!("HTTP {} ({code})", r.status),
            None => format!("HTTP {}", r.status),
        };
        let kind = if matches!(r.status, 400 | 401 | 403) {
            ErrorKind::AccessDenied
        } else {
            ErrorKind::Io
        };
        return Err(Error::new(
            kind,
            format!("POST {describe}: the credentials were refused: {status}"),
        ));
    }
    let malformed = |why: &str| {
        Error::new(
            ErrorKind::Io,
            format!("POST {describe}: malformed token answer: {why}"),
        )
    };
    let json: Value = serde_json::from_slice(&r.body).map_err(|_| malformed("not valid JSON"))?;
    let token = json
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("no access_token"))?;
    check_header_value(token).map_err(|why| malformed(&format!("the access_token {why}")))?;
    let lifetime = match json.get("expires_in") {
        None => Duration::from_secs(ASSERTION_LIFETIME),
        Some(v) => v
            .as_u64()
            .map(Duration::from_secs)
            .ok_or_else(|| malformed("expires_in is not a number of seconds"))?,
    };
    Ok((Secret::new(token), lifetime))
}

#[cfg(test)]
mod tests;
