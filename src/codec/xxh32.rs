//! XXH32, the 32-bit xxHash: the checksum of lz4-java's `LZ4Block` pieces
//! (seed `0x9747B28C`, masked to 28 bits) and of the LZ4 frame format
//! (header, block and content checksums, seed 0).

const PRIME1: u32 = 0x9E37_79B1;
const PRIME2: u32 = 0x85EB_CA77;
const PRIME3: u32 = 0xC2B2_AE3D;
const PRIME4: u32 = 0x27D4_EB2F;
const PRIME5: u32 = 0x1656_67B1;

fn read_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(PRIME2))
        .rotate_left(13)
        .wrapping_mul(PRIME1)
}

/// The XXH32 hash of `data` with `seed`.
pub fn xxh32(data: &[u8], seed: u32) -> u32 {
    let mut rest = data;
    let mut h = if data.len() >= 16 {
        let mut v1 = seed.wrapping_add(PRIME1).wrapping_add(PRIME2);
        let mut v2 = seed.wrapping_add(PRIME2);
        let mut v3 = seed;
        let mut v4 = seed.wrapping_sub(PRIME1);
        let mut stripes = rest.chunks_exact(16);
        for s in &mut stripes {
            // Fixed-size loads: no bounds checks in the loop.
            let lane = |i: usize| u32::from_le_bytes([s[i], s[i + 1], s[i + 2], s[i + 3]]);
            v1 = round(v1, lane(0));
            v2 = round(v2, lane(4));
            v3 = round(v3, lane(8));
            v4 = round(v4, lane(12));
        }
        rest = stripes.remainder();
        v1.rotate_left(1)
            .wrapping_add(v2.rotate_left(7))
            .wrapping_add(v3.rotate_left(12))
            .wrapping_add(v4.rotate_left(18))
    } else {
        seed.wrapping_add(PRIME5)
    };
    // The length is mixed in modulo 2^32, as the reference does.
    h = h.wrapping_add(data.len() as u32);
    while rest.len() >= 4 {
        h = h
            .wrapping_add(read_u32(rest).wrapping_mul(PRIME3))
            .rotate_left(17)
            .wrapping_mul(PRIME4);
        rest = &rest[4..];
    }
    for &byte in rest {
        h = h
            .wrapping_add(u32::from(byte).wrapping_mul(PRIME5))
            .rotate_left(11)
            .wrapping_mul(PRIME1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(PRIME2);
    h ^= h >> 13;
    h = h.wrapping_mul(PRIME3);
    h ^= h >> 16;
    h
}

#[cfg(test)]
mod tests {
    use super::xxh32;

    #[test]
    fn reference_vectors() {
        // Published values of the reference implementation.
        assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32(b"a", 0), 0x550D_7456);
        assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
        assert_eq!(
            xxh32(b"Nobody inspects the spammish repetition", 0),
            0xE229_3B2F
        );
    }

    #[test]
    fn lz4_java_checksums_from_the_format_notes() {
        // n5-format.md b4: checksums lz4-java wrote with seed 0x9747B28C.
        let seed = 0x9747_B28C;
        let readme = [0u8, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6];
        assert_eq!(xxh32(&readme, seed), 0x768B_2590);
        assert_eq!(xxh32(&[0u8; 256], seed) & 0x0FFF_FFFF, 0x0A47_9E13);
        let bytes: Vec<u8> = (0..100).collect();
        assert_eq!(xxh32(&bytes[..64], seed) & 0x0FFF_FFFF, 0x0DCA_2BF8);
        assert_eq!(xxh32(&bytes[64..], seed) & 0x0FFF_FFFF, 0x0658_033A);
    }

    #[test]
    fn agrees_with_the_lz4_library_on_every_tail_length() {
        // The LZ4 frame format stores XXH32(content, 0); the C library writes
        // it, so a frame it made checks every code path of ours.
        for len in [0usize, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 100, 1000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut enc = ::lz4::EncoderBuilder::new()
                .checksum(::lz4::ContentChecksum::ChecksumEnabled)
                .build(Vec::new())
                .unwrap();
            std::io::Write::write_all(&mut enc, &data).unwrap();
            let (frame, res) = enc.finish();
            res.unwrap();
            let stored = u32::from_le_bytes(frame[frame.len() - 4..].try_into().unwrap());
            assert_eq!(xxh32(&data, 0), stored, "length {len}");
        }
    }
}
