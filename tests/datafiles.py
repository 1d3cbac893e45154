"Small local data files in a dataset's own format, for loader tests (no network)."
import json
import pytest


def write_jsonl(path, rows):
    "Write `rows` as JSON lines to `path`; returns `path`."
    path.write_text(''.join(json.dumps(r) + '\n' for r in rows)); return path


def write_parquet(path, rows):
    "Write `rows` as a Parquet table to `path` (skips the test when pyarrow is missing); returns `path`."
    pa = pytest.importorskip("pyarrow"); pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.Table.from_pylist(rows), path); return path
