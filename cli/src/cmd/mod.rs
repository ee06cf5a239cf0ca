//! The subcommands, one module each: `ls` and `tree` ([`ls`]), [`info`],
//! [`attrs`], [`cat`], [`import`], [`cp`] (with [`nwb`]: links and the hdmf-zarr conventions), [`verify`], [`clean`] and [`pyramid`], plus what several
//! of them share ([`common`]; [`target`]: the format and shards of what
//! `cp` and `import` create).

pub mod attrs;
pub mod cat;
pub mod clean;
pub mod common;
pub mod cp;
pub mod import;
pub mod info;
pub mod ls;
pub mod nwb;
pub mod pyramid;
pub mod target;
pub mod verify;
