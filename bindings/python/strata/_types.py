"""GGUF value types and ggml tensor types."""
from __future__ import annotations

import enum
from typing import NamedTuple, Union

from . import _lib


class ValueType(enum.IntEnum):
    """GGUF metadata value types (strata_value_type; the file format's numbers)."""

    U8 = 0
    I8 = 1
    U16 = 2
    I16 = 3
    U32 = 4
    I32 = 5
    F32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    U64 = 10
    I64 = 11
    F64 = 12

    @property
    def short_name(self) -> str:
        """"u8", "string", "array", ..."""
        return self.name.lower()

    @classmethod
    def parse(cls, value: Union["ValueType", int, str]) -> "ValueType":
        """Accepts a ValueType, its number or a name such as "u32" / "U32" / "string"."""
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                raise ValueError(f"unknown GGUF value type {value!r}") from None
        return cls(int(value))


INTEGER_TYPES = frozenset({ValueType.U8, ValueType.I8, ValueType.U16, ValueType.I16, ValueType.U32,
                           ValueType.I32, ValueType.U64, ValueType.I64})
SIGNED_TYPES = frozenset({ValueType.I8, ValueType.I16, ValueType.I32, ValueType.I64})
FLOAT_TYPES = frozenset({ValueType.F32, ValueType.F64})
#: struct format characters of the numeric/bool element types (little-endian packing).
STRUCT_FORMATS = {ValueType.U8: "B", ValueType.I8: "b", ValueType.U16: "H", ValueType.I16: "h",
                  ValueType.U32: "I", ValueType.I32: "i", ValueType.U64: "Q", ValueType.I64: "q",
                  ValueType.F32: "f", ValueType.F64: "d", ValueType.BOOL: "?"}


class MetadataType(NamedTuple):
    """Type of a metadata value; for arrays the element type and count (else type and 1).

    str() gives the manifest spelling: "u32", "string", "array[i32]".
    """

    type: ValueType
    element_type: ValueType
    count: int

    def __str__(self) -> str:
        if self.type == ValueType.ARRAY:
            return f"array[{self.element_type.short_name}]"
        return self.type.short_name


class TensorType(enum.IntEnum):
    """The ggml tensor types strata decodes (strata_tensor_type); tensor_type_supported() says which
    of them it can also write from float32."""

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    Q1_0 = 41


def tensor_type_name(type_id: int) -> str:
    """"f32", "iq1_s", ... for any ggml type id; "unknown" for ids ggml does not define."""
    name = _lib.lib().strata_tensor_type_name(int(type_id))
    return name.decode("utf-8") if name else "unknown"


def tensor_type_supported(type_id: int) -> bool:
    """True when strata can read (dequantize) and write (quantize) this tensor type."""
    return bool(_lib.lib().strata_tensor_type_supported(int(type_id)))


def tensor_type_id(type_: Union[int, str, TensorType]) -> int:
    """The ggml type id of a type given as id, TensorType or name ("iq1_s", "Q8_0", ...)."""
    if isinstance(type_, str):
        key = type_.strip().upper()
        if key in TensorType.__members__:
            return int(TensorType[key])
        low = type_.strip().lower()
        for i in range(256):  # any other ggml type, named by the library
            if tensor_type_name(i).lower() == low:
                return i
        raise ValueError(f"unknown tensor type {type_!r}")
    return int(type_)
