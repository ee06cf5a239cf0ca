//! Killed writers lose nothing: a child process writes whole-dataset regions
//! (gzip blocks, 2 threads) and merges one attribute key per generation in a
//! loop, and is killed with SIGKILL at random moments, 200 times on the
//! local disk and 40 times on S3 (SeaweedFS), where the writes are PUTs
//! that up to 32 I/O threads have in flight. After each kill every block
//! decodes and holds either what it held before or a generation that child
//! wrote; every key the child reported as written is in attributes.json,
//! which parses. On the disk, leftover temporary files are never listed as
//! groups, datasets or blocks, and at the end
//! `Container::remove_stale_temporaries` removes what the kills left and
//! nothing else.

#![cfg(unix)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::time::Duration;

use common::places::{options_json, place, Kind};
use common::{compression, Scratch};
use n5::{Container, DataType, DatasetAttributes, Mode, Options};
use serde_json::json;

const DIMS: [u64; 3] = [64, 64, 8];
const BLOCK: [u32; 3] = [16, 16, 8];
const KILLS: usize = 200;

/// The child: writes generation after generation, reporting each step.
fn child(root: &str, start: u64, options: &str) {
    let options = Options {
        threads: 2,
        ..Options::from_json(options).unwrap()
    };
    let c = Container::open_with(root, Mode::ReadWrite, options).unwrap();
    let d = c.open_dataset("d").unwrap();
    let n = DIMS.iter().product::<u64>() as usize;
    // The parent's clock starts here, not at the process's start, which
    // on a loaded machine takes longer than most of the delays.
    println!("N5KILL ready 0");
    for g in start.. {
        let data: Vec<u8> = std::iter::repeat_n(g as u16, n)
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        d.write_region(&[0, 0, 0], &DIMS, &data).unwrap();
        println!("N5KILL wrote {g}");
        c.set_attribute("g", &format!("k{g}"), json!(g)).unwrap();
        println!("N5KILL attr {g}");
    }
}

const TEST: &str = "killed_writers_leave_old_or_new_blocks_and_every_confirmed_key";

#[test]
fn killed_writers_leave_old_or_new_blocks_and_every_confirmed_key() {
    if let Ok(spec) = std::env::var("N5_TEST_CHILD_KILLED") {
        let mut parts = spec.splitn(3, '|');
        let (root, start, options) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        child(root, start.parse().unwrap(), options);
        return;
    }
    let s = Scratch::new("killed");
    let root = s.join("c.n5");
    let (c, d, held) = kill_writers(root.to_str().unwrap(), "{}", KILLS, 5, 40, true);
    // The temporaries the kills left, never listed.
    let stale = walk_temporaries(&root);
    // What the kills left can be cleaned up: temporaries younger than the
    // age given stay (a write may be in progress), older ones go, and the
    // data is untouched. One more temporary, planted here, makes sure there
    // is something to clean even if no kill left one.
    std::fs::write(root.join("d/0/0/.n5tmp.0.1.1"), b"half a block").unwrap();
    let stale = stale + 1;
    let keep = c
        .remove_stale_temporaries(Duration::from_secs(3600))
        .unwrap();
    assert_eq!((keep.0, walk_temporaries(&root)), (0, stale));
    let ro = Container::open(&root, Mode::Read).unwrap();
    assert_eq!(
        ro.remove_stale_temporaries(Duration::ZERO)
            .unwrap_err()
            .kind(),
        n5::ErrorKind::ReadOnly
    );
    let (files, _) = c.remove_stale_temporaries(Duration::ZERO).unwrap();
    assert_eq!((files as usize, walk_temporaries(&root)), (stale, 0));
    for pos in d.list_blocks().unwrap() {
        let v = d.read_block(&pos).unwrap().unwrap().data;
        assert_eq!(&v[..2], &held[&pos].to_ne_bytes(), "block {pos:?}");
    }
}

/// Temporary files left in the container (names starting with `.n5tmp.`).
fn walk_temporaries(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            n += walk_temporaries(&entry.path());
        } else if entry
            .file_name()
            .to_string_lossy()
            .starts_with(n5::storage::TEMP_PREFIX)
        {
            n += 1;
        }
    }
    n
}

/// Kill a writing child `kills` times, `min_ms + rand(spread_ms)`
/// milliseconds after it opened the container, checking blocks and keys after every kill (see the
/// file's comment); returns the container, its dataset and what each block
/// holds.
fn kill_writers(
    root: &str,
    options: &str,
    kills: usize,
    min_ms: u64,
    spread_ms: u64,
    local: bool,
) -> (Container, n5::Dataset, HashMap<Vec<u64>, u16>) {
    let c = Container::open_with(root, Mode::Create, Options::from_json(options).unwrap()).unwrap();
    c.create_group("g").unwrap();
    let a = DatasetAttributes::new(
        DIMS.to_vec(),
        BLOCK.to_vec(),
        DataType::U16,
        compression(r#"{"type":"gzip","level":1}"#),
    )
    .unwrap();
    let d = c.create_dataset("d", a).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    // What each block held when last checked; keys confirmed so far.
    let mut held: HashMap<Vec<u64>, u16> = HashMap::new();
    let mut confirmed: BTreeSet<u64> = BTreeSet::new();
    let (mut next, mut mid_write) = (1u64, 0usize);
    for kill in 0..kills {
        let mut ch = common::child_test(
            TEST,
            "N5_TEST_CHILD_KILLED",
            &format!("{root}|{next}|{options}"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        // Wait for the child to have opened the container (the test
        // harness prints a few lines first; at most 100 are read, and the
        // end of its output, should it die, ends the wait too).
        let mut stdout = BufReader::new(ch.stdout.take().unwrap());
        let mut line = String::new();
        for _ in 0..100 {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 || line.starts_with("N5KILL ready") {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(min_ms + rand(spread_ms)));
        ch.kill().unwrap();
        ch.wait().unwrap();
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        let (mut wrote, mut attrs) = (None, Vec::new());
        for line in out.lines().filter_map(|l| l.strip_prefix("N5KILL ")) {
            let (what, g) = line.split_once(' ').unwrap();
            let g: u64 = g.parse().unwrap();
            match what {
                "wrote" => wrote = Some(g),
                "attr" => attrs.push(g),
                _ => {}
            }
        }
        // The generations this child may have written, whole or in part.
        let last = wrote.map_or(next, |w| w + 1);
        let (mut values, mut changed) = (BTreeSet::new(), false);
        for pos in d.list_blocks().unwrap() {
            let block = d
                .read_block(&pos)
                .unwrap_or_else(|e| panic!("kill {kill}: block {pos:?}: {e}"))
                .unwrap();
            let v = u16::from_ne_bytes([block.data[0], block.data[1]]);
            assert!(
                block.data.chunks_exact(2).all(|c| c == v.to_ne_bytes()),
                "kill {kill}: block {pos:?} mixes generations"
            );
            let old = held.get(&pos).copied();
            // On an object store, a PUT the killed child had sent whole may
            // still be applied after this check (the server finishes it
            // once the client is gone), so a block may show an earlier
            // child's generation later: never one older than it held, never
            // one newer than this child's. On the disk a dead writer's
            // rename either happened or not.
            let first = if local {
                next
            } else {
                old.map_or(1, |o| o as u64 + 1)
            };
            let new = (first..=last).contains(&(v as u64));
            assert!(
                Some(v) == old || new,
                "kill {kill}: block {pos:?} holds {v}: neither its old {old:?} nor {first}..={last}"
            );
            if let Some(w) = wrote {
                assert!(
                    v as u64 >= w,
                    "kill {kill}: block {pos:?} holds {v} after {w} was written"
                );
            }
            values.insert(v);
            changed |= old != Some(v);
            held.insert(pos, v);
        }
        if wrote.is_some() {
            assert_eq!(held.len(), 16, "kill {kill}: every block is stored");
        }
        // This kill interrupted a region write: blocks changed, not all.
        if changed && values.len() > 1 {
            mid_write += 1;
        }
        confirmed.extend(attrs);
        let doc = c
            .attributes("g")
            .unwrap_or_else(|e| panic!("kill {kill}: {e}"));
        for g in &confirmed {
            assert_eq!(doc[format!("k{g}")], json!(g), "kill {kill}: key k{g} lost");
        }
        // Temporary files are never listed.
        assert_eq!(c.list("").unwrap(), vec!["d".to_string(), "g".to_string()]);
        next = last + 1;
    }
    eprintln!(
        "{root}: {kills} kills; {} keys confirmed; {mid_write} kills left a region written in part \
         (old and new blocks)",
        confirmed.len()
    );
    // The children got to write (on a loaded machine most of each one's
    // time goes to starting up), and kills landed in the middle of writes
    // (on the disk; an object store's 16 PUTs of a region go out together,
    // so fewer kills split them).
    let least = if local { 10 } else { 5 };
    assert!(
        confirmed.len() >= least && mid_write >= least,
        "the children got to write: {} keys confirmed, {mid_write} kills mid-write",
        confirmed.len()
    );
    (c, d, held)
}

#[test]
fn killed_writers_on_s3_leave_old_or_new_blocks_and_every_confirmed_key() {
    let Some(p) = place(Kind::S3, "killed") else {
        return;
    };
    let options = serde_json::Value::Object(options_json(&p)).to_string();
    kill_writers(&p.location, &options, 40, 30, 300, false);
}

#[test]
fn killed_writers_on_gcs_leave_old_or_new_blocks_and_every_confirmed_key() {
    let Some(p) = place(Kind::Gcs, "killed") else {
        return;
    };
    let options = serde_json::Value::Object(options_json(&p)).to_string();
    kill_writers(&p.location, &options, 40, 30, 300, false);
}
