"""``runs export``'s file formats, written from the store's streaming query (constant memory).

JSONL and CSV are one line per result with the fields of ``EXPORT_COLUMNS``; Parquet (pyarrow,
the optional extra ``evalyard[parquet]``) holds the same columns with ``PARQUET_SCHEMA``'s types,
``details`` as the JSON text the JSONL line would hold, written one row group per
``ROW_GROUP`` results as the rows arrive.

``runs export --trials`` writes the same formats with the columns of ``TRIAL_COLUMNS`` (one line
per case, epoch and scorer, with the epoch's generated output): every writer takes the columns
its rows hold.
"""

from __future__ import annotations

import csv
import json
from typing import IO, Any, Iterable, Sequence

from .store.reading import EXPORT_COLUMNS

#: Results per Parquet row group: large enough for good compression and fast scans, small
#: enough that the rows being assembled stay a few tens of megabytes.
ROW_GROUP = 100_000

FORMATS = ("jsonl", "csv", "parquet")

#: Columns held as JSON (text in CSV and Parquet).
JSON_COLUMNS = ("details", "media")


class ParquetMissing(RuntimeError):
    pass


def write_jsonl(rows: Iterable[Any], handle: IO[str], columns: Sequence[str] = EXPORT_COLUMNS) -> int:
    count = 0
    for row in rows:
        handle.write(json.dumps(dict(zip(columns, row)), ensure_ascii=False) + "\n")
        count += 1
    return count


def _csv_cell(column: str, item: Any) -> str:
    if column == "media" and item is None:
        return ""
    if column in JSON_COLUMNS:
        return json.dumps(item, ensure_ascii=False)
    if item is None:
        return ""
    if column == "value":
        return repr(item)
    if column == "passed":
        return str(item).lower()
    return str(item)


def write_csv(rows: Iterable[Any], handle: IO[str], columns: Sequence[str] = EXPORT_COLUMNS) -> int:
    writer = csv.writer(handle)
    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow([_csv_cell(column, item) for column, item in zip(columns, row)])
        count += 1
    return count


def parquet_schema(columns: Sequence[str] = EXPORT_COLUMNS):
    try:
        import pyarrow as pa
    except ImportError:
        raise ParquetMissing("--format parquet needs pyarrow: pip install 'evalyard[parquet]'") from None
    fields = {
        "case_id": pa.field("case_id", pa.string(), nullable=False),
        "epoch": pa.field("epoch", pa.int64(), nullable=False),
        "scorer": pa.field("scorer", pa.string(), nullable=False),
        "value": pa.field("value", pa.float64()),
        "label": pa.field("label", pa.string()),
        "passed": pa.field("passed", pa.bool_()),
        "details": pa.field("details", pa.string()),  # JSON text
        "error": pa.field("error", pa.string()),
        "output": pa.field("output", pa.string()),
        "output_error": pa.field("output_error", pa.string()),
        "media": pa.field("media", pa.string()),  # JSON text: the case's media records, or null
    }
    return pa.schema([fields[column] for column in columns])


def write_parquet(rows: Iterable[Any], sink: Any, row_group: int = ROW_GROUP,
                  columns: Sequence[str] = EXPORT_COLUMNS) -> int:
    """Write ``rows`` to ``sink`` (a path or a binary file object) in row groups of ``row_group``."""
    schema = parquet_schema(columns)
    import pyarrow as pa
    import pyarrow.parquet as pq

    count = 0
    arrays: list[list[Any]] = [[] for _ in columns]
    as_json = [i for i, column in enumerate(columns) if column in JSON_COLUMNS]

    def flush(writer) -> None:
        writer.write_table(pa.Table.from_arrays(arrays, schema=schema), row_group_size=row_group)
        for array in arrays:
            array.clear()

    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for row in rows:
            for array, item in zip(arrays, row):
                array.append(item)
            for i in as_json:
                if arrays[i][-1] is not None or columns[i] == "details":
                    arrays[i][-1] = json.dumps(row[i], ensure_ascii=False)
            count += 1
            if len(arrays[0]) >= row_group:
                flush(writer)
        if arrays[0] or not count:
            flush(writer)
    return count
