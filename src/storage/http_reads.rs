//! Reading objects over HTTP, as every network backend does it (plain
//! HTTP(S), and the bucket stores over S3 and GCS): a whole object with a
//! GET whose 200 answer is the object, a byte range with a GET carrying a
//! `Range` header whose answer must be the range asked for (see
//! [`check_range`] and [`range_body`]: a 206 with exactly that range, a
//! server that ignores ranges sends the whole object, which is cut, and a
//! 416 means the range starts beyond the end), and an empty range from the
//! object's size alone. A backend says how it sends a GET, what version an
//! answer carries and what the other answers mean; [`HttpReads`] makes the
//! reads of [`Store`] from that.

use super::http::{check_range, range_body, Method, Response, Validator};
use super::store::{ByteRange, Store, Version};
use crate::error::Result;

/// Reads of whole objects and byte ranges over HTTP, for a [`Store`] that
/// says how it sends a GET and what its answers mean.
pub(crate) trait HttpReads: Store {
    /// Send a GET of `key` (not the root) with `headers`, the answer checked
    /// by `validate` (see [`crate::storage::http::Client::send`]) and its
    /// body read into `spare`; the final answer, whatever its status.
    fn send_get(
        &self,
        key: &str,
        headers: &[(&str, &str)],
        validate: Validator<'_>,
        spare: Vec<u8>,
    ) -> Result<Response>;

    /// The version of the object that an answer to a GET of it carries (a
    /// range answer's is the whole object's), when it carries one.
    fn answer_version(&self, r: &Response) -> Option<Version>;

    /// `Ok` when the answer `r` to a read (`method`) of `key` means that
    /// there is no object, else the error it means.
    fn missing(&self, method: Method, key: &str, r: &Response) -> Result<()>;

    /// The 200 answer to a GET of the whole object at `key`, its body read
    /// into `spare`; `None` when there is no object (the root never is
    /// one).
    fn get_whole(&self, key: &str, spare: Vec<u8>) -> Result<Option<Response>> {
        if key.is_empty() {
            return Ok(None);
        }
        let r = self.send_get(key, &[], &|_| Ok(()), spare)?;
        if r.status != 200 {
            self.missing(Method::Get, key, &r)?;
            return Ok(None);
        }
        Ok(Some(r))
    }

    /// [`Store::get_into`]: the whole object at `key` into `buf`.
    fn read_into(&self, key: &str, buf: &mut Vec<u8>) -> Result<bool> {
        match self.get_whole(key, std::mem::take(buf))? {
            Some(r) => {
                *buf = r.body;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// [`Store::get_range_into`]: `range` of the object at `key` into `buf`,
    /// with the version its answer carries.
    fn read_range_into(
        &self,
        key: &str,
        range: ByteRange,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Option<Version>>> {
        if key.is_empty() {
            return Ok(None);
        }
        if matches!(range, ByteRange::Span { len: 0, .. } | ByteRange::Suffix(0)) {
            buf.clear();
            return Ok(self.size(key)?.map(|_| None));
        }
        let header = format!("bytes={range}");
        let validate = |r: &Response| check_range(range, r);
        let r = self.send_get(key, &[("range", &header)], &validate, std::mem::take(buf))?;
        let version = self.answer_version(&r);
        match range_body(range, r) {
            Ok(body) => {
                *buf = body;
                Ok(Some(version))
            }
            Err(r) => {
                self.missing(Method::Get, key, &r)?;
                Ok(None)
            }
        }
    }
}
