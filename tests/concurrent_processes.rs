//! Several processes writing one container at once: each writes its own
//! blocks of one dataset, several times over, and merges its own attribute
//! keys into the same three groups in between. Afterwards every block holds
//! its writer's last value and every key of every process is in every
//! group. (Threads sharing handles through the C API do the same in
//! tests/c/test_threads.c.)

#![cfg(unix)]

mod common;

use std::process::Stdio;

use common::{compression, Scratch};
use n5::{Container, DataType, DatasetAttributes, Mode};
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

fn child(root: &str, id: u64) {
    let c = Container::open(root, Mode::ReadWrite).unwrap();
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
        let (root, id) = spec.split_once('|').unwrap();
        child(root, id.parse().unwrap());
        return;
    }
    let s = Scratch::new("processes");
    let root = s.join("c.n5");
    let c = Container::open(&root, Mode::Create).unwrap();
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
                &format!("{}|{id}", root.display()),
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for mut ch in children {
        assert!(ch.wait().unwrap().success());
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
                    "at ({x}, {y}, {z})"
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
                "{group}: p{id}_{m}"
            );
        }
    }
}
