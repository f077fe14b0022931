//! ext4's directory-name hash, as far as the inode allocator uses it:
//! `ext4fs_dirhash` with `DX_HASH_HALF_MD4` (`fs/ext4/hash.c`,
//! `str2hashbuf_signed`; `lib/halfmd4.c`, `half_md4_transform`).
//! `find_group_orlov` hashes a top-level directory's name with the file
//! system's `s_hash_seed` (random, from mke2fs's `uuid_generate`) to pick
//! the flex group its search starts from.

/// `EXT4_HTREE_EOF`.
const HTREE_EOF: u32 = 0x7fff_ffff;
/// The MD4 initial values `ext4fs_dirhash` uses when the seed is all zero.
const DEFAULT_SEED: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
const K2: u32 = 0o13240474631;
const K3: u32 = 0o15666365641;

fn f(x: u32, y: u32, z: u32) -> u32 {
    z ^ (x & (y ^ z))
}
fn g(x: u32, y: u32, z: u32) -> u32 {
    (x & y).wrapping_add((x ^ y) & z)
}
fn h(x: u32, y: u32, z: u32) -> u32 {
    x ^ y ^ z
}

/// `half_md4_transform`: three rounds of eight steps over `inp`.
fn half_md4_transform(buf: &mut [u32; 4], inp: &[u32; 8]) {
    type Step = (fn(u32, u32, u32) -> u32, usize, u32, u32);
    // (function, input word, constant, rotation), for the a, d, c, b rotation.
    const STEPS: [Step; 24] = [
        (f, 0, 0, 3),
        (f, 1, 0, 7),
        (f, 2, 0, 11),
        (f, 3, 0, 19),
        (f, 4, 0, 3),
        (f, 5, 0, 7),
        (f, 6, 0, 11),
        (f, 7, 0, 19),
        (g, 1, K2, 3),
        (g, 3, K2, 5),
        (g, 5, K2, 9),
        (g, 7, K2, 13),
        (g, 0, K2, 3),
        (g, 2, K2, 5),
        (g, 4, K2, 9),
        (g, 6, K2, 13),
        (h, 3, K3, 3),
        (h, 7, K3, 9),
        (h, 2, K3, 11),
        (h, 6, K3, 15),
        (h, 1, K3, 3),
        (h, 5, K3, 9),
        (h, 0, K3, 11),
        (h, 4, K3, 15),
    ];
    // v[0..4] = a, b, c, d; step k updates a, d, c, b in turn.
    let mut v = *buf;
    for (k, &(fun, w, kc, s)) in STEPS.iter().enumerate() {
        let t = [0usize, 3, 2, 1][k % 4];
        let (x, y, z) = (v[(t + 1) % 4], v[(t + 2) % 4], v[(t + 3) % 4]);
        let a = v[t]
            .wrapping_add(fun(x, y, z))
            .wrapping_add(inp[w].wrapping_add(kc));
        v[t] = a.rotate_left(s);
    }
    for i in 0..4 {
        buf[i] = buf[i].wrapping_add(v[i]);
    }
}

/// `str2hashbuf_signed`: up to `4 * num` bytes of `msg` packed big-end first
/// into words, padded with the length.
fn str2hashbuf_signed(msg: &[u8], num: usize) -> [u32; 8] {
    let len = msg.len() as u32;
    let mut pad = len | (len << 8);
    pad |= pad << 16;
    let mut out = [pad; 8];
    let mut val = pad;
    let mut n = 0;
    for (i, &c) in msg.iter().take(num * 4).enumerate() {
        if i % 4 == 0 {
            val = pad;
        }
        // ((int) scp[i]) + (val << 8): the byte as a signed char.
        val = (c as i8 as i32 as u32).wrapping_add(val << 8);
        if i % 4 == 3 {
            out[n] = val;
            n += 1;
            val = pad;
        }
    }
    if n < num {
        out[n] = val;
    }
    out
}

/// `ext4fs_dirhash` with `DX_HASH_HALF_MD4`: the major hash of `name`.
pub fn half_md4_hash(name: &[u8], seed: [u32; 4]) -> u32 {
    let mut buf = if seed.iter().any(|&w| w != 0) {
        seed
    } else {
        DEFAULT_SEED
    };
    let mut p = name;
    loop {
        let inp = str2hashbuf_signed(p, 8);
        half_md4_transform(&mut buf, &inp);
        if p.len() <= 32 {
            break;
        }
        p = &p[32..];
    }
    let hash = buf[1] & !1;
    if hash == HTREE_EOF << 1 {
        (HTREE_EOF - 1) << 1
    } else {
        hash
    }
}

/// mke2fs's `uuid_generate` for `s_hash_seed`: 16 random bytes made a
/// version-4 UUID, read as the kernel reads `es->s_hash_seed` (four
/// little-endian words).
pub fn hash_seed_from(bytes: [u8; 16]) -> [u32; 4] {
    let mut b = bytes;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    std::array::from_fn(|i| {
        u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
    })
}
