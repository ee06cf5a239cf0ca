//! Credentials of the S3 backend and where they come from. Explicit
//! options win, then the environment, then anonymous:
//!
//! 1. `s3.anonymous: true`: unsigned requests, whatever else is set;
//! 2. options `s3.access_key_id` and `s3.secret_access_key` (and
//!    `s3.session_token`);
//! 3. options `s3.profile`: that profile of the shared files;
//! 4. `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`);
//! 5. the profile `AWS_PROFILE` names, else `default`, of
//!    `~/.aws/credentials` (`[name]` sections; `AWS_SHARED_CREDENTIALS_FILE`)
//!    and `~/.aws/config` (`[profile name]`, and `[default]`;
//!    `AWS_CONFIG_FILE`), the credentials file winning;
//! 6. none: unsigned requests, and a refused request says which sources
//!    were checked.
//!
//! Only static keys are read from profiles (no `credential_process`, SSO,
//! role assumption or instance metadata; a profile that uses them is named
//! in the anonymous source). The shared files are read with a small INI
//! parser of our own, bounded in size, that ignores what it does not know.
//! Secrets stay in [`Secret`] and in aws-sigv4's credentials, whose
//! `Debug` hides them; messages name the source, never a value.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::{Error, ErrorKind, Result};
use crate::storage::options::{S3Options, Secret};

/// The largest shared credentials or config file read.
const MAX_FILE: u64 = 1 << 20;

/// Profile settings that give credentials libn5 cannot obtain itself.
const UNSUPPORTED: [&str; 6] = [
    "credential_process",
    "role_arn",
    "sso_session",
    "sso_start_url",
    "web_identity_token_file",
    "credential_source",
];

/// The credentials of one store: keys, or none (unsigned requests), and
/// where they came from, for messages.
pub struct Credentials {
    /// The keys as aws-sigv4 signs with them (its `Debug` hides the
    /// secret and the token).
    keys: Option<aws_credential_types::Credentials>,
    source: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// What [`resolve`] found: the credentials, and the region of the
/// profile's config section (when it was asked for and there is one).
#[derive(Debug)]
pub struct Resolved {
    /// The credentials.
    pub credentials: Credentials,
    /// The `region` of the profile in the config file.
    pub profile_region: Option<String>,
}

impl Credentials {
    /// Whether requests go unsigned.
    pub fn is_anonymous(&self) -> bool {
        self.keys.is_none()
    }

    /// Where the credentials came from ("AWS_ACCESS_KEY_ID from the
    /// environment", "anonymous: no credentials found (checked ...)").
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The credentials as aws-sigv4 signs with them, `None` when anonymous.
    pub fn aws(&self) -> Option<&aws_credential_types::Credentials> {
        self.keys.as_ref()
    }
}

/// The environment, as a function (tests pass their own).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A variable of the environment, `None` when unset or empty.
fn var(env: Env, name: &str) -> Option<String> {
    env(name).filter(|v| !v.trim().is_empty())
}

/// Find the credentials of `options` and the environment `env`; read the
/// profile's region too when `want_region`.
pub fn resolve(options: &S3Options, env: Env, want_region: bool) -> Result<Resolved> {
    let explicit_profile = options.profile.clone().filter(|p| !p.trim().is_empty());
    let profile_name = explicit_profile
        .clone()
        .or_else(|| var(env, "AWS_PROFILE"))
        .unwrap_or_else(|| "default".to_string());
    let named = explicit_profile.is_some() || var(env, "AWS_PROFILE").is_some();
    let files = Files::of(env);
    // The profile is read only when something is wanted from it.
    let mut loaded: Option<Option<Profile>> = None;
    let mut profile = || -> Result<Option<Profile>> {
        if loaded.is_none() {
            loaded = Some(files.profile(&profile_name)?);
        }
        Ok(loaded.clone().flatten())
    };

    let credentials = if options.anonymous {
        anonymous("anonymous (options s3.anonymous)".into())
    } else if let Some(c) = from_options(options)? {
        c
    } else if explicit_profile.is_some() {
        let p = profile()?.ok_or_else(|| files.not_found(&profile_name, "options s3.profile"))?;
        p.credentials(&profile_name)?.ok_or_else(|| {
            Error::invalid_argument(format!(
                "options s3.profile: the profile '{profile_name}' ({}) holds no aws_access_key_id and aws_secret_access_key{}",
                p.found_in,
                p.unsupported().map(|u| format!(" (it uses {u}, which libn5 does not support)")).unwrap_or_default()
            ))
        })?
    } else if let Some(c) = from_env(env)? {
        c
    } else {
        match profile() {
            Ok(Some(p)) => match p.credentials(&profile_name)? {
                Some(c) => c,
                None => anonymous(files.checked(&profile_name, p.unsupported())),
            },
            Ok(None) if named => return Err(files.not_found(&profile_name, "AWS_PROFILE")),
            Ok(None) => anonymous(files.checked(&profile_name, None)),
            Err(e) => return Err(e),
        }
    };
    let profile_region = if want_region {
        // A profile that cannot be read gives no region; its error, if it
        // matters, came with the credentials above.
        profile()
            .ok()
            .flatten()
            .and_then(|p| p.config.get("region").cloned())
            .filter(|r| super::valid_region(r))
    } else {
        None
    };
    Ok(Resolved {
        credentials,
        profile_region,
    })
}

fn anonymous(source: String) -> Credentials {
    Credentials { keys: None, source }
}

/// Keys after checking that they can be sent in a header.
fn keys(id: &str, secret: &str, token: Option<&str>, source: &str) -> Result<Credentials> {
    let header_safe = |s: &str| !s.is_empty() && s.bytes().all(|b| (0x21..0x7f).contains(&b));
    if !header_safe(id) || !header_safe(secret) || token.is_some_and(|t| !header_safe(t)) {
        return Err(Error::invalid_argument(format!(
            "the S3 credentials of {source} are empty or hold characters a key cannot hold"
        )));
    }
    Ok(Credentials {
        keys: Some(aws_credential_types::Credentials::new(
            id,
            secret,
            token.map(str::to_string),
            None,
            "libn5",
        )),
        source: source.to_string(),
    })
}

fn from_options(o: &S3Options) -> Result<Option<Credentials>> {
    match (&o.access_key_id, &o.secret_access_key) {
        (Some(id), Some(secret)) => keys(
            id,
            secret.expose(),
            o.session_token.as_ref().map(Secret::expose),
            "options s3.access_key_id",
        )
        .map(Some),
        (None, None) if o.session_token.is_none() => Ok(None),
        _ => Err(Error::invalid_argument(
            "options: s3.access_key_id and s3.secret_access_key go together (s3.session_token only with both)",
        )),
    }
}

fn from_env(env: Env) -> Result<Option<Credentials>> {
    let token = var(env, "AWS_SESSION_TOKEN");
    match (
        var(env, "AWS_ACCESS_KEY_ID"),
        var(env, "AWS_SECRET_ACCESS_KEY"),
    ) {
        (Some(id), Some(secret)) => keys(
            &id,
            &secret,
            token.as_deref(),
            "AWS_ACCESS_KEY_ID from the environment",
        )
        .map(Some),
        (None, None) => Ok(None),
        (Some(_), None) => Err(Error::invalid_argument(
            "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
        )),
        (None, Some(_)) => Err(Error::invalid_argument(
            "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not",
        )),
    }
}

/// The shared credentials and config files.
struct Files {
    credentials: Option<PathBuf>,
    config: Option<PathBuf>,
}

/// One profile: its settings in the credentials file and in the config
/// file, and where it was found.
#[derive(Clone)]
struct Profile {
    credentials: BTreeMap<String, String>,
    config: BTreeMap<String, String>,
    found_in: String,
}

impl Profile {
    /// A setting, from the credentials file first.
    fn get(&self, key: &str) -> Option<&String> {
        self.credentials.get(key).or_else(|| self.config.get(key))
    }

    fn credentials(&self, name: &str) -> Result<Option<Credentials>> {
        let source = format!("profile '{name}' of {}", self.found_in);
        match (
            self.get("aws_access_key_id"),
            self.get("aws_secret_access_key"),
        ) {
            (Some(id), Some(secret)) => keys(
                id,
                secret,
                self.get("aws_session_token").map(String::as_str),
                &source,
            )
            .map(Some),
            (None, None) => Ok(None),
            _ => Err(Error::invalid_argument(format!(
                "{source}: aws_access_key_id and aws_secret_access_key go together"
            ))),
        }
    }

    /// The first setting of the profile libn5 cannot use for credentials.
    fn unsupported(&self) -> Option<&'static str> {
        UNSUPPORTED.into_iter().find(|k| self.get(k).is_some())
    }
}

impl Files {
    fn of(env: Env) -> Files {
        let home = var(env, "HOME").map(PathBuf::from);
        let path = |var_name: &str, file: &str| -> Option<PathBuf> {
            match var(env, var_name) {
                Some(p) => Some(match (p.strip_prefix("~/"), &home) {
                    (Some(rest), Some(h)) => h.join(rest),
                    _ => PathBuf::from(p),
                }),
                None => home.as_ref().map(|h| h.join(".aws").join(file)),
            }
        };
        Files {
            credentials: path("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
            config: path("AWS_CONFIG_FILE", "config"),
        }
    }

    fn names(&self) -> String {
        let shown: Vec<String> = [&self.credentials, &self.config]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
        if shown.is_empty() {
            "no shared files (HOME is not set)".into()
        } else {
            shown.join(" and ")
        }
    }

    /// The profile `name`, `None` when neither file has it.
    fn profile(&self, name: &str) -> Result<Option<Profile>> {
        let mut found = Vec::new();
        let credentials = match read(self.credentials.as_ref())? {
            Some(text) => section(&text, &|s| s == name),
            None => None,
        };
        if credentials.is_some() {
            found.extend(self.credentials.iter().map(|p| p.display().to_string()));
        }
        let config = match read(self.config.as_ref())? {
            Some(text) => section(&text, &|s| {
                s.strip_prefix("profile ").map(str::trim) == Some(name)
                    || (name == "default" && s == "default")
            }),
            None => None,
        };
        if config.is_some() {
            found.extend(self.config.iter().map(|p| p.display().to_string()));
        }
        if credentials.is_none() && config.is_none() {
            return Ok(None);
        }
        Ok(Some(Profile {
            credentials: credentials.unwrap_or_default(),
            config: config.unwrap_or_default(),
            found_in: found.join(" and "),
        }))
    }

    fn not_found(&self, name: &str, named_by: &str) -> Error {
        Error::invalid_argument(format!(
            "the profile '{name}' ({named_by}) is in none of {}",
            self.names()
        ))
    }

    /// The anonymous source after every source was checked.
    fn checked(&self, profile: &str, unsupported: Option<&str>) -> String {
        let note = unsupported
            .map(|u| format!("; the profile uses {u}, which libn5 does not support"))
            .unwrap_or_default();
        format!(
            "anonymous (unsigned requests), because no credentials were found in options \
             s3.access_key_id or s3.profile, in AWS_ACCESS_KEY_ID, or in profile '{profile}' of {}{note}",
            self.names()
        )
    }
}

/// The text of a shared file, `None` when there is none; a file that
/// exists but cannot be read, or is too large, is an error.
fn read(path: Option<&PathBuf>) -> Result<Option<String>> {
    use std::io::Read;
    let Some(path) = path else {
        return Ok(None);
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::new(
                ErrorKind::Io,
                format!("cannot read {}: {e}", path.display()),
            ))
        }
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(Error::invalid_argument(format!(
            "{} is larger than {MAX_FILE} bytes: not an AWS credentials or config file",
            path.display()
        )));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The settings of the sections of the INI `text` whose name `wanted`
/// accepts (repeated sections merge, later values win), `None` when there
/// is no such section. Section names have their spaces collapsed; keys
/// are lower-cased; lines that start with a space (nested settings such as
/// `s3 =` followed by `  addressing_style = path`), comments (`#`, `;`)
/// and lines without `=` are ignored.
fn section(text: &str, wanted: &dyn Fn(&str) -> bool) -> Option<BTreeMap<String, String>> {
    let mut out: Option<BTreeMap<String, String>> = None;
    let mut inside = false;
    for line in text.trim_start_matches('\u{feff}').lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            inside = match rest.strip_suffix(']') {
                Some(name) => {
                    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
                    wanted(&name)
                }
                None => false,
            };
            if inside {
                out.get_or_insert_with(BTreeMap::new);
            }
            continue;
        }
        if !inside {
            continue;
        }
        if let (Some(map), Some((key, value))) = (out.as_mut(), line.split_once('=')) {
            map.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    struct Home(PathBuf);

    impl Home {
        fn new(name: &str) -> Home {
            let dir = std::env::temp_dir().join(format!(
                "libn5-s3-cred-{name}-{}-{:x}",
                std::process::id(),
                (crate::storage::store::random_fraction() * 1e15) as u64
            ));
            std::fs::create_dir_all(dir.join(".aws")).unwrap();
            Home(dir)
        }

        fn write(&self, file: &str, text: &str) {
            std::fs::write(self.0.join(".aws").join(file), text).unwrap();
        }

        fn home(&self) -> &str {
            self.0.to_str().unwrap()
        }
    }

    impl Drop for Home {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const CREDENTIALS: &str = "\u{feff}# comment\n[default]\naws_access_key_id = AKDEFAULT\n\
        aws_secret_access_key=SECRETDEFAULT\n\n[work]\n; other comment\nAWS_ACCESS_KEY_ID = AKWORK\n\
        aws_secret_access_key = SECRET/WORK+x=\naws_session_token = TOKEN\n[broken\nnot a line\n";
    const CONFIG: &str = "[default]\nregion = eu-central-1\n[profile   work]\nregion=ap-south-1\ns3 =\n  \
        addressing_style = path\n  region = nested-is-ignored\n[profile sso]\nsso_session = corp\n\
        region = us-west-2\n[profile onlyconfig]\naws_access_key_id = AKCONF\naws_secret_access_key = SKCONF\n";

    fn resolve_with(options: &S3Options, vars: &[(&str, &str)]) -> Result<Resolved> {
        resolve(options, &env_of(vars), true)
    }

    #[test]
    fn ini_sections() {
        let s = section(CONFIG, &|n| n == "profile work").unwrap();
        assert_eq!(s.get("region").map(String::as_str), Some("ap-south-1"));
        assert_eq!(s.get("s3").map(String::as_str), Some(""));
        assert_eq!(s.len(), 2);
        assert!(section(CONFIG, &|n| n == "absent").is_none());
        let merged = section("[a]\nx=1\n[b]\nx=2\n[a]\nx=3\ny = a = b\n", &|n| n == "a").unwrap();
        assert_eq!(merged.get("x").map(String::as_str), Some("3"));
        assert_eq!(merged.get("y").map(String::as_str), Some("a = b"));
        assert!(section("", &|_| true).is_none());
        assert!(section("x=1\n", &|_| true).is_none());
    }

    #[test]
    fn options_win_then_the_environment_then_profiles() {
        let home = Home::new("order");
        home.write("credentials", CREDENTIALS);
        home.write("config", CONFIG);
        let h = home.home();
        let env = [
            ("HOME", h),
            ("AWS_ACCESS_KEY_ID", "AKENV"),
            ("AWS_SECRET_ACCESS_KEY", "SKENV"),
        ];

        let mut o = S3Options {
            access_key_id: Some("AKOPT".into()),
            secret_access_key: Some(Secret::new("SKOPT")),
            ..S3Options::default()
        };
        let r = resolve_with(&o, &env).unwrap();
        assert_eq!(r.credentials.source(), "options s3.access_key_id");
        assert_eq!(r.credentials.aws().unwrap().access_key_id(), "AKOPT");
        assert_eq!(r.profile_region.as_deref(), Some("eu-central-1"));

        o.anonymous = true;
        let r = resolve_with(&o, &env).unwrap();
        assert!(r.credentials.is_anonymous());
        assert!(r.credentials.source().contains("s3.anonymous"));

        let r = resolve_with(&S3Options::default(), &env).unwrap();
        assert_eq!(
            r.credentials.source(),
            "AWS_ACCESS_KEY_ID from the environment"
        );
        assert_eq!(r.credentials.aws().unwrap().secret_access_key(), "SKENV");

        let work = S3Options {
            profile: Some("work".into()),
            ..S3Options::default()
        };
        let r = resolve_with(&work, &env).unwrap();
        assert!(
            r.credentials.source().starts_with("profile 'work' of "),
            "{}",
            r.credentials.source()
        );
        let aws = r.credentials.aws().unwrap();
        assert_eq!(aws.access_key_id(), "AKWORK");
        assert_eq!(aws.secret_access_key(), "SECRET/WORK+x=");
        assert_eq!(aws.session_token(), Some("TOKEN"));
        assert_eq!(r.profile_region.as_deref(), Some("ap-south-1"));

        let r = resolve_with(&S3Options::default(), &[("HOME", h)]).unwrap();
        assert_eq!(r.credentials.aws().unwrap().access_key_id(), "AKDEFAULT");
        let r = resolve_with(
            &S3Options::default(),
            &[("HOME", h), ("AWS_PROFILE", "work")],
        )
        .unwrap();
        assert_eq!(r.credentials.aws().unwrap().access_key_id(), "AKWORK");
        let r = resolve_with(
            &S3Options::default(),
            &[("HOME", h), ("AWS_PROFILE", "onlyconfig")],
        )
        .unwrap();
        assert_eq!(r.credentials.aws().unwrap().access_key_id(), "AKCONF");
        assert!(
            r.credentials.source().contains("config"),
            "{}",
            r.credentials.source()
        );
    }

    #[test]
    fn anonymous_when_nothing_is_found_saying_what_was_checked() {
        let home = Home::new("anon");
        home.write("config", CONFIG);
        let h = home.home();
        let r = resolve_with(&S3Options::default(), &[("HOME", h)]).unwrap();
        assert!(r.credentials.is_anonymous());
        assert!(r.credentials.aws().is_none());
        let source = r.credentials.source();
        assert!(
            source.contains("no credentials were found") && source.contains("AWS_ACCESS_KEY_ID"),
            "{source}"
        );
        assert!(
            source.contains(".aws/credentials") && source.contains("'default'"),
            "{source}"
        );
        assert_eq!(r.profile_region.as_deref(), Some("eu-central-1"));

        let r = resolve_with(
            &S3Options::default(),
            &[("HOME", h), ("AWS_PROFILE", "sso")],
        )
        .unwrap();
        assert!(r.credentials.is_anonymous());
        assert!(
            r.credentials.source().contains("sso_session"),
            "{}",
            r.credentials.source()
        );
        assert_eq!(r.profile_region.as_deref(), Some("us-west-2"));

        let r = resolve_with(&S3Options::default(), &[]).unwrap();
        assert!(r.credentials.source().contains("HOME is not set"));
        assert_eq!(r.profile_region, None);
    }

    #[test]
    fn shared_file_variables_and_errors() {
        let home = Home::new("vars");
        let other = home.0.join("elsewhere");
        std::fs::write(
            &other,
            "[x]\naws_access_key_id=A\naws_secret_access_key=B\n",
        )
        .unwrap();
        let cfg = home.0.join("cfg");
        std::fs::write(&cfg, "[profile x]\nregion = sa-east-1\n").unwrap();
        let vars = [
            ("HOME", home.home()),
            ("AWS_SHARED_CREDENTIALS_FILE", other.to_str().unwrap()),
            ("AWS_CONFIG_FILE", "~/cfg"),
            ("AWS_PROFILE", "x"),
        ];
        let r = resolve_with(&S3Options::default(), &vars).unwrap();
        assert_eq!(r.credentials.aws().unwrap().access_key_id(), "A");
        assert_eq!(r.profile_region.as_deref(), Some("sa-east-1"));

        // A profile named explicitly must exist.
        let e = resolve_with(
            &S3Options::default(),
            &[("HOME", home.home()), ("AWS_PROFILE", "nope")],
        )
        .unwrap_err();
        assert!(
            e.message().contains("'nope'") && e.message().contains("AWS_PROFILE"),
            "{e}"
        );
        let o = S3Options {
            profile: Some("nope".into()),
            ..S3Options::default()
        };
        assert!(resolve_with(&o, &[("HOME", home.home())]).is_err());

        // Half of a key pair is an error that shows no value.
        for vars in [
            vec![("AWS_ACCESS_KEY_ID", "AK")],
            vec![("AWS_SECRET_ACCESS_KEY", "SUPERSECRET")],
        ] {
            let e = resolve_with(&S3Options::default(), &vars).unwrap_err();
            assert!(!e.message().contains("SUPERSECRET"), "{e}");
        }
        let half = S3Options {
            secret_access_key: Some(Secret::new("SUPERSECRET")),
            ..S3Options::default()
        };
        let e = resolve_with(&half, &[]).unwrap_err();
        assert!(!e.message().contains("SUPERSECRET"), "{e}");
        let bad = S3Options {
            access_key_id: Some("AK".into()),
            secret_access_key: Some(Secret::new("line\nbreak")),
            ..S3Options::default()
        };
        let e = resolve_with(&bad, &[]).unwrap_err();
        assert!(!e.message().contains("line"), "{e}");

        let big = home.0.join("big");
        std::fs::write(&big, vec![b'#'; (MAX_FILE + 1) as usize]).unwrap();
        let e = resolve_with(
            &S3Options::default(),
            &[("AWS_SHARED_CREDENTIALS_FILE", big.to_str().unwrap())],
        )
        .unwrap_err();
        assert!(e.message().contains("larger"), "{e}");
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let r = resolve_with(
            &S3Options::default(),
            &[
                ("AWS_ACCESS_KEY_ID", "AK"),
                ("AWS_SECRET_ACCESS_KEY", "SUPERSECRET"),
                ("AWS_SESSION_TOKEN", "TOKENVALUE"),
            ],
        )
        .unwrap();
        let shown = format!("{r:?} {:?}", r.credentials.aws());
        assert!(
            !shown.contains("SUPERSECRET") && !shown.contains("TOKENVALUE"),
            "{shown}"
        );
    }
}
