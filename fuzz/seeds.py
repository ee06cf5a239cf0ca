#!/usr/bin/env python3
"""Seed corpora for the fuzz targets from the peer-written containers in
../shared/corpus (or the directory given as the first argument): up to 4
block files of every dataset, each prefixed with the byte that makes
fuzz_targets/block_decode.rs decode it with the dataset's compression, and
every attributes.json for the metadata target (and, behind a few attribute
paths, for the attributes target), location strings and options for the
location target, and S3 and GCS answers for the remote_answers target. The same block files, their N5 header
taken off and the length they decode to put in front, seed codec_frames.
Also chunks and pipelines for hdf5_chunks, HDF5 files for hdf5_open
(only when FUZZ_TARGETS, which run.sh sets, names it or is not set), and
for pickle_vm the pickled and json2 chunks of ../shared/corpus-hdmf with
pickles numpy and Python write for other data; for zarr_object_chunk the
same corpus's object and compound chunks of at most 16 elements, with vlen
and struct chunks made here.
Writes fuzz/corpus/<target>/.
"""
import hashlib
import json
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "shared", "corpus")
# The order of COMPRESSIONS in fuzz/common.rs.
SELECTOR = {"raw": 0, "gzip": 1, "bzip2": 3, "xz": 4, "lz4": 5, "zstd": 6, "blosc": 7}
SIZES = {"uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "uint32": 4, "int32": 4,
         "float32": 4, "uint64": 8, "int64": 8, "float64": 8}


def codec_frame(sel, data, dtype):
    """The input of fuzz_targets/codec_frames.rs for a block file: selector,
    the decoded length (3 bytes, little-endian) and the payload; None for
    blocks it cannot describe (object blocks, over 1 MiB)."""
    if len(data) < 4 or dtype not in SIZES:
        return None
    mode, ndim = struct.unpack(">HH", data[:4])
    at = 4 + 4 * ndim
    if mode > 1 or len(data) < at:
        return None
    count = 1
    for (extent,) in struct.iter_unpack(">I", data[4:at]):
        count *= extent
    if mode == 1:
        if len(data) < at + 4:
            return None
        (count,) = struct.unpack(">I", data[at:at + 4])
        at += 4
    length = count * SIZES[dtype]
    if length > 1 << 20:
        return None
    return bytes([sel]) + struct.pack("<I", length)[:3] + data[at:]


def save(target, data):
    out = os.path.join(HERE, "corpus", target)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


# Seeds of the location target: every form of location the contract names,
# and options with every key.
LOCATIONS = [
    "/data/vol.n5", "vol.n5", "file:///data/my%20vol.n5", "s3://bucket/prefix/vol.n5",
    "s3://bucket", "https://bucket.s3.eu-west-2.amazonaws.com/prefix",
    "https://s3.eu-west-2.amazonaws.com/bucket/prefix", "https://s3.amazonaws.com/bucket/a/../b",
    "gs://bucket/prefix", "https://storage.googleapis.com/bucket/prefix",
    "https://uk1s3.embassy.ebi.ac.uk/idr/x.n5/", "http://127.0.0.1:8080/a%2Fb",
    "zarr3:s3://b/v.zarr", "n5:/data/v.n5", "http://[::1]:9000/x",
    '{"threads": 4, "io_concurrency": 32, "cache_bytes": 268435456, '
    '"s3": {"endpoint": "http://127.0.0.1:8333", "region": "us-east-1", "anonymous": false, '
    '"path_style": true, "access_key_id": "AK", "secret_access_key": "SK", '
    '"session_token": "ST", "profile": "default"}, '
    '"gcs": {"endpoint": "http://127.0.0.1:4443", "anonymous": false, '
    '"credentials_file": "/k.json", "token": "ya29"}, '
    '"http": {"headers": {"Authorization": "Bearer x"}}, '
    '"retry": {"max_attempts": 8, "max_seconds": 60, "request_timeout_seconds": 30}}',
]


# Seeds of the remote_answers target: what S3 and GCS answer.
ANSWERS = [
    b'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
    b'<Name>b</Name><Prefix>c.n5/</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>'
    b'<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>'
    b'<Contents><Key>c.n5/attributes.json</Key><Size>18</Size><ETag>&quot;x&quot;</ETag></Contents>'
    b'<CommonPrefixes><Prefix>c.n5/a%20b/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>c.n5/raw/</Prefix></CommonPrefixes>'
    b'<NextContinuationToken>MTAwMA==</NextContinuationToken></ListBucketResult>',
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AuthorizationHeaderMalformed</Code>'
    b'<Message>the region is wrong</Message><Region>eu-west-2</Region></Error>',
    b'<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>',
    b'{"kind": "storage#objects", "prefixes": ["c.n5/raw/"], "items": [{"kind": "storage#object", '
    b'"name": "c.n5/attributes.json", "size": "18", "generation": "1700000000000000"}], "nextPageToken": "abc"}',
    b'{"error": {"code": 404, "message": "The specified bucket does not exist.", '
    b'"errors": [{"message": "not found", "domain": "global", "reason": "notFound"}]}}',
]


# HDF5's filter identifiers.
DEFLATE, SHUFFLE, FLETCHER32, ZSTD, BLOSC = 1, 2, 3, 32015, 32001


def hdf5_chunk_seed(flags, elem, dims, pos, filters, mask, payload):
    """An input of fuzz_targets/hdf5_chunks.rs: `flags` (rank - 1 in bits
    0-1, then encoded, damaged, big-endian, partial edge chunks unfiltered),
    the element size's selector, (chunk, shape) per dimension, the grid
    position, the filters as (selector, cd_values), the filter mask, the
    damage's position and pattern, and the payload."""
    out = bytes([flags | (len(dims) - 1), elem])
    for chunk, shape in dims:
        out += bytes([chunk - 1, shape])
    out += bytes(pos) + bytes([len(filters)])
    for sel, cd in filters:
        out += bytes([sel, len(cd)])
        for v in cd:
            out += bytes([v]) if v < 255 else b"\xff" + struct.pack("<I", v)
    out += bytes([mask]) + b"\x07\x00\x01" + payload
    return out


def shuffle(data, size):
    """HDF5's shuffle of `data`, elements of `size` bytes."""
    n = len(data) // size
    if size <= 1 or n <= 1:
        return data
    body = bytes(data[i * size + b] for b in range(size) for i in range(n))
    return body + data[n * size:]


def fletcher32(data):
    """HDF5's Fletcher-32 (H5_checksum_fletcher32)."""
    sum1 = sum2 = 0
    words = len(data) // 2
    at = 0
    while words:
        n = min(words, 360)
        words -= n
        for _ in range(n):
            sum1 += data[at] << 8 | data[at + 1]
            sum2 += sum1
            at += 2
        sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
        sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    if len(data) % 2:
        sum1 += data[-1] << 8
        sum2 += sum1
        sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
        sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    sum1 = (sum1 & 0xFFFF) + (sum1 >> 16)
    sum2 = (sum2 & 0xFFFF) + (sum2 >> 16)
    return sum2 << 16 | sum1


def hdf5_chunk_seeds():
    """Seeds of hdf5_chunks: pipelines as h5py and HDF5 tools write them
    (shuffle and deflate, fletcher32, zstd, blosc, in usual and unusual
    orders, with filter masks and partial edge chunks) over elements the
    target encodes itself, and chunks stored as HDF5 stores them (deflate
    streams of shuffled elements, plain chunks) decoded as they are."""
    enc, big, partial = 4, 16, 32
    pattern = bytes((i * 37 + 11) % 256 for i in range(96))
    # Filter selectors: 0 deflate, 1 shuffle, 2 fletcher32, 3 zstd, 4 blosc.
    pipelines = [
        [],
        [(1, [2]), (0, [6])],
        [(0, [4])],
        [(2, [])],
        [(1, [4]), (0, [9]), (2, [])],
        [(2, []), (0, [1])],
        [(3, [3])],
        [(4, [2, 2, 2, 96, 5, 1, 1])],
        [(1, [8]), (3, [])],
        [(0, [6]), (1, [2])],
        [(3, []), (2, [])],
        [(250, []), (0, [6])],
    ]
    count = 0
    for i, filters in enumerate(pipelines):
        for elem, dims, pos, flags, mask in [
            (1, [(8, 20), (4, 7)], [1, 1], enc | partial, 0),
            (0, [(16, 16)], [0], enc, 0),
            (2, [(4, 9), (2, 2), (3, 3)], [2, 0, 0], enc | big, 0),
            (3, [(2, 5), (6, 6)], [0, 0], enc | big | partial, 1),
            (1, [(12, 30)], [2], enc | partial, 2),
        ]:
            seed = hdf5_chunk_seed(flags, elem, dims, pos, filters, mask, pattern[: 40 + i])
            save("hdf5_chunks", seed)
            count += 1
    # Stored chunks decoded as they are: 8x6 int16 shuffled and deflated,
    # with and without fletcher32, and plain.
    elements = bytes((i * 7) % 256 for i in range(96))
    stored = zlib.compress(shuffle(elements, 2), 6)
    checked = stored + struct.pack("<I", fletcher32(stored))
    for filters, payload in [
        ([(1, [2]), (0, [6])], stored),
        ([(1, [2]), (0, [6]), (2, [])], checked),
        ([], elements),
        ([(1, [2]), (0, [6])], elements),
    ]:
        mask = 0 if payload is not elements or not filters else 3
        save("hdf5_chunks", hdf5_chunk_seed(0, 1, [(8, 8), (6, 6)], [0, 0], filters, mask, payload))
        count += 1
    print(f"seeds.py: {count} chunks for hdf5_chunks")


# HDF5 files of at most this size seed hdf5_open.
MAX_HDF5_SEED = 128 << 10


def hdf5_open_seeds():
    """Seeds of hdf5_open: HDF5 files of at most 128 KiB, as h5py writes
    them (tests/peers/hdf5_backend.py make, with a Python that has h5py:
    N5_PEER_PYTHON, else ../.venv/bin/python) and as the n5 tool writes
    them (N5_TOOL, else ../target/release/n5 or ../target/debug/n5, built
    with HDF5 support: small groups of the peer corpus copied into HDF5
    files, raw and gzip). Each source is skipped when it is not there."""
    import subprocess
    import tempfile
    root = os.path.join(HERE, "..")
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        made = []
        python = os.environ.get("N5_PEER_PYTHON") or os.path.join(root, ".venv", "bin", "python")
        if os.path.exists(python):
            out = os.path.join(tmp, "h5py")
            script = os.path.join(root, "tests", "peers", "hdf5_backend.py")
            if subprocess.run([python, script, "make", out], stdout=subprocess.DEVNULL).returncode == 0:
                made += [os.path.join(out, n) for n in sorted(os.listdir(out)) if n.endswith(".h5")]
        tool = os.environ.get("N5_TOOL") or next(
            (t for t in (os.path.join(root, "target", b, "n5") for b in ("release", "debug"))
             if os.path.exists(t)), None)
        corpus = os.path.join(SOURCE, "java-n5.n5")
        if tool and os.path.isdir(corpus):
            for group, name, extra in [("dtype", "dtype_gzip.h5", ["-c", "gzip"]),
                                       ("compression/gzip", "gzip.h5", []),
                                       ("attrpaths", "attrpaths.h5", [])]:
                dst = os.path.join(tmp, name)
                cmd = [tool, "cp", os.path.join(corpus, group), dst] + extra
                if subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                    made.append(dst)
        for path in made:
            data = open(path, "rb").read()
            if len(data) <= MAX_HDF5_SEED:
                save("hdf5_open", data)
                count += 1
    print(f"seeds.py: {count} HDF5 files for hdf5_open")


def main():
    if "hdf5_open" in os.environ.get("FUZZ_TARGETS", "hdf5_open").split():
        hdf5_open_seeds()
    for location in LOCATIONS:
        save("location", location.encode())
    for answer in ANSWERS:
        save("remote_answers", answer)
    hdf5_chunk_seeds()
    pickle_seeds()
    object_chunk_seeds()
    if not os.path.isdir(SOURCE):
        print(f"seeds.py: no corpus at {SOURCE}; the targets start from nothing")
        return
    blocks = docs = 0
    for root, dirs, files in os.walk(SOURCE):
        dirs.sort()
        if "attributes.json" not in files:
            continue
        raw = open(os.path.join(root, "attributes.json"), "rb").read()
        save("metadata", raw)
        for key in (b"", b"a/b[2]", b"pixelResolution/dimensions[0]", b"\\/x\\[1]"):
            save("attributes", key + b"\0" + raw)
        docs += 1
        try:
            attrs = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(attrs, dict) or "dataType" not in attrs:
            continue
        comp = attrs.get("compression") or {"type": attrs.get("compressionType", "raw")}
        ctype = comp.get("type", "raw") if isinstance(comp, dict) else "raw"
        sel = SELECTOR.get(ctype, 0) + (1 if ctype == "gzip" and comp.get("useZlib") else 0)
        taken = 0
        for broot, _, bfiles in sorted(os.walk(root)):
            for name in sorted(bfiles):
                if taken >= 4 or name == "attributes.json" or name.startswith("."):
                    continue
                rel = os.path.relpath(os.path.join(broot, name), root)
                if not all(p.isdigit() for p in rel.split(os.sep)):
                    continue
                data = open(os.path.join(broot, name), "rb").read()
                save("block_decode", bytes([sel]) + data)
                frame = codec_frame(sel, data, attrs.get("dataType"))
                if frame is not None:
                    save("codec_frames", frame)
                taken += 1
                blocks += 1
    print(f"seeds.py: {blocks} block files and {docs} attribute documents from {SOURCE}")
    zarr_seeds()


def zarr_seeds():
    """Seeds of zarr_array from ../shared/corpus-zarr: each array's metadata
    document and its first stored chunk or shard, as the target reads them
    (format byte, document length as 2 bytes little-endian, document,
    chunk)."""
    source = os.path.join(os.path.dirname(os.path.abspath(SOURCE)), "corpus-zarr")
    manifest = os.path.join(source, "manifest.json")
    if not os.path.exists(manifest):
        return
    count = 0
    for a in json.load(open(manifest))["arrays"]:
        base = os.path.join(source, a["container"], a["path"])
        doc = open(os.path.join(base, a["metadata_key"]), "rb").read()
        chunks = [k for k in a["keys"] if not os.path.basename(k).startswith((".z", "zarr.json"))]
        if not chunks or len(doc) > 0xFFFF:
            continue
        chunk = open(os.path.join(base, chunks[0]), "rb").read()[: 1 << 16]
        v2 = 1 if a["zarr_format"] == 2 else 0
        save("zarr_array", bytes([v2]) + struct.pack("<H", len(doc)) + doc + chunk)
        count += 1
    print(f"seeds.py: {count} Zarr arrays from {source}")
    shard_seeds()


def crc32c(data):
    """CRC-32C (Castagnoli), as the Zarr v3 crc32c codec computes it."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def shard_seeds():
    """Seeds of zarr_shard: for each layout of fuzz_targets/zarr_shard.rs
    whose inner chunks are raw or carry their own CRC-32C (selector values
    0 to 3 and 8 to 11), a valid shard of 4×4 inner chunks of 2×3 uint16
    (one left empty), and the same shard cut short."""
    count = 0
    for selector in list(range(4)) + list(range(8, 12)):
        at_end, with_crc = selector & 1 == 0, selector & 2 == 0
        chunks, entries = b"", []
        index_len = 16 * 16 + (4 if with_crc else 0)
        base = 0 if at_end else index_len
        for n in range(16):
            if n == 5:
                entries.append((2**64 - 1, 2**64 - 1))
                continue
            chunk = struct.pack("<6H", *[(n * 6 + i) % 65536 for i in range(6)])
            if selector >= 8:
                chunk += struct.pack("<I", crc32c(chunk))
            entries.append((base + len(chunks), len(chunk)))
            chunks += chunk
        index = b"".join(struct.pack("<QQ", o, k) for o, k in entries)
        if with_crc:
            index += struct.pack("<I", crc32c(index))
        shard = chunks + index if at_end else index + chunks
        save("zarr_shard", bytes([selector]) + shard)
        save("zarr_shard", bytes([selector]) + shard[: len(shard) // 2])
        count += 2
    print(f"seeds.py: {count} shards for zarr_shard")


def lz4_block(src):
    """The bytes of one LZ4 block."""
    out, i = bytearray(), 0
    while i < len(src):
        token = src[i]
        i += 1
        n = token >> 4
        if n == 15:
            while True:
                i, n = i + 1, n + src[i]
                if src[i - 1] != 255:
                    break
        out += src[i:i + n]
        i += n
        if i >= len(src):
            break
        offset = src[i] | src[i + 1] << 8
        i += 2
        m = token & 15
        if m == 15:
            while True:
                i, m = i + 1, m + src[i]
                if src[i - 1] != 255:
                    break
        for _ in range(m + 4):
            out.append(out[-offset])
    return bytes(out)


def blosc1(frame):
    """The bytes of a Blosc1 frame of 1-byte items (numcodecs' blosc of
    pickled chunks: shuffling one byte moves nothing), stored or lz4;
    None for any other."""
    if len(frame) < 16:
        return None
    flags, typesize = frame[2], frame[3]
    nbytes, blocksize, _ = struct.unpack("<III", frame[4:16])
    if flags & 0x02:
        return frame[16:16 + nbytes]
    if typesize != 1 or flags & 0x04 or flags >> 5 != 1 or not blocksize:
        return None
    nblocks = -(-nbytes // blocksize)
    out = b""
    try:
        for i, start in enumerate(struct.unpack(f"<{nblocks}I", frame[16:16 + 4 * nblocks])):
            size = min(blocksize, nbytes - i * blocksize)
            (csize,) = struct.unpack("<i", frame[start:start + 4])
            data = frame[start + 4:start + 4 + csize]
            out += data if csize == size else lz4_block(data)
    except (IndexError, struct.error):
        return None
    return out if len(out) == nbytes else None


# Pickles numpy 2.4 writes (protocol 5) for object arrays the corpus lacks:
# [[1.5, 2**70], [None, 'é']]; [{'k': 1}, [1, 2], (3,), b'\x00\xff', True,
# -5, 70000, -2**63, 2**64-1, 1e-7, inf]; and records [('a', '<u8'),
# ('b', '>f8'), ('c', 'O')] of (1, 2.5, 's') and (400, nan, None).
NUMPY_PICKLES = [
    (4, "800595a6000000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e"
        "7374727563749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b01"
        "4b024b02869468038c0564747970659493948c024f3894898887945294284b038c017c944e4e4e4affffffff"
        "4affffffff4b3f749462895d9428473ff80000000000008a090000000000000000404e8c02c3a99465749462"
        "2e"),
    (11, "800595d6000000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e"
        "7374727563749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b01"
        "4b0b859468038c0564747970659493948c024f3894898887945294284b038c017c944e4e4e4affffffff4aff"
        "ffffff4b3f749462895d94287d948c016b944b01735d94284b014b02654b038594430200ff94884afbffffff"
        "4a701101008a0800000000000000808a09ffffffffffffffff00473e7ad7f29abcaf48477ff0000000000000"
        "657494622e"),
    (2, "80059537010000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e"
        "7374727563749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b01"
        "4b02859468038c0564747970659493948c0356323494898887945294284b038c017c944e8c0161948c016294"
        "8c01639487947d94286811680c8c02753894898887945294284b038c013c944e4e4e4affffffff4affffffff"
        "4b007494624b0086946812680c8c02663894898887945294284b038c013e944e4e4e4affffffff4affffffff"
        "4b007494624b0886946813680c8c024f3894898887945294284b0368104e4e4e4affffffff4affffffff4b3f"
        "7494624b108694754b184b014b1b749462895d94284b014740040000000000008c01739487944d9001477ff8"
        "0000000000004e8794657494622e"),
]


def pickle_seeds():
    """Seeds of pickle_vm (selector: what the input is, times 2, plus 1 for
    the compound; then the element count; then the bytes): every pickled
    chunk of ../shared/corpus-hdmf after blosc, as a chunk and as a pickle
    alone, and its json2 chunks of at most 64 KiB; the compound's fill
    value; pickles numpy writes (above) and Python writes for plain data."""
    import base64
    import pickle
    count = 0
    for n, text in NUMPY_PICKLES:
        data = bytes.fromhex(text)
        save("pickle_vm", bytes([0, n]) + data)
        save("pickle_vm", bytes([2, n]) + data)
        count += 2
    for value in [[1.5, 2**70, None, "é" * 200, 400, -1, True, b"xy", (1, 2, 3, 4), {"k": "v"}],
                  {"source": ".", "path": "/a", "object_id": None}, 0, (0, 0, None)]:
        save("pickle_vm", bytes([0, 1]) + pickle.dumps(value, protocol=5))
        save("pickle_vm", bytes([7, 1]) + pickle.dumps(value, protocol=5))
        count += 2
    save("pickle_vm", bytes([7, 1]) + base64.b64decode("gAVLAC4="))
    count += 1
    source = os.path.join(os.path.dirname(os.path.abspath(SOURCE)), "corpus-hdmf")
    if os.path.isdir(source):
        for root, dirs, files in os.walk(source):
            dirs.sort()
            if ".zarray" not in files:
                continue
            zarray = json.load(open(os.path.join(root, ".zarray")))
            codec = (zarray.get("filters") or [{}])[0].get("id")
            if codec not in ("pickle", "json2"):
                continue
            compound = 1 if isinstance(zarray["dtype"], list) else 0
            elements = 1
            for c in zarray["chunks"]:
                elements *= c
            for name in sorted(files):
                if name.startswith("."):
                    continue
                data = open(os.path.join(root, name), "rb").read()
                if zarray.get("compressor") is not None:
                    data = blosc1(data)
                if data is None or len(data) > 1 << 16 or elements > 255:
                    continue
                if codec == "pickle":
                    save("pickle_vm", bytes([2 + compound, elements]) + data)
                    save("pickle_vm", bytes([0, elements]) + data)
                    count += 2
                else:
                    save("pickle_vm", bytes([4 + compound, elements]) + data)
                    count += 1
    print(f"seeds.py: {count} pickles and json2 chunks for pickle_vm")


def object_chunk_seeds():
    """Seeds of zarr_object_chunk (selector: 1 for Zarr v2, plus twice the
    kind; then the element count less one; then the chunk): every chunk of
    a one-chunk `|O` or compound array of at most 16 elements in
    ../shared/corpus-hdmf after blosc, and vlen and struct chunks of both
    formats made here."""
    kinds = {"vlen-utf8": 0, "vlen-bytes": 1, "pickle": 2, "json2": 3}
    count = 0

    def vlen(elements):
        out = struct.pack("<I", len(elements))
        for e in elements:
            out += struct.pack("<I", len(e)) + e
        return out

    for v2 in (0, 1):
        for kind in (0, 1):
            for elements in ([b"a", b"", "\u00e9t\u00e9".encode()], [b"/acquisition/ts_a"]):
                save("zarr_object_chunk", bytes([v2 + 2 * kind, len(elements) - 1]) + vlen(elements))
                count += 1
        records = b"".join(struct.pack("<i", i) + "ab"[:i % 3].ljust(2, "\0").encode("utf-32-le")
                           + bytes([i & 1]) for i in range(3))
        save("zarr_object_chunk", bytes([v2 + 2 * 4, 2]) + records)
        count += 1
    source = os.path.join(os.path.dirname(os.path.abspath(SOURCE)), "corpus-hdmf")
    if os.path.isdir(source):
        for root, dirs, files in os.walk(source):
            dirs.sort()
            if ".zarray" not in files or "0" not in files:
                continue
            zarray = json.load(open(os.path.join(root, ".zarray")))
            codec = (zarray.get("filters") or [{}])[0].get("id")
            if codec not in kinds or zarray["chunks"] != zarray["shape"] or len(zarray["shape"]) != 1:
                continue
            elements = zarray["shape"][0]
            if not 1 <= elements <= 16:
                continue
            kind = 5 if isinstance(zarray["dtype"], list) else kinds[codec]
            data = open(os.path.join(root, "0"), "rb").read()
            if zarray.get("compressor") is not None:
                data = blosc1(data)
            if data is None:
                continue
            save("zarr_object_chunk", bytes([1 + 2 * kind, elements - 1]) + data)
            count += 1
    print(f"seeds.py: {count} chunks for zarr_object_chunk")


main()
