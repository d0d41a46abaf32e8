"""A minimal safetensors writer and reader in plain Python + NumPy.

It follows the format's specification directly (8-byte little-endian header length, a JSON
header, raw little-endian data), independently of duet's C++ code, so a file written here and
read by duet proves the two agree on the format, not merely with themselves.
"""
import json
import struct

import numpy as np

_CODES = {np.dtype("float32"): "F32", np.dtype("float64"): "F64", np.dtype("int64"): "I64", np.dtype("uint8"): "U8"}
_DTYPES = {code: dtype for dtype, code in _CODES.items()}


def save(path, tensors, metadata=None):
    """tensors: dict name -> numpy array (F32, F64, I64 or U8)."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, array in tensors.items():
        array = np.array(array, order="C", copy=False)  # keeps 0-d arrays 0-d, unlike ascontiguousarray
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _CODES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def load(path):
    """Returns (dict name -> numpy array, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(entry["shape"])
    return out, metadata
