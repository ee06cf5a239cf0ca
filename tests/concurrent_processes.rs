//! Several processes writing one container at once, on the local disk and
//! in each object store (S3 on SeaweedFS, GCS on fake-gcs-server, as many
//! machines sharing one bucket would): each writes its own blocks of one
//! dataset, several times over, and merges its own attribute keys into the
//! same three groups in between. Afterwards every block holds its writer's
//! last value and every key of every process is in every group: the
//! directory lock on the disk, conditional writes in the object stores.
//! (Threads sharing handles through the C API do the same in
//! tests/c/test_threads.c.)
//!
//! What fake-gcs-server can show: it honours `ifGenerationMatch` on the
//! multipart uploads conditional writes use, under one lock, so a writer
//! that lost a race really gets 412 and starts over; it cannot show real
//! GCS's limits on rewriting one object often (429 or 503 there, which the
//! retries absorb).

#![cfg(unix)]

mod common;

use std::process::Stdio;

use common::compression;
use common::places::{options_json, place, Kind};
use n5::{Container, DataType, DatasetAttributes, Mode, Options};
use serde_json::json;

const PROCESSES: u64 = 4;
const PASSES: u64 = 8;
const GRID: u64 = 4;
const BLOCK: u64 = 16;
const GROUPS: [&str; 3] = ["g0", "g1", "g2/deeper"];

/// The value process `id` writes into block `pos` in `pass`.
fn value(id: u64, pos: [u64; 3], pass: u64) -> u16 {
    (1 + id * 1000 + (pos[0] + GRID * pos[1] + GRID * GRID * pos[2]) * 10 + pass) as u16
}

/// Which process owns block `pos`.
fn owner(pos: [u64; 3]) -> u64 {
    (pos[0] + pos[1] + pos[2]) % PROCESSES
}

fn child(root: &str, options: &str, id: u64) {
    let options = Options::from_json(options).unwrap();
    let c = Container::open_with(root, Mode::ReadWrite, options).unwrap();
    let d = c.open_dataset("d").unwrap();
    let mut merges = 0;
    for pass in 0..PASSES {
        for z in 0..GRID {
            for y in 0..GRID {
                for x in 0..GRID {
                    let pos = [x, y, z];
                    if owner(pos) != id {
                        continue;
                    }
                    let v = value(id, pos, pass);
                    let data: Vec<u8> = std::iter::repeat_n(v, (BLOCK * BLOCK * BLOCK) as usize)
                        .flat_map(|v| v.to_ne_bytes())
                        .collect();
                    let offset = pos.map(|p| p * BLOCK);
                    d.write_region(&offset, &[BLOCK; 3], &data).unwrap();
                    let group = GROUPS[merges % GROUPS.len()];
                    c.set_attribute(group, &format!("p{id}_{merges}"), json!(merges))
                        .unwrap();
                    merges += 1;
                }
            }
        }
    }
}

#[test]
fn processes_writing_disjoint_blocks_and_merging_keys_lose_nothing() {
    if let Ok(spec) = std::env::var("N5_TEST_CHILD_DISJOINT") {
        let mut parts = spec.splitn(3, '|');
        let (root, id, options) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        child(root, options, id.parse().unwrap());
        return;
    }
    for kind in [Kind::Fs, Kind::S3, Kind::Gcs] {
        let Some(p) = place(kind, "processes") else {
            continue;
        };
        eprintln!("-- {kind:?}: {}", p.location);
        check(
            &p.location,
            &serde_json::Value::Object(options_json(&p)).to_string(),
        );
    }
}

fn check(root: &str, options: &str) {
    let c = Container::open_with(root, Mode::Create, Options::from_json(options).unwrap()).unwrap();
    for g in GROUPS {
        c.create_group(g).unwrap();
    }
    let n = GRID * BLOCK;
    let a = DatasetAttributes::new(
        vec![n; 3],
        vec![BLOCK as u32; 3],
        DataType::U16,
        compression(r#"{"type":"zstd"}"#),
    )
    .unwrap();
    let d = c.create_dataset("d", a).unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|id| {
            common::child_test(
                "processes_writing_disjoint_blocks_and_merging_keys_lose_nothing",
                "N5_TEST_CHILD_DISJOINT",
                &format!("{root}|{id}|{options}"),
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for mut ch in children {
        assert!(ch.wait().unwrap().success(), "{root}");
    }
    let mut out = vec![0u8; (n * n * n * 2) as usize];
    d.read_region(&[0, 0, 0], &[n; 3], &mut out).unwrap();
    for z in 0..n {
        for y in 0..n {
            for x in 0..n {
                let pos = [x / BLOCK, y / BLOCK, z / BLOCK];
                let k = ((z * n + y) * n + x) as usize * 2;
                let got = u16::from_ne_bytes([out[k], out[k + 1]]);
                assert_eq!(
                    got,
                    value(owner(pos), pos, PASSES - 1),
                    "{root}: at ({x}, {y}, {z})"
                );
            }
        }
    }
    let merges_per_process = (GRID * GRID * GRID / PROCESSES * PASSES) as usize;
    for id in 0..PROCESSES {
        for m in 0..merges_per_process {
            let group = GROUPS[m % GROUPS.len()];
            assert_eq!(
                c.get_attribute(group, &format!("p{id}_{m}")).unwrap(),
                Some(json!(m)),
                "{root}: {group}: p{id}_{m}"
            );
        }
    }
}
