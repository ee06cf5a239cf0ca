//! The bucket layer: one [`Store`] over every object store whose objects
//! are `/`-separated names in a bucket (S3, Google Cloud Storage).
//! [`BucketStore`] holds what they share: keys mapped to object names below
//! the container's prefix, reads and what their answers mean (404 is
//! missing unless the bucket is; a 403 to an anonymous read of a key is
//! missing too), whole-object and conditional writes (the read-modify-write
//! loop is [`Store::update`]'s), directories over prefix listings (walks of
//! continued pages within their bounds, the directory markers the Java N5
//! backends write, directories deleted many objects at a time). An
//! [`ObjectProtocol`] gives what differs: the requests on the wire, their
//! signing and credentials, the parsing of their answers, and the messages
//! of their failures. [`listing`] turns listing pages into directory
//! listings and key lists.

pub mod listing;

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub use self::listing::Page;
use crate::error::{Error, ErrorKind, Result};
use crate::path::join;
use crate::storage::http::{Method, Response, Validator};
use crate::storage::http_reads::HttpReads;
use crate::storage::store::{ByteRange, Capabilities, Listing, Precondition, Store, Version};

/// Names asked for per listing page (the most S3 and GCS send).
pub const PAGE_SIZE: u32 = 1000;

/// The most objects one [`Store::delete_dir`] deletes.
pub const MAX_DELETED: usize = 1 << 30;

/// The page of a prefix listing to ask for.
#[derive(Clone, Copy, Debug)]
pub struct PageRequest<'a> {
    /// The name prefix listed.
    pub prefix: &'a str,
    /// Whether the listing is `/`-delimited (one level: names and common
    /// prefixes) or flat (every name below the prefix).
    pub delimiter: bool,
    /// The most names the page may hold.
    pub max: u32,
    /// The continuation token of the previous page, `None` for the first.
    pub token: Option<&'a str>,
}

/// Which directory markers [`Store::create_dir`] writes, as the Java N5
/// backend of each protocol does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Markers {
    /// n5-aws-s3: one for each directory from the container root (which
    /// gets none) down, each written again if it exists.
    BelowRoot,
    /// n5-google-cloud: one for each directory from the bucket's root down,
    /// each written only where none exists yet.
    FromBucketRoot,
}

/// An object store's wire protocol, as [`BucketStore`] uses it: requests
/// on single objects named in full (no container prefix here) and on
/// listing pages, what their answers mean, and the messages of failures.
/// Requests are retried within the budget by the protocol's HTTP client;
/// every method returns the final answer or its error.
pub trait ObjectProtocol: Send + Sync + fmt::Debug {
    /// The URL scheme that names the bucket's objects in messages (`s3`,
    /// `gs`).
    const SCHEME: &'static str;
    /// The method of [`ObjectProtocol::stat`] requests, as messages name it.
    const STAT: Method;
    /// The most pages one listing walks.
    const MAX_PAGES: usize;
    /// What a listing page's continuation token is called in messages.
    const TOKEN: &'static str;
    /// Whether the answer to a DELETE tells whether the object was there
    /// (S3's does not: a HEAD asks first).
    const DELETE_TELLS: bool;
    /// Whether a continuation token still leads to the next page after the
    /// objects of the pages before it were deleted (otherwise
    /// [`Store::delete_dir`] lists its first page again after each
    /// deletion).
    const TOKENS_SURVIVE_DELETION: bool;
    /// Which directory markers are written.
    const MARKERS: Markers;

    /// The bucket's name.
    fn bucket(&self) -> &str;

    /// How the object `name` is named in messages: `SCHEME://bucket/name`.
    fn describe_name(&self, name: &str) -> String {
        format!("{}://{}/{name}", Self::SCHEME, self.bucket())
    }

    /// GET the object `name` with `headers` (a `range`), the answer checked
    /// by `validate` (see [`crate::storage::http::Client::send`]) and its
    /// body read into `spare`; the answer, whatever its status.
    fn get(
        &self,
        name: &str,
        headers: &[(&str, &str)],
        validate: Validator<'_>,
        spare: Vec<u8>,
    ) -> Result<Response>;

    /// The version an answer to a GET of an object carries (a range
    /// answer's is the whole object's), when it carries a valid one.
    fn version(&self, r: &Response) -> Option<Version>;

    /// The error of a successful GET of the object `name` that carried no
    /// version.
    fn unversioned(&self, name: &str) -> Error;

    /// Ask for the size of the object `name` (with [`ObjectProtocol::STAT`]);
    /// the answer, whatever its status.
    fn stat(&self, name: &str) -> Result<Response>;

    /// The size of the object `name` that the successful answer `r` to
    /// [`ObjectProtocol::stat`] gives.
    fn stat_size(&self, name: &str, r: &Response) -> Result<u64>;

    /// Replace the object `name` with `body` in one request.
    fn put(&self, name: &str, body: &[u8]) -> Result<()>;

    /// [`ObjectProtocol::put`] only if `condition` holds at the moment of
    /// the write; `false` (nothing written) when it does not.
    fn put_if(&self, name: &str, body: &[u8], condition: &Precondition) -> Result<bool>;

    /// DELETE the object `name`; the answer, whatever its status.
    fn delete(&self, name: &str) -> Result<Response>;

    /// One page of a prefix listing; `what` names the listing in messages.
    fn page(&self, what: &str, request: &PageRequest<'_>) -> Result<Page>;

    /// The error of a listing page (asked for with `request`) that is
    /// malformed for the reason `why`.
    fn malformed_page(&self, what: &str, request: &PageRequest<'_>, why: &str) -> Error;

    /// Whether the store keeps real directories under its objects, which
    /// deleting the objects leaves behind (SeaweedFS's filer; not AWS, not
    /// GCS).
    fn keeps_directories(&self) -> bool;

    /// Whether requests go without credentials.
    fn is_anonymous(&self) -> bool;

    /// Whether an error answer says that the bucket, not an object, is
    /// missing.
    fn bucket_missing(&self, r: &Response) -> bool;

    /// The error of an answer to `method` on `what` that is neither success
    /// nor "missing".
    fn failure(&self, method: Method, what: &str, r: &Response) -> Error;
}

/// A container root in a bucket, reached through the protocol `P`.
#[derive(Debug)]
pub struct BucketStore<P> {
    protocol: P,
    /// The name prefix of the root, no slash at either end.
    prefix: String,
    display: String,
    /// How many deletions of a directory's objects are in flight at once.
    io_concurrency: usize,
}

impl<P: ObjectProtocol> BucketStore<P> {
    /// The container root `prefix` in the bucket `protocol` reaches, named
    /// `display` in messages, deleting `io_concurrency` objects at a time.
    pub fn with_protocol(protocol: P, prefix: &str, display: &str, io_concurrency: usize) -> Self {
        BucketStore {
            protocol,
            prefix: prefix.trim_matches('/').to_string(),
            display: display.to_string(),
            io_concurrency,
        }
    }

    /// The protocol requests go through.
    pub fn protocol(&self) -> &P {
        &self.protocol
    }

    /// The object name of `key`.
    pub(crate) fn name(&self, key: &str) -> String {
        join(&self.prefix, key)
    }

    /// The name prefix of the directory `dir`: `""` for the bucket's root,
    /// else its name and a slash.
    pub(crate) fn dir_prefix(&self, dir: &str) -> String {
        let name = self.name(dir);
        if name.is_empty() {
            name
        } else {
            name + "/"
        }
    }

    /// The size of the object at `key`, `None` when there is none; a 403
    /// means "missing" only for reads (`write` false).
    fn stat(&self, key: &str, write: bool) -> Result<Option<u64>> {
        if key.is_empty() {
            return Ok(None);
        }
        let name = self.name(key);
        let r = self.protocol.stat(&name)?;
        if r.status != 200 {
            if write && r.status == 403 {
                return Err(self.protocol.failure(P::STAT, &self.describe(key), &r));
            }
            self.missing(P::STAT, key, &r)?;
            return Ok(None);
        }
        self.protocol.stat_size(&name, &r).map(Some)
    }

    /// Delete the object `name`; whether the answer says it was there.
    fn delete_object(&self, name: &str) -> Result<bool> {
        let r = self.protocol.delete(name)?;
        match r.status {
            200 | 204 => Ok(true),
            404 if !self.protocol.bucket_missing(&r) => Ok(false),
            _ => Err(self
                .protocol
                .failure(Method::Delete, &self.protocol.describe_name(name), &r)),
        }
    }

    /// Delete the objects `names`, `io_concurrency` at a time; objects
    /// already gone are fine.
    fn delete_names(&self, names: &[String]) -> Result<()> {
        let delete = |name: &String| self.delete_object(name).map(drop);
        let threads = self.io_concurrency.min(names.len());
        if threads <= 1 {
            return names.iter().try_for_each(delete);
        }
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| -> Result<()> {
                        while !failed.load(Ordering::Relaxed) {
                            let Some(name) = names.get(next.fetch_add(1, Ordering::Relaxed)) else {
                                break;
                            };
                            delete(name).inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
                        }
                        Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        })
    }

    /// Walk the pages of the listing of `prefix` (`/`-delimited or flat),
    /// `max` names a page, handing each to `visit` until it returns `false`
    /// or the pages end.
    fn walk(
        &self,
        what: &str,
        prefix: &str,
        delimiter: bool,
        max: u32,
        visit: &mut dyn FnMut(Page) -> Result<bool>,
    ) -> Result<()> {
        let mut token: Option<String> = None;
        for _ in 0..P::MAX_PAGES {
            let request = PageRequest {
                prefix,
                delimiter,
                max,
                token: token.as_deref(),
            };
            let page = self.protocol.page(what, &request)?;
            let next = page.next.clone();
            if !visit(page)? {
                return Ok(());
            }
            match next {
                None => return Ok(()),
                Some(t) if request.token == Some(t.as_str()) => {
                    let why = format!("the same {} came back", P::TOKEN);
                    return Err(self.protocol.malformed_page(what, &request, &why));
                }
                Some(t) => token = Some(t),
            }
        }
        Err(beyond_pages(what, P::MAX_PAGES))
    }

    /// Delete every object below `prefix` page by page, following the
    /// continuation tokens (which name where the next page starts, so the
    /// deletions do not disturb the walk); how many there were.
    fn delete_walking(&self, what: &str, prefix: &str) -> Result<usize> {
        let mut deleted = 0usize;
        self.walk(what, prefix, false, PAGE_SIZE, &mut |page| {
            deleted = count_deleted(what, deleted, page.names.len())?;
            self.delete_names(&page.names)?;
            Ok(true)
        })?;
        Ok(deleted)
    }

    /// Delete every object below `prefix` (the directory marker included)
    /// by deleting the first page of a flat listing, then listing again
    /// from the start: no continuation token has to survive the deletions.
    /// How many there were.
    fn delete_relisting(&self, what: &str, prefix: &str) -> Result<usize> {
        let mut deleted = 0usize;
        let mut previous: HashSet<String> = HashSet::new();
        // The directories the deleted names lay in (see below).
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        let keeps_directories = self.protocol.keeps_directories();
        let mut pages = 0;
        loop {
            pages += 1;
            if pages > P::MAX_PAGES {
                return Err(beyond_pages(what, P::MAX_PAGES));
            }
            let request = PageRequest {
                prefix,
                delimiter: false,
                max: PAGE_SIZE,
                token: None,
            };
            let page = self.protocol.page(what, &request)?;
            let names: Vec<String> = page
                .names
                .into_iter()
                .filter(|k| k.starts_with(prefix) && !k.is_empty())
                .collect();
            if names.is_empty() {
                break;
            }
            if names.iter().any(|n| previous.contains(n)) {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("{what}: objects are still listed after their deletion"),
                ));
            }
            deleted = count_deleted(what, deleted, names.len())?;
            if keeps_directories {
                for name in &names {
                    dirs.extend(
                        name.match_indices('/')
                            .map(|(i, _)| i + 1)
                            .filter(|&end| end >= prefix.len())
                            .map(|end| name[..end].to_string()),
                    );
                }
            }
            self.delete_names(&names)?;
            if page.next.is_none() {
                break;
            }
            previous = names.into_iter().collect();
        }
        // Stores that keep real directories under their objects (SeaweedFS's
        // filer) leave a directory behind when its last objects are deleted
        // in parallel, and list it as a common prefix; deleting `dir/` removes
        // an empty one. So every directory of the deleted tree goes too,
        // deepest first.
        let mut levels: Vec<(usize, String)> = dirs
            .into_iter()
            .map(|d| (d.matches('/').count(), d))
            .collect();
        levels.sort_by_key(|(depth, _)| std::cmp::Reverse(*depth));
        for level in levels.chunk_by(|a, b| a.0 == b.0) {
            let names: Vec<String> = level.iter().map(|(_, d)| d.clone()).collect();
            self.delete_names(&names)?;
        }
        Ok(deleted)
    }

    /// The error of a write to the container root (`key` is `""`).
    fn root_is_not_an_object(&self, key: &str) -> Error {
        Error::invalid_argument(format!(
            "{}: the container root is not an object",
            self.describe(key)
        ))
    }
}

/// `deleted` objects and `more`, unless that is more than one
/// [`Store::delete_dir`] deletes.
fn count_deleted(what: &str, deleted: usize, more: usize) -> Result<usize> {
    let deleted = deleted + more;
    if deleted > MAX_DELETED {
        return Err(Error::new(
            ErrorKind::Io,
            format!("{what}: more than {MAX_DELETED} objects to delete"),
        ));
    }
    Ok(deleted)
}

/// The error of a listing of `what` that goes on beyond `max_pages` pages.
fn beyond_pages(what: &str, max_pages: usize) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("{what}: the listing goes on beyond {max_pages} pages"),
    )
}

impl<P: ObjectProtocol> HttpReads for BucketStore<P> {
    fn send_get(
        &self,
        key: &str,
        headers: &[(&str, &str)],
        validate: Validator<'_>,
        spare: Vec<u8>,
    ) -> Result<Response> {
        self.protocol.get(&self.name(key), headers, validate, spare)
    }

    fn answer_version(&self, r: &Response) -> Option<Version> {
        self.protocol.version(r)
    }

    /// 404 from an existing bucket, and 403 to an anonymous read of a key,
    /// mean that the object is missing.
    fn missing(&self, method: Method, key: &str, r: &Response) -> Result<()> {
        let missing = match r.status {
            404 => !self.protocol.bucket_missing(r),
            403 => self.protocol.is_anonymous() && !key.is_empty(),
            _ => false,
        };
        if missing {
            Ok(())
        } else {
            Err(self.protocol.failure(method, &self.describe(key), r))
        }
    }
}

impl<P: ObjectProtocol> Store for BucketStore<P> {
    fn location(&self) -> &str {
        &self.display
    }

    fn describe(&self, key: &str) -> String {
        self.protocol.describe_name(&self.name(key))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            writable: true,
            list: true,
            remote: true,
            exact_versions: true,
        }
    }

    fn get_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        self.read_into(key, buf)
    }

    fn get_range_into(
        &self,
        key: &str,
        range: ByteRange,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Option<Version>>> {
        self.read_range_into(key, range, buf)
    }

    fn get_versioned(&self, key: &str) -> Result<Option<(Vec<u8>, Version)>> {
        // The version comes with the bytes, so the two always belong
        // together.
        let Some(r) = self.get_whole(key, Vec::new())? else {
            return Ok(None);
        };
        let version = self
            .protocol
            .version(&r)
            .ok_or_else(|| self.protocol.unversioned(&self.name(key)))?;
        Ok(Some((r.body, version)))
    }

    fn size(&self, key: &str) -> Result<Option<u64>> {
        self.stat(key, false)
    }

    fn put(&self, key: &str, parts: &[&[u8]]) -> Result<()> {
        if key.is_empty() {
            return Err(self.root_is_not_an_object(key));
        }
        let joined;
        let body: &[u8] = match parts {
            [one] => one,
            _ => {
                joined = parts.concat();
                &joined
            }
        };
        self.protocol.put(&self.name(key), body)
    }

    fn put_if(&self, key: &str, data: &[u8], condition: &Precondition) -> Result<bool> {
        if key.is_empty() {
            return Err(self.root_is_not_an_object(key));
        }
        self.protocol.put_if(&self.name(key), data, condition)
    }

    fn delete(&self, key: &str) -> Result<bool> {
        if key.is_empty() {
            return Ok(false);
        }
        if P::DELETE_TELLS {
            return self.delete_object(&self.name(key));
        }
        // The answer to the DELETE is alike whether or not the object was
        // there: a HEAD tells.
        if self.stat(key, true)?.is_none() {
            return Ok(false);
        }
        self.delete_object(&self.name(key))?;
        Ok(true)
    }

    fn delete_dir(&self, dir: &str) -> Result<bool> {
        let prefix = self.dir_prefix(dir);
        let what = self.protocol.describe_name(&prefix);
        let deleted = if P::TOKENS_SURVIVE_DELETION {
            self.delete_walking(&what, &prefix)?
        } else {
            self.delete_relisting(&what, &prefix)?
        };
        Ok(deleted > 0)
    }

    fn list(&self, dir: &str) -> Result<Option<Listing>> {
        let prefix = self.dir_prefix(dir);
        let what = self.protocol.describe_name(&prefix);
        let mut level = listing::Level::new(&prefix, &what);
        self.walk(&what, &prefix, true, PAGE_SIZE, &mut |page| {
            level.add(&page.names, &page.prefixes)?;
            Ok(true)
        })?;
        Ok(level.finish())
    }

    fn list_keys(&self, dir: &str) -> Result<Vec<String>> {
        let prefix = self.dir_prefix(dir);
        let what = self.protocol.describe_name(&prefix);
        let mut keys = listing::Keys::new(&prefix, &what);
        self.walk(&what, &prefix, false, PAGE_SIZE, &mut |page| {
            keys.add(&page.names)?;
            Ok(true)
        })?;
        Ok(keys.finish())
    }

    fn is_dir(&self, dir: &str) -> Result<bool> {
        let prefix = self.dir_prefix(dir);
        let what = self.protocol.describe_name(&prefix);
        // A listing of the bucket's root answers when the bucket exists;
        // below it, any object (a marker or not) makes a directory.
        let mut found = prefix.is_empty();
        self.walk(&what, &prefix, false, 1, &mut |page| {
            found |= !page.names.is_empty() || !page.prefixes.is_empty();
            Ok(!found)
        })?;
        Ok(found)
    }

    fn create_dir(&self, dir: &str) -> Result<()> {
        let (mut marker, below) = match P::MARKERS {
            Markers::BelowRoot => (self.dir_prefix(""), dir.to_string()),
            Markers::FromBucketRoot => (String::new(), self.name(dir)),
        };
        for component in below.split('/').filter(|c| !c.is_empty()) {
            marker.push_str(component);
            marker.push('/');
            match P::MARKERS {
                Markers::BelowRoot => self.protocol.put(&marker, b"")?,
                // An existing marker is left alone.
                Markers::FromBucketRoot => {
                    self.protocol.put_if(&marker, b"", &Precondition::Absent)?;
                }
            }
        }
        Ok(())
    }
}
