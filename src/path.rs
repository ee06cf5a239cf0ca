//! Container-relative paths: normalisation of the `/`-separated group and
//! dataset paths that users pass, so that no path can leave the container root.

use crate::error::{Error, Result};

/// Normalise a container-relative path.
///
/// `/` separates components; a leading `/`, empty components and `.` are
/// ignored; `..` removes the previous component. `""`, `"/"` and `"."` are the
/// root, returned as `""`. A path that would go above the root is an
/// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) error,
/// never clamped. Names may hold any character except `/` and NUL (spaces,
/// `#`, `%` and unicode are ordinary characters).
pub fn normalize(path: &str) -> Result<String> {
    let mut parts: Vec<&str> = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(Error::invalid_argument(format!(
                        "path '{path}' goes above the container root"
                    )));
                }
            }
            name => {
                if name.contains('\0') {
                    return Err(Error::invalid_argument(format!(
                        "path '{}' contains a NUL character",
                        path.escape_default()
                    )));
                }
                parts.push(name);
            }
        }
    }
    Ok(parts.join("/"))
}

/// Join two normalised paths (either may be the root `""`).
pub fn join(base: &str, child: &str) -> String {
    match (base.is_empty(), child.is_empty()) {
        (true, _) => child.to_string(),
        (_, true) => base.to_string(),
        _ => format!("{base}/{child}"),
    }
}

/// How a path is shown in messages: the root as `/`.
pub fn display(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_spellings() {
        for p in ["", "/", ".", "./", "//", "/./.", "a/.."] {
            assert_eq!(normalize(p).unwrap(), "", "{p:?}");
        }
    }

    #[test]
    fn resolves_dots_and_slashes() {
        assert_eq!(normalize("/a//b/./c/").unwrap(), "a/b/c");
        assert_eq!(normalize("a/b/../c").unwrap(), "a/c");
        assert_eq!(normalize("a/b/../../c").unwrap(), "c");
        assert_eq!(
            normalize("with space/#hash/%25/ünï").unwrap(),
            "with space/#hash/%25/ünï"
        );
        assert_eq!(normalize("...").unwrap(), "...");
    }

    #[test]
    fn escaping_is_an_error() {
        for p in ["..", "../x", "a/../..", "/a/b/../../../etc", "./.."] {
            let e = normalize(p).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument, "{p}");
            assert!(e.message().contains("above the container root"));
        }
        assert!(normalize("a\0b").is_err());
    }

    #[test]
    fn join_and_display() {
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a", ""), "a");
        assert_eq!(join("a", "b"), "a/b");
        assert_eq!(display(""), "/");
        assert_eq!(display("a"), "a");
    }
}
