"""``runs export``'s file formats, written from the store's streaming query (constant memory).

JSONL and CSV are one line per result with the fields of ``EXPORT_COLUMNS``; Parquet (pyarrow,
the optional extra ``evalyard[parquet]``) holds the same columns with ``PARQUET_SCHEMA``'s types,
``details`` as the JSON text the JSONL line would hold, written one row group per
``ROW_GROUP`` results as the rows arrive.
"""

from __future__ import annotations

import csv
import json
from typing import IO, Any, Iterable

from .store.reading import EXPORT_COLUMNS

#: Results per Parquet row group: large enough for good compression and fast scans, small
#: enough that the rows being assembled stay a few tens of megabytes.
ROW_GROUP = 100_000

FORMATS = ("jsonl", "csv", "parquet")


class ParquetMissing(RuntimeError):
    pass


def write_jsonl(rows: Iterable[Any], handle: IO[str]) -> int:
    count = 0
    for row in rows:
        handle.write(json.dumps(dict(zip(EXPORT_COLUMNS, row)), ensure_ascii=False) + "\n")
        count += 1
    return count


def write_csv(rows: Iterable[Any], handle: IO[str]) -> int:
    writer = csv.writer(handle)
    writer.writerow(EXPORT_COLUMNS)
    count = 0
    for case_id, scorer, value, label, passed, details, error in rows:
        writer.writerow([case_id, scorer, "" if value is None else repr(value), label or "",
                         "" if passed is None else str(passed).lower(),
                         json.dumps(details, ensure_ascii=False), error or ""])
        count += 1
    return count


def parquet_schema():
    try:
        import pyarrow as pa
    except ImportError:
        raise ParquetMissing("--format parquet needs pyarrow: pip install 'evalyard[parquet]'") from None
    return pa.schema([
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("scorer", pa.string(), nullable=False),
        pa.field("value", pa.float64()),
        pa.field("label", pa.string()),
        pa.field("passed", pa.bool_()),
        pa.field("details", pa.string()),  # JSON text
        pa.field("error", pa.string()),
    ])


def write_parquet(rows: Iterable[Any], sink: Any, row_group: int = ROW_GROUP) -> int:
    """Write ``rows`` to ``sink`` (a path or a binary file object) in row groups of ``row_group``."""
    schema = parquet_schema()
    import pyarrow as pa
    import pyarrow.parquet as pq

    count = 0
    columns: list[list[Any]] = [[] for _ in EXPORT_COLUMNS]

    def flush(writer) -> None:
        writer.write_table(pa.Table.from_arrays(columns, schema=schema), row_group_size=row_group)
        for column in columns:
            column.clear()

    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for row in rows:
            for column, item in zip(columns, row):
                column.append(item)
            columns[5][-1] = json.dumps(row[5], ensure_ascii=False)
            count += 1
            if len(columns[0]) >= row_group:
                flush(writer)
        if columns[0] or not count:
            flush(writer)
    return count
