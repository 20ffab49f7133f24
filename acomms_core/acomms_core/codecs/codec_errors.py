"""The errors of a message codec (acomms_core.codecs.message_codec): a field config that cannot be
built, a value that cannot be encoded, bits that do not decode, a checksum that does not match."""


class CodecBuildError(ValueError):
    """A field config that cannot be built; `field` is the dotted field path ('' = message)."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"field '{field}': {reason}" if field else reason)
        self.field = field
        self.reason = reason


class EncodeError(ValueError):
    """A message value the codec cannot encode (e.g. a string that is not ASCII)."""


class DecodeError(ValueError):
    """Bits that do not decode to a valid message (truncated, or a value the type refuses).

    `position_known` is true when every bit of the message was read (only a value was refused), so
    a packet decoder can go on with the next message.
    """

    def __init__(self, message: str, position_known: bool = False):
        super().__init__(message)
        self.position_known = position_known


class ChecksumError(DecodeError):
    """The message's crc8/crc32 does not match its bits."""

    def __init__(self, message: str):
        super().__init__(message, position_known=True)
