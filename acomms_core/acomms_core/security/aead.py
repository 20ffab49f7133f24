"""The authenticated packet format: AES-CCM with a truncated tag (ROS-free).

Why AES-CCM: it is the AEAD made for tiny frames (IEEE 802.15.4 CCM*, Bluetooth LE, RFC 3610).
Its tag is a CBC-MAC that may be truncated to 4..16 bytes by the standard (`cryptography`'s
AESCCM takes tag_length), and a t-bit CCM tag gives a forgery probability of about 2^-t per
attempt whatever the packet length. AES-GCM's truncated tags are weaker (a forgery chance of
about n*2^-t for n-block messages, and each success leaks the hash key), and `cryptography`'s
AESGCM and ChaCha20Poly1305 only verify 16-byte tags, which alone would be twice the 8-byte
budget. AES is also what modem-class CPUs accelerate.

One authenticated packet, both frames joined ("X" follows the clear codec headers):

    miniframe: [miniframe_header] X[0 : miniframe budget - header]
    dataframe: [dataframe_header] X[rest]
    X = [key id: 1 byte][counter: 3 bytes, big endian][body (mode encrypt: ciphertext)][tag]

Overhead per packet: 4 + tag_bytes (4 by default: 8 bytes). The nonce (13 bytes) is
(version, mode, src, key id, counter) and never repeats for a key: the counter is unique per
(key, src) (`state.SenderCounter`) and src is the modem's SRC of the packet, so a packet
claiming another SRC does not verify. The associated data binds version, mode, src, the packet's
dest (one byte, dest mod 256), both codec headers and the key id + counter, so a packet
re-addressed to another dest, or moved under another codec header, does not verify; mode
`authenticate` leaves the body in clear and puts it in the associated data too (integrity
without secrecy).

Format versions: 2 (this one) binds the dest; version 1 (acomms before it) did not. The version
byte is in the nonce and the associated data, so packets of a version 1 peer fail to
authenticate (counted as auth_failed) and the other way round: update every vehicle of a fleet
together. ros_acomms has no packet security, so there is nothing to interoperate with there.
"""

from __future__ import annotations

from acomms_core.security.keys import PacketKey
from acomms_core.security.state import COUNTER_BITS

VERSION = 2
MODES = {"authenticate": 1, "encrypt": 2}
TAG_BYTES = (4, 6, 8, 10, 12, 14, 16)     # what AES-CCM allows
KEY_ID_BYTES = 1
COUNTER_BYTES = COUNTER_BITS // 8
PREFIX_BYTES = KEY_ID_BYTES + COUNTER_BYTES
NONCE_BYTES = 13


def forgery_probability(tag_bytes: int, attempts: int = 1) -> float:
    """Upper bound of a forger's chance to get one packet accepted in `attempts` tries."""
    return min(1.0, attempts * 2.0 ** (-8 * tag_bytes))


class PacketSealer:
    """Seals and opens X (see the module text) for one packet codec's mode, tag and headers."""

    def __init__(self, mode: str, tag_bytes: int, miniframe_header: bytes = b"",
                 dataframe_header: bytes = b""):
        self.mode = mode
        self.mode_byte = MODES[mode]
        self.tag_bytes = tag_bytes
        self.overhead_bytes = PREFIX_BYTES + tag_bytes
        self._headers = (bytes([len(miniframe_header)]) + bytes(miniframe_header)
                         + bytes([len(dataframe_header)]) + bytes(dataframe_header))
        self._ciphers: dict = {}   # key fingerprint -> AESCCM

    def _cipher(self, key: PacketKey):
        cipher = self._ciphers.get(key.fingerprint)
        if cipher is None:
            # imported here: nodes without authenticated codecs do not pay for it at start-up
            from cryptography.hazmat.primitives.ciphers.aead import AESCCM

            cipher = self._ciphers[key.fingerprint] = AESCCM(key.secret, self.tag_bytes)
        return cipher

    def _nonce(self, src: int, prefix: bytes) -> bytes:
        head = bytes([VERSION, self.mode_byte, src]) + prefix
        return head + bytes(NONCE_BYTES - len(head))

    def _associated(self, src: int, dest: int, prefix: bytes) -> bytes:
        return bytes([VERSION, self.mode_byte, src, dest % 256]) + self._headers + prefix

    def seal(self, key: PacketKey, src: int, dest: int, counter: int, body: bytes) -> bytes:
        prefix = bytes([key.key_id]) + counter.to_bytes(COUNTER_BYTES, "big")
        nonce, associated = self._nonce(src, prefix), self._associated(src, dest, prefix)
        cipher = self._cipher(key)
        if self.mode == "encrypt":
            return prefix + cipher.encrypt(nonce, bytes(body), associated)
        return prefix + bytes(body) + cipher.encrypt(nonce, b"", associated + bytes(body))

    @staticmethod
    def key_and_counter(sealed: bytes) -> tuple[int, int]:
        return sealed[0], int.from_bytes(sealed[KEY_ID_BYTES:PREFIX_BYTES], "big")

    def open(self, key: PacketKey, src: int, dest: int, sealed: bytes) -> bytes | None:
        """The body, or None when the tag does not verify (forged, tampered, re-addressed)."""
        prefix, rest = bytes(sealed[:PREFIX_BYTES]), bytes(sealed[PREFIX_BYTES:])
        nonce, associated = self._nonce(src, prefix), self._associated(src, dest, prefix)
        cipher = self._cipher(key)
        from cryptography.exceptions import InvalidTag

        try:
            if self.mode == "encrypt":
                return cipher.decrypt(nonce, rest, associated)
            body = rest[:-self.tag_bytes]
            cipher.decrypt(nonce, rest[-self.tag_bytes:], associated + body)
            return body
        except InvalidTag:
            return None
