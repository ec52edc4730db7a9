//! Bearer tokens: 32 random bytes, hex-encoded behind a recognisable prefix (so secret scanners
//! and people can tell what leaked). Only their SHA-256 digest is ever stored or configured.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Every generated token starts with this.
pub const TOKEN_PREFIX: &str = "ost_";

/// A fresh token from the operating system's random source.
pub fn generate_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{TOKEN_PREFIX}{}", hex::encode(bytes)))
}

/// The SHA-256 of a token as the client sends it (its UTF-8 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    /// Parses 64 hexadecimal digits (either case).
    pub fn from_hex(text: &str) -> Option<Self> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Self(bytes))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Compares in time independent of where the digests differ.
    pub fn ct_eq(&self, other: &Self) -> subtle::Choice {
        self.0.ct_eq(&other.0)
    }
}

impl fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenDigest({})", self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_token_is_prefixed_hex_of_32_random_bytes() {
        let token = generate_token().unwrap();
        let hex_part = token.strip_prefix(TOKEN_PREFIX).unwrap();
        assert_eq!(hex_part.len(), 64);
        assert!(hex_part.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(token, generate_token().unwrap(), "tokens must not repeat");
    }

    #[test]
    fn the_digest_is_the_sha256_of_the_token_text() {
        // printf '%s' abc | sha256sum
        assert_eq!(
            TokenDigest::of("abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hex_digests_round_trip_in_either_case_and_reject_anything_else() {
        let digest = TokenDigest::of("secret");
        assert_eq!(TokenDigest::from_hex(&digest.to_hex()), Some(digest));
        assert_eq!(
            TokenDigest::from_hex(&digest.to_hex().to_uppercase()),
            Some(digest)
        );
        for bad in ["", "abc", &"g".repeat(64), &"a".repeat(63), &"a".repeat(66)] {
            assert_eq!(TokenDigest::from_hex(bad), None, "{bad}");
        }
    }

    #[test]
    fn digests_compare_equal_only_when_every_byte_matches() {
        let a = TokenDigest::of("a");
        assert!(bool::from(a.ct_eq(&TokenDigest::of("a"))));
        assert!(!bool::from(a.ct_eq(&TokenDigest::of("b"))));
        // Differing only in the last byte is still unequal (no prefix comparison).
        let mut last = a;
        last.0[31] ^= 1;
        assert!(!bool::from(a.ct_eq(&last)));
        let mut first = a;
        first.0[0] ^= 0x80;
        assert!(!bool::from(a.ct_eq(&first)));
    }
}
