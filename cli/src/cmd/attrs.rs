//! `n5 attrs get|set|rm`: one attribute of a group or dataset by N5
//! attribute path (`a/b[2]`, with `\/` and `\[` escapes), or the whole
//! document.

use clap::{Args, Subcommand};
use n5::Mode;
use serde_json::Value;

use crate::cmd::ls::open_existing;
use crate::error::{At, CliError, CliResult, EXIT_OK};
use crate::location::Location;
use crate::output::Out;
use crate::Global;

/// The `attrs` subcommands.
#[derive(Subcommand, Debug)]
pub enum AttrsCommand {
    /// Print an attribute (or the whole attributes document without KEY).
    #[command(
        after_help = "Examples:\n  n5 attrs get vol.n5/raw pixelResolution/dimensions[0]\n  n5 attrs get --json vol.n5/raw"
    )]
    Get(GetArgs),
    /// Set an attribute to a JSON value, creating objects and arrays on the way.
    #[command(
        after_help = "Examples:\n  n5 attrs set vol.n5/raw pixelResolution '{\"unit\":\"um\",\"dimensions\":[0.1,0.1,0.5]}'\n  n5 attrs set vol.n5/raw scales[2] 4\n  n5 attrs set --string vol.n5/raw description 'raw data'"
    )]
    Set(SetArgs),
    /// Remove an attribute (array elements after it shift down).
    #[command(after_help = "Example:\n  n5 attrs rm vol.n5/raw scales[2]")]
    Rm(RmArgs),
}

/// Arguments of `n5 attrs get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// Group or dataset.
    pub path: String,
    /// N5 attribute path such as `a/b[2]`; the whole document when omitted.
    pub key: Option<String>,
    /// Print the value as compact JSON (strings quoted); without it, strings
    /// print as plain text and other values as indented JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `n5 attrs set`.
#[derive(Args, Debug)]
pub struct SetArgs {
    /// Group or dataset.
    pub path: String,
    /// N5 attribute path such as `a/b[2]`.
    pub key: String,
    /// The value: JSON text (`3`, `"text"`, `[1,2]`, `{"a":1}`).
    pub value: String,
    /// Store VALUE as a string as it is, without parsing it as JSON.
    #[arg(long, short)]
    pub string: bool,
}

/// Arguments of `n5 attrs rm`.
#[derive(Args, Debug)]
pub struct RmArgs {
    /// Group or dataset.
    pub path: String,
    /// N5 attribute path such as `a/b[2]`.
    pub key: String,
    /// Succeed even when the attribute is absent.
    #[arg(long, short)]
    pub force: bool,
}

/// `n5 attrs ...`.
pub fn attrs(cmd: &AttrsCommand, g: &Global) -> CliResult<u8> {
    match cmd {
        AttrsCommand::Get(a) => get(a, g),
        AttrsCommand::Set(a) => set(a, g),
        AttrsCommand::Rm(a) => rm(a, g),
    }
}

fn get(a: &GetArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = open_existing(&loc, g)?;
    let value = match &a.key {
        None => c.attributes(&loc.inner).at(&loc.arg)?,
        Some(key) => c
            .get_attribute(&loc.inner, key)
            .at(&loc.arg)?
            .ok_or_else(|| CliError::new(&loc.arg, format!("no attribute '{key}'")))?,
    };
    let mut out = Out::new();
    match (&value, a.json) {
        (_, true) => out.line(&n5::jsontext::to_string(&value).unwrap_or_default())?,
        (Value::String(s), false) if n5::jsontext::non_finite(&value).is_none() => out.line(s)?,
        (v, false) => out.json(v)?,
    }
    out.flush()?;
    Ok(EXIT_OK)
}

fn set(a: &SetArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let value = if a.string {
        Value::String(a.value.clone())
    } else {
        n5::jsontext::parse(a.value.as_bytes()).map_err(|e| {
            CliError::usage(
                &a.value,
                format!("not valid JSON ({e}); quote text as '\"text\"' or use --string"),
            )
        })?
    };
    let c = loc.open(Mode::ReadWrite, g.threads.max(1))?;
    if !c.exists(&loc.inner).at(&loc.arg)? {
        return Err(CliError::new(&loc.arg, "no such group or dataset"));
    }
    c.set_attribute(&loc.inner, &a.key, value).at(&loc.arg)?;
    Ok(EXIT_OK)
}

fn rm(a: &RmArgs, g: &Global) -> CliResult<u8> {
    let loc = Location::parse(&a.path, g)?;
    let c = loc.open(Mode::ReadWrite, g.threads.max(1))?;
    if !c.exists(&loc.inner).at(&loc.arg)? {
        return Err(CliError::new(&loc.arg, "no such group or dataset"));
    }
    let removed = c.remove_attribute(&loc.inner, &a.key).at(&loc.arg)?;
    if removed.is_none() && !a.force {
        return Err(CliError::new(&loc.arg, format!("no attribute '{}'", a.key)));
    }
    Ok(EXIT_OK)
}
