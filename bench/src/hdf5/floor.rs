//! The floors of the HDF5 mode: the work of a read or write of the HDF5
//! dataset without libn5 or libhdf5.
//!
//! * Reads (Floor): the stored bytes of every chunk the workload touches,
//!   at the offsets and sizes of the chunk map (h5py's `chunk_iter` of
//!   libn5's file, made before the timing), read with one positional read
//!   (`read_exact_at`) each into a reused buffer and, for gzip, inflated
//!   (libdeflate's zlib decoder, the library libn5 inflates with) and
//!   unshuffled into a reused chunk buffer: each chunk read and decoded by
//!   one of the job's threads, as the N5 floors do (crate::floor), so
//!   that on one thread reading and decoding take turns. Single chunks
//!   are read one at a time.
//! * FloorOut (whole-volume and region reads): the same, plus copying
//!   every chunk's part of the box into a fresh output buffer of the box's
//!   size (made before the timing, advised to use huge pages as libn5
//!   advises its caller's buffer), as every reader returning the data
//!   must.
//! * Writes (Floor): every chunk (cut from the volume before the timing)
//!   shuffled and deflated (libdeflate, zlib stream, level
//!   [`DEFLATE_LEVEL`]) on the job's threads, and written at the end of
//!   one file (raw: the chunk's bytes as they are). Not in it: HDF5's
//!   metadata (superblock, object headers, the chunk index), which libn5
//!   and h5py also write, and cutting the chunks from the volume.

use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde_json::Value;

use super::{prepare_cache, H5Job, Who, DEFLATE_LEVEL};
use crate::floor::{block_bytes, io_err, parallel, place, positions_of};
use crate::sys;
use crate::workload::{box_bytes, measure, retire_tree, Codec, Job, Report, Workload};

/// Where a chunk is stored.
#[derive(Clone, Copy, Debug)]
struct Stored {
    /// Absolute byte offset in the file.
    offset: u64,
    /// Stored bytes.
    size: u64,
    /// HDF5's filter mask: bit i set when filter i was not applied.
    mask: u32,
}

/// The chunk map of the job: N5-order grid position → where the chunk is.
fn chunk_map(h: &H5Job) -> Result<HashMap<[u64; 3], Stored>, String> {
    let path = &h.chunk_map;
    let text = fs::read_to_string(path)
        .map_err(|e| format!("no chunk map (made with h5py): {}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let ints =
        |v: &Value| -> Option<Vec<u64>> { v.as_array()?.iter().map(Value::as_u64).collect() };
    let b = h.job.block;
    if v.get("chunk").and_then(ints) != Some(vec![b[2], b[1], b[0]]) {
        return Err(format!("{}: not chunks of {b:?}", path.display()));
    }
    let mut map = HashMap::new();
    for entry in v
        .get("chunks")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{}: no chunks", path.display()))?
    {
        let a = ints(entry)
            .filter(|a| a.len() == 6)
            .ok_or_else(|| format!("{}: a bad entry {entry}", path.display()))?;
        map.insert(
            [a[2] / b[0], a[1] / b[1], a[0] / b[2]],
            Stored {
                offset: a[3],
                size: a[4],
                mask: a[5] as u32,
            },
        );
    }
    Ok(map)
}

/// Interleaves the two byte planes of shuffled 2-byte elements: `out[2i]
/// = src[i]`, `out[2i + 1] = src[n + i]`.
fn unshuffle2(src: &[u8], out: &mut [u8]) {
    let (lo, hi) = src.split_at(src.len() / 2);
    for ((d, &l), &h) in out.chunks_exact_mut(2).zip(lo).zip(hi) {
        d[0] = l;
        d[1] = h;
    }
}

/// Splits 2-byte elements into their byte planes (HDF5's shuffle).
fn shuffle2(src: &[u8], out: &mut [u8]) {
    let (lo, hi) = out.split_at_mut(src.len() / 2);
    for ((e, l), h) in src.chunks_exact(2).zip(lo).zip(hi) {
        *l = e[0];
        *h = e[1];
    }
}

/// A thread's decoder of gzip chunks: libdeflate's and the inflated,
/// still shuffled chunk.
struct Decoder {
    inflate: libdeflater::Decompressor,
    shuffled: Vec<u8>,
}

impl Decoder {
    fn new() -> Decoder {
        Decoder {
            inflate: libdeflater::Decompressor::new(),
            shuffled: Vec::new(),
        }
    }

    /// Decodes the stored bytes of a chunk filtered with shuffle (filter
    /// 0) and deflate (filter 1), skipping a filter `mask` says was not
    /// applied, into exactly `out`.
    fn decode(&mut self, stored: &[u8], mask: u32, out: &mut [u8]) -> Result<(), String> {
        let inflated: &[u8] = if mask & 2 == 0 {
            self.shuffled.resize(out.len(), 0);
            let n = self
                .inflate
                .zlib_decompress(stored, &mut self.shuffled)
                .map_err(|e| format!("inflate: {e}"))?;
            &self.shuffled[..n]
        } else {
            stored
        };
        if inflated.len() != out.len() {
            return Err(format!(
                "a chunk of {} bytes decoded, {} expected",
                inflated.len(),
                out.len()
            ));
        }
        if mask & 1 == 0 {
            unshuffle2(inflated, out);
        } else {
            out.copy_from_slice(inflated);
        }
        Ok(())
    }
}

/// Runs a floor job of the HDF5 mode in this (child) process.
pub fn run_floor(h: &H5Job) -> Result<Report, String> {
    let job = &h.job;
    if (0..3).any(|d| !job.dims[d].is_multiple_of(job.block[d])) {
        return Err("the HDF5 floors need dimensions that are multiples of the chunks".into());
    }
    if job.workload == Workload::Write {
        return write_floor(job);
    }
    let map = chunk_map(h)?;
    let out_floor = h.who == Who::FloorOut;
    let gzip = job.codec == Codec::Gzip;
    let located = job
        .touched_blocks()
        .into_iter()
        .map(|p| {
            map.get(&p)
                .map(|s| (p, *s))
                .ok_or_else(|| format!("chunk {p:?} is not in the chunk map"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let path = h.file();
    let region = job.read_boxes().remove(0);
    let out_len = if out_floor { box_bytes(&region) } else { 0 };
    let plane_len = (region.shape[0] * region.shape[1] * Job::ELEM) as usize;
    let chunk_bytes = (job.block.iter().product::<u64>() * Job::ELEM) as usize;
    let workers = if job.workload == Workload::ReadBlocks {
        1
    } else {
        job.threads
    };
    let (report, _) = measure(
        job.repeats,
        || {
            let resident = prepare_cache(h)?;
            let file = File::open(&path).map_err(io_err(&path))?;
            Ok(((vec![0u8; out_len], file), resident))
        },
        |(out, file)| {
            if out.len() >= sys::HUGE_PAGE_OUTPUT {
                sys::advise_huge_pages(out);
            }
            let planes: Vec<Mutex<&mut [u8]>> =
                out.chunks_mut(plane_len.max(1)).map(Mutex::new).collect();
            let file = &*file;
            parallel(
                located.len(),
                workers,
                || (Decoder::new(), Vec::new(), Vec::new()),
                |(decoder, bytes, chunk), i| {
                    let (p, s) = located[i];
                    bytes.resize(s.size as usize, 0);
                    file.read_exact_at(bytes, s.offset).map_err(io_err(&path))?;
                    if gzip {
                        chunk.resize(chunk_bytes, 0);
                        decoder.decode(bytes, s.mask, chunk)?;
                        if out_floor {
                            place(job, &region, p, chunk, &planes, i);
                        }
                        Ok(())
                    } else if bytes.len() != chunk_bytes {
                        Err(format!("raw chunk {p:?} of {} bytes", bytes.len()))
                    } else {
                        if out_floor {
                            place(job, &region, p, bytes, &planes, i);
                        }
                        Ok(())
                    }
                },
            )
        },
    )?;
    Ok(report)
}

/// The write floor: every chunk encoded (gzip) and written at the end of
/// one fresh file.
fn write_floor(job: &Job) -> Result<Report, String> {
    // Untimed: the chunks' bytes (C order within the chunk, the file's
    // little-endian elements).
    let volume = fs::read(&job.raw).map_err(io_err(&job.raw))?;
    let chunks: Vec<Vec<u8>> = positions_of(job.grid())
        .into_iter()
        .map(|p| block_bytes(job, &volume, p, false))
        .collect();
    drop(volume);
    let target = job.scratch.join("chunks.bin");
    let gzip = job.codec == Codec::Gzip;
    let level = libdeflater::CompressionLvl::new(DEFLATE_LEVEL).map_err(|e| format!("{e:?}"))?;
    let (report, _) = measure(
        job.repeats,
        || {
            retire_tree(&job.scratch)?;
            fs::create_dir_all(&job.scratch).map_err(io_err(&job.scratch))?;
            sys::sync_all();
            let file = File::create(&target).map_err(io_err(&target))?;
            Ok((file, f64::NAN))
        },
        |file| {
            let file = &*file;
            let end = AtomicU64::new(0);
            parallel(
                chunks.len(),
                job.threads,
                || (libdeflater::Compressor::new(level), Vec::new(), Vec::new()),
                |(compressor, shuffled, deflated), i| {
                    let data = &chunks[i];
                    let bytes: &[u8] = if gzip {
                        shuffled.resize(data.len(), 0);
                        shuffle2(data, shuffled);
                        deflated.resize(compressor.zlib_compress_bound(data.len()), 0);
                        let n = compressor
                            .zlib_compress(shuffled, deflated)
                            .map_err(|e| format!("deflate: {e}"))?;
                        &deflated[..n]
                    } else {
                        data
                    };
                    let at = end.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    file.write_all_at(bytes, at).map_err(io_err(&target))
                },
            )
        },
    )?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_round_trip() {
        let data: Vec<u8> = (0..64u8).collect();
        let mut shuffled = vec![0; 64];
        shuffle2(&data, &mut shuffled);
        assert_eq!(shuffled[..4], [0, 2, 4, 6]);
        assert_eq!(shuffled[32..36], [1, 3, 5, 7]);
        let mut back = vec![0; 64];
        unshuffle2(&shuffled, &mut back);
        assert_eq!(back, data);
    }
}
