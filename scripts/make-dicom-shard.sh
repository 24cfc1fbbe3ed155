#!/usr/bin/env bash
# Makes the DICOM demo shards under generated-shards/ (gitignored; nothing here is committed):
#   vqa-rad-dicom/      vqa-rad with every JPEG wrapped as DICOM by dcmtk's img2dcm (JPEG Baseline transfer
#                       syntax: the JPEG bitstream itself, so pixels are those of the JPEG shard);
#   ct-phantom-dicom/   a CT-like 16-bit series (rescale intercept -1024, two windows) in Explicit and
#                       Implicit VR Little Endian, Big Endian and RLE Lossless, written by pydicom;
#   vqa-rad-dicom-bad/  vqa-rad-dicom with one image replaced by pydicom's 12-bit JPEG Extended test file,
#                       a transfer syntax Loupe has no decoder for (the import must name it).
# Usage: bash scripts/make-dicom-shard.sh [SOURCE_SHARD (default ../shared/data/vqa-rad)] [OUT (default generated-shards)]
set -euo pipefail
cd "$(dirname "$0")/.."
SRC="${1:-${LOUPE_DATA_DIR:-../shared/data}/vqa-rad}"
OUT="${2:-generated-shards}"
command -v img2dcm >/dev/null || { echo "make-dicom-shard: img2dcm missing (apt-get install dcmtk; scripts/setup.sh does it)"; exit 1; }
[ -f "$SRC/corpus.jsonl" ] || { echo "make-dicom-shard: $SRC is not a shard folder"; exit 1; }
DST="$OUT/vqa-rad-dicom"
rm -rf "$DST" "$OUT/vqa-rad-dicom-bad" "$OUT/ct-phantom-dicom"
mkdir -p "$DST/images" "$DST/qrels"
for f in "$SRC"/images/*.jpg; do
  img2dcm -i JPEG "$f" "$DST/images/$(basename "${f%.jpg}").dcm"
done
cp "$SRC"/qrels/*.tsv "$DST/qrels/"
/usr/bin/python3 - "$SRC" "$OUT" <<'PY'
import json, os, re, shutil, sys
import numpy as np
import pydicom
from pydicom.data import get_testdata_file
from pydicom.dataset import Dataset, FileDataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, ImplicitVRLittleEndian, ExplicitVRBigEndian, RLELossless, generate_uid

src, out = sys.argv[1], sys.argv[2]
dst = os.path.join(out, "vqa-rad-dicom")

def rewrite(name):
    with open(os.path.join(src, name), encoding="utf-8") as f, open(os.path.join(dst, name), "w", encoding="utf-8") as g:
        for line in f:
            o = json.loads(line)
            if "image" in o:
                o["image"] = re.sub(r"\.jpg$", ".dcm", o["image"])
            g.write(json.dumps(o, ensure_ascii=False) + "\n")

rewrite("corpus.jsonl")
rewrite("queries.jsonl")
m = json.load(open(os.path.join(src, "shard.json"), encoding="utf-8"))
m["name"] = "vqa-rad-dicom"
m["description"] = "vqa-rad with its JPEG images wrapped as DICOM (JPEG Baseline) by dcmtk img2dcm. " + m.get("description", "")
json.dump(m, open(os.path.join(dst, "shard.json"), "w", encoding="utf-8"), indent=2, ensure_ascii=False)
shutil.copy(os.path.join(src, "NOTICE.md"), os.path.join(dst, "NOTICE.md"))

# The same shard with one unsupported image (12-bit JPEG Extended).
bad = os.path.join(out, "vqa-rad-dicom-bad")
shutil.copytree(dst, bad)
first = sorted(os.listdir(os.path.join(bad, "images")))[0]
shutil.copy(get_testdata_file("JPGExtended.dcm"), os.path.join(bad, "images", first))
print(f"make-dicom-shard: {bad}/images/{first} is now a 12-bit JPEG Extended file")

# A CT-like phantom series: 16-bit, stored = HU + 1024, two windows (soft tissue, lung).
ct = os.path.join(out, "ct-phantom-dicom")
os.makedirs(os.path.join(ct, "images"))
os.makedirs(os.path.join(ct, "qrels"))
n, size = 12, 128
yy, xx = np.mgrid[0:size, 0:size] / (size - 1) * 2 - 1
syntaxes = [ExplicitVRLittleEndian, ImplicitVRLittleEndian, ExplicitVRBigEndian, RLELossless]
docs, rng = [], np.random.default_rng(7)
series = generate_uid()
for i in range(n):
    hu = np.full((size, size), -1000.0)
    body = (xx / 0.9) ** 2 + (yy / 0.7) ** 2 <= 1
    hu[body] = 40
    lungs = (((xx - 0.4) / 0.3) ** 2 + (yy / 0.45) ** 2 <= 1) | (((xx + 0.4) / 0.3) ** 2 + (yy / 0.45) ** 2 <= 1)
    hu[lungs & body] = -800
    spine = ((xx) / 0.1) ** 2 + ((yy - 0.5) / 0.1) ** 2 <= 1
    hu[spine] = 700
    nodule = i % 3 == 0
    if nodule:
        hu[((xx - 0.4) / 0.08) ** 2 + ((yy + 0.1 * (i / n)) / 0.08) ** 2 <= 1] = 30
    hu += rng.normal(0, 10, hu.shape)
    stored = np.clip(np.round(hu + 1024), 0, 4095).astype(np.uint16)
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
    meta.MediaStorageSOPInstanceUID = generate_uid()
    ts = syntaxes[i % len(syntaxes)]
    meta.TransferSyntaxUID = ExplicitVRLittleEndian if ts == RLELossless else ts
    ds = FileDataset(None, {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.SeriesInstanceUID = series
    ds.Modality, ds.BodyPartExamined = "CT", "CHEST"
    ds.PatientName, ds.PatientID = "Phantom^Synthetic", "PHANTOM-0001"
    ds.InstanceNumber = i + 1
    ds.Rows = ds.Columns = size
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    ds.RescaleIntercept, ds.RescaleSlope, ds.RescaleType = -1024, 1, "HU"
    ds.WindowCenter, ds.WindowWidth = [40, -600], [400, 1500]
    ds.WindowCenterWidthExplanation = ["SOFT TISSUE", "LUNG"]
    ds.PixelData = stored.tobytes()
    ds.is_little_endian = ts != ExplicitVRBigEndian
    ds.is_implicit_VR = ts == ImplicitVRLittleEndian
    if ts == ExplicitVRBigEndian:
        ds.PixelData = stored.byteswap().tobytes()
    if ts == RLELossless:
        ds.compress(RLELossless, stored)
    name = f"images/ct-{i + 1:02d}.dcm"
    ds.save_as(os.path.join(ct, name), write_like_original=False)
    text = f"CT chest phantom, slice {i + 1}. " + ("Lung nodule in the right lung." if nodule else "No nodule.")
    docs.append({"_id": f"ct{i + 1:02d}", "title": "", "text": text, "image": name, "modality": "ct", "organ": "chest"})
with open(os.path.join(ct, "corpus.jsonl"), "w") as f:
    for d in docs:
        f.write(json.dumps(d) + "\n")
queries = [
    {"_id": "q-nodule", "text": "lung nodule", "task": "text-to-image"},
    {"_id": "q-slice1", "text": "", "image": "images/ct-01.dcm", "task": "image-to-image", "exclude_ids": ["ct01"]},
]
with open(os.path.join(ct, "queries.jsonl"), "w") as f:
    for q in queries:
        f.write(json.dumps(q) + "\n")
with open(os.path.join(ct, "qrels", "test.tsv"), "w") as f:
    f.write("query-id\tcorpus-id\tscore\n")
    for d in docs:
        if "nodule in" in d["text"]:
            f.write(f"q-nodule\t{d['_id']}\t1\n")
            if d["_id"] != "ct01":
                f.write(f"q-slice1\t{d['_id']}\t1\n")
json.dump({
    "name": "ct-phantom-dicom", "version": "1.0.0", "format": "beir+images",
    "description": "A synthetic CT-like chest phantom series (16-bit, rescale intercept -1024, soft-tissue and lung windows) in four transfer syntaxes, made by scripts/make-dicom-shard.sh.",
    "license": "CC0-1.0", "relevance": {"1": "the slice shows a lung nodule"},
    "tasks": [
        {"id": "text-to-image", "query_modality": "text", "corpus_modality": "image"},
        {"id": "image-to-image", "query_modality": "image", "corpus_modality": "image"},
    ],
}, open(os.path.join(ct, "shard.json"), "w"), indent=2)
open(os.path.join(ct, "NOTICE.md"), "w").write("Synthetic data generated by Loupe's scripts/make-dicom-shard.sh; CC0-1.0.\n")
print(f"make-dicom-shard: wrote {dst}, {bad}, {ct}")
PY
