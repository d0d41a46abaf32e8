"""Fashion-MNIST from the same gzipped IDX files duet reads (data/fashion_mnist.cpp), with
gzip and NumPy only: u8 images [N, 1, 28, 28] and int64 labels [N]."""
import gzip
import os

import numpy as np

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def missing_files(data_dir):
    """The IDX files (gzipped or plain) that data_dir lacks."""
    stems = [stem for pair in FILES.values() for stem in pair]
    return [stem for stem in stems if not any(os.path.exists(os.path.join(data_dir, stem + ext)) for ext in (".gz", ""))]


def missing_message(data_dir):
    return (f"Fashion-MNIST not found: {data_dir} lacks {', '.join(missing_files(data_dir))} (.gz). "
            "Install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist), "
            "or pass --data-dir with a folder holding the four IDX files")


def read_idx(path):
    """An IDX file of unsigned bytes (type code 0x08), as a NumPy array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    rank = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(rank))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape} but holds {data.size} bytes")
    return data.reshape(shape)


def find(data_dir, stem):
    for name in (stem + ".gz", stem):
        if os.path.exists(os.path.join(data_dir, name)):
            return os.path.join(data_dir, name)
    raise FileNotFoundError(missing_message(data_dir))


def load(split, data_dir=DEFAULT_DIR):
    """(images u8 [N, 1, 28, 28], labels int64 [N]) of "train" or "test"."""
    image_stem, label_stem = FILES[split]
    images = read_idx(find(data_dir, image_stem))
    labels = read_idx(find(data_dir, label_stem))
    if images.shape[1:] != (28, 28) or labels.shape != images.shape[:1]:
        raise ValueError(f"{data_dir}: {split} images {images.shape} and labels {labels.shape} do not match")
    return images.reshape(-1, 1, 28, 28), labels.astype(np.int64)


def size(split, data_dir=DEFAULT_DIR):
    """How many examples "train" or "test" holds, from its label file."""
    return read_idx(find(data_dir, FILES[split][1])).shape[0]
