//! Bob Jenkins' lookup3 hash (`hashlittle`), the checksum HDF5 puts on its
//! metadata (superblock v2/v3, object headers v2, Fixed Array blocks):
//! `H5_checksum_metadata` is `hashlittle` with seed 0 over the structure's
//! bytes before its checksum, the key read one byte at a time (so the result
//! does not depend on the machine's byte order).

/// `hashlittle(key, initval)`.
pub(crate) fn hashlittle(key: &[u8], initval: u32) -> u32 {
    let init = 0xdead_beef_u32
        .wrapping_add(key.len() as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |k: &[u8]| {
        let mut w = [0u8; 4];
        w[..k.len()].copy_from_slice(k);
        u32::from_le_bytes(w)
    };
    let mut rest = key;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    // The last 1..=12 bytes, zero-padded.
    let mut last = [0u8; 12];
    last[..rest.len()].copy_from_slice(rest);
    a = a.wrapping_add(word(&last[0..4]));
    b = b.wrapping_add(word(&last[4..8]));
    c = c.wrapping_add(word(&last[8..12]));
    finish(&mut a, &mut b, &mut c);
    c
}

/// HDF5's metadata checksum of `bytes`.
pub(crate) fn checksum(bytes: &[u8]) -> u32 {
    hashlittle(bytes, 0)
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_values_lookup3_c_gives() {
        // lookup3.c's driver5: hashlittle("", 0) and the two sentences.
        assert_eq!(hashlittle(b"", 0), 0xdead_beef);
        assert_eq!(hashlittle(b"", 0xdead_beef), 0xbd5b_7dde);
        assert_eq!(
            hashlittle(b"Four score and seven years ago", 0),
            0x1777_0551
        );
        assert_eq!(
            hashlittle(b"Four score and seven years ago", 1),
            0xcd62_8161
        );
    }

    #[test]
    fn the_checksum_of_a_superblock_libhdf5_wrote() {
        // The 48-byte version 3 superblock of a file h5py (HDF5 2.0) wrote
        // with libver ("v110", "v110"): its last 4 bytes are the checksum
        // of the 44 before.
        let sb: [u8; 48] = [
            0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a, 0x03, 0x08, 0x08, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xc4, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x3f, 0x68, 0xc4, 0x5b,
        ];
        assert_eq!(checksum(&sb[..44]).to_le_bytes(), sb[44..]);
    }
}
